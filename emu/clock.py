"""One integer clock and one event scheduler.

Time is counted in ticks of 512 MHz, the least common multiple of the
nRF52832's 64 MHz CPU clock and its 32 768 Hz low-frequency clock, so every
clock of the chip is an exact integer number of ticks:

    CPU cycle (64 MHz)   = 8 ticks
    16 MHz (TIMER, PWM)  = 32 ticks
    1 MHz                = 512 ticks
    LFCLK (32 768 Hz)    = 15 625 ticks

Nothing here reads the host clock.  The CPU advances ``now`` by the cycles it
executes; sleeping (WFI/WFE) jumps ``now`` to the next scheduled event.

Devices create their :class:`Event` handles once (``clock.event(name, fn)``)
and re-arm them with :meth:`Event.schedule_in` (relative) or
:meth:`Event.schedule_at` (absolute), or :meth:`Event.cancel` them.

A machine with the native helpers runs on ``emu.soc._mmio.Clock``
(``emu.soc.ops.new_clock``), these two classes in C with the same API and steps
(emu/soc/_clock.h): the native bus, the peripherals' cores and the run loop
in C then schedule and fire events without Python.  These classes stay the
reference (the pure-Python path); tests/soc/test_clock_native.py drives both
with the same schedules.
"""
from __future__ import annotations

import heapq
from typing import Callable, Optional

TICKS_PER_SECOND = 512_000_000
TICKS_PER_MS = TICKS_PER_SECOND // 1000
TICKS_PER_US = TICKS_PER_SECOND // 1_000_000
CPU_TICKS = 8            # 64 MHz
LFCLK_TICKS = 15_625     # 32 768 Hz
HF16_TICKS = 32          # 16 MHz

NEVER = 1 << 62
FIRST_KEYS = 1 << 61        # Event.schedule_first's keys: 0 .. FIRST_KEYS - 1


def seconds(s: float) -> int:
    """Ticks in ``s`` seconds (rounded to the nearest tick)."""
    return int(round(s * TICKS_PER_SECOND))


def ms(m: float) -> int:
    return int(round(m * TICKS_PER_MS))


def us(u: float) -> int:
    return int(round(u * TICKS_PER_US))


class Event:
    """A re-armable scheduled callback owned by one device.

    At most one pending occurrence: re-arming moves it.  Cancelled or moved
    heap entries are discarded lazily (their sequence number no longer
    matches).
    """

    __slots__ = ("clock", "name", "fn", "when", "_seq")

    def __init__(self, clock: "Clock", name: str, fn: Callable[[], None]):
        self.clock = clock
        self.name = name
        self.fn = fn
        self.when: Optional[int] = None
        self._seq = 0

    @property
    def pending(self) -> bool:
        return self.when is not None

    def schedule_at(self, when: int) -> None:
        clock = self.clock
        if when < clock.now:
            when = clock.now
        if when == self.when:
            return        # already due then: keep its place among same-time events
        clock._seq += 1
        _push(self, when, clock._seq)

    def schedule_in(self, ticks: int) -> None:
        self.schedule_at(self.clock.now + ticks)

    def schedule_first(self, when: int, key: int) -> None:
        """Due at ``when`` (at least now) before every event scheduled with
        ``schedule_at`` for that tick; among events scheduled so, in the
        order of their ``key`` (0 <= key < 2**61, unique).  For what
        reaches a machine from another (emu/timeline.py): its place among
        the same tick's events must not depend on when it was handed over."""
        if not 0 <= key < FIRST_KEYS:
            raise ValueError(f"key must be 0 to 2**61 - 1, not {key}")
        _push(self, max(when, self.clock.now), key - FIRST_KEYS * 2)

    def cancel(self) -> None:
        # The heap entry stays until it surfaces; it is skipped then.
        self.when = None
        self._seq = -1

    def __repr__(self) -> str:
        return f"<Event {self.name} at {self.when}>"


