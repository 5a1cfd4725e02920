"""Exception returns inside the slice (CortexM._return_in_hook), entries at
a block start from the block hook (CortexM._enter_in_hook), new blocks
costed from it (CortexM._cost_in_hook), pends that do
not end the slice (CortexM._pending_changed), WFEs that only clear the
event register (CortexM._wfe_in_hook) and the WFE decision remembered per
PC (CortexM._wfe_kinds) behave exactly like the slow paths
they shortcut: the same cycles, time, console, tail-chains and screen,
natively and in pure Python.  The companions break a fast path and see the
comparison (or the firmware) fail."""
import hashlib
import os
from pathlib import Path

import pytest

from emu import Machine
from emu.cpu import cortexm

from conftest import assert_firmware_passed, run_fw
from helpers.cpu import FIRMWARE, fingerprint

# every run-loop shortcut's switch (CortexM's class attributes)
FAST_PATHS = ("fast_returns", "fast_pends", "fast_wfe", "fast_entries", "fast_costing",
              "fast_sleep")


def set_fast_paths(mp, fast: bool, wfe_cache: bool) -> None:
    for name in FAST_PATHS:
        mp.setattr(cortexm.CortexM, name, fast)
    mp.setattr(cortexm.CortexM, "wfe_cache", wfe_cache)


def run(path, monkeypatch, fast=True, pure=False, ms=300, wfe_cache=True):
    with monkeypatch.context() as mp:
        set_fast_paths(mp, fast, wfe_cache)
        return run_fw(path, ms, pure_python=pure)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
@pytest.mark.parametrize("name", FIRMWARE)
def test_returns_in_slice_change_nothing(fw, monkeypatch, name, pure):
    ms = FIRMWARE[name]
    m1, r1 = run(fw(name), monkeypatch, pure=pure, ms=ms)
    m2, r2 = run(fw(name), monkeypatch, fast=False, wfe_cache=False, pure=pure, ms=ms)
    assert_firmware_passed(m1, r1)
    assert fingerprint(m1, r1) == fingerprint(m2, r2)
    assert m2.cpu.returns_in_hook == 0
    if name not in ("cpu_svc", "cpu_exceptions", "cpu_faults"):
        assert m1.cpu.returns_in_hook > 0       # the fast path ran


def test_returns_in_slice_reached_by_most_returns(fw, monkeypatch):
    m, r = run(fw("cpu_fast_return"), monkeypatch, ms=20)
    assert_firmware_passed(m, r, min_passes=10)
    assert m.cpu.returns_in_hook >= 300


def test_run_until_keeps_every_boundary(fw, monkeypatch):
    """A stop() predicate sees every slice boundary, as before: no return is
    done inside a slice then."""
    m = Machine(fw("cpu_nesting"), board="nrf52832")
    seen = []
    m.run(ms=10, stop=lambda: seen.append(m.cpu.cycles) and False)
    assert m.cpu.returns_in_hook == 0 and len(seen) > 20


def test_return_without_thumb_bit_is_detected(fw, monkeypatch):
    """Companion: a return in the hook that leaves PC's bit 0 clear (Unicorn
    then switches to ARM state) breaks the firmware."""
    def no_thumb(self, uc):
        if self._ipsr < cortexm.SVCALL or self.scr & 2:
            return False
        self.exception_return((uc.reg_read(cortexm.A.UC_ARM_REG_PC) | 1) & 0xFFFFFFFF)
        if self._pending_to_enter() is not None:
            self._trap = ("returned",)
            uc.emu_stop()
        return True
    monkeypatch.setattr(cortexm.CortexM, "_return_in_hook", no_thumb)
    monkeypatch.setattr(cortexm.CortexM, "native_returns", False)   # the Python hook's
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    r = m.run(ms=20)
    assert not (r.reason == "exit" and r.exit_code == 0)


def test_return_without_mask_watch_is_detected(fw, monkeypatch):
    """Companion: a return in the hook that does not re-arm the mask watch
    (an exception pended in a handler, masked by BASEPRI/PRIMASK after the
    return) takes it late: the cycles differ from the slow path."""
    def no_watch(self, uc):
        cur = self._ipsr
        if cur < cortexm.SVCALL or self.scr & 2:
            return False
        self.exception_return((uc.reg_read(cortexm.A.UC_ARM_REG_PC) | 1) & 0xFFFFFFFF)
        uc.reg_write(cortexm.A.UC_ARM_REG_PC, uc.reg_read(cortexm.A.UC_ARM_REG_PC) | 1)
        self._slice_pc = uc.reg_read(cortexm.A.UC_ARM_REG_PC)
        self._slice_blocks = self.cs.blocks
        return True
    monkeypatch.setattr(cortexm.CortexM, "_return_in_hook", no_watch)
    monkeypatch.setattr(cortexm.CortexM, "native_returns", False)   # the Python hook's
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    r = m.run(ms=20)
    text = m.console_text()
    assert "FAIL X masked by BASEPRI taken where BASEPRI drops" in text
    assert "FAIL X masked by PRIMASK taken where PRIMASK drops" in text


