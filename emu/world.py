"""Several devices on one air: the Python API.

    from emu import World
    w = World(seed=1)
    dk = w.add("central_hr.elf", name="dk", position=(0, 0))
    watch = w.add("peripheral_hr.elf", name="watch", board="nrf52dk", position=(2, 0))
    w.pcap("air.pcap")                        # for Wireshark
    w.run(seconds=5)
    print(dk.machine.console_text())

A :class:`World` holds nodes on one timeline (emu/timeline.py) and one air
(emu/airspace.py): machines, each with its own unmodified firmware, its
board and its own factory identity (FICR.DEVICEADDR from its name), and
host nodes (``add_phone``: the phone of emu/phone, on a clock of its own,
at a position of its own).  ``run``, ``run_until`` and the phone's waiting
methods move every node together; the same nodes, inputs and seed give the
same packets at the same ticks, in one process or in several
(``World(processes=True)``: emu/worldproc.py).

Errors: ValueError for a bad name, position, offset or model figure, or a
node added after the world started; FirmwareError (one line) for an image
that does not load.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Optional

from emu import checks
from emu.air import Air
from emu.airspace import Airspace, AirModel
from emu.clock import Clock, NEVER, TICKS_PER_MS, TICKS_PER_SECOND, TICKS_PER_US
from emu.timeline import MachineSide, Side, Timeline

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
MAX_PPM = 1000.0


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ValueError(f"a node's name is 1 to 32 letters, digits, '_', '.' or '-', "
                         f"not {name!r}")
    return name


def _check_position(position) -> tuple:
    try:
        pos = tuple(float(v) for v in position)
    except (TypeError, ValueError):
        raise ValueError(f"a position is (x, y) or (x, y, z) in metres, not {position!r}") \
            from None
    if not 1 <= len(pos) <= 3 or not all(math.isfinite(v) and abs(v) <= 1e6 for v in pos):
        raise ValueError(f"a position is (x, y) or (x, y, z) in metres (finite, at most "
                         f"1000 km), not {position!r}")
    return pos + (0.0,) * (3 - len(pos))


def _ppb(ppm) -> int:
    ppm = checks.number("ppm", ppm, -MAX_PPM, MAX_PPM)
    return int(round(ppm * 1000))


class Node:
    """What every node has: ``name``, ``position`` (x, y, z metres),
    ``ppm`` (its crystal offset), ``air`` (its view of the air)."""
    world: "World"
    name: str
    position: tuple
    ppm: float

    @property
    def time(self) -> float:
        """The world's emulated seconds."""
        return self.world.time


class MachineNode(Node):
    """A machine on the world's air: ``machine`` is its Machine."""

    def __init__(self, world, machine, name, position, ppm, side):
        self.world, self.machine, self.name = world, machine, name
        self.position, self.ppm, self.side = position, ppm, side

    @property
    def air(self):
        return self.machine.air

    @property
    def clock(self):
        return self.machine.clock

    @property
    def address(self) -> Optional[str]:
        """Its FICR.DEVICEADDR as a BLE address ('c4:...', most significant first)."""
        soc = self.machine.soc
        a = getattr(soc, "device_address", None)
        return ":".join(f"{b:02x}" for b in reversed(a)) if a else None

    def console_text(self) -> str:
        return self.machine.console_text()

    def __repr__(self) -> str:
        return f"<MachineNode {self.name} at {self.position}>"


class RemoteMachineNode(Node):
    """A machine node in a process of its own (``World(processes=True)``):
    what crosses a pipe (emu/worldproc.py)."""

    def __init__(self, world, name, position, ppm, side):
        self.world, self.name, self.position, self.ppm, self.side = \
            world, name, position, ppm, side

    @property
    def machine(self):
        raise AttributeError(f"node {self.name} runs in its own process: its Machine is "
                             "there (World(processes=False) keeps every machine here)")

    @property
    def address(self) -> Optional[str]:
        return self.side.address

    @property
    def board_name(self) -> str:
        return self.side.board_name

    def console_text(self) -> str:
        return self.side.console.decode("utf-8", "replace")

    def uart_output(self) -> bytes:
        return self.side.call("uart")

    def screenshot_png(self) -> Optional[bytes]:
        return self.side.call("screenshot")

    def __repr__(self) -> str:
        return f"<RemoteMachineNode {self.name} at {self.position}>"


