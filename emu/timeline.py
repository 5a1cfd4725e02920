"""Several machines on one timeline.

Each :class:`~emu.machine.Machine` keeps its own clock and runs on its own
(its own Unicorn engine, its own native state: nothing of one machine is
in any other's, nor in a module's globals).  A :class:`Timeline` steps
them so that they can act on each other (a packet on the air, a level on a
wire between two boards) exactly and deterministically.

How N nodes are stepped (conservative synchronisation in rounds):

* every way one node reaches another is a :class:`Link`: a wire
  (:class:`Wire`: a level arrives its delay after it left) or the air
  (emu/airspace.py: a packet is known whole at its START, and no receiver
  is affected before its first bit);
* every node says its *horizon*: the earliest global tick at which it could
  put something on the air, as far as its state tells without help from
  outside (emu/peripherals/radio.py ``earliest_tx``: a radio that is off
  needs a TXEN and a 40 us ramp-up first; a CPU asleep does nothing before
  its next scheduled event);
* a round: first every node is handed what reached it in the last round,
  then each runs, on its own and in any order (or in parallel, in separate
  processes: emu/worldproc.py), to its *bound*: the earliest tick at which
  anything of another node could reach it (the least horizon of the other
  nodes on its air, a wire's source's tick plus the wire's delay).  A node
  that starts a packet stops there (its receivers may answer sooner than
  the bound it ran to);
* what the nodes sent in the round is routed by the links, in a fixed
  order (by node, then by tick), and handed over at the start of the next.

Nothing of the host enters: the same nodes, inputs and seed give the same
packets, levels and console output at the same ticks, whatever the order
the nodes run in within a round, a cap on the rounds' length
(``longest_round``), or the number of processes.  tests/machine/
test_timeline.py and test_air_nodes.py show it.

Time: the timeline counts global ticks (512 MHz, as each clock).  A node
may have a crystal offset (``ppb``, parts per billion): its clock then
counts ``g + g * ppb // 10**9`` ticks at global tick ``g``; every crossing
converts with integer arithmetic (emu/airspace.py says what it stands for).

Not modelled: machines stopped by their firmware (an exit, a lockup) stay
where they stopped while the others go on; a node's own debugger (GDB)
halting it halts the timeline's progress past it.
"""
from __future__ import annotations

from typing import Iterable, Optional

from emu.clock import NEVER, TICKS_PER_MS, TICKS_PER_SECOND, TICKS_PER_US

BILLION = 10 ** 9
LATE_LIMIT = 10 * TICKS_PER_US       # how far past its bound a node may be (a block)


def to_local(g: int, ppb: int) -> int:
    """A node's clock at global tick ``g`` (crystal offset ``ppb``)."""
    if g >= NEVER:
        return NEVER
    return g + g * ppb // BILLION if ppb else g


def to_global(t: int, ppb: int) -> int:
    """The global tick at a node's tick ``t`` (rounded down)."""
    if t >= NEVER:
        return NEVER
    return t * BILLION // (BILLION + ppb) if ppb else t


class Side:
    """A node as the timeline sees it, where the node lives (this process or
    a worker's): its clock, what it sent since the last round (``outbox``:
    (kind, ...) tuples in its own ticks), the handlers for what reaches it,
    and how it runs."""

    def __init__(self, name: str, ppb: int = 0):
        self.name = name
        self.ppb = int(ppb)
        self.outbox: list = []
        self.handlers: dict = {}          # kind -> fn(*args) for what arrives
        self.stopped = None               # the RunResult that ended it (exit, lockup)
        self.last = None

    # -- the node's clock ---------------------------------------------------
    @property
    def clock(self):
        raise NotImplementedError

    def now(self) -> int:
        return self.clock.now

    def to_local(self, g: int) -> int:
        return to_local(g, self.ppb)

    def to_global(self, t: int) -> int:
        return to_global(t, self.ppb)

    # -- the round ------------------------------------------------------------
    def apply(self, messages: list) -> None:
        """Hand over what reached this node: [(message, effect tick)]; a
        message is (kind, ...) and goes to ``handlers[kind]``."""
        for (kind, *args), _effect in messages:
            self.handlers[kind](*args)

    def emit(self, kind: str, *args) -> None:
        """Something leaves this node for the others (a packet, an edge)."""
        self.outbox.append((kind, *args))

    def horizon(self) -> int:
        """The earliest tick (this node's) at which it could start a packet."""
        return NEVER

    def listening(self) -> bool:
        """Whether something on the air can reach it now (its receiver is on,
        or host devices listen)."""
        return True

    def has_pending(self) -> bool:
        """What reached it waits to be handed over (a worker's, until its next step)."""
        return False

    def step(self, until: int):
        """Run to ``until`` (this node's ticks) or until it sends a packet."""
        raise NotImplementedError

    def begin_step(self, until: int) -> None:
        """Start ``step`` (a node in another process runs meanwhile)."""
        self.step(until)

    def end_step(self) -> None:
        """Wait for the step begun (nothing to wait for here)."""

    def take(self) -> list:
        out, self.outbox = self.outbox, []
        return out


