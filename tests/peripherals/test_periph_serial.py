"""Shared-ID serial slots: ENABLE selects the variant, shared storage carries over."""
from emu.soc.nrf52832 import Nrf52832


def test_psel_written_while_disabled_is_seen_by_enabled_variant():
    soc = Nrf52832()
    s = soc.serial0
    s.write(0x508, 7)            # PSEL.SCK (SPI) / PSEL.SCL (TWI) before ENABLE
    s.write(0x524, 0x80000000)   # FREQUENCY
    assert s.read(0x508) == 7
    s.write(0x500, 1)            # ENABLE = SPI
    assert s.active is s.variant(1)
    assert s.read(0x508) == 7 and s.read(0x524) == 0x80000000
    assert s.read(0x500) == 1
    s.write(0x500, 0)
    s.write(0x500, 5)            # now TWI: same address decodes as PSEL.SCL
    assert s.active is s.variant(5)
    assert s.read(0x508) == 7


def test_instance2_has_no_twi_and_tasks_ignored_when_disabled():
    soc = Nrf52832()
    assert soc.serial2.variant(5) is None and soc.serial2.variant(7) is not None
    soc.serial2.write(0x010, 1)   # TASKS_START with the slot disabled: nothing happens
    assert soc.serial2.read(0x14C) == 0
    soc.serial2.write(0x500, 5)   # invalid on instance 2: stays without a model
    assert soc.serial2.active is None


def test_irq_line_follows_active_variant():
    soc = Nrf52832()
    s = soc.serial1
    s.write(0x500, 7)            # SPIM
    s.write(0x304, 1 << 1)       # INTENSET.STOPPED
    s.write(0x014, 1)            # TASKS_STOP while idle -> STOPPED
    assert s.read(0x104) == 1
    assert soc.cpu.irq_level & (1 << 4)
    s.write(0x500, 0)            # disabling drops the variant's line
    assert not soc.cpu.irq_level & (1 << 4)


def test_save_load_state_round_trip_mid_transfer():
    """A state saved mid-byte resumes the transfer at the same tick."""
    from helpers.periph import Echo
    soc = Nrf52832()
    s = soc.serial0
    s.write(0x524, 0x10000000)       # 1 MHz: 4096 ticks per byte
    s.write(0x304, 1 << 2)           # INTENSET.READY: completion is a clock event
    s.write(0x508, 2); s.write(0x50C, 3); s.write(0x510, 4)     # PSEL.SCK/MOSI/MISO
    s.write(0x500, 1)
    t0 = soc.clock.now
    s.write(0x51C, 0x33)
    st = s.save_state()
    soc2 = Nrf52832()
    soc2.clock.now = soc.clock.now
    dev = Echo()
    soc2.buses.add_spi("spi", sck=2, mosi=3, miso=4).attach(dev, soc2.pins[5])
    soc2.pins[5].drive("test", 0)
    soc2.serial0.load_state(st)
    assert soc2.serial0.read(0x500) == 1 and soc2.serial0.read(0x524) == 0x10000000
    soc2.clock.advance_to(t0 + 4095)
    assert dev.got == []
    soc2.clock.advance_to(t0 + 4096)
    assert dev.got == [0x33] and soc2.cpu.irq_level & (1 << 3)
