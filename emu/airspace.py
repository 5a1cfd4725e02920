"""The air between several machines (and host nodes) on one timeline.

Each node's chip keeps its own view of the air (emu/air.py ``Air``: its
RADIO and the host devices on its clock).  An :class:`Airspace` joins
those views: a packet one node starts is routed to every other node, at
the power it arrives with, in the receiver's ticks, before the receiver
could reach its first bit (emu/timeline.py says how).

The channel model (:class:`AirModel`), every figure settable, each off for
an ideal air:

* **Positions and path loss.**  Nodes sit at (x, y, z) metres.  The power
  at a receiver is the sender's TX power minus the log-distance path loss
  ``PL(d) = PL(d0) + 10 n log10(d / d0)`` with d0 = 1 m, ``PL(d0)`` =
  40.05 dB (free space at 2.44 GHz: 20 log10(4 pi d0 / lambda)) and
  ``n`` = 2 (free space; 2.5 to 4 indoors, Rappaport, *Wireless
  Communications*, 4.9); the same formula holds down to 10 cm (closer
  counts as 10 cm: the antennas' near field).  No fading: the same
  positions give the same power on every packet.
* **TX power** comes from the sender's TXPOWER register at START (PS
  23.14.11, +4 to -40 dBm); host nodes (the phone) send at 0 dBm unless told.
* **Sensitivity**: a packet that arrives below it is not heard at all (no
  ADDRESS event).  nRF52832 PS v1.4 23.15 (radio electrical
  specification): -96 dBm for Bluetooth LE 1 Mbit (ideal transmitter,
  packets up to 37 bytes), -93 dBm Nordic 1 Mbit, -89 dBm Nordic 2 Mbit;
  Bluetooth LE 2 Mbit is taken as -93 dBm.
* **Collisions**: two packets that overlap in time on one frequency at a
  receiver: the wanted one survives only when it is at least ``capture_db``
  stronger than the strongest other (default 10 dB: Nordic's radios reject
  a co-channel interferer about 10 dB weaker; the Bluetooth Core
  specification, Vol 6 Part A 4.2.2, allows up to 21 dB); else its CRC
  fails (CRCERROR; the receiver stays on the first packet it synchronised
  to).  ``capture_db=None``: any overlap destroys both.
* **Random loss**: each (packet, receiver) pair is lost with probability
  ``loss`` (default 0), decided by a hash of the seed, the sender, the
  receiver, the packet's start and its frequency: the same seed gives the
  same losses on every run, in one process or in several.  A lost packet
  arrives with bit errors: the address matches, the CRC fails.
* **Crystal offsets**: each node's clock runs ``ppm`` fast or slow against
  the air's (emu/timeline.py converts every crossing, to the tick).  One
  offset per node drives the node's whole clock tree: its 32 MHz crystal
  (the CPU, TIMERs, the radio's bit rate) and its 32.768 kHz crystal (the
  RTCs that time a link layer's connection events).  Window widening
  absorbs the two ends' difference; a separate offset for each of a node's
  two crystals is not modelled (their difference within one node moves a
  packet's timing by nanoseconds inside one event, below the packet model).
* **RSSI**: RSSISTART samples the power of the packet being received, else
  of the strongest packet on the frequency at that moment, else the noise
  floor (-100 dBm); RSSISAMPLE holds it as a positive number of dBm.

Not modelled: bits on the air (a collision or a loss corrupts the whole
packet, never some bits), adjacent-channel interference, fading and
multipath, antennas and bodies, the nRF52832's RSSI inaccuracy (+-2 dB).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Optional

from emu.air import MODE_NAMES, Packet
from emu.clock import NEVER
from emu.timeline import Link

MIN_DISTANCE_M = 0.1
SENSITIVITY_DBM = {0: -93.0, 1: -89.0, 3: -96.0, 4: -93.0}


@dataclass
class AirModel:
    """The channel (see the module docstring).  ``ideal()``: no path loss
    beyond a fixed -60 dBm, no sensitivity limit, no collisions, no loss."""
    path_loss_exponent: float = 2.0
    reference_loss_db: float = 40.05
    sensitivity_dbm: dict = field(default_factory=lambda: dict(SENSITIVITY_DBM))
    capture_db: Optional[float] = 10.0
    loss: float = 0.0
    noise_floor_dbm: float = -100.0
    collisions: bool = True
    fixed_rssi_dbm: Optional[float] = None    # ideal: every packet at this power

    @classmethod
    def ideal(cls) -> "AirModel":
        return cls(sensitivity_dbm={}, collisions=False, fixed_rssi_dbm=-60.0)

    def check(self) -> None:
        if not (0.0 <= self.loss <= 1.0):
            raise ValueError(f"loss must be between 0 and 1, not {self.loss}")
        if not (0.0 < self.path_loss_exponent <= 10.0):
            raise ValueError(f"path loss exponent must be above 0 and at most 10, "
                             f"not {self.path_loss_exponent}")
        if self.capture_db is not None and not (0.0 <= self.capture_db <= 100.0):
            raise ValueError(f"capture threshold must be 0 to 100 dB, not {self.capture_db}")

    def power(self, txpower_dbm: float, distance_m: float) -> float:
        """The power in dBm a packet sent at ``txpower_dbm`` arrives with
        ``distance_m`` away (to 0.01 dB)."""
        if self.fixed_rssi_dbm is not None:
            return float(self.fixed_rssi_dbm)
        d = max(distance_m, MIN_DISTANCE_M)
        pl = self.reference_loss_db + 10.0 * self.path_loss_exponent * math.log10(d)
        return round(txpower_dbm - pl, 2)

    def audible(self, power: float, mode: int) -> bool:
        s = self.sensitivity_dbm.get(mode)
        return s is None or power >= s

    def captures(self, power: float, other: float) -> bool:
        """A packet at ``power`` survives an overlapping one at ``other``."""
        if not self.collisions:
            return True
        if self.capture_db is None:
            return False
        return power - other >= self.capture_db

    def lost(self, seed: int, sender: str, receiver: str, start: int, freq: int) -> bool:
        if self.loss <= 0.0:
            return False
        if self.loss >= 1.0:
            return True
        h = hashlib.sha256(f"{seed}:{sender}:{receiver}:{start}:{freq}".encode()).digest()
        return int.from_bytes(h[:8], "little") < int(self.loss * (1 << 64))


class AirPort:
    """A node's side of the airspace (where the node lives): what its Air
    sends goes to the node's outbox, and the node stops there; what others
    send arrives through ``deliver``."""

    def __init__(self, side, air, model: AirModel):
        self.side = side
        self.air = air
        self.model = model
        air.space = self
        side.handlers["air"] = self._arrive
        side.handlers["air-abort"] = self._abort

    def emit(self, air, p: Packet, txpower_dbm: float) -> None:
        self.side.emit("air", tuple(p), txpower_dbm)
        stop = getattr(self.side, "request_stop", None)
        if stop is not None:
            stop()

    def listening(self) -> None:
        """The receiver turned on: stop here (emu/timeline.py's bound for a
        node whose receiver is off does not count the others)."""
        stop = getattr(self.side, "request_stop", None)
        if stop is not None:
            stop()

    def abort(self, air, p: Packet, when: int) -> None:
        self.side.emit("air-abort", p.sender, p.start, when)

    def _arrive(self, p: tuple, power: float, lost: bool) -> None:
        self.air.deliver(Packet(*p), power, lost)

    def _abort(self, sender: str, start: int) -> None:
        for q in self.air._on_air:
            if q.sender == sender and q.start == start:
                self.air.aborted(q, start)
                return


@dataclass
class Transmission:
    """One packet on the air, as the airspace saw it (global ticks)."""
    start: int
    end: int
    sender: str
    packet: Packet            # in global ticks
    txpower_dbm: float
    aborted: Optional[int] = None      # global tick it was cut at


class Airspace(Link):
    """The air between the nodes added with ``join`` (see the module
    docstring).  ``log``: every Transmission, in order of start."""
    kinds = ("air", "air-abort")

    def __init__(self, model: Optional[AirModel] = None, seed: int = 0):
        self.model = model or AirModel()
        self.model.check()
        self.seed = int(seed)
        self.nodes: list = []              # Sides, in the order joined
        self.position: dict = {}           # Side -> (x, y, z)
        self.log: list = []
        self.log_limit = 1_000_000
        self.listeners: list = []          # fn(Transmission) as each is routed (pcap)
        self._by_key: dict = {}            # (sender, start in its ticks) -> Transmission

    def join(self, side, air, position=(0.0, 0.0, 0.0)) -> AirPort:
        pos = tuple(float(v) for v in position) + (0.0,) * (3 - len(position))
        if any(not math.isfinite(v) for v in pos):
            raise ValueError(f"a position must be finite, not {position!r}")
        if any(s.name == side.name for s in self.nodes):
            raise ValueError(f"two nodes named {side.name!r} on one air")
        air.name = side.name
        self.nodes.append(side)
        self.position[side] = pos[:3]
        return AirPort(side, air, self.model)

    def join_remote(self, side, position=(0.0, 0.0, 0.0)) -> None:
        """A node whose air is in another process (emu/worldproc.py): its
        AirPort is there; here it has a place."""
        pos = tuple(float(v) for v in position) + (0.0,) * (3 - len(position))
        if any(s.name == side.name for s in self.nodes):
            raise ValueError(f"two nodes named {side.name!r} on one air")
        self.nodes.append(side)
        self.position[side] = pos[:3]

    def members(self) -> list:
        return list(self.nodes)

    def distance(self, a, b) -> float:
        pa, pb = self.position[a], self.position[b]
        return math.dist(pa, pb)

    def power_at(self, sender, txpower_dbm: float, receiver) -> float:
        return self.model.power(txpower_dbm, self.distance(sender, receiver))

    def position_power(self, sender, txpower_dbm: float, pos) -> float:
        return self.model.power(txpower_dbm, math.dist(self.position[sender], pos))

    # -- the timeline's side -----------------------------------------------------
    def bound(self, k, h: dict, now: dict) -> int:
        """Node k runs at most to the least horizon of the others, unless
        nothing on the air can reach it: its receiver is off and it has no
        host devices listening (it stops when its receiver turns on)."""
        if k not in self.position or not k.listening():
            return NEVER
        b = NEVER
        for s in self.nodes:
            if s is not k:
                b = min(b, h[s])
        return b

    def route(self, i, item) -> list:
        if i not in self.position:
            return []
        if item[0] == "air-abort":
            return self._route_abort(i, item)
        _kind, pt, txpower = item
        p = Packet(*pt)
        g = i.to_global
        gp = p._replace(start=g(p.start), end=g(p.end))
        t = Transmission(gp.start, gp.end, i.name, gp, txpower)
        self._by_key[(i.name, p.start)] = t
        if len(self._by_key) > 4096:
            for key in list(self._by_key)[:2048]:
                del self._by_key[key]
        self.log.append(t)
        if len(self.log) > self.log_limit:
            del self.log[: len(self.log) - self.log_limit]
        for fn in list(self.listeners):
            fn(t)
        out = []
        for r in self.nodes:
            if r is i:
                continue
            power = self.power_at(i, txpower, r)
            lost = self.model.lost(self.seed, i.name, r.name, gp.start, gp.freq)
            lp = gp._replace(start=r.to_local(gp.start), end=r.to_local(gp.end))
            out.append((r, ("air", tuple(lp), power, lost), gp.start))
        return out

    def _route_abort(self, i, item) -> list:
        _kind, sender, start, when = item
        t = self._by_key.get((sender, start))
        if t is None:
            return []
        t.aborted = i.to_global(when)
        out = []
        for r in self.nodes:
            if r is not i:
                out.append((r, ("air-abort", sender, r.to_local(t.start)), t.aborted))
        return out


def describe_mode(mode: int) -> str:
    return MODE_NAMES.get(mode, f"mode{mode}")
