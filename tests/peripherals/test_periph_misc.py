"""Storage blocks whose tasks acknowledge: RADIO, QDEC, COMP, I2S, PDM."""
from emu.soc.nrf52832 import Nrf52832

US = 512


def test_radio_txen_ready_and_disable():
    soc = Nrf52832()
    r = soc.radio
    t0 = soc.clock.now
    r.write(0x000, 1)                     # TXEN
    soc.clock.advance_to(t0 + 140 * US - 1)
    assert r.read(0x100) == 0
    soc.clock.advance_to(t0 + 140 * US)
    assert r.read(0x100) == 1 and r.read(0x550) == 10   # READY, TxIdle
    r.write(0x010, 1)                     # DISABLE
    soc.clock.advance_to(soc.clock.now + 6 * US)
    assert r.read(0x110) == 1 and r.read(0x550) == 0


def test_radio_short_ready_start_end():
    soc = Nrf52832()
    r = soc.radio
    r.write(0x650, 1)                     # MODECNF0.RU = Fast
    r.write(0x200, 1)                     # READY_START
    r.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + 200 * US)
    assert r.read(0x10C) == 1             # END


def test_qdec_pdm_i2s_comp_acks():
    soc = Nrf52832()
    soc.qdec.write(0x004, 1)
    assert soc.qdec.read(0x110) == 1
    soc.pdm.write(0x000, 1)
    soc.pdm.write(0x004, 1)
    soc.clock.advance_to(soc.clock.now + 3 * US)
    assert soc.pdm.read(0x100) == 1 and soc.pdm.read(0x104) == 1
    soc.i2s.write(0x004, 1)
    soc.clock.advance_to(soc.clock.now + 2 * US)
    assert soc.i2s.read(0x108) == 1
    c = soc.comp_lpcomp
    c.write(0x304, 1)                     # INTENSET.READY
    c.write(0x000, 1)
    assert not soc.cpu.irq_level & (1 << 19)
    soc.clock.advance_to(soc.clock.now + 10 * US)
    assert c.read(0x100) == 1 and soc.cpu.irq_level & (1 << 19)
