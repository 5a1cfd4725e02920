"""The air as Wireshark reads it: pcap with LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR.

Every packet on the air (a World's: emu/world.py; or one machine's with
its host devices) is one record of a nanosecond-resolution pcap file
(magic 0xA1B23C4D) with link type 256, LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR
(tcpdump.org/linktypes): a 10-byte header, then the packet as it is on the
air from the access address to the CRC.

The header (little endian): RF channel (0 = 2402 MHz ... 39 = 2480 MHz),
signal power (dBm, signed: the power the packet arrives with at the
sniffer's position; alone, the air's fixed RSSI), noise power (the noise
floor), access-address offenses (0), the reference access address (the
packet's), and flags: de-whitened, signal and noise power valid, reference
access address valid, the direction of a connection's packets (central
to peripheral or back: the sender of its CONNECT_IND is the central), CRC
checked, and CRC valid when the CRC the sender
computed is the one the Bluetooth LE polynomial gives (a packet with a
CRC error, a collision at some receiver, or cut short by STOP is still
written as sent; "CRC valid" says whether its CRC is right as sent).
Encrypted packets are written as they are on the air (the MIC included,
not decrypted).  The PHY bits say LE 1M or LE 2M.

Timestamps are the packets' first bits in emulated time (the world's
global ticks), to the nanosecond.  Only Bluetooth LE packets are written
(RADIO MODE Ble_1Mbit/Ble_2Mbit with a 4-byte address and a 3-byte CRC);
others are counted in ``skipped``.

Writes that fail (a full disk, a closed pipe) stop the capture with one
line (``error``); the run goes on.
"""
from __future__ import annotations

import struct
import sys
from typing import Optional

from emu.air import crc24
from emu.clock import TICKS_PER_SECOND

LINKTYPE_BLE_LL_WITH_PHDR = 256
PCAP_NS_MAGIC = 0xA1B23C4D
ADV_AA = 0x8E89BED6
ADV_CRCINIT = 0x555555

FLAG_DEWHITENED = 0x0001
FLAG_SIGNAL_VALID = 0x0002
FLAG_NOISE_VALID = 0x0004
FLAG_REF_AA_VALID = 0x0010
FLAG_CRC_CHECKED = 0x0400
FLAG_CRC_VALID = 0x0800
PHY_2M = 1 << 14


def _rev_bits24(v: int) -> int:
    return int(f"{v & 0xFFFFFF:024b}"[::-1], 2)


def crc_on_air(crc: int) -> bytes:
    """The 3 CRC bytes in the order they go on the air: the shift
    register's bit 23 first, each byte least significant bit first."""
    return _rev_bits24(crc).to_bytes(3, "little")


def record(t_ticks: int, freq: int, mode: int, aa: int, pdu: bytes, crc: int,
           crc_init: Optional[int], power: float, noise: float,
           direction: int = 0) -> Optional[bytes]:
    """One pcap record (header and data), or None for a packet that is not
    Bluetooth LE.  ``crc_init``: the CRC's preset, when known (advertising:
    0x555555; a connection: from its CONNECT_IND), to flag the CRC valid;
    ``direction``: the PDU type field (2 central to peripheral, 3 back)."""
    if mode not in (3, 4) or not 2402 <= freq <= 2480:
        return None
    flags = FLAG_DEWHITENED | FLAG_SIGNAL_VALID | FLAG_NOISE_VALID | FLAG_REF_AA_VALID
    if mode == 4:
        flags |= PHY_2M
    flags |= (direction & 7) << 7
    if crc_init is not None:
        flags |= FLAG_CRC_CHECKED
        if crc24(pdu, crc_init) == crc:
            flags |= FLAG_CRC_VALID
    phdr = struct.pack("<BbbBIH", (freq - 2402) // 2, int(round(max(-128, min(127, power)))),
                       int(round(max(-128, min(127, noise)))), 0, aa & 0xFFFFFFFF, flags)
    data = phdr + struct.pack("<I", aa & 0xFFFFFFFF) + bytes(pdu) + crc_on_air(crc)
    sec, rem = divmod(t_ticks, TICKS_PER_SECOND)
    ns = rem * 1_000_000_000 // TICKS_PER_SECOND
    return struct.pack("<IIII", sec, ns, len(data), len(data)) + data