class MachineSide(Side):
    """A :class:`~emu.machine.Machine` on a timeline."""

    def __init__(self, machine, name: Optional[str] = None, ppb: int = 0):
        super().__init__(name or getattr(machine, "name", None) or "machine", ppb)
        self.machine = machine
        self.held = False              # a debugger holds it halted: it does not run
        self.stop_pred = None          # checked at its slice boundaries (a breakpoint hit)
        self.timeline = None

    @property
    def clock(self):
        return self.machine.clock

    def request_stop(self) -> None:
        """End the run at the next boundary (a packet went out)."""
        m = self.machine
        m.halt_requested = True
        m.cpu.request_stop()

    def busy_from(self) -> int:
        """The CPU's tick when it is running, else (asleep with nothing to
        wake it, or in System OFF) its next scheduled event."""
        m = self.machine
        cpu = m.cpu
        clock = m.clock
        asleep = cpu.powered_off or (cpu.sleeping and not cpu._wake_condition() and not (
            cpu.sleep_kind == "wfe" and cpu.event_register))
        return clock.next_event_time() if asleep else clock.now

    def listening(self) -> bool:
        air = self.machine.air
        return air is not None and (air.receiver_on or air.has_host_devices)

    def horizon(self) -> int:
        m = self.machine
        radio = m.soc.peripherals.get("radio")
        if radio is None or self.stopped is not None:
            return NEVER
        h = radio.earliest_tx(self.busy_from())
        air = radio.air
        if air.has_host_devices:           # a scanner or a central on this clock
            h = min(h, m.clock.next_event_time())
        return h

    def step(self, until: int):
        m = self.machine
        if self.stopped is not None or m.clock.now >= until:
            return self.stopped or self.last
        world_run, m.world_run = m.world_run, None
        try:
            r = m.run(until_tick=until, stop=self.stop_pred)
        finally:
            m.world_run = world_run
        self.last = r
        if r.reason not in ("deadline", "break", "sleep", "off"):
            self.stopped = r
        return r

    def run_world(self, machine, until: int, stop):
        """Machine.run on a timeline: run the whole timeline until this
        machine reaches ``until`` (its ticks) or ``stop()``; its RunResult."""
        from emu.machine import RunResult
        tl = self.timeline
        self.stop_pred = stop
        try:
            goal = self.to_global(until)
            while self.to_global(machine.clock.now) < goal and self.stopped is None:
                before = machine.clock.now
                tl.run(until_tick=max(goal, tl.now), stop=stop)
                if stop is not None and stop():
                    break
                if machine.clock.now == before and tl.now >= goal:
                    break
        finally:
            self.stop_pred = None
        if self.stopped is not None:
            return self.stopped
        r = self.last
        if r is None or r.time_ticks != machine.clock.now:
            r = RunResult("break" if stop is not None and stop() else "deadline", machine)
        return r


class Link:
    """A way nodes reach each other.  ``bound(k)``: the earliest global tick
    at which anything could reach node ``k`` over this link, given the
    nodes' horizons ``h`` and ticks ``now`` (dicts by node); ``route(i,
    item)``: what node ``i`` sent (an outbox entry) as [(node, message in
    that node's ticks, its effect's global tick)]."""
    kinds: tuple = ()

    def attach(self, timeline) -> None:
        self.timeline = timeline

    def members(self) -> list:
        return []

    def bound(self, k, h: dict, now: dict) -> int:
        return NEVER

    def route(self, i, item) -> list:
        return []


