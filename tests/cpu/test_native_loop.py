"""The run loop in C (emu.cpu._core.ExcHook.run): CortexM.run's loop with
the same steps in the same order, used with the native helpers while none
of the methods it stands for is replaced.

Our firmware that drives each branch of the loop (WFI and WFE sleep with
SEV and SEVONPEND, exception returns and tail-chains, masked pends, faults
and a handler that never returns, a lockup, the MPU, SysTick, PendSV task
switches, System OFF, a system reset, polling loops, NVMC stalls, RTC and
TIMER events in C) ends in the same state with the C loop and with the
Python loop: cycles, clock, console, registers, RAM, accesses per
register, pending events, and the run's stop reason.  So do Debian's
micro:bit MicroPython and, when the images are present, wasp-os's first
5 s and InfiniTime's first 3 s.  The companion skews the C loop's slice
budget and sees the state differ.  The loop reads plain attributes of the
CPU and the clock from their instance dicts: none of those names may be a
data descriptor of the class (checked below).  The clock keeps its heap of
scheduled events compact: an event moved earlier before its far entry
surfaces left one entry behind per move (wasp-os idle: ~1000 an emulated
second, unbounded)."""
import inspect

import pytest

from conftest import (assert_same_state, both_ways, cached_image, image_both_ways, parity_state,
                      flip, run_fw)
from emu import Machine
from emu.clock import NEVER, Clock
from emu.cpu import cortexm
from helpers.microbit import microbit_typed


# (firmware, emulated ms): each stops on its own or runs that long
FIRMWARE = [("cpu_wfi", 3000), ("cpu_sev_wfe", 200), ("cpu_wfe_loop", 200),
            ("cpu_fast_return", 40), ("cpu_exceptions", 100), ("cpu_faults", 300),
            ("cpu_fault_repeat", 600), ("cpu_lockup", 100), ("cpu_mpu", 100),
            ("cpu_systick", 200), ("cpu_pendsv", 100), ("cpu_nesting", 100),
            ("rtos_tasks", 300), ("periph_systemoff", 300), ("cpu_sysreset", 100),
            ("cpu_poll_loops", 200), ("periph_nvmc_stall", 100), ("periph_rtc_core", 300),
            ("periph_timer_core", 100), ("cpu_fpu", 100), ("power_states", 300)]


def _run(path, ms, native_loop, monkeypatch, skew=0):
    """The run with the C loop or the Python one: (machine, its
    parity_state() with the run's stop reason)."""
    monkeypatch.setattr(cortexm.CortexM, "native_loop", native_loop)

    def skewed(m):
        h = m.cpu._exc_hook
        if h is not None and skew:       # (a switch of the test build: fault_build)
            h.skew = skew
    m, r = run_fw(path, ms, setup=skewed)
    st = parity_state(m)
    st["reason"] = r.reason
    return m, st


@pytest.mark.parametrize("name,ms", FIRMWARE, ids=[f for f, _ in FIRMWARE])
def test_c_loop_and_python_loop_agree(fw, monkeypatch, name, ms):
    m_c, on = _run(fw(name), ms, True, monkeypatch)
    m_py, off = _run(fw(name), ms, False, monkeypatch)
    assert m_c.cpu._exc_hook.slices > 0            # the C loop ran the slices
    assert m_py.cpu._exc_hook.slices == 0 and m_py.cpu.slices > 0
    assert on["cycles"] > 10
    assert_same_state(on, off, "the C run loop and the Python loop")


def test_a_skewed_c_loop_is_seen(fw, monkeypatch, fault_build):
    """Companion: a C loop whose slices run 200 cycles past the next event
    (an RTC tick taken late) leaves another state than the Python loop."""
    _, off = _run(fw("periph_rtc_core"), 300, False, monkeypatch)
    _, skewed = _run(fw("periph_rtc_core"), 300, True, monkeypatch, skew=200)
    with pytest.raises(AssertionError):
        assert_same_state(skewed, off, "a skewed C loop and the Python loop")


