"""Exception returns carried out in C in the engine's INTR hook
(emu.cpu._core.ExcHook, installed by CortexM._native_intr_hook): the steps
of CortexM._return_in_hook and exception_return when a return is all that
happens (no tail-chain, no MPU, no fault handler, no SLEEPONEXIT); and the
entries the run loop and the block hook make (ExcHook.take and
enter_in_hook: _take_pending, _enter_in_hook, exception_entry, _enter) when
the entry is all that happens (no MPU, no fault, no stacking error).

The exception firmware of tests/cpu/test_cpu_fast_returns.py (nesting,
tail-chains, PendSV, FP frames, masked pends, IT blocks, SysTick wake-ups,
the RTC) runs with the hook in C, with the Python hook, and in pure Python
in the same cycles, time, console and tail-chains.  The companions give the
hook a mask watch that is not the block hook's (a pend masked by BASEPRI
or PRIMASK is then taken late) and a core without FP frames (an FP frame
is popped as a basic one): the firmware sees both.  On real firmware
(wasp-os's tick, InfiniTime's advertising), when the images are present,
returns and entries in C or in Python give the same cycles, accesses per
register, screen, NOR, air and RAM.  Tail-chains are done in C too (the
next exception entered on the same frame): the companion's chain leaves it
pending and the firmware never gets past it.  Pends through ISPR and ICSR
(PENDSVSET/PENDSTSET) are done in C as well (ExcHook.pend_write): the same
machine as the model's write_word; the companion's pend skips
_pending_changed's steps and a masked pend is taken late.  While run_until's predicate watches
every slice boundary, a return in C ends its slice as the Python hook's
trap does: the predicate is asked at the same emulated times (the companion
returns inside the slice and is asked fewer times)."""

import pytest

from conftest import assert_firmware_passed, assert_same_state, flip, image_both_ways, run_fw
from emu import Machine
from emu.cpu import cortexm
from emu.cpu import _core

from helpers.cpu import FIRMWARE, fingerprint

REAL_HOOK = _core.ExcHook


def _run(path, monkeypatch, native=True, pure=False, ms=100):
    with monkeypatch.context() as mp:
        mp.setattr(cortexm.CortexM, "native_returns", native)
        return run_fw(path, ms, pure_python=pure)


def _three_ways(fw, monkeypatch, name):
    """``name`` with the hook in C, with the Python hook (no ExcHook) and in
    pure Python: it passes, and the three agree; the three machines."""
    ms = FIRMWARE[name]
    c, rc = _run(fw(name), monkeypatch, ms=ms)
    py, rpy = _run(fw(name), monkeypatch, native=False, ms=ms)
    pure, rpure = _run(fw(name), monkeypatch, pure=True, ms=ms)
    assert_firmware_passed(c, rc)
    assert fingerprint(c, rc) == fingerprint(py, rpy) == fingerprint(pure, rpure)
    return c, py, pure


@pytest.mark.parametrize("name", FIRMWARE)
def test_returns_in_c_change_nothing(fw, monkeypatch, name):
    c, py, pure = _three_ways(fw, monkeypatch, name)
    assert py.cpu._exc_hook is None and pure.cpu._exc_hook is None
    if name not in ("cpu_svc", "cpu_exceptions", "cpu_faults"):
        assert c.cpu._exc_hook.returns > 0                 # the C path ran
        assert c.cpu.returns_in_hook == py.cpu.returns_in_hook
        assert c.cpu.entries_in_hook == py.cpu.entries_in_hook
    if name in ("cpu_nesting", "cpu_exceptions", "cpu_fast_return"):
        assert c.cpu._exc_hook.chains == c.cpu.tail_chains > 0   # tail-chains in C


def test_tail_chain_that_leaves_the_exception_pending_is_seen(fw, monkeypatch, fault_build):
    """Companion: a tail-chain in C that leaves the chained exception
    pending enters it again and again: the firmware never gets past it."""
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    m.cpu._exc_hook.chain_bug = 1
    r = m.run(ms=20)
    assert r.reason == "deadline" and m.cpu._exc_hook.chains > 1000
    assert "PASS X tail-chained after A" not in m.console_text()


@pytest.mark.parametrize("name", ["cpu_fast_return", "cpu_nesting", "cpu_fpu", "cpu_it_irq"])
def test_entries_in_c_change_nothing(fw, monkeypatch, name):
    """Entries in C against entries in Python, returns in C both times."""
    ms = FIRMWARE[name]
    c, rc = _run(fw(name), monkeypatch, ms=ms)
    with monkeypatch.context() as mp:
        mp.setattr(cortexm.CortexM, "native_entries", False)
        py, rpy = _run(fw(name), monkeypatch, ms=ms)
    assert_firmware_passed(c, rc)
    assert fingerprint(c, rc) == fingerprint(py, rpy)
    assert c.cpu._exc_hook.entries > 0 and py.cpu._exc_hook.entries == 0


class _Wrapped:
    """An ExcHook installed with one argument changed (for the companions)."""
    def __init__(self, index, value):
        self.hook = REAL_HOOK()
        self.index, self.value = index, value

    def install(self, *args):
        args = list(args)
        args[self.index] = self.value(args[self.index])
        return self.hook.install(*args)

    def __getattr__(self, name):
        return getattr(self.hook, name)


def test_hook_without_mask_watch_is_detected(fw, fault_build):
    """Companion: the hook arms a mask watch the block hook does not read: a
    pend masked by BASEPRI/PRIMASK after the return is taken late."""
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    m.cpu._exc_hook.mask_bug = 1
    m.run(ms=20)
    text = m.console_text()
    assert "FAIL X masked by BASEPRI taken where BASEPRI drops" in text
    assert "FAIL X masked by PRIMASK taken where PRIMASK drops" in text


