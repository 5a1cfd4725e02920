"""SVCall: svc number from the stacked PC, stacked r0-r3 in and out, PSP, priority."""
import struct

from conftest import assert_firmware_passed


def test_svc(run_firmware):
    m, r = run_firmware("cpu_svc", ms=10)
    assert_firmware_passed(m, r, min_passes=16)


def test_corrupt_stacked_r1_is_detected(run_firmware, monkeypatch):
    """The firmware can fail: if exception entry stacked r1 wrongly, the sums are wrong."""
    from emu.cpu import cortexm
    orig = cortexm.CortexM.exception_entry

    def bad_entry(self, exc, return_addr):
        orig(self, exc, return_addr)
        if exc == 11:  # SVCall: corrupt the stacked r1 of the frame just pushed
            sp = self.uc.reg_read(cortexm.A.UC_ARM_REG_PSP if (self.reg(cortexm.A.UC_ARM_REG_LR) & 4)
                                  else cortexm.A.UC_ARM_REG_MSP)
            self.write_mem(sp + 4, struct.pack("<I", 0x1000))
    monkeypatch.setattr(cortexm.CortexM, "exception_entry", bad_entry)
    m, r = run_firmware("cpu_svc", ms=10)
    assert "FAIL svc1 sum of r0-r3" in m.console_text()
    assert "FAIL svc1 from PSP" in m.console_text()
    assert r.exit_code != 0


def test_svc_priority_ignored_is_detected(run_firmware, monkeypatch):
    """If an active SVCall masked everything (priority ignored), IRQ0 could not preempt it."""
    from emu.cpu import cortexm
    orig = cortexm.CortexM.active_priority
    monkeypatch.setattr(cortexm.CortexM, "active_priority",
                        lambda self: 0 if self.active & (1 << 11) else orig(self))
    m, r = run_firmware("cpu_svc", ms=10)
    assert "FAIL IRQ0 preempted SVCall" in m.console_text()
