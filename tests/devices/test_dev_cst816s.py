"""CST816S through an I2cBus with real INT/RST pins, events on the clock."""
import pytest

from emu.buses import I2cBus
from emu.clock import TICKS_PER_MS, Clock
from emu.devices.cst816s import Cst816s
from emu.signals import Pin
from helpers.devices import i2c_read, i2c_write


@pytest.fixture
def rig():
    clock = Clock()
    intp, rst = Pin("INT", 28), Pin("RST", 10)
    intp.set_pull(True)
    rst.drive("host", True)
    dev = Cst816s(clock, intp, rst)
    bus = I2cBus("twi1")
    bus.attach(dev, 0x15)
    edges = []
    intp.on_change(lambda lvl: edges.append((clock.now, lvl)))
    return clock, bus, dev, intp, rst, edges


def test_tap_at_exact_time_pulses_int_and_reports(rig):
    clock, bus, dev, intp, rst, edges = rig
    dev.tap(120, 200, delay_ms=5)
    clock.advance_to(5 * TICKS_PER_MS - 1)        # one tick early: nothing yet
    assert intp.level and not edges
    clock.advance_to(5 * TICKS_PER_MS)
    assert edges == [(5 * TICKS_PER_MS, False)]
    assert i2c_read(bus, 0x15, 0x01, 6) == bytes([5, 1, 0x40, 120, 0, 200])
    clock.advance_to(10 * TICKS_PER_MS)
    assert intp.level and edges[-1][1] is True    # pulse ended, pull-up


@pytest.mark.parametrize("direction,code", [("down", 1), ("up", 2), ("left", 3), ("right", 4)])
def test_swipe_codes(rig, direction, code):
    clock, bus, dev, *_ = rig
    dev.swipe(direction)
    clock.advance_to(clock.now + 1)
    assert i2c_read(bus, 0x15, 0x01, 1)[0] == code


def test_double_tap_and_long_press(rig):
    clock, bus, dev, *_ = rig
    dev.double_tap(10, 20)
    clock.advance_to(1)
    assert i2c_read(bus, 0x15, 0x01, 6) == bytes([0x0B, 1, 0x40, 10, 0, 20])
    dev.long_press(30, 40)
    clock.advance_to(clock.now + 999 * TICKS_PER_MS)
    assert i2c_read(bus, 0x15, 0x01, 1)[0] == 0x0B    # not yet a long press
    clock.advance_to(clock.now + 2 * TICKS_PER_MS)
    assert i2c_read(bus, 0x15, 0x01, 1)[0] == 0x0C


def test_sleep_nacks_until_reset_and_ignores_touch(rig):
    clock, bus, dev, intp, rst, edges = rig
    assert i2c_write(bus, 0x15, 0xA5, b"\x03")
    assert i2c_read(bus, 0x15, 0x01, 6) is None       # address NACK
    dev.tap(1, 2)
    clock.advance_to(clock.now + TICKS_PER_MS)
    assert not edges                                  # no interrupt while asleep
    rst.drive("host", False)
    rst.drive("host", True)
    assert i2c_read(bus, 0x15, 0x01, 6) == bytes(6)


def test_version_read(rig):
    clock, bus, dev, *_ = rig
    v = i2c_read(bus, 0x15, 0xA6, 4)
    assert len(v) == 4 and v[1] == 0xB4


def test_with_en_touch_the_report_is_contact_then_up(rig):
    """IrqCtl EnTouch (Zephyr writes 0x60, InfiniTime 0x70): the gesture's
    report says the finger is on the panel (event 2, 'contact'), the lift
    report after it says 'up' (event 1): Zephyr's kscan driver takes the
    first for a press and the second for a release."""
    clock, bus, dev, intp, rst, edges = rig
    i2c_write(bus, 0x15, 0xFA, bytes([0x60]))
    dev.tap(100, 50)
    clock.advance_to(1)
    assert i2c_read(bus, 0x15, 0x01, 6) == bytes([5, 1, 0x80, 100, 0, 50])
    clock.advance_to(30 * TICKS_PER_MS)
    assert i2c_read(bus, 0x15, 0x01, 3) == bytes([0, 0, 0x40])


def test_board_pull_up_holds_int_whatever_the_chip_pull():
    """The PineTime's INT pull-up is on the board: a firmware that configures
    P0.28 without a pull (Zephyr) still sees the line high between pulses."""
    p = Pin("INT", 28)
    p.set_board_pull(True)
    p.set_pull(None)                       # the chip's pull off
    assert p.level is True
    p.drive("touch", False)
    assert p.level is False
    p.drive("touch", None)
    assert p.level is True
    p.set_pull(False)                      # the chip's own pull decides when set
    assert p.level is False
