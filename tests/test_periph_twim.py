"""TWIM EasyDMA: write-then-read with LASTTX_STARTRX + LASTRX_STOP, NACKs."""
from emu.soc.nrf52832 import Nrf52832
from helpers.periph import Reg8

RAM = 0x20003000
BIT = (32 << 32) // 0x01980000      # K100


def make():
    soc = Nrf52832()
    dev = Reg8()
    soc.buses.add_i2c("i2c", scl=7, sda=6).attach(dev, 0x18)
    t = soc.serial0
    t.write(0x508, 7)                # PSEL.SCL
    t.write(0x50C, 6)                # PSEL.SDA
    t.write(0x524, 0x01980000)
    t.write(0x588, 0x18)
    t.write(0x500, 6)
    return soc, t, dev


def test_write_read_chain():
    soc, t, dev = make()
    soc.cpu.write_mem(RAM, bytes([0x20]))
    t.write(0x544, RAM); t.write(0x548, 1)
    t.write(0x534, RAM + 16); t.write(0x538, 4)
    t.write(0x200, (1 << 7) | (1 << 12))   # LASTTX_STARTRX, LASTRX_STOP
    t0 = soc.clock.now
    t.write(0x008, 1)
    assert t.read(0x150) == 1
    soc.clock.advance_to(t0 + (1 + 18) * BIT - 1)
    assert t.read(0x160) == 0
    soc.clock.advance_to(t0 + (1 + 18) * BIT)
    assert t.read(0x160) == 1 and t.read(0x14C) == 1
    soc.clock.advance_to(soc.clock.now + 60 * BIT)
    assert t.read(0x15C) == 1 and t.read(0x104) == 1
    assert soc.cpu.read_mem(RAM + 16, 4) == bytes([0x20, 0x21, 0x22, 0x23])
    assert t.read(0x53C) == 4 and t.read(0x54C) == 1
    assert dev.log[-1] == ("P",)


def test_anack():
    soc, t, dev = make()
    t.write(0x588, 0x19)
    t.write(0x548, 0)
    t.write(0x008, 1)
    soc.clock.advance_to(soc.clock.now + 20 * BIT)
    assert t.read(0x124) == 1 and t.read(0x4C4) == 2 and t.read(0x160) == 0


def test_dnack_counts_amount():
    soc, t, dev = make()
    dev.i2c_write = lambda b: (dev.log.append(("W", b)), len(dev.log) < 3)[1]
    soc.cpu.write_mem(RAM, bytes([1, 2, 3, 4]))
    t.write(0x544, RAM); t.write(0x548, 4)
    t.write(0x008, 1)
    soc.clock.advance_to(soc.clock.now + 60 * BIT)
    assert t.read(0x4C4) == 4 and t.read(0x54C) == 2