def _push(ev: Event, when: int, seq: int) -> None:
    """``ev`` due at ``when`` with place ``seq`` among that tick's events
    (Event.schedule_at's and schedule_first's steps; the C side's
    clk_schedule_seq)."""
    clock = ev.clock
    ev._seq = seq
    ev.when = when
    heap = clock._heap
    heapq.heappush(heap, (when, seq, ev))
    if len(heap) > clock._compact_at:
        clock._compact()
    if when < clock.next_deadline:
        clock.next_deadline = when
        if clock.on_earlier_deadline is not None:
            clock.on_earlier_deadline()


class Clock:
    """The machine's single time base (``now`` in 512 MHz ticks)."""
    # a snapshot saves the clock apart (emu/snapshot.py CLOCK_DECLARATION: now,
    # the sequence number and every pending event by name)

    def __init__(self) -> None:
        self.now = 0
        self._heap: list = []
        self._seq = 0
        self.next_deadline = NEVER
        # called when an event is scheduled earlier than every other one, so
        # the CPU can shorten the slice it is running
        self.on_earlier_deadline: Optional[Callable[[], None]] = None
        # every event by name: a snapshot stores pending events as (name, due
        # tick, sequence) and re-arms the same-named events of a new machine
        self.events: dict = {}
        # the tick an event was due while its callback runs (None otherwise):
        # an event taken at the end of a basic block runs a little after it
        # was due; instruments that note when a change happened use this
        self.firing: Optional[int] = None

    def event(self, name: str, fn: Callable[[], None]) -> Event:
        """A new event handle; ``name`` must be unique on this clock."""
        if name in self.events:
            raise ValueError(f"two clock events named {name!r}: event names must be unique "
                             "(snapshots restore pending events by name)")
        ev = Event(self, name, fn)
        self.events[name] = ev
        return ev

    # -- scheduler ---------------------------------------------------------
    # A moved or cancelled event leaves its entry in the heap until it
    # surfaces; an event moved earlier again and again before a far entry
    # surfaces (an RTC re-armed from its overflow to the next compare at
    # every tick) would leave one behind each time, ~1000 an emulated second
    # with wasp-os idle.  When the heap holds more than this many entries it
    # keeps only the live ones (same keys, same order of firing).
    _compact_at = 256

    def _compact(self) -> None:
        heap = self._heap
        heap[:] = [x for x in heap if x[2]._seq == x[1] and x[2].when == x[0]]
        heapq.heapify(heap)
        self._compact_at = max(256, 2 * len(heap))

    def _clean(self) -> None:
        heap = self._heap
        while heap:
            when, seq, ev = heap[0]
            if ev._seq != seq or ev.when != when:
                heapq.heappop(heap)
                continue
            break
        self.next_deadline = heap[0][0] if heap else NEVER

    def next_event_time(self) -> int:
        """Absolute time of the earliest pending event, or NEVER."""
        self._clean()
        return self.next_deadline

    def run_due(self) -> int:
        """Fire every event whose time is <= now (in time order).  Returns count."""
        n = 0
        heap = self._heap
        while heap:
            when, seq, ev = heap[0]
            if ev._seq != seq or ev.when != when:
                heapq.heappop(heap)
                continue
            if when > self.now:
                break
            heapq.heappop(heap)
            ev.when = None
            self.firing = when
            try:
                ev.fn()
            finally:
                self.firing = None
            n += 1
        self.next_deadline = heap[0][0] if heap else NEVER
        if self.next_deadline != NEVER:
            self._clean()
        return n

    def advance_to(self, t: int) -> None:
        """Move ``now`` forward to ``t`` firing due events on the way."""
        while True:
            nxt = self.next_event_time()
            if nxt > t:
                break
            if nxt > self.now:
                self.now = nxt
            self.run_due()
        if t > self.now:
            self.now = t

    def pending_events(self) -> list:
        """(when, name) of every live event, sorted; for debugging and state."""
        out = [(w, e.name) for (w, s, e) in self._heap if e._seq == s and e.when == w]
        return sorted(out)

