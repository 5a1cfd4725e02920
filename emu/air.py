"""The 2.4 GHz air between the watch's RADIO and host-side devices.

A packet is sent on a frequency (2400 + RADIO FREQUENCY, in MHz) at an
emulated time, with its access address and its bytes as they are on the air
between the address and the CRC (for Bluetooth LE: the 2-byte header and
the payload), the CRC the sender computed, and the sender's whitening
(None: off, else the whitening IV).  A receiver hears it only when it is
listening on that frequency for that address from before the packet's
first bit (the RADIO model decides; see emu/peripherals/radio.py).

Host-side devices (the scanner in emu/phone/scanner.py) subscribe with ``listen(fn)``
and are called at the end of each packet the watch sends; they send with
``send(packet)`` for a start time at or after now.  Everything happens in
emulated time: the same firmware and host actions give the same packets at
the same ticks on every run.

Not modelled: bits on the air (whitening is compared by IV, not applied),
interference, collisions between senders, distance and fading (every
packet is received at the same RSSI, ``rssi_dbm``).
"""
from __future__ import annotations

import bisect
from typing import Callable, NamedTuple, Optional

US = 512                    # clock ticks per microsecond (512 MHz)
LATE_LIMIT = 10 * US        # how far past its bound a chip may be (a block of instructions)

MODE_NAMES = {0: "nrf1m", 1: "nrf2m", 3: "ble1m", 4: "ble2m"}


class Packet(NamedTuple):
    """One packet on the air (times in 512 MHz clock ticks)."""
    start: int          # first bit of the preamble
    end: int            # last bit of the CRC
    freq: int           # MHz
    mode: int           # RADIO MODE (3: BLE 1 Mbit, 4: BLE 2 Mbit)
    aa: int             # access address (32 bits for BLE)
    pdu: bytes          # between the address and the CRC
    crc: int
    white: object       # whitening IV (int) or None when off
    sender: str         # "watch" or a host device's name

    @property
    def channel(self) -> int:
        """The BLE channel index of the frequency (-1 when it is none)."""
        return ble_channel(self.freq)


def ble_channel(freq: int) -> int:
    if freq == 2402:
        return 37
    if freq == 2426:
        return 38
    if freq == 2480:
        return 39
    if 2404 <= freq <= 2424 and freq % 2 == 0:
        return (freq - 2404) // 2
    if 2428 <= freq <= 2478 and freq % 2 == 0:
        return (freq - 2428) // 2 + 11
    return -1


def channel_freq(ch: int) -> int:
    if ch == 37:
        return 2402
    if ch == 38:
        return 2426
    if ch == 39:
        return 2480
    if 0 <= ch <= 10:
        return 2404 + 2 * ch
    if 11 <= ch <= 36:
        return 2428 + 2 * (ch - 11)
    raise ValueError(f"no BLE channel {ch}")


def crc24(data: bytes, init: int, poly: int = 0x00065B, nbits: int = 24) -> int:
    """The RADIO's CRC as BLE defines it: a shift register of ``nbits`` bits
    preset with ``init``, shifted MSB first, fed with the data bits in air
    order (least significant bit of each byte first).  A byte at a time
    through a table per (poly, nbits) (_crc_bits is the bit-serial
    definition)."""
    if nbits < 8:
        return _crc_bits(data, init, poly, nbits)
    mask = (1 << nbits) - 1
    table = _CRC_TABLES.get((poly & mask, nbits))
    if table is None:
        table = _crc_table(poly & mask, nbits)
    shift = nbits - 8
    reg = init & mask
    for byte in data:
        reg = ((reg << 8) & mask) ^ table[((reg >> shift) ^ _REV8[byte]) & 0xFF]
    return reg


def _crc_bits(data: bytes, init: int, poly: int, nbits: int) -> int:
    top = nbits - 1
    mask = (1 << nbits) - 1
    reg = init & mask
    poly &= mask
    for byte in data:
        for i in range(8):
            fb = ((reg >> top) ^ (byte >> i)) & 1
            reg = (reg << 1) & mask
            if fb:
                reg ^= poly
    return reg


_REV8 = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))   # bit order reversed
_CRC_TABLES: dict = {}


def _crc_table(poly: int, nbits: int) -> list:
    """Entry x: the register after shifting 8 bits whose feedback bits are x
    (MSB first) through a zero register."""
    top = 1 << (nbits - 1)
    mask = (1 << nbits) - 1
    table = []
    for x in range(256):
        reg = x << (nbits - 8)
        for _ in range(8):
            reg = ((reg << 1) & mask) ^ poly if reg & top else (reg << 1) & mask
        table.append(reg)
    if len(_CRC_TABLES) >= 16:
        _CRC_TABLES.clear()
    _CRC_TABLES[(poly, nbits)] = table
    return table