def test_pend_without_mask_watch_is_detected(fw, monkeypatch):
    """Companion: a pend that does not end the slice and does not arm the
    mask watch either (BASEPRI/PRIMASK hold it back) is taken late."""
    def no_watch(self):
        if self.sleeping or self.scr & 0x10:
            self.event_register = 1
        best = self.best_pending()
        if self.cs.in_slice and best is not None and best[0] >= self.execution_priority():
            return
        self.cs.stop_flag = 1
    monkeypatch.setattr(cortexm.CortexM, "_pending_changed", no_watch)
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    m.run(ms=20)
    text = m.console_text()
    assert "FAIL X pended under BASEPRI taken where BASEPRI drops" in text
    assert "FAIL X pended under PRIMASK taken where PRIMASK drops" in text


def test_pends_in_slice_are_used(fw, monkeypatch):
    stops = []
    orig = cortexm.CortexM._after_slice

    def count(self, err):
        stops.append(self.cs.reason)
        orig(self, err)
    monkeypatch.setattr(cortexm.CortexM, "_after_slice", count)
    run(fw("cpu_fast_return"), monkeypatch, ms=20)
    fast = stops.count(cortexm.cyc.REASON_FLAG)
    stops.clear()
    run(fw("cpu_fast_return"), monkeypatch, ms=20, fast=False)
    assert fast < stops.count(cortexm.cyc.REASON_FLAG)


def test_wfe_in_hook_is_used(fw, monkeypatch):
    m, r = run(fw("cpu_wfi"), monkeypatch, ms=3000)
    assert_firmware_passed(m, r, min_passes=7)
    assert m.cpu.wfe_in_hook >= 3


def test_wfe_in_hook_keeping_the_event_is_detected(fw, monkeypatch):
    """Companion: a WFE done in the hook that leaves the event register set
    makes the next WFE return at once (cpu_wfi's SysTick wake-up fails)."""
    def keeps(self, uc, resume):
        if not self.event_register:
            return False
        uc.reg_write(cortexm.A.UC_ARM_REG_PC, resume | 1)
        return True
    monkeypatch.setattr(cortexm.CortexM, "_wfe_in_hook", keeps)
    m = Machine(fw("cpu_wfi"), board="nrf52832")
    m.run(ms=3000)
    assert "FAIL WFE woken by SysTick, not by disabled IRQ7" in m.console_text()


def test_entries_in_hook_are_used(fw, monkeypatch):
    for pure in (False, True):
        m, r = run(fw("cpu_fast_return"), monkeypatch, ms=20, pure=pure)
        assert_firmware_passed(m, r, min_passes=10)
        assert m.cpu.entries_in_hook >= 300


def test_entry_in_hook_dropped_is_detected(fw, monkeypatch):
    """Companion: a block-hook entry that does nothing (the pend forgotten
    until some later boundary) takes the masked IRQs late."""
    monkeypatch.setattr(cortexm.CortexM, "_enter_in_hook",
                        lambda self, address: cortexm.cyc.ENTRY_NONE)
    monkeypatch.setattr(cortexm.CortexM, "native_entries", False)   # Python's entries
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    m.run(ms=20)
    assert "FAIL X pended under BASEPRI taken where BASEPRI drops" in m.console_text()


def test_entry_in_hook_without_thumb_bit_is_detected(fw, monkeypatch):
    """Companion: a block-hook entry that leaves PC's bit 0 clear breaks
    the firmware (Unicorn runs the handler in ARM state)."""
    def no_thumb(self, address):
        if self._ipsr and 3 <= self._ipsr <= 6:
            return cortexm.cyc.ENTRY_STOP
        best = self._pending_to_enter()
        if best is None:
            return cortexm.cyc.ENTRY_NONE
        self.exception_entry(best[2], address)
        self.uc.reg_write(cortexm.A.UC_ARM_REG_PC, self.uc.reg_read(cortexm.A.UC_ARM_REG_PC))
        return cortexm.cyc.ENTRY_DONE
    monkeypatch.setattr(cortexm.CortexM, "_enter_in_hook", no_thumb)
    monkeypatch.setattr(cortexm.CortexM, "native_entries", False)   # Python's entries
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    r = m.run(ms=20)
    assert not (r.reason == "exit" and r.exit_code == 0)


def test_costing_in_hook_is_used(fw, monkeypatch):
    for pure in (False, True):
        m, r = run(fw("cpu_nesting"), monkeypatch, ms=10, pure=pure)
        assert_firmware_passed(m, r, min_passes=17)
        assert m.cpu.costed_in_hook > 20


