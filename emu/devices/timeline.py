"""A tiny per-device queue of actions at exact emulated times.

One clock event per device, re-armed to the earliest queued action, so
scripted inputs (touch, button) happen at exact ticks.

Actions queued with :meth:`Timeline.call_at` / :meth:`Timeline.call_after`
name a method of the timeline's ``owner`` and its arguments: they are data,
so a machine snapshot saves and restores them.  Actions queued as arbitrary
callables (:meth:`Timeline.at`) still work but make a snapshot fail while
they are pending.
"""
from __future__ import annotations

import heapq
from typing import Callable


class Timeline:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev", "_q", "_seq")
    STRUCTURE = ("clock", "owner")
    def __init__(self, clock, name: str, owner=None):
        self.clock = clock
        self.owner = owner
        self._q: list = []
        self._seq = 0
        self._ev = clock.event(name, self._fire)

    def at(self, tick: int, fn: Callable[[], None]) -> None:
        self._push(tick, fn)

    def after(self, ticks: int, fn: Callable[[], None]) -> None:
        self.at(self.clock.now + int(ticks), fn)

    def call_at(self, tick: int, method: str, *args) -> None:
        """At ``tick``, call ``owner.<method>(*args)`` (saved by snapshots)."""
        self._push(tick, method, args)

    def call_after(self, ticks: int, method: str, *args) -> None:
        self.call_at(self.clock.now + int(ticks), method, *args)

    def _push(self, tick: int, *action) -> None:
        """Queue (tick, seq, *action): action is (fn,) or (method, args)."""
        tick = max(int(tick), self.clock.now)
        self._seq += 1
        heapq.heappush(self._q, (tick, self._seq, *action))
        self._rearm()

    def clear(self) -> None:
        self._q.clear()
        self._ev.cancel()

    @property
    def pending(self) -> int:
        return len(self._q)

    def _rearm(self) -> None:
        if self._q:
            if self._ev.when != self._q[0][0]:
                self._ev.schedule_at(self._q[0][0])
        else:
            self._ev.cancel()

    def save_state(self) -> dict:
        """Queued actions as data; ValueError if one is an arbitrary callable."""
        for entry in self._q:
            if len(entry) != 4:
                raise ValueError(f"timeline {self._ev.name}: an action queued as a Python "
                                 f"callable ({entry[2]!r}) at tick {entry[0]} cannot be saved")
        return {"queue": [(t, s, m, tuple(a)) for t, s, m, a in sorted(self._q)],
                "seq": self._seq, "due": self._ev.when}

    def load_state(self, st: dict) -> None:
        self._q = [(int(t), int(s), str(m), tuple(a)) for t, s, m, a in st["queue"]]
        heapq.heapify(self._q)
        self._seq = st["seq"]
        self._ev.cancel()
        if st.get("due") is not None:
            self._ev.schedule_at(st["due"])

    def _fire(self) -> None:
        now = self.clock.now
        while self._q and self._q[0][0] <= now:
            entry = heapq.heappop(self._q)
            if len(entry) == 4:
                getattr(self.owner, entry[2])(*entry[3])
            else:
                entry[2]()
        self._rearm()
