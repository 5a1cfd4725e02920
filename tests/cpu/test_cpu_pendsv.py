"""PendSV two-task (plus main) context switch on PSP, with FP contexts."""
from conftest import assert_firmware_passed


def test_context_switch(run_firmware):
    m, r = run_firmware("cpu_pendsv", ms=10)
    assert_firmware_passed(m, r, min_passes=8)


def test_basic_frame_only_is_detected(run_firmware, monkeypatch):
    """The firmware can fail: without FP stacking, s0 is lost across switches."""
    from emu.cpu import cortexm
    A = cortexm.A
    orig = cortexm.CortexM.exception_entry

    def basic_only(self, exc, return_addr):
        self.uc.reg_write(A.UC_ARM_REG_CONTROL, self.uc.reg_read(A.UC_ARM_REG_CONTROL) & ~4)
        orig(self, exc, return_addr)
    monkeypatch.setattr(cortexm.CortexM, "exception_entry", basic_only)
    monkeypatch.setattr(cortexm.CortexM, "native_entries", False)   # Python's entries
    m, r = run_firmware("cpu_pendsv", ms=10)
    assert "FAIL registers preserved across switches" in m.console_text()
    assert not r.ok


def test_return_ignoring_psp_is_detected(run_firmware, monkeypatch):
    """A core that returned to thread mode on MSP (EXC_RETURN bit 2 ignored) fails the run."""
    from emu.cpu import cortexm
    orig = cortexm.CortexM.exception_return
    monkeypatch.setattr(cortexm.CortexM, "exception_return",
                        lambda self, exc_return: orig(self, exc_return & ~4))
    monkeypatch.setattr(cortexm.CortexM, "native_returns", False)   # returns in Python
    m, r = run_firmware("cpu_pendsv", ms=10)
    assert r.reason != "exit" or r.exit_code != 0
    assert "PASS threads alternate" not in m.console_text()
