"""micro:bit sensors and LED matrix driven through a fake bus and bare pins."""
from __future__ import annotations

from emu.buses import I2cBus
from emu.clock import TICKS_PER_MS, Clock
from emu.devices.mag3110 import Mag3110
from emu.devices.mma8653 import Mma8653
from emu.signals import Pin


def write_regs(bus, addr, reg, *values):
    assert bus.start(addr, False)
    assert bus.write(reg)
    for v in values:
        assert bus.write(v)
    bus.stop()


def read_regs(bus, addr, reg, n):
    assert bus.start(addr, False)
    assert bus.write(reg)
    assert bus.start(addr, True)              # repeated START
    out = [bus.read() for _ in range(n)]
    bus.stop()
    return out


def run_ms(clock, ms):
    clock.advance_to(clock.now + int(ms * TICKS_PER_MS))


def accel_setup():
    clock = Clock()
    int1 = Pin("P0.28", 28)
    acc = Mma8653(clock, int1_pin=int1)
    bus = I2cBus("i2c")
    bus.attach(acc, 0x1D)
    return clock, int1, acc, bus


def test_mma8653_identity_and_standby_only_writes():
    clock, int1, acc, bus = accel_setup()
    assert read_regs(bus, 0x1D, 0x0D, 1) == [0x5A]          # WHO_AM_I
    write_regs(bus, 0x1D, 0x0E, 0x01)                       # XYZ_DATA_CFG: +/-4 g (standby)
    write_regs(bus, 0x1D, 0x2A, 0x21)                       # CTRL_REG1: 50 Hz, ACTIVE
    write_regs(bus, 0x1D, 0x0E, 0x02)                       # ignored while ACTIVE
    assert read_regs(bus, 0x1D, 0x0E, 1) == [0x01]
    assert read_regs(bus, 0x1D, 0x0B, 1) == [0x01]          # SYSMOD: wake


def test_mma8653_samples_at_odr_with_data_ready_on_int1():
    clock, int1, acc, bus = accel_setup()
    acc.set_acceleration(500, -250, 1000)
    write_regs(bus, 0x1D, 0x2D, 0x01)                       # CTRL_REG4: INT_EN_DRDY
    write_regs(bus, 0x1D, 0x2E, 0x01)                       # CTRL_REG5: DRDY on INT1
    write_regs(bus, 0x1D, 0x2A, 0x21)                       # 50 Hz, ACTIVE
    assert int1.level                                       # active low: idle high
    run_ms(clock, 20 - 0.001)                               # just short of one period
    assert read_regs(bus, 0x1D, 0x00, 1) == [0]
    assert int1.level
    run_ms(clock, 0.001)
    assert not int1.level                                   # data ready: INT1 low
    x, xl, y, yl, z, zl = read_regs(bus, 0x1D, 0x01, 6)
    # +/-2 g: 256 counts per g; 10-bit left-justified
    assert ((x << 2) | (xl >> 6)) == 128
    assert (((y << 2) | (yl >> 6)) ^ 0x200) - 0x200 == -64
    assert ((z << 2) | (zl >> 6)) == 256
    assert int1.level                                       # reading X/Y/Z cleared it


def test_mma8653_fast_read_skips_lsb_registers():
    clock, int1, acc, bus = accel_setup()
    acc.set_acceleration(1000, 2000, -1000)
    write_regs(bus, 0x1D, 0x2A, 0x23)                       # F_READ | ACTIVE, 50 Hz
    run_ms(clock, 20)
    assert read_regs(bus, 0x1D, 0x01, 3) == [0x40, 0x7F, 0xC0]   # X, Y (saturated), Z MSBs


def test_mag3110_identity_one_shot_and_offsets():
    clock = Clock()
    pin = Pin("P0.29", 29)
    mag = Mag3110(clock, int_pin=pin)
    bus = I2cBus("i2c")
    bus.attach(mag, 0x0E)
    assert read_regs(bus, 0x0E, 0x07, 1) == [0xC4]          # WHO_AM_I
    mag.set_field(1000, -2000, 300)
    write_regs(bus, 0x0E, 0x09, 0x00, 0xC8)                 # OFF_X = 100 (bits 15:1)
    write_regs(bus, 0x0E, 0x10, 0x02)                       # CTRL_REG1: TM, standby
    assert pin.level                                        # data ready, active high
    xh, xl, yh, yl, zh, zl = read_regs(bus, 0x0E, 0x01, 6)
    assert (xh << 8 | xl) == 900                            # 1000 - offset 100
    assert ((yh << 8 | yl) ^ 0x8000) - 0x8000 == -2000
    assert (zh << 8 | zl) == 300
    assert not pin.level                                    # cleared by reading OUT_Z_LSB
    write_regs(bus, 0x0E, 0x11, 0x20)                       # CTRL_REG2: RAW (no offsets)
    write_regs(bus, 0x0E, 0x10, 0x02)
    assert read_regs(bus, 0x0E, 0x01, 2) == [1000 >> 8, 1000 & 0xFF]


def test_mag3110_active_mode_rate():
    clock = Clock()
    mag = Mag3110(clock)
    bus = I2cBus("i2c")
    bus.attach(mag, 0x0E)
    write_regs(bus, 0x0E, 0x10, 0x01)                       # ACTIVE, DR=0 OS=0: 80 Hz
    run_ms(clock, 100)
    assert mag.samples == 8


def test_led_matrix_integrates_multiplexed_rows():
    from emu.board.microbit import COL_PINS, ROW_PINS, LedMatrix
    clock = Clock()
    pins = [Pin(f"P0.{i:02d}", i) for i in range(32)]
    matrix = LedMatrix(clock, pins, window_ms=18)
    for c in COL_PINS:
        pins[c].drive("gpio", True)                         # all columns off (high)
    # scan: row 1 for 6 ms with column 1 low (LED (0,0)), row 2 for 6 ms with
    # column 1 low for 1 ms only (LED (4,2) at 1/6 duty), row 3 for 6 ms dark
    for _ in range(4):
        pins[ROW_PINS[0]].drive("gpio", True)
        pins[COL_PINS[0]].drive("gpio", False)
        run_ms(clock, 6)
        pins[COL_PINS[0]].drive("gpio", True)
        pins[ROW_PINS[0]].drive("gpio", False)
        pins[ROW_PINS[1]].drive("gpio", True)
        pins[COL_PINS[0]].drive("gpio", False)
        run_ms(clock, 1)
        pins[COL_PINS[0]].drive("gpio", True)
        run_ms(clock, 5)
        pins[ROW_PINS[1]].drive("gpio", False)
        pins[ROW_PINS[2]].drive("gpio", True)
        run_ms(clock, 6)
        pins[ROW_PINS[2]].drive("gpio", False)
    b = matrix.leds()
    assert b[0, 0] == 1.0
    assert abs(b[2, 4] - 1 / 6) < 1e-9
    assert (b > 0).sum() == 2                               # nothing else lit
    assert matrix.bits()[0] == "10000" and matrix.bits()[2] == "00001"
