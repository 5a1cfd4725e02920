"""The Cortex-M4 MPU (emu/cpu/mpu.py), driven as Zephyr and the nRF5 SDK drive
it (firmware/tests/cpu_mpu.c): MPU_TYPE reports 8 regions, regions and
aliases, PRIVDEFENA, XN, subregions, a privileged-read-only stack guard,
unprivileged accesses, MemManage with MMFSR/MMFAR, escalation to HardFault,
and exception stacking into the guard (MSTKERR) by an interrupt and by an
SVC.  With the native helpers, exception entries and returns are carried
out in C with the MPU on too (the stacking check and the page protections'
sync: _mmio.c, mpu_stack_ok and mpu_sync_c)."""
import pytest

from conftest import assert_firmware_passed
from emu.cpu import mpu as mpu_mod


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_mpu(run_firmware, pure):
    m, r = run_firmware("cpu_mpu", ms=50, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=31)
    assert m.cpu.mpu._installed


def test_entries_with_the_mpu_on_are_in_c(run_firmware):
    """The interrupt's entries (and the overflow's refusal) in C: the same
    run as in pure Python (test_mpu), with ExcHook's entries counted."""
    m, r = run_firmware("cpu_mpu", ms=50)
    p, rp = run_firmware("cpu_mpu", ms=50, pure_python=True)
    assert_firmware_passed(m, r, min_passes=35)
    h = m.cpu._exc_hook
    assert h.entries >= 1 and h.returns >= 1
    assert m.cpu.cycles == p.cpu.cycles and m.console_text() == p.console_text()
    assert m.cpu.cfsr == p.cpu.cfsr and m.cpu.core_registers() == p.cpu.core_registers()


def test_stacking_unchecked_in_c_is_seen(fw, caplog, fault_build):
    """Companion: the C entry stacking without the MPU's check (mpu_bug)
    writes the interrupt's frame into the guard: no MSTKERR."""
    import logging
    from emu import Machine
    caplog.set_level(logging.CRITICAL, logger="emu")     # the run goes astray, loudly
    m = Machine(fw("cpu_mpu"), board="nrf52832")
    m.cpu._exc_hook.mpu_bug = 1
    m.run(ms=1)                  # (the whole test takes 5 000 cycles)
    assert "PASS interrupt: MSTKERR" not in m.console_text()
    assert "FAIL" in m.console_text()


def test_mpu_type_zero_is_seen(run_firmware, monkeypatch):
    """Companion: with TYPE reading 0 (no regions, as before), the firmware sees it."""
    orig = mpu_mod.Mpu.read
    monkeypatch.setattr(mpu_mod.Mpu, "read", lambda self, off: 0 if off == 0xD90
                        else orig(self, off))
    m, r = run_firmware("cpu_mpu", ms=50)
    assert "FAIL MPU_TYPE: 8 data regions" in m.console_text()


def test_unenforced_mpu_is_seen(run_firmware, monkeypatch):
    """Companion: registers stored but never applied to the pages."""
    monkeypatch.setattr(mpu_mod.Mpu, "sync", lambda self: setattr(self.cpu, "mpu_dirty", False))
    m, r = run_firmware("cpu_mpu", ms=50)
    text = m.console_text()
    assert "FAIL privileged write to the guard faults" in text
    assert "FAIL user reads of kernel data and the stack fault" in text


def test_stacking_unchecked_is_seen(run_firmware, monkeypatch):
    """Companion: exception stacking that ignores the MPU writes the frame
    into the guard and never raises MSTKERR."""
    from emu.cpu import cortexm
    monkeypatch.setattr(cortexm.CortexM, "_stacking_violation", lambda self, exc, ret: False)
    m, r = run_firmware("cpu_mpu", ms=50)
    assert "PASS MSTKERR" not in m.console_text()
    assert r.exit_code != 0


def test_firmware_without_mpu_pays_nothing(run_firmware):
    """No hook and no page protection change unless CTRL.ENABLE is set."""
    m, r = run_firmware("cpu_svc", ms=10)
    assert_firmware_passed(m, r)
    assert not m.cpu.mpu._installed and m.cpu.mpu._prot == {}


def test_snapshot_keeps_the_mpu(run_firmware, tmp_path):
    """A snapshot taken with the MPU on restores its regions and page protections."""
    from emu import Machine
    m, _ = run_firmware("cpu_mpu", ms=0)
    m.run_until(lambda: m.cpu.mpu.enabled, timeout_ms=10)
    regs = m.cpu.mpu.save_state()
    p = tmp_path / "mpu.snap"
    m.save_snapshot(str(p))
    m2 = Machine.from_snapshot(str(p), m.image)
    assert m2.cpu.mpu.save_state() == regs
    r2 = m2.run(ms=50)
    assert_firmware_passed(m2, r2, min_passes=10)


def test_privilege_drop_by_msr_is_seen_at_once(run_firmware, monkeypatch):
    """Companion: without the hook after ``MSR CONTROL`` the pages keep the
    privileged view after the thread drops its privilege, and its first
    forbidden reads go through."""
    monkeypatch.setattr(mpu_mod.Mpu, "hook_after_msr_control", lambda self, addr: None)
    m, r = run_firmware("cpu_mpu", ms=50)
    assert "FAIL user reads of kernel data and the stack fault" in m.console_text()