def header() -> bytes:
    return struct.pack("<IHHiIII", PCAP_NS_MAGIC, 2, 4, 0, 0, 65535, LINKTYPE_BLE_LL_WITH_PHDR)


class PcapWriter:
    """Records to a path, '-' (stdout) or a binary file object."""

    def __init__(self, out):
        self._own = False
        if out == "-":
            self.f = sys.stdout.buffer
        elif isinstance(out, (str, bytes)) or hasattr(out, "__fspath__"):
            self.f = open(out, "wb")
            self._own = True
        else:
            self.f = out
        self.error: Optional[str] = None
        self.packets = 0
        self.skipped = 0
        self._crc_inits: dict = {ADV_AA: ADV_CRCINIT}    # access address -> CRC preset
        self._centrals: dict = {}                         # access address -> the initiator
        self._write(header())

    def _write(self, data: bytes) -> None:
        if self.error is not None:
            return
        try:
            self.f.write(data)
            self.f.flush()
        except (OSError, ValueError) as e:
            self.error = f"the capture stopped: {getattr(e, 'strerror', None) or e}"

    def packet(self, t: int, p, power: float, noise: float) -> None:
        if p.aa == ADV_AA and len(p.pdu) >= 2 + 22 and p.pdu[0] & 0xF == 5:
            # CONNECT_IND: the connection's access address and CRC preset
            ll = p.pdu[2 + 12:]
            aa = struct.unpack_from("<I", ll, 0)[0]
            self._crc_inits[aa] = int.from_bytes(ll[4:7], "little")
            self._centrals[aa] = p.sender
            if len(self._crc_inits) > 64:
                old = next(k for k in self._crc_inits if k != ADV_AA)
                self._crc_inits.pop(old)
                self._centrals.pop(old, None)
        direction = 0
        if p.aa in self._centrals:
            direction = 2 if p.sender == self._centrals[p.aa] else 3
        rec = record(t, p.freq, p.mode, p.aa, p.pdu, p.crc, self._crc_inits.get(p.aa),
                     power, noise, direction)
        if rec is None:
            self.skipped += 1
            return
        self.packets += 1
        self._write(rec)

    def close(self) -> None:
        if self._own:
            try:
                self.f.close()
            except OSError:
                pass
            self._own = False


class AirCapture(PcapWriter):
    """A World's air (emu/world.py ``World.pcap``) from a sniffer's position."""

    def __init__(self, world, out, position=None):
        super().__init__(out)
        self.world = world
        space = world.airspace
        self.position = position
        space.listeners.append(self._heard)
        self._space = space

    def _heard(self, t) -> None:
        space = self._space
        pos = self.position
        if pos is None:
            pos = space.position[space.nodes[0]] if space.nodes else (0.0, 0.0, 0.0)
        sender = next((s for s in space.nodes if s.name == t.sender), None)
        if sender is None:
            power = space.model.noise_floor_dbm
        else:
            power = space.position_power(sender, t.txpower_dbm, pos)
        self.packet(t.start, t.packet, power, space.model.noise_floor_dbm)

    def close(self) -> None:
        if self._heard in self._space.listeners:
            self._space.listeners.remove(self._heard)
        super().close()


class MachineCapture(PcapWriter):
    """One machine's air: its radio's packets and its host devices' (the
    phone), each at the air's fixed RSSI."""

    def __init__(self, machine, out):
        air = machine.air
        if air is None:
            raise ValueError("this board has no RADIO: no air to capture")
        super().__init__(out)
        self.air = air
        air.taps.append(self._tap)

    def _tap(self, p) -> None:
        self.packet(p.start, p, self.air.rssi_dbm, -100.0)

    def close(self) -> None:
        if self._tap in self.air.taps:
            self.air.taps.remove(self._tap)
        super().close()
