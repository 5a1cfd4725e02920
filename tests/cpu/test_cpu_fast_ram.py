"""RAM stores at full speed: the engine's TLB filled by emu.cpu._core.PageMap
(CortexM._fast_ram) instead of Unicorn's own, no memory hook over the RAM.

firmware/tests/cpu_ram_code.c runs code from RAM and rewrites it, makes a
store in an IT block the first access to its page, and branches into the
execute-never regions; it passes with the TLB fill, with Unicorn's own TLB
and on the pure-Python path, in the same cycles.  The companions break the
fill (an executed page not kept executable in later fills; the IT bits left
as Unicorn synced them) and see the failures.  On real firmware, when the
images are present, both TLBs give the same cycles, screen and memory."""

import pytest

from conftest import assert_firmware_passed, cached_image
from emu import Machine
from emu.cpu import cortexm

FW = "cpu_ram_code"


def _state(m):
    cpu = m.cpu
    return {"cycles": cpu.cycles, "now": m.clock.now, "console": m.console_text(),
            "regs": cpu.core_registers(), "ram": cpu.read_mem(0x20000000, 0x10000)}


@pytest.mark.parametrize("mode", ["fill", "cpu_tlb", "python"])
def test_ram_code_passes_with_either_tlb(fw, monkeypatch, mode):
    if mode == "cpu_tlb":
        monkeypatch.setattr(cortexm.CortexM, "fast_ram", False)
    m = Machine(fw(FW), board="nrf52832", pure_python=mode == "python")
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=12)
    if mode == "fill":
        assert m.cpu.pagemap is not None and m.cpu.pagemap.exec_pages == 2
    else:
        assert m.cpu.pagemap is None


def test_both_tlbs_agree_on_the_ram_code_firmware(fw, monkeypatch):
    runs = []
    for fast in (True, False):
        monkeypatch.setattr(cortexm.CortexM, "fast_ram", fast)
        m = Machine(fw(FW), board="nrf52832")
        m.run(ms=50)
        assert (m.cpu.pagemap is not None) == fast
        runs.append(_state(m))
    assert runs[0] == runs[1]


def test_executed_page_not_kept_executable_is_seen(fw, fault_build):
    """Companion: a data fill of an executed page that leaves execute out
    makes the entry dirty after one store: the next store into the page
    keeps the old translated code."""
    m = Machine(fw(FW), board="nrf52832")
    m.cpu.pagemap.sticky_exec = 0
    r = m.run(ms=50)
    assert "FAIL second RAM function rewritten right after it: got 0x00000014" in \
        m.console_text()
    assert r.exit_code != 0


def test_it_bits_left_by_a_fill_are_seen(fw, monkeypatch):
    """Companion: the IT bits left as Unicorn synced them for the fill skip
    the callee's first instruction."""
    monkeypatch.setattr(cortexm.CortexM, "_guard_fixes_it", False)
    m = Machine(fw(FW), board="nrf52832")
    r = m.run(ms=50)
    assert "FAIL store in an IT block missing the TLB: the callee ran: got " in m.console_text()
    assert r.exit_code != 0


def test_mpu_goes_back_to_unicorns_tlb(fw):
    """The MPU needs its protection hooks over the RAM: enabling it goes
    back to Unicorn's own TLB (tests/cpu/test_cpu_mpu.py checks the MPU)."""
    m = Machine(fw("cpu_mpu"), board="nrf52832")
    assert m.cpu.pagemap is not None
    r = m.run(ms=100)
    assert_firmware_passed(m, r)
    assert m.cpu.pagemap is None


@pytest.mark.parametrize("which", ["wasp-os", "infinitime"])
def test_both_tlbs_agree_on_real_firmware(monkeypatch, which):
    """wasp-os's first boot (formatting the NOR, drawing the face) and
    InfiniTime's first 2 emulated seconds (advertising heard by a scanner):
    the same cycles, time, screen, NOR, air and RAM with either TLB."""
    from emu.phone.scanner import Scanner
    path = (cached_image("PINETIME_EMU_WASP_IMAGE", "wasp-os/upstream/micropython.elf")
            if which == "wasp-os" else
            cached_image("PINETIME_EMU_INFINITIME_IMAGE", "infinitime/pinetime-app-*.out"))
    runs = []
    for fast in (True, False):
        monkeypatch.setattr(cortexm.CortexM, "fast_ram", fast)
        m = Machine(path, flash_file=None)
        Scanner(m.air)
        m.run(seconds=2.0)
        st = _state(m)
        st.update(screen=m.board.screen().tobytes(), nor=bytes(m.board.flash.data),
                  air=[tuple(p) for p in m.air.log])
        runs.append(st)
    fast, slow = runs
    assert fast["cycles"] > 60_000_000
    for k in fast:
        assert fast[k] == slow[k], f"{k} differs between the TLB fill and Unicorn's TLB"