class Air:
    """One chip's view of the air: its RADIO, the host devices on its clock,
    and (once a :class:`~emu.airspace.Airspace` joins it to other machines)
    what the others send, with the power it arrives at."""

    def __init__(self, clock, name: str = "watch"):
        self.clock = clock
        self.name = name             # the sender name of this chip's packets
        self.log: list = []          # every packet sent here (chip and host devices), in order
        self.log_limit = 100_000     # oldest dropped beyond this
        self._listeners: list = []   # host devices: fn(packet)
        self._radios: list = []      # watch radios: obj.air_packet(packet)
        self.rssi_dbm = -60          # alone: every packet arrives at this power
        self.host_txpower_dbm = 0.0  # what host devices here send at (on an Airspace)
        self.taps: list = []         # fn(packet) for every packet sent here (a capture)
        self.space = None            # the Airspace joining this chip to others
        self._meta: dict = {}        # packet -> (power in dBm, lost) of what arrives here
        self._on_air: list = []      # packets arriving here, by start (for RSSI and collisions)
        self._remote_due: list = []  # (end, seq, packet): host devices hear it at its end
        self._remote_seq = 0
        self._remote_ev = None
        self._rx_on: list = []       # [since, until or None] while the receiver was on (recent)
        self._arrivals: list = []    # (start, sender, freq, aa, packet) not yet at their first bit
        self._arrive_ev = None
        self._arrive_n = 0

    def listen(self, fn: Callable[[Packet], None]) -> None:
        """Call ``fn(packet)`` at the end of each packet the watch sends (and,
        on an Airspace, of each packet another machine sends)."""
        self._listeners.append(fn)

    @property
    def has_host_devices(self) -> bool:
        return bool(self._listeners)

    def attach_radio(self, radio) -> None:
        self._radios.append(radio)

    def _record(self, p: Packet) -> None:
        self.log.append(p)
        if len(self.log) > self.log_limit:
            del self.log[: len(self.log) - self.log_limit]
        for fn in self.taps:
            fn(p)

    def from_watch(self, p: Packet) -> None:
        """A watch radio finished sending ``p`` (called at its end)."""
        self._record(p)
        for fn in list(self._listeners):
            fn(p)

    def send(self, p: Packet, txpower_dbm: Optional[float] = None) -> None:
        """A host device sends ``p`` (its start at or after now)."""
        if p.start < self.clock.now:
            raise ValueError("a packet cannot start in the past")
        self._record(p)
        if self.space is not None:
            self._arrives(p, self.rssi_dbm, False)
            self.space.emit(self, p, self.host_txpower_dbm if txpower_dbm is None
                            else txpower_dbm)
        for r in self._radios:
            r.air_packet(p)

    # -- the chip's radio (emu/peripherals/radio.py) -------------------------
    def listening(self, on: bool, when: int) -> None:
        """The receiver turned on (RXEN) or off at ``when``.  On an
        Airspace a chip whose receiver is off is not bound by the others
        (nothing they send can reach it); turning it on ends its run there,
        so that whatever is on the air by then reaches it first."""
        if on:
            self._rx_on.append([when, None])
            if len(self._rx_on) > 16:
                del self._rx_on[0]
            if self.space is not None:
                self.space.listening()
        elif self._rx_on and self._rx_on[-1][1] is None:
            self._rx_on[-1][1] = when

    @property
    def receiver_on(self) -> bool:
        return bool(self._rx_on) and self._rx_on[-1][1] is None

    def _was_listening(self, t: int) -> bool:
        return any(a <= t and (b is None or t < b) for a, b in self._rx_on)

    def transmit_start(self, p: Packet, txpower_dbm: int) -> None:
        """The chip's RADIO put the first bit of ``p`` on the air (START)."""
        if self.space is not None:
            self.space.emit(self, p, txpower_dbm)

    def transmit_abort(self, p: Packet, when: int) -> None:
        """STOP or DISABLE cut ``p`` at ``when``: it never reaches its end."""
        if self.space is not None:
            self.space.abort(self, p, when)

    def audible(self, p: Packet) -> bool:
        """``p`` reaches this chip above its sensitivity (alone: always)."""
        if self.space is None:
            return True
        meta = self._meta.get(p)
        return meta is None or self.space.model.audible(meta[0], p.mode)

    def intact(self, p: Packet) -> bool:
        """``p`` arrived here without a bit error: not lost at random, and no
        other packet on its frequency overlapped it within the capture
        threshold (alone: always)."""
        if self.space is None:
            return True
        meta = self._meta.get(p)
        if meta is None:
            return True
        power, lost = meta
        if lost:
            return False
        worst = None
        for q in self._on_air:
            if q.start >= p.end:
                break
            if q is p or q.freq != p.freq or q.end <= p.start or q == p:
                continue
            qp = self._meta.get(q, (self.rssi_dbm, False))[0]
            worst = qp if worst is None else max(worst, qp)
        return worst is None or self.space.model.captures(power, worst)

    def rssi_now(self, radio) -> float:
        """What RSSISTART samples now on the radio's frequency, in dBm:
        alone, ``rssi_dbm``; on an Airspace the packet being received, else
        the strongest packet on the air here now, else the noise floor."""
        if self.space is None:
            return self.rssi_dbm
        rx = getattr(radio, "_rx", None)
        if rx is not None and rx in self._meta:
            return self._meta[rx][0]
        now = self.clock.now
        freq = radio._freq()
        best = None
        for q in self._on_air:
            if q.start > now:
                break
            if q.freq == freq and q.end > now:
                qp = self._meta.get(q, (self.rssi_dbm, False))[0]
                best = qp if best is None else max(best, qp)
        return best if best is not None else self.space.model.noise_floor_dbm

    def rssi_of(self, p: Packet) -> float:
        """The power ``p`` arrived at here (alone: ``rssi_dbm``)."""
        meta = self._meta.get(p)
        return meta[0] if meta is not None else self.rssi_dbm

    # -- from other machines (emu/airspace.py) ------------------------------
    def _arrives(self, p: Packet, power: float, lost: bool) -> None:
        now = self.clock.now
        keep = now - 20 * 1000 * US          # no packet lasts 20 ms
        if self._on_air and self._on_air[0].end < keep:
            old = [q for q in self._on_air if q.end < keep]
            self._on_air = [q for q in self._on_air if q.end >= keep]
            for q in old:
                self._meta.pop(q, None)
        self._meta[p] = (power, lost)
        i = len(self._on_air)
        while i and self._on_air[i - 1].start > p.start:
            i -= 1
        self._on_air.insert(i, p)

    def deliver(self, p: Packet, power: float, lost: bool) -> None:
        """Another machine's packet ``p`` (in this chip's ticks, its start at
        or after now) arrives here at ``power`` dBm; ``lost``: with bit
        errors (random loss).  At its first bit (an event due before every
        other of that tick, the packets of one tick in a fixed order) the
        radio is told, and decides whether it hears it; host devices hear
        it at its end.  RuntimeError when ``p`` began well before now (the
        timeline let this chip run past a moment another could reach it: a
        chip runs at most one block of instructions past its bound; a chip
        whose receiver was off when ``p`` began, and that has no host
        devices, may be past it: ``p`` cannot be received there, and it is
        on the air for the RSSI and the collisions of what comes after)."""
        if p.start + LATE_LIMIT < self.clock.now and (self._was_listening(p.start)
                                                      or self._listeners):
            raise RuntimeError(f"a packet from {p.sender} reached {self.name} "
                               f"{(self.clock.now - p.start) / US:.1f} us after its first bit: "
                               "the timeline let it run too far")
        self._arrives(p, power, lost)
        if self._arrive_ev is None:
            self._arrive_ev = self.clock.event(f"air.{self.name}.arrive", self._arrive)
        bisect.insort(self._arrivals, (p.start, p.sender, p.freq, p.aa, p))
        self._arm_arrivals()

    def _arm_arrivals(self) -> None:
        if self._arrivals:
            self._arrive_n += 1
            self._arrive_ev.schedule_first(self._arrivals[0][0], self._arrive_n)
        else:
            self._arrive_ev.cancel()

    def _arrive(self) -> None:
        now = self.clock.now
        while self._arrivals and self._arrivals[0][0] <= now:
            p = self._arrivals.pop(0)[-1]
            for r in self._radios:
                r.air_packet(p)
            if self._listeners:
                if self._remote_ev is None:
                    self._remote_ev = self.clock.event(f"air.{self.name}.heard",
                                                       self._remote_end)
                self._remote_seq += 1
                bisect.insort(self._remote_due, (p.end, self._remote_seq, p))
                self._remote_ev.schedule_at(self._remote_due[0][0])
        self._arm_arrivals()

    def aborted(self, p: Packet, end: int) -> None:
        """Another machine cut its packet ``p`` at ``end``: whoever receives
        it gets a CRC error; host devices never hear it."""
        meta = self._meta.get(p)
        if meta is not None:
            self._meta[p] = (meta[0], True)
        self._arrivals = [a for a in self._arrivals if a[-1] is not p]
        if self._arrive_ev is not None:
            self._arm_arrivals()
        self._remote_due = [d for d in self._remote_due if d[2] is not p]
        if self._remote_ev is not None:
            if self._remote_due:
                self._remote_ev.schedule_at(self._remote_due[0][0])
            else:
                self._remote_ev.cancel()

    def _remote_end(self) -> None:
        now = self.clock.now
        while self._remote_due and self._remote_due[0][0] <= now:
            _end, _seq, p = self._remote_due.pop(0)
            for fn in list(self._listeners):
                fn(p)
        if self._remote_due:
            self._remote_ev.schedule_at(self._remote_due[0][0])
