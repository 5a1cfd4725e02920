"""Deliberate faults, case after case, in one function (Zephyr's
tests/kernel/fatal/exception): neither run-loop diagnosis ("the same fault
repeats", "the handler has not returned") may stop such a suite; and a
MemManage whose own stacking overflows into the guard is entered as MemManage
with MSTKERR and the first fault's bits (firmware/tests/cpu_fault_repeat.c)."""
import pytest

from conftest import assert_firmware_passed
from emu.cpu import cortexm, exceptions


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_repeated_deliberate_faults(run_firmware, pure):
    m, r = run_firmware("cpu_fault_repeat", ms=3000, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=3)


def test_repeat_counted_without_time_is_seen(run_firmware, monkeypatch):
    """Companion: faults counted as repeats however far apart stop the suite."""
    monkeypatch.setattr(exceptions, "FAULT_REPEAT_WINDOW", 1 << 62)   # (take_fault's module)
    m, r = run_firmware("cpu_fault_repeat", ms=3000)
    assert r.reason == "fault" and "repeats" in m.cpu.stop_info["message"]


def test_handler_wait_not_restarted_is_seen(run_firmware, monkeypatch):
    """Companion: a handler wait that is not restarted by each new fault takes
    the fifth fault's handler for one that never returned."""
    def old(self):
        since = getattr(self, "_fault_handler_since", None)
        if since is None or since[0] != self._ipsr:
            self._fault_handler_since = (self._ipsr, self.clock.now, self.last_fault)
            return
        if self.clock.now - since[1] >= self.fault_hang_ticks:
            self._fault_handler_since = None
            self._halt(cortexm.StopReason.FAULT, "has not returned")
    monkeypatch.setattr(cortexm.CortexM, "_check_fault_hang", old)
    m, r = run_firmware("cpu_fault_repeat", ms=3000)
    assert r.reason == "fault"