class HostSide(Side):
    """A host node's clock and air (the phone): no CPU; it acts only in
    events on its own clock, and stops after each packet it sends."""

    def __init__(self, name: str, ppb: int = 0):
        super().__init__(name, ppb)
        self._clock = Clock()
        self.air = Air(self._clock, name)

    @property
    def clock(self):
        return self._clock

    def horizon(self) -> int:
        return self._clock.next_event_time()

    def step(self, until: int):
        clock = self._clock
        while not self.outbox:
            nxt = clock.next_event_time()
            if nxt >= until:
                clock.now = max(clock.now, until)
                return None
            clock.now = max(clock.now, nxt)
            clock.run_due()
        return None


class HostNode(Node):
    """A host node (the phone of emu/phone) at a position of its own: its
    ``air`` and ``clock`` take the devices of emu/phone (Scanner,
    LinkCentral, GattPhone), and its ``run_until``/``run`` move the whole
    world, so ``GattPhone(world.add_phone())`` talks to any watch in it."""

    def __init__(self, world, name, position, ppm, side, txpower_dbm):
        self.world, self.name, self.position, self.ppm = world, name, position, ppm
        self.side = side
        self.txpower_dbm = txpower_dbm
        side.air.host_txpower_dbm = txpower_dbm

    @property
    def air(self):
        return self.side.air

    @property
    def clock(self):
        return self.side.clock

    def run(self, *args, **kw):
        return self.world.run(*args, **kw)

    def run_until(self, predicate: Callable[[], bool], timeout_ms: float,
                  poll_ms: float = 1.0) -> bool:
        return self.world.run_until(predicate, timeout_ms, poll_ms)

    def __repr__(self) -> str:
        return f"<HostNode {self.name} at {self.position}>"


