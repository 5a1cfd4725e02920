"""A conditional access in an IT block that a memory hook lets go on
(firmware/tests/cpu_it_hooked_access.c): the MPU's store and load hooks on
pages a region boundary cuts (Zephyr's stack guards), the ignored flash
store, the MMIO trace's hooks.  Unicorn syncs the IT bits to the accessing
instruction before calling a hook; left so, the next translation block ran
its first instruction conditionally (Zephyr's kernel.lifo: the push of
z_queue_node_peek skipped, a MemManage in rodata)."""

import pytest

from conftest import assert_firmware_passed
from emu.cpu import cortexm

FW = "cpu_it_hooked_access"
CHECKS = ("ignored flash store in an IT block: the callee ran",
          "store into a page the guard cuts, in an IT block: the callee ran",
          "stores in an ITTE block: the callee ran",
          "load from a page a no-access region cuts, in an IT block: the callee ran")


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_hooked_access_in_an_it_block(run_firmware, pure):
    m, r = run_firmware(FW, ms=20, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=10)
    assert m.cpu.mpu._installed
    assert m.cpu.ignored_flash_writes == 2
    g = m.cpu._flash_guard
    if not pure:
        assert g is not None and g.mpu_stores > 0      # the stores were done in C


def test_hooked_access_in_an_it_block_traced(fw, tmp_path):
    """With the MMIO trace's hooks on the peripherals (which sync the IT
    bits too) the peripheral store in an IT block leaves them right."""
    from emu import Machine
    m = Machine(fw(FW), board="nrf52832")
    t = m.trace_mmio(str(tmp_path / "mmio.txt"))
    r = m.run(ms=20)
    t.close()
    assert_firmware_passed(m, r, min_passes=10)
    assert "GPREGRET2" in (tmp_path / "mmio.txt").read_text()


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_stale_it_state_after_a_hook_is_seen(run_firmware, monkeypatch, pure):
    """Companion: with the IT bits left as the hook call synced them the
    callee's first instruction is skipped after each hooked access."""
    monkeypatch.setattr(cortexm.CortexM, "resume_after_access_hook", lambda self: None)
    monkeypatch.setattr(cortexm.CortexM, "_guard_fixes_it", False)
    m, r = run_firmware(FW, ms=20, pure_python=pure)
    text = m.console_text()
    for name in CHECKS:
        assert f"FAIL {name}: got " in text, text
    assert r.exit_code != 0


def test_stale_it_state_after_a_trace_hook_is_seen(fw, tmp_path, monkeypatch):
    """Companion: the MMIO trace's write hook leaving the IT bits synced
    skips the callee after the peripheral store."""
    from emu import Machine
    monkeypatch.setattr(cortexm.CortexM, "resume_after_access_hook", lambda self: None)
    m = Machine(fw(FW), board="nrf52832")
    t = m.trace_mmio(str(tmp_path / "mmio.txt"))
    m.run(ms=20)
    t.close()
    assert "FAIL peripheral store in an IT block: the callee ran: got " in m.console_text()
