"""Several machines on one timeline.

Each :class:`~emu.machine.Machine` keeps its own clock and runs on its own
(its own Unicorn engine, its own native state: nothing of one machine is
in any other's, nor in a module's globals).  A :class:`Timeline` steps
them to common times so that they can act on each other (a packet on the
air, a level on a wire between two boards) exactly and deterministically.

How N machines are stepped (conservative synchronisation in windows):

* every way one machine reaches another is a :class:`Link` with a
  *lookahead*: the least time between a cause in one machine and its first
  effect in another (a wire's delay; for the radio, the ramp-up a
  transmitter needs between its TXEN and its first bit on the air);
* the timeline advances in windows no longer than the smallest lookahead:
  every machine runs to the window's end (``Machine.run(until_tick=end)``),
  each on its own, in any order (the order is a parameter, and the results
  do not depend on it); what a machine did inside the window that another
  must see is recorded by the link with its exact tick;
* at the window's end each link delivers what it recorded, as events on the
  receivers' clocks at their exact ticks; a cause at tick t inside the
  window has its effect at t + lookahead, which is at or after the window's
  end: no machine ever has to go back;
* a link may say that nothing can cross it before some later tick (its
  ``horizon``: a radio that is off cannot transmit before it is turned on
  and ramps up): the window then stretches to the earliest horizon, and
  with no link at all the machines run to the end in one window each.

The same machines, inputs and seed give the same results whatever the
window length (up to the lookahead), the order the machines run in, or the
host; tests/machine/test_timeline.py shows it with two boards on a wire.

Not here yet: the air between machines (emu/air.py joins one chip to host
devices) is a link of the next issue's; machines stopped by their firmware
(an exit, a lockup) stay where they stopped while the others go on.
"""
from __future__ import annotations

from typing import Iterable, Optional

from emu.clock import NEVER, TICKS_PER_MS, TICKS_PER_SECOND, TICKS_PER_US


class Link:
    """A way one machine reaches others: records causes with their ticks
    during a window, delivers them at its end (``deliver``).  ``lookahead``:
    the least ticks between a cause and its first effect."""
    lookahead: int = NEVER

    def horizon(self, now: int) -> int:
        """The earliest tick at which something could cross this link, as far
        as it knows at ``now`` (``now + lookahead`` unless it knows better)."""
        return now + self.lookahead

    def deliver(self, end: int) -> None:
        """The window ended at ``end``: hand over what crossed."""


class Wire(Link):
    """A wire from a pin of one machine to a pin of another (a GPIO line
    between two boards), with a propagation ``delay`` in ticks (at least 1):
    the destination pin follows the source's level ``delay`` ticks later,
    driven by the wire (a push-pull output into an input)."""

    def __init__(self, src, src_pin: int, dst, dst_pin: int, delay: int, name: str = ""):
        if delay < 1:
            raise ValueError("a wire's delay is at least one tick")
        self.src, self.dst = src, dst
        self.src_pin, self.dst_pin = src.board.soc.pins[src_pin], dst.board.soc.pins[dst_pin]
        self.lookahead = delay
        self.name = name or f"wire:{src_pin}->{dst_pin}"
        self._changes: list = []             # (tick at the source, level)
        self._pending: list = []             # delivered, not yet reached the pin
        self._ev = dst.clock.event(f"{self.name}.edge", self._arrive)
        self.src_pin.on_change(self._changed)
        self.dst_pin.drive(self.name, self.src_pin.level)
        self.log: list = []                  # (tick at the source, tick at the destination, level)

    def _changed(self, level: bool) -> None:
        self._changes.append((self.src.clock.now, level))

    def deliver(self, end: int) -> None:
        for t, level in self._changes:
            self._pending.append((t + self.lookahead, level))
        self._changes.clear()
        self._arm()

    def _arm(self) -> None:
        if self._pending:
            self._ev.schedule_at(self._pending[0][0])
        else:
            self._ev.cancel()

    def _arrive(self) -> None:
        now = self.dst.clock.now
        while self._pending and self._pending[0][0] <= now:
            t, level = self._pending.pop(0)
            self.dst_pin.drive(self.name, level)
            self.log.append((t - self.lookahead, t, level))
        self._arm()


class Timeline:
    """N machines stepped together (see the module docstring).  All must be
    at the same tick when added (new machines are at 0)."""

    def __init__(self, machines: Iterable = (), links: Iterable = ()):
        self.machines: list = []
        self.links: list = []
        self.now = 0
        self.windows = 0
        self.stopped: dict = {}              # machine -> its RunResult (exit, lockup, ...)
        for m in machines:
            self.add(m)
        for link in links:
            self.connect(link)

    def add(self, machine) -> None:
        if self.machines and machine.clock.now != self.now:
            raise ValueError(f"a machine at tick {machine.clock.now} joins a timeline at "
                             f"{self.now}: machines join at the same tick")
        if not self.machines:
            self.now = machine.clock.now
        self.machines.append(machine)

    def connect(self, link: Link) -> Link:
        self.links.append(link)
        return link

    def window_end(self, until: int, longest: Optional[int] = None) -> int:
        """The end of the next window: the earliest horizon of the links (no
        link: ``until``), at most ``longest`` ticks on, never past ``until``."""
        end = until
        for link in self.links:
            end = min(end, link.horizon(self.now))
        if longest is not None:
            end = min(end, self.now + longest)
        return max(end, self.now + 1) if end > self.now else min(until, self.now + 1)

    def run(self, seconds: float = 0.0, *, ms: float = 0.0, us: float = 0.0,
            until_tick: Optional[int] = None, order: Optional[list] = None,
            longest_window: Optional[int] = None) -> dict:
        """Run every machine to ``until_tick`` (or for the given time).
        ``order``: the order the machines run in each window (default: as
        added; the results do not depend on it); ``longest_window``: a cap on
        a window's length in ticks (the results do not depend on it either).
        Returns {machine: its last RunResult}."""
        if until_tick is None:
            until_tick = self.now + int(round(seconds * TICKS_PER_SECOND + ms * TICKS_PER_MS
                                              + us * TICKS_PER_US))
        if until_tick < self.now:
            raise ValueError("a timeline does not go back")
        running = list(order if order is not None else self.machines)
        if sorted(map(id, running)) != sorted(map(id, self.machines)):
            raise ValueError("order must name each machine of the timeline once")
        results: dict = dict(self.stopped)
        while self.now < until_tick:
            end = self.window_end(until_tick, longest_window)
            for m in running:
                if m in self.stopped:
                    continue
                r = m.run(until_tick=end)
                results[m] = r
                if r.reason != "deadline":
                    self.stopped[m] = r
            for link in self.links:
                link.deliver(end)
            self.now = end
            self.windows += 1
        return results
