"""Deep nesting, tail-chain chains, NMI, VTOR relocation to RAM."""
from conftest import assert_firmware_passed


def test_nesting(run_firmware):
    m, r = run_firmware("cpu_nesting", ms=10)
    assert_firmware_passed(m, r, min_passes=17)
    assert m.cpu.tail_chains >= 3


def test_vtor_ignored_is_detected(run_firmware, monkeypatch):
    """The firmware can fail: a core that always reads vectors from 0 is caught."""
    from emu.cpu import cortexm

    def flash_vector(self, exc):
        return 4 * exc
    monkeypatch.setattr(cortexm.CortexM, "_vector_address", flash_vector)
    monkeypatch.setattr(cortexm.CortexM, "native_entries", False)   # Python's entries
    m, r = run_firmware("cpu_nesting", ms=10)
    # the flash table's SysTick vector is the default handler (a loop): the
    # RAM-table check never passes and the program does not exit cleanly
    assert "PASS IRQ5 and SysTick through RAM table" not in m.console_text()
    assert not (r.reason == "exit" and r.exit_code == 0)


def test_faultmask_masking_nmi_is_detected(run_firmware, monkeypatch):
    """A core that took nothing while FAULTMASK is set (NMI included) fails the NMI check."""
    from emu.cpu import cortexm
    A = cortexm.A
    orig = cortexm.CortexM._pending_to_enter     # the run loop's and the block hook's

    def masks_nmi(self):
        if self.uc.reg_read(A.UC_ARM_REG_FAULTMASK) & 1:
            return None
        return orig(self)
    monkeypatch.setattr(cortexm.CortexM, "_pending_to_enter", masks_nmi)
    m, r = run_firmware("cpu_nesting", ms=10)
    assert "FAIL NMI under FAULTMASK+PRIMASK" in m.console_text()