def test_hook_without_fp_frames_is_detected(fw, monkeypatch):
    """Companion: a hook that pops every frame as a basic one (m4 off) loses
    the FP registers an FP frame holds."""
    monkeypatch.setattr(_core, "ExcHook", lambda: _Wrapped(8, lambda a: False))
    m = Machine(fw("cpu_fpu"), board="nrf52832")
    r = m.run(ms=10)
    assert not (r.reason == "exit" and r.exit_code == 0)


@pytest.mark.parametrize("switch", ["native_returns", "native_entries"])
@pytest.mark.parametrize("which", ["wasp-os", "infinitime"])
def test_exc_in_c_change_nothing_on_real_firmware(monkeypatch, which, switch):
    """wasp-os's boot and 1 kHz tick to 5 emulated s, InfiniTime's first 3 s
    (advertising heard by a scanner): returns in C or in Python, the same
    cycles, accesses per register, pending events, screen, NOR, air, RAM."""
    def done_in_c(m, native):
        cpu = m.cpu
        return dict(
            tail_chains=cpu.tail_chains, returns_in_hook=cpu.returns_in_hook,
            in_c=(cpu._exc_hook.returns if switch == "native_returns" else cpu._exc_hook.entries)
            if cpu._exc_hook is not None else 0)
    c, py = image_both_ways(which, 5.0 if which == "wasp-os" else 3.0,
                            flip(monkeypatch, cortexm.CortexM, switch), extra=done_in_c)
    assert c.pop("in_c") > 1000 and py.pop("in_c") == 0
    assert_same_state(c, py, "returns in C and in Python")


def _run_watched(path, monkeypatch, native=True, pure=False, ms=20):
    """A run watched by a predicate (run_until): the times it is asked at."""
    with monkeypatch.context() as mp:
        mp.setattr(cortexm.CortexM, "native_returns", native)
        m = Machine(path, board="nrf52832", pure_python=pure)
        asked = []
        assert not m.run_until(lambda: asked.append(m.clock.now) or False, timeout_ms=ms,
                               poll_ms=ms)
    st = {"asked": asked, "cycles": m.cpu.cycles, "now": m.clock.now,
          "console": m.console_text(), "tail_chains": m.cpu.tail_chains,
          "slices": m.cpu.slices, "accesses": m.soc.bus.accesses}
    return m, st


@pytest.mark.parametrize("name", ["cpu_fast_return", "cpu_nesting", "cpu_pendsv", "cpu_fpu"])
def test_watched_returns_in_c_end_the_slice(fw, monkeypatch, name):
    """While run_until's predicate watches every slice boundary, a return
    done in C ends its slice as the Python hook's trap does: the predicate
    is asked at the same times, with the same cycles, console and slices."""
    c, on = _run_watched(fw(name), monkeypatch)
    _py, off = _run_watched(fw(name), monkeypatch, native=False)
    _pure, pure = _run_watched(fw(name), monkeypatch, pure=True)
    assert c.cpu._exc_hook.returns > 0                    # done in C, watched
    assert len(on["asked"]) > 20
    assert on == off == pure


def test_watched_return_that_does_not_end_the_slice_is_seen(fw, monkeypatch):
    """Companion: returns done inside the slice although the run is
    watched (the Python hook ignoring the watch) let the predicate be
    asked at fewer boundaries."""
    _c, on = _run_watched(fw("cpu_fast_return"), monkeypatch)
    orig = cortexm.CortexM._return_in_hook

    def ignores_watch(self, uc):
        w, self.__dict__["_boundaries_watched"] = self._boundaries_watched, False
        try:
            return orig(self, uc)
        finally:
            self.__dict__["_boundaries_watched"] = w
    monkeypatch.setattr(cortexm.CortexM, "_return_in_hook", ignores_watch)
    _py, off = _run_watched(fw("cpu_fast_return"), monkeypatch, native=False)
    assert len(off["asked"]) < len(on["asked"])


ISPR0, ICSR = (0xE000E000, 0x200), (0xE000E000, 0xD04)


@pytest.mark.parametrize("name", ["cpu_fast_return", "cpu_pendsv", "cpu_exceptions",
                                  "cpu_nesting"])
def test_pends_in_c_change_nothing(fw, monkeypatch, name):
    """ISPR and ICSR's PENDSVSET/PENDSTSET pends done in C (ExcHook.pend_write,
    the SCS page's CALL op: set_pending and _pending_changed) against the
    model's write_word (the Python hook's machine: no ExcHook) and pure
    Python: the same cycles, time, console and tail-chains."""
    c, py, _pure = _three_ways(fw, monkeypatch, name)
    st = c.soc.bus.access_stats()
    in_c = sum(st.get(k, (0, 0, 0, 0))[2] for k in (ISPR0, ICSR))
    assert in_c > 0                                    # the op carried pends out
    assert py.soc.bus.access_stats().get(ISPR0, (0, 0, 0, 0))[2] == 0


def test_pend_without_its_steps_is_seen(fw, fault_build):
    """Companion: a pend in C that sets the bit but neither asks for an
    entry nor arms the mask watch (pend_bug) is taken late: the firmware's
    masked pends are taken after the mask drops, not where it drops."""
    m = Machine(fw("cpu_fast_return"), board="nrf52832")
    m.cpu._exc_hook.pend_bug = 1
    m.run(ms=20)
    assert "FAIL X pended under BASEPRI taken where BASEPRI drops" in m.console_text()
