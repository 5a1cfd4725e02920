"""WFI/WFE sleep: time jumps to the next event; event register; SEVONPEND; SLEEPONEXIT."""
from conftest import assert_firmware_passed

TICKS_PER_S = 512_000_000


def test_sleep(run_firmware):
    m, r = run_firmware("cpu_wfi", ms=3000)
    assert_firmware_passed(m, r, min_passes=7)
    # 11 SysTick periods of 100 ms slept through ...
    assert m.clock.now >= 1.1 * TICKS_PER_S
    # ... while the core executed only a few thousand cycles (not 70 M)
    assert m.cpu.cycles < 100_000, m.cpu.cycles


def test_wfi_as_nop_is_detected(run_firmware, monkeypatch):
    """A core that treated WFI as a NOP (busy-running instead of sleeping) is caught
    by the executed-cycle count, and SLEEPONEXIT ignored is caught by the firmware."""
    from emu.cpu import cortexm
    orig = cortexm.CortexM._after_slice

    def no_sleep(self, err):
        orig(self, err)
        if self.sleep_kind in ("wfi", "sleeponexit"):
            self.sleeping = False
    monkeypatch.setattr(cortexm.CortexM, "_after_slice", no_sleep)
    m, r = run_firmware("cpu_wfi", ms=3000)
    text = m.console_text()
    assert "FAIL five WFI wake-ups by SysTick" in text or m.cpu.cycles > 100_000


def test_sev_ignored_is_detected(run_firmware, monkeypatch):
    """Without SEV setting the event register, SEV;WFE sleeps: the checks fail."""
    from emu.cpu import cortexm
    monkeypatch.setattr(cortexm.CortexM, "_hook_sev", lambda self, uc, a, s, u: None)
    m, r = run_firmware("cpu_wfi", ms=3000)
    assert not (r.reason == "exit" and r.exit_code == 0)


def test_wfe_woken_through_primask_is_detected(run_firmware, monkeypatch):
    """Companion: a core whose WFE wakes for an interrupt that PRIMASK holds
    back (the WFI rule) returns at once, before SysTick pends: the check fails.
    (The S132 SoftDevice waits for the LFCLK this way, with PRIMASK set and an
    application interrupt pending: the wrong rule made it spin.)"""
    from emu.cpu import cortexm

    def wfi_rule(self):
        best = self.best_pending()
        return best is not None and best[0] < self.active_priority()
    monkeypatch.setattr(cortexm.CortexM, "_wake_condition", wfi_rule)
    m, r = run_firmware("cpu_wfi", ms=3000)
    assert "FAIL WFE under PRIMASK slept until SysTick pended" in m.console_text()
