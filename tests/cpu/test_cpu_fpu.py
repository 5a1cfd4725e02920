"""FP context across interrupts: extended frame, EXC_RETURN 0xFFFFFFE9, FPCA, FPSCR."""
from conftest import assert_firmware_passed


def test_fp_context(run_firmware):
    m, r = run_firmware("cpu_fpu", ms=10)
    assert_firmware_passed(m, r, min_passes=9)


def test_no_extended_frame_is_detected(run_firmware, monkeypatch):
    """The firmware can fail: a core that ignores FPCA (basic frame only) loses s0-s15."""
    from emu.cpu import cortexm
    A = cortexm.A
    orig = cortexm.CortexM.exception_entry

    def basic_only(self, exc, return_addr):
        self.uc.reg_write(A.UC_ARM_REG_CONTROL, self.uc.reg_read(A.UC_ARM_REG_CONTROL) & ~4)
        orig(self, exc, return_addr)
    monkeypatch.setattr(cortexm.CortexM, "exception_entry", basic_only)
    monkeypatch.setattr(cortexm.CortexM, "native_entries", False)   # Python's entries
    m, r = run_firmware("cpu_fpu", ms=10)
    text = m.console_text()
    assert "FAIL extended frame EXC_RETURN 0xFFFFFFE9" in text
    assert "FAIL s0-s31 intact" in text
    assert r.exit_code != 0
