"""Legacy SPI master: byte timing from FREQUENCY, double-buffered TXD/RXD, READY."""
from helpers.periph import Echo, spi_master


def test_byte_completes_after_eight_bit_times():
    # 8 MHz: 1 us = 512 ticks per byte
    soc, s, dev = spi_master("serial0", cs=5, enable=1, freq=0x80000000)
    t0 = soc.clock.now
    s.write(0x51C, 0x41)
    soc.clock.advance_to(t0 + 511)   # one tick short
    assert s.read(0x108) == 0 and dev.got == []
    soc.clock.advance_to(t0 + 512)
    assert s.read(0x108) == 1 and dev.got == [0x41]


def test_late_poll_sees_back_to_back_timing():
    """Polled lazily: a READY read long after the bytes still gives wire timing."""
    soc, s, dev = spi_master("serial0", cs=5, enable=1, freq=0x80000000)
    s.write(0x304, 0)                # no interrupt: completion is lazy
    t0 = soc.clock.now
    s.write(0x51C, 1)
    s.write(0x51C, 2)                # starts at t0 + 512 on the wire
    soc.clock.advance_to(t0 + 5000)
    assert s.read(0x108) == 1 and dev.got == [1, 2]
    assert s.active._due == t0 + 1024
    assert s.read(0x518) == 0        # first byte back from the echo device


def test_frequency_scales_time():
    soc, s, dev = spi_master("serial0", cs=5, enable=1, freq=0x10000000)   # 1 MHz: 8 us per byte
    t0 = soc.clock.now
    s.write(0x51C, 1)
    soc.clock.advance_to(t0 + 8 * 512 - 1)
    assert s.read(0x108) == 0
    soc.clock.advance_to(t0 + 8 * 512)
    assert s.read(0x108) == 1


def test_double_buffer_and_rx_fifo():
    soc, s, dev = spi_master("serial0", cs=5, enable=1)
    t0 = soc.clock.now
    s.write(0x51C, 0x10)
    s.write(0x51C, 0x20)             # buffered behind the first
    soc.clock.advance_to(t0 + 1024)
    assert s.read(0x108) == 1        # both bytes completed back to back
    assert dev.got == [0x10, 0x20]
    s.write(0x108, 0)
    assert s.read(0x518) == 0x00     # first RX byte; second moves up -> READY again
    assert s.read(0x108) == 1
    assert s.read(0x518) == 0x11


def test_ready_interrupt_via_intenset():
    soc, s, dev = spi_master("serial0", cs=5, enable=1)
    s.write(0x304, 1 << 2)           # INTENSET.READY
    s.write(0x51C, 0)
    assert not soc.cpu.irq_level & (1 << 3)
    soc.clock.advance_to(soc.clock.now + 512)
    assert soc.cpu.irq_level & (1 << 3)
    s.write(0x108, 0)
    assert not soc.cpu.irq_level & (1 << 3)


def test_unselected_device_sees_nothing():
    soc, s, dev = spi_master("serial0", cs=5, enable=1)
    soc.pins[5].drive("test", 1)
    s.write(0x51C, 0x55)
    soc.clock.advance_to(soc.clock.now + 512)
    assert dev.got == [] and s.read(0x518) == 0xFF


def test_firmware_spi_and_spim(fw):
    """Legacy SPI polled + SPIM2 EasyDMA/IRQ from firmware, fake device on the buses."""
    from conftest import assert_firmware_passed
    from emu import Machine
    m = Machine(fw("periph_spi"), board="nrf52832")
    dev = Echo()
    m.soc.buses.add_spi("spi_a", sck=2, mosi=3, miso=4).attach(dev, m.soc.pins[25])
    m.soc.buses.add_spi("spi_b", sck=11, mosi=12, miso=13).attach(dev, m.soc.pins[27])
    m.soc.pins[25].drive("test", 0)
    m.soc.pins[27].drive("test", 0)
    r = m.run(ms=20)
    assert_firmware_passed(m, r, min_passes=6)
    assert dev.got == list(range(0x10, 0x18)) + list(range(0xA0, 0xB0))