class World:
    """Nodes on one timeline and one air (see the module docstring).
    ``seed`` drives the air's random loss; ``air``: the channel model
    (emu.airspace.AirModel; ``AirModel.ideal()`` for an ideal air)."""

    def __init__(self, seed: int = 0, air: Optional[AirModel] = None,
                 processes: bool = False):
        self.seed = checks.integer("seed", seed, 0, (1 << 63) - 1)
        self.processes = bool(processes)
        self.model = air if air is not None else AirModel()
        self.timeline = Timeline()
        self.airspace = Airspace(self.model, self.seed)
        self.timeline.connect(self.airspace)
        self.nodes: dict = {}
        self._captures: list = []

    # -- nodes ------------------------------------------------------------------
    def _new_name(self, name, default: str) -> str:
        if name is None:
            i = len(self.nodes) + 1
            while f"{default}{i}" in self.nodes:
                i += 1
            name = f"{default}{i}"
        _check_name(name)
        if name in self.nodes:
            raise ValueError(f"two nodes named {name!r}")
        if self.timeline.now:
            raise ValueError("nodes join a world before it runs")
        return name

    def add(self, machine, *, name: Optional[str] = None, position=(0.0, 0.0, 0.0),
            ppm: float = 0.0, identity: bool = True, preload=(),
            **machine_options) -> MachineNode:
        """Add a machine: a Machine (at tick 0), or a firmware path built into
        one with ``machine_options`` (``board=``, ``flash_file=``...).
        ``identity``: give its chip factory values of its own, from
        ``name`` (emu/soc/nrf52832.py ``set_identity``); ``preload``:
        (address, bytes) written into its memory before it starts (UICR
        words a test firmware reads its parameters from).  With
        ``processes`` the machine is built in a process of its own and the
        node is a RemoteMachineNode."""
        name = self._new_name(name, "node")
        pos = _check_position(position)
        ppb = _ppb(ppm)
        preload = [(checks.integer("preload address", a, 0, 0xFFFFFFFF), bytes(d))
                   for a, d in preload]
        if self.processes:
            if not isinstance(machine, (str, bytes)) and not hasattr(machine, "__fspath__"):
                raise TypeError("World(processes=True) builds each machine in its own "
                                "process: give a firmware path, not a Machine")
            from emu.worldproc import RemoteSide
            import os
            spec = {"firmware": os.fspath(machine), "options": machine_options,
                    "name": name, "ppb": ppb, "identity": identity, "preload": preload,
                    "model": self.model}
            side = RemoteSide(spec)
            self.timeline.add(side)
            self.airspace.join_remote(side, pos)
            node = RemoteMachineNode(self, name, pos, ppb / 1000, side)
            self.nodes[name] = node
            return node
        from emu.machine import Machine
        if not isinstance(machine, Machine):
            machine = Machine(machine, **machine_options)
        elif machine_options:
            raise TypeError("machine options go with a firmware path, not a Machine")
        if machine.clock.now:
            raise ValueError(f"{name}: a machine joins a world at tick 0 (it has run)")
        machine.name = name
        if identity and hasattr(machine.soc, "set_identity"):
            machine.soc.set_identity(name)
        for addr, data in preload:
            machine.cpu.write_mem(addr, data)
        side = MachineSide(machine, name, ppb)
        self.timeline.add(side)
        air = machine.air
        if air is not None:
            self.airspace.join(side, air, pos)
        node = MachineNode(self, machine, name, pos, ppb / 1000, side)
        self.nodes[name] = node
        return node

    def add_phone(self, name: str = "phone", position=(0.0, 0.0, 0.0), ppm: float = 0.0,
                  txpower_dbm: float = 0.0) -> HostNode:
        """A host node for the devices of emu/phone (see HostNode)."""
        name = self._new_name(name, "phone")
        pos = _check_position(position)
        txpower_dbm = checks.number("txpower_dbm", txpower_dbm, -40, 20)
        side = HostSide(name, _ppb(ppm))
        self.timeline.add(side)
        self.airspace.join(side, side.air, pos)
        node = HostNode(self, name, pos, side.ppb / 1000, side, txpower_dbm)
        self.nodes[name] = node
        return node

    def node(self, name: str) -> Node:
        try:
            return self.nodes[name]
        except KeyError:
            raise KeyError(f"no node {name!r} (nodes: {', '.join(self.nodes)})") from None

    @property
    def machines(self) -> list:
        """The Machines of this process (none with ``processes``)."""
        return [n.machine for n in self.nodes.values() if isinstance(n, MachineNode)]

    # -- time -----------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.timeline.now

    @property
    def time(self) -> float:
        return self.timeline.now / TICKS_PER_SECOND

    def run(self, seconds: float = 0.0, *, ms: float = 0.0, us: float = 0.0,
            until_tick: Optional[int] = None, stop: Optional[Callable[[], bool]] = None,
            longest_round: Optional[int] = None) -> dict:
        """Run every node for the given emulated time (or to the global
        ``until_tick``); ``stop()`` is checked after every round.  Returns
        {name: the last RunResult} of the machines."""
        if until_tick is None:
            span = 0
            for nm, value, unit in (("seconds", seconds, TICKS_PER_SECOND),
                                    ("ms", ms, TICKS_PER_MS), ("us", us, TICKS_PER_US)):
                span += int(round(checks.number(nm, value, 0, 1e7) * unit))
            until_tick = self.now + span
        else:
            until_tick = checks.integer("until_tick", until_tick, 0, NEVER - 1)
        self.timeline.run(until_tick=until_tick, stop=stop, longest_round=longest_round)
        return {n.name: n.side.last for n in self.nodes.values()
                if isinstance(n, (MachineNode, RemoteMachineNode)) and n.side.last is not None}

    def run_until(self, predicate: Callable[[], bool], timeout_ms: float,
                  poll_ms: float = 1.0) -> bool:
        """Run until ``predicate()`` is true (checked after every round, and
        at least every ``poll_ms``); False on timeout."""
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, not {type(predicate).__name__}")
        timeout_ms = checks.number("timeout_ms", timeout_ms, 0, 1e10)
        if checks.number("poll_ms", poll_ms, 0, 1e10) == 0:
            raise ValueError("poll_ms must be above 0")
        end = self.now + int(timeout_ms * TICKS_PER_MS)
        step = max(1, int(poll_ms * TICKS_PER_MS))
        while self.now < end:
            if predicate():
                return True
            self.timeline.run(until_tick=min(end, self.now + step), stop=predicate)
            if self.timeline.stopped and all(
                    n.side.stopped is not None for n in self.nodes.values()
                    if isinstance(n, (MachineNode, RemoteMachineNode))):
                break
        return predicate()

    # -- the air --------------------------------------------------------------
    @property
    def log(self) -> list:
        """Every packet on the air, as emu.airspace.Transmission (global ticks)."""
        return self.airspace.log

    def pcap(self, out, position=None):
        """Write every packet on the air from now on to ``out`` (a path, '-'
        for stdout, or a binary file) as Wireshark reads it (emu/pcap.py):
        its power as a sniffer at ``position`` receives it (default: the
        first node's place).  Returns the writer; ``close()`` ends it."""
        from emu.pcap import AirCapture
        pos = _check_position(position) if position is not None else None
        cap = AirCapture(self, out, pos)
        self._captures.append(cap)
        return cap

    def close(self) -> None:
        for cap in self._captures:
            cap.close()
        self._captures.clear()
        for n in self.nodes.values():
            if isinstance(n, MachineNode):
                n.machine.close()
            elif isinstance(n, RemoteMachineNode):
                n.side.close()

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