class Wire(Link):
    """A wire from a pin of one machine to a pin of another (a GPIO line
    between two boards), with a propagation ``delay`` in ticks (at least 1):
    the destination pin follows the source's level ``delay`` ticks later,
    driven by the wire (a push-pull output into an input)."""
    kinds = ("edge",)

    def __init__(self, src, src_pin: int, dst, dst_pin: int, delay: int, name: str = ""):
        if delay < 1:
            raise ValueError("a wire's delay is at least one tick")
        self.src, self.dst = src, dst
        self.src_pin, self.dst_pin = src.board.soc.pins[src_pin], dst.board.soc.pins[dst_pin]
        self.delay = self.lookahead = delay
        self.name = name or f"wire:{src_pin}->{dst_pin}"
        self._pending: list = []             # (tick at the destination, level), not yet reached
        self._ev = dst.clock.event(f"{self.name}.edge", self._arrive)
        self.dst_pin.drive(self.name, self.src_pin.level)
        self.log: list = []                  # (tick at the source, tick at the destination, level)
        self._rank, self._n = 1, 0

    def attach(self, timeline) -> None:
        super().attach(timeline)
        self._rank = len(timeline.links)       # its edges' place among a tick's arrivals
        self._src_side = timeline.side(self.src)
        self._dst_side = timeline.side(self.dst)
        self._dst_side.handlers[self.name] = self._delivered
        self.src_pin.on_change(self._changed)

    def members(self) -> list:
        return [self.src, self.dst]

    def _changed(self, level: bool) -> None:
        self._src_side.emit("edge", self.name, self.src.clock.now, level)

    def bound(self, k, h: dict, now: dict) -> int:
        if k is not self._dst_side:
            return NEVER
        return now[self._src_side] + self.delay

    def route(self, i, item) -> list:
        _kind, name, t, level = item
        if name != self.name:
            return []
        g = i.to_global(t) + self.delay
        d = self._dst_side
        return [(d, (self.name, t, d.to_local(g), level), g)]

    def _delivered(self, t_src: int, t_dst: int, level: bool) -> None:
        if t_dst + LATE_LIMIT < self.dst.clock.now:
            raise RuntimeError(f"an edge on {self.name} reached its destination "
                               f"{(self.dst.clock.now - t_dst) / TICKS_PER_US:.1f} us late: "
                               "the timeline let it run too far")
        self._pending.append((t_dst, t_src, level))
        self._pending.sort()
        self._arm()

    def _arm(self) -> None:
        if self._pending:
            # before the tick's own events, whenever the edge was handed over
            self._n += 1
            self._ev.schedule_first(self._pending[0][0], (self._rank << 40) | self._n)
        else:
            self._ev.cancel()

    def _arrive(self) -> None:
        now = self.dst.clock.now
        while self._pending and self._pending[0][0] <= now:
            t, t_src, level = self._pending.pop(0)
            self.dst_pin.drive(self.name, level)
            self.log.append((t_src, t, level))
        self._arm()