def test_costing_sev_blocks_in_hook_is_detected(fw, monkeypatch):
    """Companion: costing a block with a SEV in the hook skips its SEV hook
    (installed by the slow path): cpu_wfi's SEV no longer wakes WFE."""
    def all_blocks(self, addr, size):
        code = bytes(self.uc.mem_read(addr, size))
        self.counter.insert(addr, size, self.cost_model.block_cost(code, addr))
        return True
    monkeypatch.setattr(cortexm.CortexM, "_cost_in_hook", all_blocks)
    m = Machine(fw("cpu_wfi"), board="nrf52832")
    r = m.run(ms=3000)
    assert not (r.reason == "exit" and r.exit_code == 0)


# ---------------------------------------------------------------------------
# WFE decided once per PC


def test_wfe_cache_is_used_and_agrees(fw, monkeypatch):
    calls = []
    orig = cortexm.CortexM._wfe_kind
    monkeypatch.setattr(cortexm.CortexM, "_wfe_kind",
                        lambda self, pc: calls.append(pc) or orig(self, pc))
    m1, r1 = run(fw("cpu_wfe_loop"), monkeypatch, ms=200)
    n_cached = len(calls)
    calls.clear()
    m2, r2 = run(fw("cpu_wfe_loop"), monkeypatch, ms=200, wfe_cache=False)
    assert_firmware_passed(m1, r1, min_passes=3)
    assert fingerprint(m1, r1) == fingerprint(m2, r2)
    assert n_cached == len(set(calls)) < len(calls)    # once per PC, not per WFE


def _wfe_in_flash(stale: bool):
    """``wfe; b <wfe>`` in flash sleeps (the decision is cached for the PC
    Unicorn reports, after the WFE); then ``nop; udf`` is written over both
    and the code invalidated, as the NVMC does: the UDF stops at that PC."""
    import struct

    from unicorn import arm_const as A

    from emu.soc.nrf52832 import Nrf52832
    soc = Nrf52832()
    cpu = soc.cpu
    code = 0x70000
    cpu.uc.mem_write(code, struct.pack("<2H", 0xBF20, 0xE7FD))      # wfe; b <wfe>
    cpu.set_reg(A.UC_ARM_REG_SP, 0x20008000)
    cpu.pc = code
    assert cpu.run(soc.clock.now + 1_000_000) == "deadline" and cpu.sleeping
    assert cpu._wfe_kinds == {code + 2: cpu.WFE_BEFORE}
    cpu.uc.mem_write(code, struct.pack("<2H", 0xBF00, 0xDE00))       # nop; udf #0
    saved = dict(cpu._wfe_kinds)
    cpu.invalidate_code(code, code + 4)
    if stale:
        cpu._wfe_kinds.update(saved)
    cpu.sleeping = False
    cpu.pc = code
    cpu.run(soc.clock.now + 1_000_000)
    return cpu, code


def test_wfe_cache_forgets_rewritten_flash():
    """The decision is dropped when flash code changes (invalidate_code): the
    UDF faults."""
    cpu, code = _wfe_in_flash(stale=False)
    assert cpu.last_fault and cpu.last_fault["pc"] == code + 2
    assert "undefined" in cpu.last_fault["why"]


def test_wfe_cache_not_invalidated_is_detected():
    """Companion: a stale decision takes the UDF for a WFE (sleeps, no fault)."""
    cpu, code = _wfe_in_flash(stale=True)
    assert cpu.last_fault is None and cpu.sleeping


# ---------------------------------------------------------------------------
# real firmware

IMAGE = Path.home() / ".cache" / "pinetime-emu" / "infinitime" / "pinetime-app-1.16.1.out"


@pytest.mark.skipif(not IMAGE.exists(), reason="no InfiniTime image")
def test_infinitime_same_with_and_without_fast_paths(monkeypatch):
    out = []
    for fast in (True, False):
        with monkeypatch.context() as mp:
            set_fast_paths(mp, fast, fast)
            # the Python loop's shortcuts (the C loop sleeps without the hook:
            # tests/cpu/test_native_loop.py compares it)
            mp.setattr(cortexm.CortexM, "native_loop", False)
            m = Machine(str(IMAGE), flash_file=None)
            m.run(seconds=2.2)
            out.append((m.cpu.cycles, m.clock.now, m.cpu.tail_chains, m.soc.bus.accesses,
                        hashlib.sha1(m.board.screen().tobytes()).hexdigest()))
            if fast:
                assert m.cpu.returns_in_hook > 500 and m.cpu.wfe_in_hook > 100
                assert m.cpu.entries_in_hook > 500 and m.cpu.sleeps_in_hook > 100
    assert out[0] == out[1]
