"""TWIM EasyDMA: write-then-read with LASTTX_STARTRX + LASTRX_STOP, NACKs."""
from helpers.periph import twi_master

RAM = 0x20003000
BIT = (32 << 32) // 0x01980000      # K100


def test_write_read_chain():
    soc, t, dev = twi_master("serial0", addr=0x18, freq=0x01980000, enable=6)
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
    soc, t, dev = twi_master("serial0", addr=0x18, freq=0x01980000, enable=6)
    t.write(0x588, 0x19)
    t.write(0x548, 0)
    t.write(0x008, 1)
    soc.clock.advance_to(soc.clock.now + 20 * BIT)
    assert t.read(0x124) == 1 and t.read(0x4C4) == 2 and t.read(0x160) == 0


def test_dnack_counts_amount():
    soc, t, dev = twi_master("serial0", addr=0x18, freq=0x01980000, enable=6)
    dev.i2c_write = lambda b: (dev.log.append(("W", b)), len(dev.log) < 3)[1]
    soc.cpu.write_mem(RAM, bytes([1, 2, 3, 4]))
    t.write(0x544, RAM); t.write(0x548, 4)
    t.write(0x008, 1)
    soc.clock.advance_to(soc.clock.now + 60 * BIT)
    assert t.read(0x4C4) == 4 and t.read(0x54C) == 2
