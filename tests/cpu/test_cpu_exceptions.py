"""Exception model: priorities, preemption, nesting, tail-chaining, masking."""
from conftest import assert_firmware_passed


def test_exceptions_and_priorities(run_firmware):
    m, r = run_firmware("cpu_exceptions", ms=10)
    assert_firmware_passed(m, r, min_passes=25)


def test_tail_chain_happened(run_firmware):
    # IRQ0 pends lower-priority IRQ2 and returns: IRQ2 is entered by tail-chaining
    m, r = run_firmware("cpu_exceptions", ms=10)
    assert m.cpu.tail_chains >= 1


def test_breaking_priority_masking_is_detected(run_firmware, monkeypatch):
    """The firmware test can fail: with BASEPRI ignored, its checks fail."""
    from emu.cpu import cortexm
    from unicorn import arm_const as A
    orig = cortexm.CortexM.execution_priority

    def no_basepri(self):
        prio = self.active_priority()
        if self.uc.reg_read(A.UC_ARM_REG_PRIMASK) & 1 and prio > 0:
            prio = 0
        if self.uc.reg_read(A.UC_ARM_REG_FAULTMASK) & 1:
            prio = -1
        return prio
    monkeypatch.setattr(cortexm.CortexM, "execution_priority", no_basepri)
    monkeypatch.setattr(cortexm.CortexM, "native_entries", False)   # Python's entries
    m, r = run_firmware("cpu_exceptions", ms=10)
    assert "FAIL basepri holds prio 0x80" in m.console_text()
    assert r.exit_code != 0
