"""BMA421 through an I2cBus: chip id, config burst, init, accel data, steps."""
import pytest

from emu.buses import I2cBus
from emu.clock import TICKS_PER_SECOND, Clock
from emu.devices.bma421 import Bma421
from helpers.devices import i2c_read, i2c_write


@pytest.fixture
def rig():
    clock = Clock()
    dev = Bma421(clock)
    bus = I2cBus("twi1")
    bus.attach(dev, 0x18)
    return clock, bus, dev


def init(bus, n=6144):
    i2c_write(bus, 0x18, 0x7C, b"\x00")            # PWR_CONF: adv power save off
    i2c_write(bus, 0x18, 0x59, b"\x00")            # INIT_CTRL = 0
    i2c_write(bus, 0x18, 0x5B, b"\x00")
    i2c_write(bus, 0x18, 0x5C, b"\x00")
    cfg = bytes((i * 7) & 0xFF for i in range(n))
    i2c_write(bus, 0x18, 0x5E, cfg)
    i2c_write(bus, 0x18, 0x59, b"\x01")            # INIT_CTRL = 1
    return cfg


def test_chip_id(rig):
    assert i2c_read(rig[1], 0x18, 0x00, 1) == b"\x11"


def test_config_burst_initialises_and_reads_back(rig):
    clock, bus, dev = rig
    assert i2c_read(bus, 0x18, 0x2A, 1) == b"\x00"
    cfg = init(bus)
    assert i2c_read(bus, 0x18, 0x2A, 1) == b"\x01"
    assert dev.config_loaded == len(cfg) and bytes(dev.config[:len(cfg)]) == cfg
    i2c_write(bus, 0x18, 0x5B, b"\x00")
    i2c_write(bus, 0x18, 0x5C, b"\x10")            # word 0x100 -> byte 0x200
    assert i2c_read(bus, 0x18, 0x5E, 4) == cfg[0x200:0x204]


def test_short_config_is_init_error(rig):
    init(rig[1], n=100)
    assert i2c_read(rig[1], 0x18, 0x2A, 1) == b"\x02"


def test_acceleration_from_orientation(rig):
    clock, bus, dev = rig
    assert i2c_read(bus, 0x18, 0x12, 6) == bytes(6)   # accel disabled
    i2c_write(bus, 0x18, 0x7D, b"\x04")
    i2c_write(bus, 0x18, 0x41, b"\x00")               # +-2 g: 1024 LSB/g
    dev.set_orientation(0.5, -1.0, 0.0)
    d = i2c_read(bus, 0x18, 0x12, 6)
    vals = [int.from_bytes(d[i:i + 2], "little", signed=True) >> 4 for i in (0, 2, 4)]
    assert vals == [512, -1024, 0]


def test_steps_only_count_when_initialised_and_enabled(rig):
    clock, bus, dev = rig
    dev.walk(50)
    assert dev.steps == 0
    init(bus)
    i2c_write(bus, 0x18, 0x7D, b"\x04")
    dev.walk(1234)
    assert int.from_bytes(i2c_read(bus, 0x18, 0x1E, 4), "little") == 1234
    dev.set_steps_per_minute(120)
    clock.advance_to(clock.now + 30 * TICKS_PER_SECOND)
    assert int.from_bytes(i2c_read(bus, 0x18, 0x1E, 4), "little") == 1294


def test_softreset(rig):
    clock, bus, dev = rig
    init(bus)
    i2c_write(bus, 0x18, 0x7E, b"\xB6")
    assert i2c_read(bus, 0x18, 0x2A, 1) == b"\x00"