def test_replaced_step_gets_the_python_loop(fw, monkeypatch):
    """A subclass's or a test's replacement of a step the C loop carries out
    (here _start_slice, on the class) is honoured: the Python loop runs."""
    calls = []
    orig = cortexm.CortexM._start_slice

    def counted(self, nxt, pc):
        calls.append(nxt)
        return orig(self, nxt, pc)
    monkeypatch.setattr(cortexm.CortexM, "_start_slice", counted)
    m = Machine(fw("cpu_wfi"), board="nrf52832")
    m.run(ms=50)
    assert calls and m.cpu._exc_hook.slices == 0
    monkeypatch.undo()
    m = Machine(fw("cpu_wfi"), board="nrf52832")
    m.clock.run_due = m.clock.run_due           # an instance override too
    m.run(ms=50)
    assert m.cpu._exc_hook.slices == 0 and m.cpu.slices > 0


def test_attributes_read_from_the_dict_are_plain(fw):
    """The names the C loop and ExcHook read and set in the instance dicts
    of the CPU and the clock (emu/soc/_mmio.c, dg/ds) are never a data
    descriptor (a property) of their classes: getattr would not see the
    dict's value then."""
    src = (cortexm.__file__.rsplit("/", 3)[0] + "/emu/soc/_mmio.c")
    text = open(src).read()
    m = Machine(fw("cpu_wfi"), board="nrf52832")
    m.run(ms=5)
    for obj in (m.cpu, m.clock):
        for name in vars(obj):
            for klass in type(obj).__mro__:
                attr = klass.__dict__.get(name)
                if attr is not None:
                    assert not (inspect.isdatadescriptor(attr) and f'"{name}"' in text), \
                        f"{type(obj).__name__}.{name} is a data descriptor"


def test_microbit_micropython_agrees(monkeypatch):
    def start(on):
        monkeypatch.setattr(cortexm.CortexM, "native_loop", on)
        return microbit_typed(b"for i in range(3000): pass\r\rdisplay.scroll('AB')\r", 800)
    runs = both_ways((True, False), start,
                     extra=lambda m, on: {"leds": m.board.display.bits(),
                                          "c_slices": m.cpu._exc_hook.slices > 0})
    assert runs[0].pop("c_slices") and not runs[1].pop("c_slices")
    assert_same_state(runs[0], runs[1], "the C run loop and the Python loop")


@pytest.mark.parametrize("which,seconds,cycles", [("wasp-os", 5.0, 100_000_000),
                                                    ("infinitime", 3.0, 60_000_000)])
def test_real_firmware_agrees(monkeypatch, which, seconds, cycles):
    on, off = image_both_ways(which, seconds, flip(monkeypatch, cortexm.CortexM, "native_loop"))
    assert on["cycles"] > cycles
    assert_same_state(on, off, "the C run loop and the Python loop")


def test_heap_stays_compact_and_fires_in_order():
    """An event moved from far away to near, again and again (what an RTC
    re-armed from its overflow to its next compare does), leaves the heap
    bounded; the events fire at the same times and in the same order as
    without compaction."""
    def scenario(compact):
        c = Clock()
        if not compact:
            c._compact_at = NEVER
        fired = []
        most = 0
        evs = [c.event(f"e{i}", lambda i=i: fired.append((c.now, i))) for i in range(5)]
        # a live event due before the far entries keeps them from surfacing
        # (wasp-os: the watchdog's timeout)
        c.event("anchor", lambda: fired.append((c.now, "anchor"))).schedule_in(5_000_000)
        for step in range(3000):
            e = evs[step % 5]
            e.schedule_at(c.now + 10_000_000)       # far
            e.schedule_in(1 + step % 7)             # near again
            if step % 3 == 0:
                evs[(step + 2) % 5].cancel()
            c.advance_to(c.now + 3)
            most = max(most, len(c._heap))
        pending = c.pending_events()
        c.advance_to(c.now + 20_000_000)
        return fired, most, pending
    fired_c, size_c, pend_c = scenario(True)
    fired_r, size_r, pend_r = scenario(False)
    assert fired_c == fired_r and pend_c == pend_r and len(fired_c) > 1000
    assert size_c <= 256 < size_r


def test_wasp_idle_heap_is_bounded():
    """wasp-os idle (its RTC re-armed at every 1 kHz tick by the C core's
    event): the heap stays small instead of growing ~1000 an emulated second."""
    path = cached_image("PINETIME_EMU_WASP_IMAGE", "wasp-os/upstream/micropython.elf")
    m = Machine(path, flash_file=None)
    m.run(seconds=6.0)
    assert len(m.clock._heap) <= 512
