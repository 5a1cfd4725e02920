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

from typing import Callable, NamedTuple

US = 512                    # clock ticks per microsecond (512 MHz)

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
    def __init__(self, clock):
        self.clock = clock
        self.log: list = []          # every packet sent, in order
        self.log_limit = 100_000     # oldest dropped beyond this
        self._listeners: list = []   # host devices: fn(packet)
        self._radios: list = []      # watch radios: obj.air_packet(packet)
        self.rssi_dbm = -60

    def listen(self, fn: Callable[[Packet], None]) -> None:
        """Call ``fn(packet)`` at the end of each packet the watch sends."""
        self._listeners.append(fn)

    def attach_radio(self, radio) -> None:
        self._radios.append(radio)

    def _record(self, p: Packet) -> None:
        self.log.append(p)
        if len(self.log) > self.log_limit:
            del self.log[: len(self.log) - self.log_limit]

    def from_watch(self, p: Packet) -> None:
        """A watch radio finished sending ``p`` (called at its end)."""
        self._record(p)
        for fn in list(self._listeners):
            fn(p)

    def send(self, p: Packet) -> None:
        """A host device sends ``p`` (its start at or after now)."""
        if p.start < self.clock.now:
            raise ValueError("a packet cannot start in the past")
        self._record(p)
        for r in self._radios:
            r.air_packet(p)
