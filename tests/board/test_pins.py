"""Devices hang on pins, and a pin a peripheral selects follows that peripheral.

Firmware level: firmware/tests/pinetime_pins.c drives the PineTime's display,
NOR and sensors through legacy SPI1, SPIM2, TWIM1 and TWIM0 (any instance on
the pins reaches them) and points instances at other pins (nothing there);
firmware/tests/periph_pwm_pins.c checks that PWM0's pin ignores GPIO OUT
while it generates.  Register level: the routing rules of emu/buses.py
(PinBuses) and the serial slots (emu/peripherals/serial.py PinSignals).
"""
import logging

import numpy as np
import pytest

from conftest import assert_firmware_passed
from emu import Machine
from emu.soc.nrf52832 import Nrf52832
from helpers.periph import echo_on_spi, on_pins


def rgb565(c):
    r5, g6, b5 = (c >> 11) & 0x1F, (c >> 5) & 0x3F, c & 0x1F
    return ((r5 << 3) | (r5 >> 2), (g6 << 2) | (g6 >> 4), (b5 << 3) | (b5 >> 2))


def window(base, w=8, h=4):
    """The pixels pinetime_pins.c's lcd_window() writes, as RGB."""
    return np.array([[rgb565(base ^ ((i << 11) | (j << 5) | (i + j))) for i in range(w)]
                     for j in range(h)], dtype=np.uint8)


# ---------------------------------------------------------------- firmware
def test_any_instance_on_the_pins_reaches_the_pinetime_devices(fw, caplog):
    m = Machine(fw("pinetime_pins"), board="pinetime", flash_file=None)
    with caplog.at_level(logging.WARNING):
        r = m.run(ms=2000)
    assert_firmware_passed(m, r, min_passes=19)
    b = m.board
    # the NOR holds what SPI1 and SPIM2 programmed
    assert b.flash.read(0x2000, 16) == bytes((0x11 + 7 * i) & 0xFF for i in range(16))
    assert b.flash.read(0x3000, 16) == bytes((0x55 + 7 * i) & 0xFF for i in range(16))
    # the display memory holds both windows; the one SPIM2 drew on other pins is absent
    s = b.screen()
    assert np.array_equal(s[20:24, 10:18], window(0xA5A5))          # through SPI1
    assert np.array_equal(s[20:24, 100:108], window(0x5A5A))        # through SPIM2
    assert not s[200:204, 200:208].any()                            # never reached it
    assert b.display.commands.count(0x04) == 2                      # RDDID: SPI1, SPIM2
    assert m.soc.buses.routes == {}                                 # all disabled at the end
    assert "contention" not in caplog.text and "both enabled" not in caplog.text


def test_pwm_pin_follows_the_pwm_not_gpio_out(fw, caplog):
    m = Machine(fw("periph_pwm_pins"), board="pinetime", flash_file=None)
    with caplog.at_level(logging.WARNING):
        r = m.run(ms=200)
    assert_firmware_passed(m, r, min_passes=13)
    assert "contention" not in caplog.text
    tl = m.soc.pwm0.timeline
    assert [d for (_t, _p, d) in tl] == [0.0, None, 1.0, None, 0.0, None]
    # the motor (P0.16, active low) ran while the PWM held the pin low
    # with DIR output: the first and third sequences, not the second
    on = [t for t, v in m.board.motor.timeline if v]
    assert tl[0][0] in on and tl[2][0] not in on and tl[4][0] not in on


# ---------------------------------------------------------------- registers
def spi_soc():
    soc = Nrf52832()
    bus, dev = echo_on_spi(soc, 5)
    return soc, bus, dev


def spim_byte(soc, slot, b):
    """One SPIM byte (TXD and RXD in RAM at 0x20004000): the byte read."""
    soc.cpu.write_mem(0x20004000, bytes([b]))
    slot.write(0x544, 0x20004000); slot.write(0x548, 1)
    slot.write(0x534, 0x20004100); slot.write(0x538, 1)
    slot.write(0x010, 1)
    soc.clock.advance_to(soc.clock.now + 100_000)
    return soc.cpu.read_mem(0x20004100, 1)[0]


def test_route_follows_enable_and_psel_writes():
    soc, bus, dev = spi_soc()
    s = soc.serial1
    on_pins(soc, s, 2, 3, 4)
    assert s.active is None and soc.buses.routes == {}
    s.write(0x500, 7)                            # SPIM1 on the bus's pins
    assert s.active.spi_bus is bus and soc.buses.routes == {"serial1.spim": bus}
    spim_byte(soc, s, 0x41)
    assert dev.got == [0x41]
    s.write(0x508, 9)                            # SCK elsewhere while enabled: cut off
    assert s.active.spi_bus is None and soc.buses.routes == {}
    assert spim_byte(soc, s, 0x42) == 0x00 and dev.got == [0x41]   # MISO P0.04 floats low
    s.write(0x508, 2)
    spim_byte(soc, s, 0x43)
    assert dev.got == [0x41, 0x43]
    s.write(0x500, 0)
    assert soc.buses.routes == {} and s.variant(7).spi_bus is None


