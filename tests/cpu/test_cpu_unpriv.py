"""Unprivileged thread mode (CONTROL.nPRIV), as Zephyr's userspace runs it:
system calls through SVC, interrupts and tail-chains from and back to an
unprivileged thread on PSP, and a handler bringing the thread back to
privileged mode.  Unicorn's register API reads MSP/PSP as 0 and ignores
their writes while the core is unprivileged; exception entry and return
must not go through it there (firmware/tests/cpu_unpriv.c)."""
import pytest
from unicorn import arm_const as A

from conftest import assert_firmware_passed


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_unprivileged_thread(run_firmware, pure):
    m, r = run_firmware("cpu_unpriv", ms=20, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=16)


def test_stack_pointers_read_in_unprivileged_mode(run_firmware):
    """The debugger's view (core_registers, snapshots) reads both stack
    pointers whatever the privilege: stop in the unprivileged thread and look."""
    m, _ = run_firmware("cpu_unpriv", ms=0)
    cpu = m.cpu
    m.run_until(lambda: cpu.ipsr == 0 and cpu.uc.reg_read(A.UC_ARM_REG_CONTROL) & 1,
                timeout_ms=5)
    regs = cpu.core_registers()
    assert regs["control"] & 3 == 3, regs
    assert regs["psp"] != 0 and regs["msp"] != 0
    assert regs["sp"] == regs["psp"]
    assert cpu.uc.reg_read(A.UC_ARM_REG_MSP) == 0    # what the register API says there


def test_entry_and_return_through_the_register_api_fail(run_firmware, monkeypatch):
    """The firmware can fail: exception entry and return that read and write
    the stack pointers through the register API while unprivileged (the
    Python path as it was) lock up at the first system call."""
    from emu.cpu import cortexm

    def old_set_mode(self, ipsr, control, msp, psp, refresh=True):
        w = self.uc.reg_write
        w(A.UC_ARM_REG_IPSR, ipsr)
        w(A.UC_ARM_REG_CONTROL, control)
        w(A.UC_ARM_REG_MSP, msp)
        w(A.UC_ARM_REG_PSP, psp)
        self._ipsr = ipsr
        if refresh:
            self._refresh_flags()
    monkeypatch.setattr(cortexm.CortexM, "_set_mode", old_set_mode)
    monkeypatch.setattr(cortexm.CortexM, "stack_pointers",
                        lambda self: tuple(self.uc.reg_read_batch((A.UC_ARM_REG_MSP,
                                                                   A.UC_ARM_REG_PSP))))
    m, r = run_firmware("cpu_unpriv", ms=20, pure_python=True)
    assert r.reason != "exit" or r.exit_code != 0
