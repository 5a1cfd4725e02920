"""The WFEs in C (emu.cpu._core.ExcHook's invalid-instruction hook, switch
``CortexM.native_wfe``): for a PC the CPU has cached as a WFE (WFE_AT, or
WFE_BEFORE when a code hook left PC past it) with no SEV in the block, the
WFE that only clears the event register and, under the C run loop, the
WFE that sleeps are carried out with _hook_insn_invalid's steps; anything
else goes to that Python hook.  Our WFE firmware (SEV, SEVONPEND, the
event register, WFE loops, Nordic's ``sev; wfe; wfe``) and InfiniTime's
first 3 s end in the same state with the C hook as with the Python one;
the companion leaves the event register set and is seen.  The C run loop's
wake-up test (CortexM._wake_condition in C) is compared with the Python
loop's by tests/cpu/test_native_loop.py."""
import pytest

from conftest import assert_same_state, flip, image_both_ways, parity_state, run_fw
from emu import Machine
from emu.cpu import cortexm

FIRMWARE = [("cpu_sev_wfe", 200), ("cpu_wfe_loop", 200), ("cpu_wfi", 3000)]


def _run(path, ms, native_wfe, monkeypatch, bug=0):
    """The run with the WFEs in C or not: (machine, its parity_state() with
    the run's stop reason and the WFEs _wfe_in_hook did)."""
    monkeypatch.setattr(cortexm.CortexM, "native_wfe", native_wfe)

    def wfe_bug(m):
        if bug:                          # (a switch of the test build: fault_build)
            m.cpu._exc_hook.wfe_bug = bug
    m, r = run_fw(path, ms, setup=wfe_bug)
    st = parity_state(m)
    st["reason"] = r.reason
    st["wfe_in_hook"] = m.cpu.wfe_in_hook
    return m, st


@pytest.mark.parametrize("name,ms", FIRMWARE, ids=[f for f, _ in FIRMWARE])
def test_c_wfe_and_python_wfe_agree(fw, monkeypatch, name, ms):
    m_c, on = _run(fw(name), ms, True, monkeypatch)
    m_py, off = _run(fw(name), ms, False, monkeypatch)
    if name != "cpu_wfi":                      # (there each WFE runs once: not cached yet)
        assert m_c.cpu._exc_hook.wfes > 10     # the C hook did the WFEs
    assert m_py.cpu._exc_hook.wfes == 0
    assert on["reason"] == "exit"
    assert_same_state(on, off, "the WFEs in C and in Python")


def test_a_wfe_that_keeps_the_event_is_seen(fw, monkeypatch, fault_build):
    """Companion: a C WFE that leaves the event register set (the next WFE
    does not sleep) ends in another state than the Python hook's."""
    _, off = _run(fw("cpu_sev_wfe"), 200, False, monkeypatch)
    _, bad = _run(fw("cpu_sev_wfe"), 200, True, monkeypatch, bug=1)
    with pytest.raises(AssertionError):
        assert_same_state(bad, off, "a broken C WFE and the Python hook")


def test_replaced_step_gets_the_python_hook(fw, monkeypatch):
    """A replacement of a step the C hook stands for (here _wfe_in_hook, on
    the instance) is honoured: every WFE goes to the Python hook."""
    m = Machine(fw("cpu_sev_wfe"), board="nrf52832")
    calls = []
    orig = m.cpu._wfe_in_hook

    def counted(uc, resume):
        calls.append(resume)
        return orig(uc, resume)
    m.cpu._wfe_in_hook = counted
    m.run(ms=200)
    assert m.cpu._exc_hook.wfes == 0 and calls


def test_infinitime_agrees(monkeypatch):
    """InfiniTime idles in ``wfe`` behind a code hook (WFE_BEFORE), ~440
    times an emulated second: its first 3 s (boot, face, advertising)."""
    on, off = image_both_ways("infinitime", 3.0, flip(monkeypatch, cortexm.CortexM, "native_wfe"))
    assert on["cycles"] > 60_000_000
    assert_same_state(on, off, "the WFEs in C and in Python")
