"""A tiny per-device queue of actions at exact emulated times.

One clock event per device, re-armed to the earliest queued action, so
scripted inputs (touch, button) happen at exact ticks.
"""
from __future__ import annotations

import heapq
from typing import Callable


class Timeline:
    def __init__(self, clock, name: str):
        self.clock = clock
        self._q: list = []
        self._seq = 0
        self._ev = clock.event(name, self._fire)

    def at(self, tick: int, fn: Callable[[], None]) -> None:
        tick = max(int(tick), self.clock.now)
        self._seq += 1
        heapq.heappush(self._q, (tick, self._seq, fn))
        self._rearm()

    def after(self, ticks: int, fn: Callable[[], None]) -> None:
        self.at(self.clock.now + int(ticks), fn)

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

    def _fire(self) -> None:
        now = self.clock.now
        while self._q and self._q[0][0] <= now:
            _, _, fn = heapq.heappop(self._q)
            fn()
        self._rearm()
