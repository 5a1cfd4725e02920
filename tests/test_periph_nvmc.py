"""NVMC tests (PS v1.4 section 11): register level and firmware."""
import struct

from emu.clock import ms, us
from emu.soc.nrf52832 import Nrf52832
from conftest import assert_firmware_passed

READY, CONFIG, ERASEPAGE, ERASEALL, ERASEUICR = 0x400, 0x504, 0x508, 0x50C, 0x514


def test_write_needs_wen_and_only_clears_bits():
    soc = Nrf52832()
    n = soc.peripherals["nvmc"]
    before = b"\xff" * 8
    after = struct.pack("<II", 0x12345678, 0xFFFFFFFF)
    assert n.cpu_flash_write(0x1000, before, after) == before     # Ren: ignored
    assert not n.flash_dirty
    n.write(CONFIG, 1)
    out = n.cpu_flash_write(0x1000, struct.pack("<II", 0xF0F0F0F0, 0xFFFFFFFF), after)
    assert out == struct.pack("<II", 0x12345678 & 0xF0F0F0F0, 0xFFFFFFFF)
    assert n.flash_dirty
    assert n.read(READY) == 0
    soc.clock.advance_to(us(41) - 1)       # one word: 41 us busy
    assert n.read(READY) == 0
    soc.clock.advance_to(us(41))
    assert n.read(READY) == 1


def test_erase_page_uicr_and_all():
    soc = Nrf52832()
    n = soc.peripherals["nvmc"]
    changes = []
    n.on_change.append(lambda a, b: changes.append((a, b)))
    soc.cpu.write_mem(0x3000, b"\0" * 8)
    soc.cpu.write_mem(0x10001080, b"\0" * 4)
    n.write(ERASEPAGE, 0x3000)             # CONFIG=Ren: ignored
    assert soc.cpu.read_mem(0x3000, 4) == b"\0" * 4
    n.write(CONFIG, 2)
    n.write(ERASEPAGE, 0x3000)
    assert soc.cpu.read_mem(0x3000, 8) == b"\xff" * 8
    assert changes == [(0x3000, 0x4000)]
    soc.clock.advance_to(ms(85) - 1)
    assert n.read(READY) == 0
    soc.clock.advance_to(ms(85))
    assert n.read(READY) == 1
    n.write(ERASEUICR, 1)
    assert soc.cpu.read_mem(0x10001080, 4) == b"\xff" * 4
    soc.cpu.write_mem(0x5000, b"\0")
    n.write(ERASEALL, 1)
    assert soc.cpu.read_mem(0x5000, 1) == b"\xff"


def test_firmware_flash_and_uicr(run_firmware):
    m, r = run_firmware("periph_nvmc", ms=600, board="nrf52832")
    assert_firmware_passed(m, r, min_passes=9)
    assert m.soc.uicr_bytes()[0x80:0x84] == struct.pack("<I", 0xCAFEF00D)
    assert m.soc.flash_bytes()[0x7F000:0x7F004] == struct.pack("<I", 0x12340078)
    assert m.soc.peripherals["nvmc"].flash_dirty