class Timeline:
    """N machines (and host nodes: emu/world.py) stepped together (see the
    module docstring).  All must be at the same tick when added (new
    machines are at 0)."""

    def __init__(self, machines: Iterable = (), links: Iterable = ()):
        self.sides: list = []                # Side per node, in the order added
        self._by_obj: dict = {}              # id(machine or side) -> Side
        self.links: list = []
        self.now = 0                         # every node has reached this global tick
        self.rounds = 0
        self.stopped: dict = {}              # machine -> its RunResult (exit, lockup, ...)
        self._inbox: dict = {}               # Side -> [(message, effect tick)]
        for m in machines:
            self.add(m)
        for link in links:
            self.connect(link)

    @property
    def machines(self) -> list:
        return [s.machine for s in self.sides if isinstance(s, MachineSide)]

    @property
    def windows(self) -> int:
        """The rounds run so far (the name of the first timeline's windows)."""
        return self.rounds

    def side(self, obj) -> Side:
        if isinstance(obj, Side):
            return obj
        try:
            return self._by_obj[id(obj)]
        except KeyError:
            raise ValueError(f"{obj!r} is not on this timeline") from None

    def add(self, node, name: Optional[str] = None, ppb: int = 0) -> Side:
        """Add a Machine (or a Side: a host node, a worker's proxy)."""
        side = node if isinstance(node, Side) else MachineSide(node, name, ppb)
        g = side.to_global(side.now())
        if self.sides and g != self.now:
            raise ValueError(f"a machine at tick {side.now()} joins a timeline at "
                             f"{self.now}: machines join at the same tick")
        if not self.sides:
            self.now = g
        self.sides.append(side)
        if isinstance(side, MachineSide):
            side.timeline = self
            side.machine.world_run = side.run_world
        self._by_obj[id(node)] = side
        self._by_obj[id(side)] = side
        self._inbox[side] = []
        return side

    def connect(self, link: Link) -> Link:
        self.links.append(link)
        link.attach(self)
        return link

    # -- a round ---------------------------------------------------------------
    def bounds(self, until: int, longest: Optional[int] = None) -> dict:
        """Each node's global bound for the next round."""
        now = {s: s.to_global(s.now()) for s in self.sides}
        h = {}
        for s in self.sides:
            hs = s.to_global(s.horizon())
            for _msg, effect in self._inbox[s]:
                # what arrives may wake it sooner (not before where it stands:
                # a chip whose receiver was off may be past a packet's start)
                hs = min(hs, max(effect, now[s]))
            h[s] = hs
        out = {}
        for s in self.sides:
            b = until
            for link in self.links:
                b = min(b, link.bound(s, h, now))
            if longest is not None:
                b = min(b, now[s] + longest)
            out[s] = b
        return out

    def run(self, seconds: float = 0.0, *, ms: float = 0.0, us: float = 0.0,
            until_tick: Optional[int] = None, order: Optional[list] = None,
            longest_round: Optional[int] = None, longest_window: Optional[int] = None,
            stop=None) -> dict:
        """Run every node to ``until_tick`` (global; or for the given time).
        ``order``: the order the nodes run in within a round (default: as
        added; the results do not depend on it); ``longest_round``: a cap on
        how far a node runs in one round, in ticks (the results do not
        depend on it either); ``stop()``: checked after every round.
        Returns {machine: its last RunResult}."""
        if until_tick is None:
            until_tick = self.now + int(round(seconds * TICKS_PER_SECOND + ms * TICKS_PER_MS
                                              + us * TICKS_PER_US))
        if until_tick < self.now:
            raise ValueError("a timeline does not go back")
        if longest_round is None:
            longest_round = longest_window
        if order is not None:
            try:
                running = [self.side(x) for x in order]
            except ValueError:
                running = []
            if sorted(map(id, running)) != sorted(map(id, self.sides)):
                raise ValueError("order must name each machine of the timeline once")
        else:
            running = list(self.sides)
        while self.now < until_tick:
            bounds = self.bounds(until_tick, longest_round)
            delivered = self._deliver_all()
            stepped = []
            for s in running:
                b = bounds[s]
                if s.stopped is None and not getattr(s, "held", False) \
                        and b > s.to_global(s.now()):
                    s.begin_step(s.to_local(b))
                    stepped.append(s)
                elif s.has_pending():
                    s.begin_step(s.now())      # a worker takes what reached it, runs nothing
                    stepped.append(s)
            for s in stepped:
                s.end_step()
            if not stepped and not delivered:
                break                          # every node held or stopped: nothing moves
            self._route()
            self.rounds += 1
            self.now = min(until_tick, min(self._reached(s, until_tick) for s in self.sides))
            if stop is not None and stop():
                break
        self._deliver_all()
        return {s.machine: s.last for s in self.sides
                if isinstance(s, MachineSide) and s.last is not None}

    def _deliver_all(self) -> int:
        """Hand over what the last round routed (the nodes all stand at the
        run's end: the same moment as the next round's start); how many."""
        n = 0
        for s in self.sides:
            msgs = self._inbox[s]
            if msgs:
                self._inbox[s] = []
                s.apply(msgs)
                n += len(msgs)
        return n

    def _reached(self, s: Side, until: int) -> int:
        if s.stopped is not None:
            return until
        return s.to_global(s.now())

    def _route(self) -> None:
        """What every node sent this round, to the links, in node order."""
        for s in self.sides:
            for item in s.take():
                for link in self.links:
                    if item[0] in link.kinds:
                        for dst, msg, effect in link.route(s, item):
                            self._inbox[dst].append((msg, effect))
        for s in self.sides:
            if s.stopped is not None:
                self.stopped[getattr(s, "machine", s)] = s.stopped
