"""PWM: sequence timing from COUNTERTOP/PRESCALER/REFRESH, duty timeline, STOP, LOOP."""
import struct

from emu.soc.nrf52832 import Nrf52832

RAM = 0x20006000


def motor(soc, values=(0x8000 | 4000,), refresh=0, top=16000):
    p = soc.pwm0
    soc.cpu.write_mem(RAM, struct.pack(f"<{len(values)}H", *values))
    p.write(0x560, 16)               # PSEL.OUT[0] = P0.16
    p.write(0x500, 1)
    p.write(0x504, 0)                # Up
    p.write(0x508, top)              # 1 ms at 16 MHz
    p.write(0x50C, 0)
    p.write(0x510, 0)                # Common, RefreshCount
    p.write(0x520, RAM); p.write(0x524, len(values))
    p.write(0x528, refresh); p.write(0x52C, 0)
    return p


def test_wasp_motor_pulse():
    soc = Nrf52832()
    p = motor(soc)
    t0 = soc.clock.now
    p.write(0x008, 1)                # SEQSTART[0]
    assert p.read(0x108) == 1
    assert p.duty(0) == 0.25
    assert p.timeline == [(t0, 16, 0.25)]
    period = 16000 * 32
    soc.clock.advance_to(t0 + period - 1)
    assert p.read(0x110) == 0        # one tick before SEQEND[0]
    soc.clock.advance_to(t0 + period)
    assert p.read(0x110) == 1
    soc.clock.advance_to(t0 + 40 * period + period // 3)   # ~40 ms later: stop
    p.write(0x004, 1)
    assert p.read(0x104) == 0        # waits for the end of the period
    soc.clock.advance_to(t0 + 41 * period)
    assert p.read(0x104) == 1
    assert p.timeline[-1] == (t0 + 41 * period, 16, None)
    assert not soc.pins[16].driven


def test_refresh_and_steps_and_loop():
    soc = Nrf52832()
    p = motor(soc, values=(0x8000, 0x8000 | 500, 0), refresh=1, top=1000)   # 3 steps x 2 periods
    p.write(0x514, 2)                # LOOP = 2: seq0, seq1, seq0, seq1
    p.write(0x540, RAM); p.write(0x544, 1)       # SEQ[1]: one value
    p.write(0x548, 0)                # SEQ[1].REFRESH = 0 (reset value is 1)
    p.write(0x200, 1 << 4)           # LOOPSDONE_STOP
    t0 = soc.clock.now
    p.write(0x008, 1)
    per = 1000 * 32
    assert [d for (_, _, d) in p.timeline] == [0.0, 0.5, 1.0]
    assert [t - t0 for (t, _, _) in p.timeline] == [0, 2 * per, 4 * per]
    total = 2 * (6 * per + per)       # SEQ[1].REFRESH = 0: one period
    soc.clock.advance_to(t0 + total - 1)
    assert p.read(0x11C) == 0
    soc.clock.advance_to(t0 + total)
    assert p.read(0x11C) == 1 and p.read(0x114) == 1
    soc.clock.advance_to(t0 + total + per)
    assert p.read(0x104) == 1


def test_prescaler_and_updown():
    soc = Nrf52832()
    p = motor(soc, top=100)
    p.write(0x50C, 3)                # 2 MHz
    p.write(0x504, 1)                # UpAndDown: period = 2 * TOP
    t0 = soc.clock.now
    p.write(0x008, 1)
    soc.clock.advance_to(t0 + 200 * 256 - 1)
    assert p.read(0x110) == 0
    soc.clock.advance_to(t0 + 200 * 256)
    assert p.read(0x110) == 1


def test_firmware_motor_pulse(fw):
    from conftest import assert_firmware_passed
    from emu import Machine
    m = Machine(fw("periph_pwm"), board="nrf52832")
    r = m.run(ms=200)
    assert_firmware_passed(m, r, min_passes=2)
    tl = m.soc.pwm0.timeline
    assert tl[0][1:] == (16, 0.25) and tl[-1][1:] == (16, None)
    assert tl[-1][0] > tl[0][0]
