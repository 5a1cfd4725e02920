"""Configurable faults, escalation to HardFault, and lockup."""
from conftest import assert_firmware_passed


def test_faults(run_firmware):
    m, r = run_firmware("cpu_faults", ms=10)
    assert_firmware_passed(m, r, min_passes=20)


def test_missing_bfar_is_detected(run_firmware, monkeypatch):
    """The firmware can fail: a core that forgets BFAR/BFARVALID is caught."""
    from emu.cpu import cortexm
    orig = cortexm.CortexM.take_fault

    def no_bfar(self, exc, cfsr_bits, pc, why, fault_addr=None):
        orig(self, exc, cfsr_bits & ~cortexm.BFSR_BFARVALID, pc, why, None)
    monkeypatch.setattr(cortexm.CortexM, "take_fault", no_bfar)
    m, r = run_firmware("cpu_faults", ms=10)
    assert "FAIL BFSR.PRECISERR|BFARVALID" in m.console_text()
    assert r.exit_code != 0


def test_no_escalation_is_detected(run_firmware, monkeypatch):
    """If disabled faults were taken anyway (no escalation), HFSR.FORCED checks fail."""
    from emu.cpu import cortexm
    monkeypatch.setattr(cortexm.CortexM, "exc_enabled", lambda self, exc: True)
    m, r = run_firmware("cpu_faults", ms=10)
    assert "FAIL escalated to HardFault" in m.console_text()


def test_division_translated_before_div0_trp_is_detected(run_firmware, monkeypatch):
    """Divisions are hooked only once CCR.DIV_0_TRP is set: if the code
    translated before were not re-translated then, divide() would not trap."""
    from emu.cpu import cortexm
    monkeypatch.setattr(cortexm.CortexM, "arm_div_trap", lambda self: None)
    m, r = run_firmware("cpu_faults", ms=10)
    text = m.console_text()
    assert "FAIL DIV_0_TRP: the division translated before traps" in text
    assert "PASS DIV_0_TRP: UsageFault" in text      # a division after the store still traps


def test_fault_in_hardfault_locks_up(run_firmware):
    m, r = run_firmware("cpu_lockup", ms=10)
    assert r.reason == "lockup"
    assert "in HardFault" in m.console_text()
    assert "FAIL" not in m.console_text()
    msg = r.info["message"]
    assert "pc=0x" in msg and "HardFault_Handler" in msg, msg
    assert r.info["symbol"].startswith("HardFault_Handler")
    # the run really stopped: time does not advance past the lockup
    t = m.clock.now
    assert m.cpu.locked_up
