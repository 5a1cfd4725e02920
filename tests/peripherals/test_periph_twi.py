"""Legacy TWI master: address/data phases at 9 bit times, ERRORSRC, BB shorts."""
from helpers.periph import Reg8, twi_master

BIT = (32 << 32) // 0x06680000      # K400 ticks per bit


def test_write_then_read_polled():
    soc, t, dev = twi_master("serial1", addr=0x15, freq=0x06680000, enable=5)
    t.write(0x51C, 0x10)             # register pointer
    t0 = soc.clock.now
    t.write(0x008, 1)                # STARTTX
    soc.clock.advance_to(t0 + 10 * BIT + 9 * BIT - 1)
    assert t.read(0x11C) == 0        # one tick before TXDSENT
    soc.clock.advance_to(t0 + 19 * BIT)
    assert t.read(0x11C) == 1
    # read 3 bytes: BB_SUSPEND, RESUME after each; BB_STOP for the last
    t.write(0x11C, 0)
    t.write(0x200, 1)
    t.write(0x000, 1)                # STARTRX (repeated start)
    got = []
    for i in range(3):
        while not t.read(0x108):
            soc.clock.advance_to(soc.clock.now + BIT)
        t.write(0x108, 0)
        got.append(t.read(0x518))
        if i < 2:
            assert t.read(0x148) == 1, (i, t.active._state, t.active.events)
            t.write(0x148, 0)
            if i == 1:
                t.write(0x200, 2)    # BB_STOP before the last byte starts (as nrfx does)
            t.write(0x020, 1)        # RESUME
    soc.clock.advance_to(soc.clock.now + 2 * BIT)
    assert t.read(0x104) == 1        # STOPPED
    assert got == [0x10, 0x11, 0x12]
    assert dev.log == [("S", False), ("W", 0x10), ("S", True), ("P",)]


def test_address_nack_sets_errorsrc_w1c():
    soc, t, dev = twi_master("serial1", addr=0x15, freq=0x06680000, enable=5)
    t.write(0x588, 0x44)             # nobody there
    t.write(0x008, 1)
    soc.clock.advance_to(soc.clock.now + 11 * BIT)
    assert t.read(0x124) == 1 and t.read(0x4C4) == 2
    t.write(0x4C4, 2)
    assert t.read(0x4C4) == 0
    t.write(0x014, 1)
    soc.clock.advance_to(soc.clock.now + 2 * BIT)
    assert t.read(0x104) == 1


def test_overrun_when_rxd_not_read():
    soc, t, dev = twi_master("serial1", addr=0x15, freq=0x06680000, enable=5)
    dev.ptr = 0
    t.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + 40 * BIT)   # several bytes, RXD never read
    assert t.read(0x4C4) & 1


def test_firmware_twi_and_twim(fw):
    from conftest import assert_firmware_passed
    from emu import Machine
    m = Machine(fw("periph_twi"), board="nrf52832")
    d1, d0 = Reg8(), Reg8()
    m.soc.buses.add_i2c("i2c_a", scl=7, sda=6).attach(d1, 0x15)
    m.soc.buses.add_i2c("i2c_b", scl=27, sda=26).attach(d0, 0x18)
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=10)
    assert d1.log[:4] == [("S", False), ("W", 1), ("S", True), ("P",)]
    assert d0.log == [("S", False), ("W", 0x20), ("S", True), ("P",)]
