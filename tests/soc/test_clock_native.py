"""The clock in C (emu._clock.Clock and Event, emu/_clock.h) against
emu.clock's Python classes, the reference: the same random schedules (events
scheduled, moved, cancelled and re-armed from their own callbacks, runs of
run_due and advance_to, heaps compacted, the heap read and assigned as a
snapshot restores it) give the same firings, in the same order at the same
ticks, and the same state after every step.  The companion runs a clock
whose equal-time events fire out of scheduling order and sees the
comparison fail.  A machine with the native helpers runs on the C clock;
the cycle-for-cycle comparisons of the native and pure-Python paths
(tests/cpu/test_native_loop.py, the firmware tests run both ways) cover it in
place."""
import heapq
import random

import pytest

from emu import Machine
from emu.clock import NEVER, Clock
from emu.soc.ops import new_clock

_clock = pytest.importorskip("emu._clock")


def _drive(clock, seed, steps=3000):
    """A random schedule on ``clock``; the log of everything observable."""
    rnd = random.Random(seed)
    log = []
    events = []

    def fire(i):
        def fn():
            log.append(("fire", i, clock.now, clock.firing))
            r = rnd.random()
            if r < 0.3:                      # re-arm itself or another, from the callback
                events[rnd.randrange(len(events))].schedule_in(rnd.choice((0, 1, 7, 100)))
            elif r < 0.4:
                events[rnd.randrange(len(events))].cancel()
        return fn

    for i in range(24):
        events.append(clock.event(f"ev{i}", fire(i)))
    earlier = []
    clock.on_earlier_deadline = lambda: earlier.append(clock.next_deadline)
    for step in range(steps):
        r = rnd.random()
        ev = events[rnd.randrange(len(events))]
        if r < 0.35:
            ev.schedule_at(clock.now + rnd.choice((0, 1, 2, 5, 50, 1000, -3)))
        elif r < 0.5:
            ev.schedule_in(rnd.randrange(0, 300))
        elif r < 0.6:
            ev.cancel()
        elif r < 0.75:
            clock.now += rnd.randrange(0, 120)
            log.append(("run_due", clock.run_due()))
        elif r < 0.85:
            clock.advance_to(clock.now + rnd.randrange(0, 400))
        elif r < 0.9:
            log.append(("next", clock.next_event_time()))
        elif r < 0.93:                       # a snapshot's restore: the live entries
            live = [(w, s, e) for (w, s, e) in clock._heap if e._seq == s and e.when == w]
            heapq.heapify(live)
            clock._heap = live
            clock._clean()
        elif r < 0.95:
            for _ in range(300):             # many moves: the heap compacts
                ev.schedule_at(clock.now + rnd.randrange(1, 10_000))
        else:
            log.append(("pending", clock.pending_events()))
        log.append((step, clock.now, clock.next_deadline, clock._seq, clock._compact_at,
                    tuple((e.when, e._seq, e.pending) for e in events)))
    log.append(("earlier", tuple(earlier)))
    log.append(("live", sorted((w, s, e.name) for (w, s, e) in clock._heap
                               if e._seq == s and e.when == w)))
    return log


@pytest.mark.parametrize("seed", range(6))
def test_c_clock_matches_the_python_clock(seed):
    c, py = _clock.Clock(), Clock()
    assert _drive(c, seed) == _drive(py, seed)


class _LifoClock(Clock):
    """A broken clock: events due at the same tick fire newest first."""

    def run_due(self):
        n = 0
        while True:
            self._clean()
            if self.next_deadline > self.now:
                return n
            due = [x for x in self._heap if x[2]._seq == x[1] and x[2].when == x[0]
                   and x[0] == self.next_deadline]
            when, seq, ev = max(due, key=lambda x: x[1])
            ev.when = None
            ev._seq = -1
            self.firing = when
            try:
                ev.fn()
            finally:
                self.firing = None
            n += 1


def test_a_clock_firing_out_of_order_is_seen():
    """Companion: the comparison catches a clock that fires equal-time
    events in another order."""
    assert any(_drive(_clock.Clock(), seed) != _drive(_LifoClock(), seed) for seed in range(6))


def test_c_clock_api():
    """The Python classes' API: names unique, when/pending/cancel, the
    heap assignable, errors as Python's (no crash on a bad heap)."""
    c = _clock.Clock()
    fired = []
    a = c.event("a", lambda: fired.append("a"))
    with pytest.raises(ValueError, match="unique"):
        c.event("a", lambda: None)
    assert a.when is None and not a.pending and a.name == "a" and a.clock is c
    a.schedule_in(10)
    assert a.when == 10 and a.pending and c.next_deadline == 10 and "10" in repr(a)
    a.cancel()
    assert a.when is None and c.next_event_time() == NEVER
    a.schedule_at(5)
    c.advance_to(20)
    assert fired == ["a"] and c.now == 20
    with pytest.raises(TypeError):
        c._heap = [(1, 2)]
    with pytest.raises(TypeError):
        c._heap = [(1, 2, "not an event")]
    c.extra = 3                              # other attributes, as on a Python object
    assert vars(c) == {"extra": 3}
    a.fn = lambda: 1 / 0
    a.schedule_in(1)
    c.now += 1
    with pytest.raises(ZeroDivisionError):
        c.run_due()
    assert c.firing is None and a.when is None


def test_machines_run_on_the_c_clock(fw):
    m = Machine(fw("cpu_systick"), board="nrf52832")
    assert type(m.clock) is _clock.Clock
    p = Machine(fw("cpu_systick"), board="nrf52832", pure_python=True)
    assert type(p.clock) is Clock
    assert type(new_clock(pure=True)) is Clock