def test_disconnected_miso_reads_zero_but_the_device_is_clocked():
    soc, bus, dev = spi_soc()
    s = soc.serial2
    on_pins(soc, s, 2, 3, 0xFFFFFFFF)            # write-only master
    s.write(0x500, 7)
    assert s.active.spi_bus is bus and not s.active.miso_on_bus
    spim_byte(soc, s, 0x10)
    assert spim_byte(soc, s, 0x20) == 0x00 and dev.got == [0x10, 0x20]


def test_two_masters_on_one_bus_both_drive_it_logged_once(caplog):
    soc, bus, dev = spi_soc()
    for slot in (soc.serial0, soc.serial2):
        on_pins(soc, slot, 2, 3, 4)
    with caplog.at_level(logging.WARNING, logger="emu.buses"):
        soc.serial0.write(0x500, 1)              # legacy SPI0
        soc.serial2.write(0x500, 7)              # and SPIM2 on the same pins
        assert soc.buses.masters_of(bus) == ["serial0.spi", "serial2.spim"]
        spim_byte(soc, soc.serial2, 0x77)
        soc.serial0.write(0x51C, 0x66)           # 250 kbps: 32 us
        soc.clock.advance_to(soc.clock.now + 100_000)
        soc.serial0.read(0x108)
        soc.serial2.write(0x500, 0)
        soc.serial2.write(0x500, 7)              # again: not logged twice
    assert dev.got == [0x77, 0x66]
    assert caplog.text.count("both enabled") == 1


def test_i2c_needs_both_pins_and_a_late_bus_is_routed():
    soc = Nrf52832()
    t = soc.serial0
    t.write(0x508, 7); t.write(0x50C, 6)
    t.write(0x500, 6)                            # TWIM0 enabled before the board wires the bus
    assert t.active.i2c_bus is None
    bus = soc.buses.add_i2c("i2c", scl=7, sda=6)
    assert t.active.i2c_bus is bus               # routed when the bus appeared
    t.write(0x50C, 5)                            # SDA elsewhere: nothing answers
    assert t.active.i2c_bus is None
    with pytest.raises(ValueError, match="P0.07"):
        soc.buses.add_spi("spi", sck=7, mosi=8, miso=9)   # a pin belongs to one bus


def test_enabled_serial_selects_its_output_pins_over_gpio():
    soc, bus, dev = spi_soc()
    g = soc.gpio
    g.write(0x518, (1 << 2) | (1 << 3))          # DIRSET SCK, MOSI; OUT low
    s = soc.serial0
    on_pins(soc, s, 2, 3, 4)
    s.write(0x554, 4)                            # CONFIG.CPOL = 1: SCK idles high
    s.write(0x500, 1)
    assert soc.pins[2].drivers == {"serial0.spi.SCK": True}
    assert soc.pins[3].drivers == {"serial0.spi.MOSI": False}
    assert 4 not in g.selected and not soc.pins[4].driven          # MISO: an input
    g.write(0x508, 1 << 2)                       # OUTSET SCK: the SPI keeps it
    assert soc.pins[2].drivers == {"serial0.spi.SCK": True}
    s.write(0x554, 0)                            # CPOL 0 (while enabled): idles low
    assert soc.pins[2].drivers == {"serial0.spi.SCK": False}
    s.write(0x500, 0)
    assert soc.pins[2].drivers == {"gpio": True} and soc.pins[3].drivers == {"gpio": False}
    # TWI: SCL/SDA released whatever GPIO OUT/DIR say
    g.write(0x518, (1 << 6) | (1 << 7))
    t = soc.serial1
    t.write(0x508, 7); t.write(0x50C, 6)
    t.write(0x500, 5)
    assert not soc.pins[6].driven and not soc.pins[7].driven
    t.write(0x500, 0)
    assert soc.pins[7].drivers == {"gpio": False}


def test_snapshot_keeps_routes_and_selections(fw, tmp_path):
    m = Machine(fw("pinetime_display"), board="pinetime", flash_file=None)
    m.run(ms=50)
    spi = m.soc.serial0.active
    assert spi is not None and spi.spi_bus is m.board.spi
    path = tmp_path / "s.snap"
    m.save_snapshot(str(path))
    m2 = Machine.from_snapshot(str(path), fw("pinetime_display"))
    spi2 = m2.soc.serial0.active
    assert spi2.spi_bus is m2.board.spi and spi2.miso_on_bus
    assert m2.soc.buses.routes == {"serial0.spi": m2.board.spi}
    assert {n: dict(p.drivers) for n, p in enumerate(m2.soc.pins)} == \
        {n: dict(p.drivers) for n, p in enumerate(m.soc.pins)}
    r1, r2 = m.run(ms=3000), m2.run(ms=3000)
    assert (r1.reason, r1.cycles) == (r2.reason, r2.cycles)
    assert m.board.screen().tobytes() == m2.board.screen().tobytes()
