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


def _follow_checked(m) -> list:
    """Check, after each change of the MPU's pages while it follows them,
    that the RAM's hooks cover exactly the protected pages; the counts seen."""
    seen = []
    mpu = m.cpu.mpu
    follow = mpu._follow_runs

    def check(want, add):
        follow(want, add)
        if not add:
            rbase, rsize = m.cpu.fast_ram_range()
            protected = sorted(p for p in mpu._prot if rbase <= p < rbase + rsize)
            hooked = sorted(p for b, e in mpu._ram_runs for p in range(b, e + 1, 1024))
            seen.append(len(hooked))
            assert hooked == protected
    mpu._follow_runs = check
    return seen


@pytest.mark.parametrize("image", ["bench_mpu", "bench_mpu_hot"])
def test_mpu_keeps_the_tlb_fill_and_hooks_only_the_protected_ram(fw, image):
    """With the MPU on as Zephyr sets it up (SRAM execute-never, a stack
    guard: in an unused page, or in the page the stack works in) the PageMap
    still fills the TLB (RAM stores at full speed: a memory hook over a page
    sends every store there to Unicorn's slow path), the RAM has protection
    hooks only over the pages the MPU protects, and execute-never is the
    fill's; the workload ends on bench_cpu's checksum."""
    m = Machine(fw(image), board="nrf52832")
    seen = _follow_checked(m)
    r = m.run(ms=2000)
    assert r.reason == "exit" and r.exit_code == 0, r
    assert m.cpu.pagemap is not None and m.cpu.mpu._ram_runs is not None
    assert seen and max(seen) > 0
    ref = Machine(fw("bench_cpu"), board="nrf52832")
    ref.run(ms=2000)
    assert m.console_text().split("checksum")[-1] == ref.console_text().split("checksum")[-1]


def test_mpu_protecting_much_of_the_ram_goes_to_unicorns_tlb(fw):
    """cpu_mpu runs unprivileged code under maps that protect most of the
    RAM: from the first such map on, Unicorn's own TLB and hooks over all of
    the RAM (following runs of hooks at every switch would cost more); the
    hooks matched the protection until then (tests/cpu/test_cpu_mpu.py
    checks the MPU, the parity test compares both TLBs on it)."""
    m = Machine(fw("cpu_mpu"), board="nrf52832")
    seen = _follow_checked(m)
    r = m.run(ms=100)
    assert_firmware_passed(m, r)
    assert seen
    assert m.cpu.pagemap is None and m.cpu.mpu._ram_runs is None


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


def _move_guard(m, pages) -> list:
    """Move bench_mpu's guard (region 2, 32 bytes) to each of ``pages`` as an
    RTOS's switch does, the MPU's pages applied after each (as at an
    exception return); the RAM pages hooked after each."""
    mpu = m.cpu.mpu
    out = []
    for page in pages:
        mpu.write(0xD98, 2)                          # RNR
        mpu.write(0xD9C, page)                       # RBAR
        mpu.write(0xDA0, (1 << 28) | (5 << 24) | (4 << 1) | 1)   # XN, priv RO, 32 bytes
        mpu.sync()
        out.append(sorted(p for b, e in mpu._ram_runs for p in range(b, e + 1, 1024)))
    return out


def test_hooks_follow_a_guard_that_moves(fw):
    """A guard moved from page to page (an RTOS's thread switches): each
    time the RAM has hooks on the guard's page alone, the page it left has
    none (its stores go back to the fast path)."""
    m = Machine(fw("bench_mpu"), board="nrf52832")
    m.run(ms=10)
    pages = [0x20008000, 0x20008400, 0x20008000, 0x2000A000]
    assert _move_guard(m, pages) == [[p] for p in pages]


def test_hooks_left_on_released_pages_are_seen(fw, monkeypatch):
    """Companion: runs whose hooks stay after their pages are released (the
    hot stack page of one thread is another thread's guard page) are seen."""
    from emu.cpu.mpu import Mpu
    orig = Mpu._follow_runs
    monkeypatch.setattr(Mpu, "_follow_runs",
                        lambda self, want, add: orig(self, want, add) if add else None)
    m = Machine(fw("bench_mpu"), board="nrf52832")
    m.run(ms=10)
    pages = [0x20008000, 0x20008400, 0x20008000, 0x2000A000]
    assert _move_guard(m, pages) != [[p] for p in pages]


def test_execute_never_ram_not_refused_is_seen(fw, monkeypatch):
    """Companion: without the fill refusing the execute-never RAM pages
    (set_xn), cpu_mpu's fetch from such a page runs: the firmware fails."""
    from emu.cpu.mpu import Mpu
    monkeypatch.setattr(Mpu, "_set_xn", lambda self, xn: None)
    m = Machine(fw("cpu_mpu"), board="nrf52832")
    r = m.run(ms=100)
    assert r.exit_code != 0 or "FAIL" in m.console_text()
