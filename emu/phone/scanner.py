"""Bluetooth LE on the emulated air: advertising PDUs and a host-side scanner.

:class:`Scanner` is the emulated phone's scanner for firmware that drives
the RADIO itself (InfiniTime's NimBLE): it hears every advertising PDU the
watch sends on channels 37-39 (emu/air.py) and, when ``active``, answers a
scannable advertisement with a SCAN_REQ T_IFS (150 us) after it, on the same
channel, as a phone scanning actively does; the watch's SCAN_RSP then
arrives like any packet.  ``devices`` gathers what was heard per advertiser
address: PDU type, advertising data, scan response data, the complete or
shortened local name, channels and counts.

    from emu.phone.scanner import Scanner
    sc = Scanner(machine.air)
    machine.run(seconds=1)
    sc.devices["xx:xx:xx:xx:xx:xx"].name     # "InfiniTime"

Not modelled: scan windows and intervals (the scanner listens all the
time), backoff (one SCAN_REQ per advertiser until it has a scan response,
then every ``rescan_ticks``), extended and periodic advertising.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from emu.air import US, Packet, crc24

ADV_AA = 0x8E89BED6
ADV_CRCINIT = 0x555555
T_IFS = 150 * US
PDU_TYPES = {0: "ADV_IND", 1: "ADV_DIRECT_IND", 2: "ADV_NONCONN_IND", 3: "SCAN_REQ",
             4: "SCAN_RSP", 5: "CONNECT_IND", 6: "ADV_SCAN_IND", 7: "ADV_EXT_IND"}
SCANNABLE = (0, 6)
AD_NAMES = {0x08: "shortened name", 0x09: "complete name"}


def fmt_addr(a: bytes) -> str:
    return ":".join(f"{b:02x}" for b in reversed(a))


def parse_ad(data: bytes) -> list:
    """Advertising data as [(AD type, value bytes)] (stops at a malformed entry)."""
    out = []
    i = 0
    while i < len(data):
        n = data[i]
        if n == 0 or i + 1 + n > len(data):
            break
        out.append((data[i + 1], bytes(data[i + 2:i + 1 + n])))
        i += 1 + n
    return out


def ad_name(ad: list) -> Optional[str]:
    for t, v in ad:
        if t in AD_NAMES:
            return v.decode("utf-8", "replace")
    return None


def ad_uuids(ad: list) -> list:
    """The service UUIDs an advertisement lists (16- and 128-bit, complete or
    not), as 128-bit strings."""
    out = []
    for t, v in ad:
        size = {0x02: 2, 0x03: 2, 0x06: 16, 0x07: 16}.get(t)
        for i in range(0, len(v) - size + 1, size) if size else ():
            raw = v[i:i + size]
            if size == 2:                # the Bluetooth base UUID (as emu.phone.gatt.uuid_str)
                out.append(f"0000{int.from_bytes(raw, 'little'):04x}-0000-1000-8000-00805f9b34fb")
            else:
                h = raw[::-1].hex()
                out.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return out


def recent_advertiser(air, service: str, within: int = 2_000_000 * US) -> Optional[tuple]:
    """(address, name) of a connectable advertiser heard on ``air`` in the
    last ``within`` ticks whose latest ADV_IND lists ``service`` (a 128-bit
    UUID string), else None: read from the air's log, no scanner needed (a
    bridge finds a watch in DFU mode with it; once the watch advertises
    something else, it is not)."""
    seen = set()
    for p in reversed(air.log[-400:]):
        if air.clock.now - p.start > within:
            break
        if p.aa != ADV_AA or len(p.pdu) < 8 or p.pdu[0] & 0xF != 0:
            continue
        if crc24(p.pdu, ADV_CRCINIT) != p.crc:
            continue
        addr = fmt_addr(bytes(p.pdu[2:8]))
        if addr in seen:
            continue
        seen.add(addr)
        ad = parse_ad(bytes(p.pdu[8:2 + p.pdu[1]]))
        if service in ad_uuids(ad):
            return addr, ad_name(ad)
    return None


@dataclass
class Advertiser:
    address: str
    random: bool
    pdu_type: str = ""
    adv_data: bytes = b""
    rsp_data: bytes = b""
    adverts: int = 0
    responses: int = 0
    channels: set = field(default_factory=set)
    first_seen: int = 0          # tick of the first advertisement heard
    last_req: Optional[int] = None

    @property
    def ad(self) -> list:
        return parse_ad(self.adv_data) + parse_ad(self.rsp_data)

    @property
    def name(self) -> Optional[str]:
        return ad_name(self.ad)


class Scanner:
    PDU_LOG = 100_000                   # advertising PDUs kept in ``pdus``

    def __init__(self, air, active: bool = True, address: bytes = bytes.fromhex("c0ffee000001"),
                 rescan_ticks: int = 10_000_000 * US):
        self.air = air
        self.active = active
        self.address = address          # ScanA (little endian on air), a random address
        self.rescan_ticks = rescan_ticks
        self.devices: dict = {}
        # (tick, channel, PDU type name, AdvA) heard: the latest PDU_LOG
        self.pdus: deque = deque(maxlen=self.PDU_LOG)
        self.enabled = True             # False: deaf (an HCI host's scan is off)
        # fn(PDU type, TxAdd random, AdvA, data) for each advertising PDU heard
        # (ADV_IND, ADV_DIRECT_IND, ADV_NONCONN_IND, SCAN_RSP, ADV_SCAN_IND)
        self.on_pdu: list = []
        air.listen(self._heard)

    def _heard(self, p: Packet) -> None:
        if not self.enabled or p.aa != ADV_AA or p.channel < 37 or len(p.pdu) < 2:
            return
        if crc24(p.pdu, ADV_CRCINIT) != p.crc or p.white != (p.channel | 0x40):
            return                      # not a well-formed advertising channel packet
        hdr, length = p.pdu[0], p.pdu[1]
        ptype = hdr & 0xF
        payload = p.pdu[2:2 + length]
        name = PDU_TYPES.get(ptype, f"type {ptype}")
        if len(payload) < 6:
            return
        adva = payload[:6]
        self.pdus.append((p.start, p.channel, name, fmt_addr(adva)))
        if ptype in (0, 1, 2, 4, 6):
            for fn in list(self.on_pdu):
                fn(ptype, bool(hdr & 0x40), bytes(adva), bytes(payload[6:]))
        key = fmt_addr(adva)
        dev = self.devices.get(key)
        if dev is None:
            dev = self.devices[key] = Advertiser(key, bool(hdr & 0x40), first_seen=p.start)
        dev.channels.add(p.channel)
        if ptype == 4:                  # SCAN_RSP
            dev.rsp_data = bytes(payload[6:])
            dev.responses += 1
            return
        if ptype in (0, 2, 6):
            dev.pdu_type = name
            dev.adv_data = bytes(payload[6:])
            dev.adverts += 1
        if self.active and ptype in SCANNABLE and self._wants_response(dev, p.end):
            self._scan_req(p, adva, bool(hdr & 0x40))

    def _wants_response(self, dev: Advertiser, now: int) -> bool:
        if dev.responses and dev.last_req is not None and now - dev.last_req < self.rescan_ticks:
            return False
        if dev.last_req is not None and not dev.responses and now - dev.last_req < 20_000 * US:
            return False                # asked on this advertising event already
        dev.last_req = now
        return True

    def _scan_req(self, adv: Packet, adva: bytes, adv_random: bool) -> None:
        hdr = 3 | 0x40 | (0x80 if adv_random else 0)     # SCAN_REQ, TxAdd random, RxAdd
        pdu = bytes([hdr, 12]) + self.address + adva
        start = adv.end + T_IFS
        if any(q.start == start and q.sender != self.air.name for q in self.air.log[-4:]):
            return                # another host device (a central's CONNECT_IND) has this slot
        end = start + (1 + 4 + len(pdu) + 3) * 8 * US
        self.air.send(Packet(start, end, adv.freq, adv.mode, ADV_AA, pdu, crc24(pdu, ADV_CRCINIT),
                             adv.white, "scanner"))
