"""NVMC tests (PS v1.4 section 11): register level and firmware."""
import struct

import pytest

from emu.clock import ms, us
from emu.cpu.cortexm import CortexM
from emu.peripherals.nvmc import T_ERASEPAGE, T_WRITE
from emu.soc.nrf52832 import Nrf52832
from conftest import assert_firmware_passed, verdict

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


# -- the CPU waits for the NVMC when it runs from flash (PS v1.4 11.1) ----------
STALL_CHECKS = 19


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_firmware_cpu_waits_when_running_from_flash(run_firmware, pure):
    """periph_nvmc_stall: from flash an erase or a write holds the CPU to its
    end (READY 1 at the first read, CYCCNT and RTC1 moved on, the TIMER1
    compares due meanwhile counted and stamped at their own times through
    PPI, their interrupt taken after); from RAM the CPU polls READY."""
    m, r = run_firmware("periph_nvmc_stall", ms=600, board="nrf52832", pure_python=pure)
    assert_firmware_passed(m, r, min_passes=STALL_CHECKS)
    assert m.cpu.stalls == 2                               # the erase and the word from flash
    assert m.cpu.stalled_ticks == T_ERASEPAGE + T_WRITE    # whole, to the tick


def test_firmware_stall_is_deterministic(run_firmware):
    runs = [run_firmware("periph_nvmc_stall", ms=600, board="nrf52832") for _ in range(2)]
    assert len({(m.cpu.cycles, m.clock.now, m.console_text()) for m, _r in runs}) == 1


def test_companion_no_stall_fails(run_firmware, monkeypatch):
    """Companion: a CPU that runs on while the NVMC erases from flash (the
    model before) reads READY 0 and does not see the time pass."""
    monkeypatch.setattr(CortexM, "stall_until", lambda self, until: None)
    m, r = run_firmware("periph_nvmc_stall", ms=600, board="nrf52832")
    _passes, fails = verdict(m, r)
    text = "\n".join(fails)
    assert "erase from flash: READY at the first read" in text
    assert "write from flash: READY at the first read" in text
    assert "erase from flash: CYCCNT moved by T_ERASEPAGE" in text
    assert r.exit_code != 0


def test_companion_events_fired_late_fail(run_firmware, monkeypatch):
    """Companion: a stall that only moves the CPU's cycles on (the events due
    meanwhile fire together at its end) is seen: TIMER3's capture of the
    last compare is stamped at 85 ms, not 80."""
    def late(self, until):
        if self._running and self.cs.in_slice:
            self.cs.cycles += -(-(until - self.clock.now) // self.cycle_ticks)
    monkeypatch.setattr(CortexM, "stall_until", late)
    m, r = run_firmware("periph_nvmc_stall", ms=600, board="nrf52832")
    _passes, fails = verdict(m, r)
    assert any("the last one at its own time" in f for f in fails), m.console_text()


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_invalidate_keeps_costs_of_code_elsewhere(run_firmware, pure):
    """Writing flash where no costed block lies (MCUBoot copying an image it
    does not run) keeps the block costs; writing where one lies drops them
    (its code may have changed).  The firmware's own result is unchanged."""
    m, r = run_firmware("periph_nvmc_stall", ms=600, board="nrf52832", pure_python=pure)
    assert_firmware_passed(m, r, min_passes=STALL_CHECKS)
    cpu = m.cpu
    main = m.symbols.lookup("main")
    cpu.counter.insert(main & ~1, 4, 7)
    cpu._costed(main & ~1, 4)
    cpu.invalidate_code(0x70000, 0x72000)             # nothing costed there
    assert cpu.counter.cost(main & ~1, 4) == 7
    cpu.invalidate_code(main & ~0xFFF, (main & ~0xFFF) + 0x1000)
    assert cpu.counter.cost(main & ~1, 4) in (None, -1)


def test_changed_words_counts_each_differing_word_as_numpy_does():
    """The NVMC's count of words a CPU store into flash changed (it sets the
    write's time) is whole-buffer int arithmetic; numpy's elementwise
    compare is the reference."""
    import random

    import numpy as np

    from emu.peripherals.nvmc import _changed_words

    def reference(a, b):
        n = len(a) // 4 * 4
        return int(np.count_nonzero(np.frombuffer(a[:n], "<u4") != np.frombuffer(b[:n], "<u4"))) \
            + (a[n:] != b[n:])

    rng = random.Random(29)
    counts = set()
    for _ in range(2000):
        n = rng.choice([0, 1, 3, 4, 5, 8, 64, 4097, 8192])
        a = rng.randbytes(n)
        b = bytearray(a)
        for _ in range(rng.choice([0, 1, 2, 3, 50])):
            if n:
                b[rng.randrange(n)] ^= 1 << rng.randrange(8)
        got = _changed_words(a, bytes(b))
        assert got == reference(a, bytes(b)), n
        counts.add(got)
    assert {0, 1, 2, 3} <= counts


# -- the store instructions that write flash (emu/cpu/runloop.py, _handle_flash_write) --
STORE_CHECKS = 18


def _stores(run_firmware, pure=False):
    m, r = run_firmware("periph_nvmc_stores", ms=100, board="nrf52832", pure_python=pure)
    return m, r, {"cycles": m.cpu.cycles, "console": m.console_text(),
                  "regs": m.cpu.core_registers(),
                  "page": m.soc.flash_bytes()[0x7E000:0x7E030]}


def test_every_store_shape_writes_flash_and_agrees(run_firmware):
    """periph_nvmc_stores: STR/STRH/STRB carried out by the run loop,
    post- and pre-indexed STR, STRD and STMIA stepped with their stores held
    back, a conditional STR in an IT block (which Unicorn runs past): each
    word as the NVMC keeps it, each base written back, the IT block's other
    instructions under their conditions; the same natively and in pure
    Python."""
    m, r, native = _stores(run_firmware)
    assert_firmware_passed(m, r, min_passes=STORE_CHECKS)
    mp, rp, python = _stores(run_firmware, pure=True)
    assert_firmware_passed(mp, rp, min_passes=STORE_CHECKS)
    assert native == python


def test_a_store_with_writeback_taken_as_plain_is_seen(run_firmware, monkeypatch):
    """Companion: the run loop carrying out a post-indexed STR as a plain
    one (its writeback check off) leaves the base where it was."""
    from emu.cpu import runloop
    plain = runloop.RunLoop._plain_store_length

    def no_writeback_check(self, pc, size):
        code = bytes(self.uc.mem_read(pc, 4))
        insn = next(self.cost_model.md.disasm(code, pc, 1), None)
        if insn is not None and insn.mnemonic.split(".")[0] == "str" and size == 4:
            return insn.size
        return plain(self, pc, size)
    monkeypatch.setattr(runloop.RunLoop, "_plain_store_length", no_writeback_check)
    m, r = run_firmware("periph_nvmc_stores", ms=100, board="nrf52832")
    assert "FAIL post-indexed STR's base" in m.console_text()


def test_a_store_unicorn_ran_past_left_out_is_seen(run_firmware, monkeypatch):
    """Companion: the stores the hook noted after Unicorn ran on past a
    refused store (the IT block's) not written: the firmware sees the taken
    store missing."""
    from emu.cpu import runloop
    handle = runloop.RunLoop._handle_flash_write
    monkeypatch.setattr(runloop.RunLoop, "_handle_flash_write",
                        lambda self, a, pc, size, value, stores=(): handle(self, a, pc, size,
                                                                           value, ()))
    m, r = run_firmware("periph_nvmc_stores", ms=100, board="nrf52832")
    assert "FAIL IT: the taken store" in m.console_text()
