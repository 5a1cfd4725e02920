"""A host-side Bluetooth LE central on the emulated air: the link layer and L2CAP.

For firmware that brings its own Bluetooth stack and drives the RADIO
itself (InfiniTime's NimBLE), this is the phone's controller.  It hears the
watch's advertising (emu/air.py), answers a connectable ADV_IND with a
CONNECT_IND T_IFS (150 us) after it, and then runs the connection as a
central does (Core spec v5.x, Vol 6 Part B):

* connection events every ``interval`` x 1.25 ms from an anchor point: the
  first packet is sent ``window_delay`` into the transmit window
  (1.25 ms + WinOffset x 1.25 ms after the CONNECT_IND, WinSize 1.25 ms
  long), the watch answers T_IFS after each packet, and the event goes on
  while either side has more data (MD) or the central has queued packets;
* channel selection algorithm #1 over the channel map, hop increment
  ``hop``; data channel whitening, the connection's access address and
  CRC init;
* acknowledgement and flow control with SN/NESN: a packet is sent again
  until the watch acknowledges it, a repeated packet from the watch is
  acknowledged and dropped;
* LL control: LL_VERSION_IND, LL_PERIPHERAL_FEATURE_REQ (we support no
  optional feature, so the watch asks for no length, PHY or parameter
  procedure), LL_PING_REQ, LL_LENGTH_REQ (27 bytes), LL_TERMINATE_IND;
  anything else gets LL_UNKNOWN_RSP, a connection parameters request
  LL_REJECT_EXT_IND;
* supervision timeout: no valid packet from the watch for ``timeout`` x
  10 ms ends the link (``lost``).  ``disconnect()`` sends LL_TERMINATE_IND;
  the watch's LL_TERMINATE_IND is acknowledged, and the link closes once
  the first packet of the next connection event has carried that
  acknowledgement again (as Zephyr's controller does): Nordic's S132 sets MD
  on it and stops listening for the rest of that event, so an acknowledgement
  in the same event alone is never heard and it keeps the link up until
  its supervision timeout (issue 48).

Encryption: ``start_encryption(ltk)`` runs the LL encryption start
procedure (LL_ENC_REQ with SKDm/IVm, the watch's LL_ENC_RSP, its
LL_START_ENC_REQ, our encrypted LL_START_ENC_RSP and its answer); from then
every non-empty PDU is AES-CCM encrypted as the Core spec (Vol 6 Part E)
says: session key e(LTK, SKDs || SKDm), nonce = 39-bit packet counter and
direction bit + IV (IVs || IVm), the header masked with 0xE3 as AAD, a
4-byte MIC.  A MIC that does not check ends the link (``lost``).  Pairing
(emu/phone/smp.py) produces the LTK.

L2CAP: PDUs are fragmented into 27-byte LL payloads and reassembled.  CID 4
(ATT) goes to ``on_att``; LE signalling (CID 5) answers a connection
parameter update request with "rejected" and anything else with a command
reject; SMP (CID 6) goes to ``on_smp`` (emu/phone/smp.py), or without one a
pairing request is answered "pairing not supported".

Everything happens on the emulated clock through one clock event
("host.ble.central": a host device's, not saved in snapshots): the same
firmware and phone actions give the same packets at the same ticks on
every run.  ``packets`` logs (tick, direction,
channel, LLID, SN, NESN, MD, payload) of the connection: the last
``PACKET_LOG`` (100 000; a connection at 30 ms sends 66 a second, and a
day's log held whole would be some 600 MB), ``packet_count`` all of them.

Connection update: ``update(interval, latency, timeout)`` sends
LL_CONNECTION_UPDATE_IND with an instant six events ahead and moves to the
new timing at the instant.  Raw mode (``on_data``, ``send_data``,
``on_acked``) hands data PDUs to an HCI controller (emu/phone/controller.py)
instead of L2CAP; while encryption starts, data waits.

Not modelled: encryption pause and key refresh, channel selection algorithm #2, the
channel map update procedure, the connection parameters request procedure
(rejected), data length extension and the 2M PHY, slave latency on
our side (the central sends every event), several connections, snapshots
of a live connection (the link is dropped in a restored machine).
"""
from __future__ import annotations

import logging
import struct
from collections import deque
from typing import Callable, Optional

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from emu.air import US, Packet, channel_freq, crc24
from emu.phone.scanner import ADV_AA, ADV_CRCINIT, T_IFS, ad_name, fmt_addr, parse_ad

log = logging.getLogger("emu.phone.link")

UNIT = 1250 * US                 # 1.25 ms, the unit of intervals and windows
LL_PAYLOAD = 27                  # data PDU payload without data length extension
LLID_CONT, LLID_START, LLID_CTRL = 1, 2, 3
CID_ATT, CID_SIG, CID_SMP = 4, 5, 6


LL_TERMINATE_IND, LL_UNKNOWN_RSP, LL_FEATURE_REQ, LL_FEATURE_RSP = 0x02, 0x07, 0x08, 0x09
LL_VERSION_IND, LL_REJECT_IND, LL_PERIPHERAL_FEATURE_REQ = 0x0C, 0x0D, 0x0E
LL_ENC_REQ, LL_ENC_RSP, LL_START_ENC_REQ, LL_START_ENC_RSP = 0x03, 0x04, 0x05, 0x06
LL_CONNECTION_UPDATE_IND = 0x00
LL_CONNECTION_PARAM_REQ, LL_REJECT_EXT_IND = 0x0F, 0x11
LL_PING_REQ, LL_PING_RSP, LL_LENGTH_REQ, LL_LENGTH_RSP = 0x12, 0x13, 0x14, 0x15
LL_NAMES = {0x00: "CONNECTION_UPDATE_IND", 0x01: "CHANNEL_MAP_IND", 0x02: "TERMINATE_IND",
            0x03: "ENC_REQ", 0x04: "ENC_RSP", 0x05: "START_ENC_REQ", 0x06: "START_ENC_RSP",
            0x07: "UNKNOWN_RSP", 0x08: "FEATURE_REQ", 0x09: "FEATURE_RSP", 0x0C: "VERSION_IND",
            0x0D: "REJECT_IND", 0x0E: "PERIPHERAL_FEATURE_REQ", 0x0F: "CONNECTION_PARAM_REQ",
            0x10: "CONNECTION_PARAM_RSP", 0x11: "REJECT_EXT_IND", 0x12: "PING_REQ",
            0x13: "PING_RSP", 0x14: "LENGTH_REQ", 0x15: "LENGTH_RSP", 0x16: "PHY_REQ",
            0x17: "PHY_RSP", 0x18: "PHY_UPDATE_IND"}


def aes_e(key_le: bytes, plain_le: bytes) -> bytes:
    """The security function e (AES-128, Core Vol 3 Part H 2.2.1) with key and
    data little endian: the session key here, SMP's functions (emu/phone/smp.py)."""
    enc = Cipher(algorithms.AES(key_le[::-1]), modes.ECB()).encryptor()
    return (enc.update(plain_le[::-1]) + enc.finalize())[::-1]



class LinkError(Exception):
    pass


def _nonce(counter: int, master: int, iv: bytes) -> bytes:
    """The CCM nonce: the 39-bit packet counter (LSB first) with the
    direction bit on top of its fifth byte, then the 8-byte IV."""
    c = (counter & ((1 << 39) - 1)) | (master << 39)
    return c.to_bytes(5, "little") + iv


def csa1_channels(hop: int, chmap: int, count: int, start: int = 0) -> list:
    """Channel selection algorithm #1: the data channels of ``count``
    connection events after ``start`` events (lastUnmappedChannel 0 at the
    CONNECT_IND)."""
    used = [c for c in range(37) if chmap >> c & 1]
    out = []
    last = (start * hop) % 37
    for _ in range(count):
        last = (last + hop) % 37
        out.append(last if chmap >> last & 1 else used[last % len(used)])
    return out


class LinkCentral:
    """The phone's link layer.  ``connect()`` arms it: the next connectable
    advertisement from ``target`` (an address string, or None for any
    device whose name is ``name``, or any at all) is answered with a
    CONNECT_IND."""

    PACKET_LOG = 100_000               # entries kept in ``packets``

    def __init__(self, air, address: bytes = bytes.fromhex("0200c0ffee01"), *,
                 interval: int = 24, timeout: int = 200, win_size: int = 2,
                 win_offset: int = 0, window_delay: int = 500 * US, hop: int = 7,
                 chmap: int = (1 << 37) - 1, access_address: int = 0x50654C43,
                 crc_init: int = 0x9A1B2C):
        self.air = air
        self.clock = air.clock
        self.address = address               # InitA, a random static address (LE bytes)
        self.interval, self.timeout = interval, timeout
        self.win_size, self.win_offset, self.window_delay = win_size, win_offset, window_delay
        self.hop, self.chmap = hop, chmap
        self.aa, self.crc_init = access_address, crc_init
        self.on_att: Optional[Callable[[bytes], None]] = None     # ATT PDUs from the watch
        self.on_state: list = []                                  # fn(state) on changes
        self.on_smp: Optional[Callable[[bytes], None]] = None     # SMP PDUs from the watch
        self.on_encryption: list = []                             # fn(ok, why)
        self.on_update: list = []                                 # fn(interval, latency, timeout)
        # raw mode (an HCI controller, emu/phone/controller.py): data PDUs go to
        # on_data(llid, payload) instead of L2CAP; on_acked(n) counts the data
        # PDUs queued with send_data that the watch acknowledged
        self.on_data: Optional[Callable[[int, bytes], None]] = None
        self.on_acked: Optional[Callable[[int], None]] = None
        self.own_random = True            # TxAdd of the CONNECT_IND (our address's type)
        self.reason_code: Optional[int] = None   # the HCI error code of the last close
        self.peer_bytes = b""             # the watch's address as on air (LE) and its type
        self.peer_random = False
        self.packets: deque = deque(maxlen=self.PACKET_LOG)   # the latest, oldest first
        self.packet_count = 0         # every packet logged, dropped ones included
        self.state = "idle"           # idle, initiating, connected, closed, lost
        self.peer: Optional[str] = None
        self.peer_name: Optional[str] = None
        self.reason: Optional[str] = None
        self.remote_version: Optional[tuple] = None
        self._target: Optional[str] = None
        self._target_name: Optional[str] = None
        self._names: dict = {}         # address -> name from scan responses
        name, n = "host.ble.central", 1
        while name in self.clock.events:      # one per central on this clock
            n += 1
            name = f"host.ble.central{n}"
        self._ev = self.clock.event(name, self._event)
        air.listen(self._heard)
        self._reset_link()

    # ------------------------------------------------------------------ API
    @property
    def connected(self) -> bool:
        return self.state == "connected"

    @property
    def terminating(self) -> bool:
        """The phone sent LL_TERMINATE_IND and waits for its acknowledgement."""
        return self._terminating

    def connect(self, target: Optional[str] = None, name: Optional[str] = None) -> None:
        if self.state in ("initiating", "connected"):
            return
        self._reset_link()
        self._target, self._target_name = target, name
        self.state = "initiating"

    def disconnect(self, reason: int = 0x13) -> None:
        """Send LL_TERMINATE_IND (``reason``: remote user terminated); closed
        once acknowledged."""
        if self.state == "connected" and not self._terminating:
            self._terminating = True
            self._ctrl(bytes([LL_TERMINATE_IND, reason & 0xFF]))
        elif self.state == "initiating":
            self._set_state("idle")

    def abandon(self, reason: str) -> None:
        """Give the link up at once, without the watch's acknowledgement."""
        if self.state in ("connected", "initiating"):
            self._in_event = False
            self._set_state("lost", reason)

    def send_l2cap(self, cid: int, data: bytes) -> None:
        """Queue one L2CAP PDU (fragmented to LL payloads)."""
        if self.state != "connected":
            raise LinkError("not connected")
        pdu = struct.pack("<HH", len(data), cid) + bytes(data)
        first = True
        while pdu or first:
            frag, pdu = pdu[:LL_PAYLOAD], pdu[LL_PAYLOAD:]
            self._txq.append((LLID_START if first else LLID_CONT, frag))
            first = False

    def send_data(self, llid: int, payload: bytes) -> None:
        """Raw mode: queue one data PDU as it is (LLID_START or LLID_CONT, at
        most LL_PAYLOAD bytes); on_acked hears of it once acknowledged."""
        if self.state != "connected":
            raise LinkError("not connected")
        if llid not in (LLID_START, LLID_CONT) or not 0 < len(payload) <= LL_PAYLOAD:
            raise LinkError(f"not a data PDU: LLID {llid}, {len(payload)} bytes")
        self._txq.append((llid, bytes(payload), "data"))

    @property
    def pending(self) -> int:
        """Packets queued or sent and not yet acknowledged."""
        return len(self._txq) + (1 if self._cur and self._cur[1] else 0)

    def start_encryption(self, ltk: bytes, seed: bytes = bytes(12), rand: bytes = bytes(8),
                         ediv: int = 0) -> None:
        """Start LL encryption with ``ltk`` (16 bytes, little endian as SMP
        gives it); SKDm and IVm are seed[:8] and seed[8:12]; ``rand`` and
        ``ediv`` identify a legacy-pairing key (zero for Secure Connections).
        Listeners in ``on_encryption`` hear (True, "") once both sides encrypt."""
        if self.state != "connected":
            raise LinkError("not connected")
        skdm, ivm = bytes(seed[:8]).ljust(8, b"\0"), bytes(seed[8:12]).ljust(4, b"\0")
        self._enc_setup = (bytes(ltk), skdm, ivm)
        self._ctrl(bytes([LL_ENC_REQ]) + bytes(rand[:8]).ljust(8, b"\0")
                   + struct.pack("<H", ediv & 0xFFFF) + skdm + ivm)

    def _encryption_result(self, ok: bool, why: str = "") -> None:
        self.encrypted = ok
        for fn in list(self.on_encryption):
            fn(ok, why)

    # ------------------------------------------------------------------ internals
    def _reset_link(self) -> None:
        self._ev.cancel()
        self._txq: deque = deque()
        self._cur: Optional[tuple] = None       # the PDU being sent until acked (see _send)
        self._sn = self._nesn = 0
        self._event_count = 0
        self._anchor0 = 0
        self._last_heard = 0
        self._rx_frag = bytearray()
        self._rx_need = 0
        self._terminating = False
        self._closing: Optional[str] = None     # the watch's LL_TERMINATE_IND, to acknowledge
        self._closing_event = 0           # _event_count when it came
        self._version_sent = False
        self._in_event = False
        self._enc = None                  # (AESCCM, IV) once encryption is on
        self._enc_tx = self._enc_rx = 0   # packet counters
        self._enc_setup = None            # (LTK, SKDm, IVm) while starting
        self._update = None               # (instant, interval, latency, timeout, offset)
        self.encrypted = False
        self._md = 0

    def _set_state(self, state: str, reason: Optional[str] = None,
                   code: Optional[int] = None) -> None:
        self.state = state
        if reason is not None:
            self.reason = reason
        if code is not None:
            self.reason_code = code
        if state in ("closed", "lost", "idle"):
            self._ev.cancel()
        log.info("central: %s%s", state, f" ({reason})" if reason else "")
        for fn in list(self.on_state):
            fn(state)

    def _ctrl(self, payload: bytes) -> None:
        self._txq.append((LLID_CTRL, bytes(payload)))

    # -- advertising channel -------------------------------------------------
    def _heard(self, p: Packet) -> None:
        if p.aa == ADV_AA:
            if self.state == "initiating":
                self._advert(p)
        elif self.state == "connected" and p.aa == self.aa and p.sender != "central":
            self._data(p)

    def _advert(self, p: Packet) -> None:
        if p.channel < 37 or len(p.pdu) < 8 or crc24(p.pdu, ADV_CRCINIT) != p.crc:
            return
        hdr = p.pdu[0]
        ptype = hdr & 0xF
        adva = bytes(p.pdu[2:8])
        addr = fmt_addr(adva)
        if ptype == 4:                       # SCAN_RSP (from the scanner's request)
            n = ad_name(parse_ad(bytes(p.pdu[8:2 + p.pdu[1]])))
            if n:
                self._names[addr] = n
            return
        if ptype != 0:                       # only ADV_IND is connectable and undirected
            return
        if self._target is not None and addr != self._target.lower():
            return
        if self._target_name is not None and self._names.get(addr) != self._target_name:
            if ad_name(parse_ad(bytes(p.pdu[8:2 + p.pdu[1]]))) != self._target_name:
                return
        self.peer = addr
        self.peer_bytes, self.peer_random = adva, bool(hdr & 0x40)
        self.peer_name = self._names.get(addr)
        lldata = struct.pack("<I", self.aa) + self.crc_init.to_bytes(3, "little") + struct.pack(
            "<BHHHH", self.win_size, self.win_offset, self.interval, 0, self.timeout) \
            + self.chmap.to_bytes(5, "little") + bytes([(self.hop & 0x1F) | (0 << 5)])
        hdr_out = 5 | (0x40 if self.own_random else 0) | (0x80 if hdr & 0x40 else 0)  # CONNECT_IND
        pdu = bytes([hdr_out, 34]) + self.address + adva + lldata
        start = p.end + T_IFS
        if any(q.start == start and q.sender != self.air.name for q in self.air.log[-4:]):
            return                           # a scanner's SCAN_REQ has this slot: next advert
        end = start + (1 + 4 + len(pdu) + 3) * 8 * US
        self.air.send(Packet(start, end, p.freq, p.mode, ADV_AA, pdu, crc24(pdu, ADV_CRCINIT),
                             p.white, "central"))
        # the first connection event: in the transmit window after the CONNECT_IND
        self._anchor0 = end + UNIT + self.win_offset * UNIT + self.window_delay
        self._last_heard = end
        self._set_state("connected")
        self._ev.schedule_at(self._anchor0 - 50 * US)

    # -- connection events ----------------------------------------------------
    def _anchor(self, n: int) -> int:
        return self._anchor0 + n * self.interval * UNIT

    def update(self, interval: int, latency: int, timeout: int, win_offset: int = 0) -> int:
        """The connection update procedure (Core Vol 6 Part B 5.1.1): send
        LL_CONNECTION_UPDATE_IND with the new parameters and an instant six
        events ahead; at the instant the first event of the new timing comes
        ``win_offset`` x 1.25 ms after the old anchor, in a 1.25 ms transmit
        window.  ``on_update`` listeners hear (interval, latency, timeout) at
        the instant.  Returns the instant."""
        if self.state != "connected":
            raise LinkError("not connected")
        if self._update is not None:
            raise LinkError("a connection update is already under way")
        instant = (self._event_count + 6) & 0xFFFF
        self._update = (instant, interval, latency, timeout, win_offset)
        self._ctrl(bytes([LL_CONNECTION_UPDATE_IND]) + struct.pack(
            "<BHHHHH", 1, win_offset, interval, latency, timeout, instant))
        return instant

    def _event(self) -> None:
        if self.state != "connected":
            return
        n = self._event_count
        if self._update is not None and (n & 0xFFFF) == self._update[0]:
            _instant, interval, latency, timeout, win_offset = self._update
            self._update = None
            start = self._anchor(n) + win_offset * UNIT + min(self.window_delay, UNIT // 2)
            self.interval, self.timeout = interval, timeout
            self._anchor0 = start - n * interval * UNIT
            for fn in list(self.on_update):
                fn(interval, latency, timeout)
            if start - 50 * US > self.clock.now:
                self._ev.schedule_at(start - 50 * US)
                return
        anchor = self._anchor(n)
        if anchor - self._last_heard > self.timeout * 10_000 * US:
            self._set_state("lost", "supervision timeout", 0x08)
            return
        self._event_count += 1
        self._channel = csa1_channels(self.hop, self.chmap, 1, n)[0]
        self._in_event = True
        self._ev.schedule_at(self._anchor(n + 1) - 50 * US)
        self._send(anchor)

    def _next_pdu(self) -> tuple:
        """The next PDU to send.  While the encryption start procedure runs
        (LL_ENC_REQ sent, LL_START_ENC_RSP not yet heard) only control PDUs
        go: data waits in the queue, and is sent encrypted afterwards (Core
        Vol 6 Part B 5.1.3.1: the central pauses data traffic)."""
        if not self._txq or self._closing is not None:
            return (LLID_CONT, b"")      # (nothing new once the watch terminates)
        if self._enc_setup is not None and self._txq[0][0] != LLID_CTRL:
            for i, item in enumerate(self._txq):
                if item[0] == LLID_CTRL:
                    del self._txq[i]
                    return item
            return (LLID_CONT, b"")
        return self._txq.popleft()

    def _send(self, start: int) -> None:
        if self._cur is None:              # (LLID, payload on air, plain payload, tag)
            item = self._next_pdu()
            llid, plain = item[0], item[1]
            payload = plain
            if self._enc is not None and plain:
                ccm, iv = self._enc
                nonce = _nonce(self._enc_tx, 1, iv)
                self._enc_tx += 1
                payload = ccm.encrypt(nonce, plain, bytes([llid]))
            self._cur = (llid, payload, plain, item[2] if len(item) > 2 else None)
        llid, payload = self._cur[:2]
        md = self._md = 1 if self._txq else 0
        hdr = llid | (self._nesn << 2) | (self._sn << 3) | (md << 4)
        pdu = bytes([hdr, len(payload)]) + payload
        end = start + (1 + 4 + len(pdu) + 3) * 8 * US
        self.packets.append((start, ">", self._channel, llid, self._sn, self._nesn, md,
                             bytes(self._cur[2])))
        self.packet_count += 1
        self.air.send(Packet(start, end, channel_freq(self._channel), 3, self.aa, pdu,
                             crc24(pdu, self.crc_init), self._channel | 0x40, "central"))
        if self._closing is not None and self._event_count > self._closing_event:
            # this packet, in the event after the one that brought the watch's
            # LL_TERMINATE_IND, carries our acknowledgement to a watch that
            # stopped listening after sending it (Nordic's S132 ends its event
            # there); an answer in the same event is not enough
            self._in_event = False
            self._set_state("closed", self._closing, self._closing_code)

    def _data(self, p: Packet) -> None:
        if not self._in_event or p.channel != self._channel or len(p.pdu) < 2:
            return
        if crc24(p.pdu, self.crc_init) != p.crc or p.white != (self._channel | 0x40):
            self._in_event = False           # a bad packet closes the event
            return
        self._last_heard = p.end
        hdr, length = p.pdu[0], p.pdu[1]
        llid, nesn, sn, md = hdr & 3, (hdr >> 2) & 1, (hdr >> 3) & 1, (hdr >> 4) & 1
        payload = bytes(p.pdu[2:2 + length])
        self.packets.append((p.start, "<", self._channel, llid, sn, nesn, md, payload))
        self.packet_count += 1
        if nesn != self._sn:                 # our packet was acknowledged
            self._sn ^= 1
            acked, self._cur = self._cur, None
            if acked and acked[3] == "data" and self.on_acked is not None:
                self.on_acked(1)
            if self._terminating and acked and acked[0] == LLID_CTRL and acked[2][:1] == bytes(
                    [LL_TERMINATE_IND]):
                self._in_event = False
                self._set_state("closed", "terminated by the phone", 0x16)
                return
        if sn == self._nesn:                 # new data from the watch
            self._nesn ^= 1
            if length and self._enc is not None:
                ccm, iv = self._enc
                try:
                    payload = ccm.decrypt(_nonce(self._enc_rx, 0, iv), payload, bytes([llid]))
                except Exception:
                    self._in_event = False
                    self._set_state("lost", "MIC failure", 0x3D)
                    return
                self._enc_rx += 1
                self.packets[-1] = self.packets[-1][:7] + (payload,)
            if length:
                self._received(llid, payload)
                if self.state != "connected":
                    return
        if md or self._md:
            self._send(p.end + T_IFS)       # either side has more data: the event goes on
        else:
            self._in_event = False

    def _received(self, llid: int, payload: bytes) -> None:
        if llid == LLID_CTRL:
            self._control(payload)
        elif self.on_data is not None:
            self.on_data(llid, payload)
        elif llid == LLID_START:
            self._rx_frag = bytearray(payload)
            self._rx_need = 4 + int.from_bytes(payload[:2], "little") if len(payload) >= 2 else 0
            self._l2cap_done()
        elif llid == LLID_CONT and self._rx_frag:
            self._rx_frag += payload
            self._l2cap_done()

    def _l2cap_done(self) -> None:
        if len(self._rx_frag) < max(self._rx_need, 4):
            return
        data = bytes(self._rx_frag)
        self._rx_frag = bytearray()
        length, cid = struct.unpack_from("<HH", data)
        body = data[4:4 + length]
        if cid == CID_ATT:
            if self.on_att is not None:
                self.on_att(body)
        elif cid == CID_SIG:
            self._signalling(body)
        elif cid == CID_SMP and self.on_smp is not None:
            self.on_smp(body)
        elif cid == CID_SMP:
            if body[:1] == b"\x01":          # Pairing Request -> Pairing Failed, not supported
                self.send_l2cap(CID_SMP, b"\x05\x05")
        else:
            log.info("central: L2CAP CID %#x ignored (%d bytes)", cid, len(body))

    def _signalling(self, body: bytes) -> None:
        if len(body) < 4:
            return
        code, ident = body[0], body[1]
        if code == 0x12:                     # connection parameter update request
            self.send_l2cap(CID_SIG, bytes([0x13, ident]) + struct.pack("<HH", 2, 1))
        elif code not in (0x01, 0x13):       # anything else: command not understood
            self.send_l2cap(CID_SIG, bytes([0x01, ident]) + struct.pack("<HH", 2, 0))

    def _control(self, c: bytes) -> None:
        op = c[0]
        log.debug("central: LL_%s", LL_NAMES.get(op, f"{op:#x}"))
        if op == LL_VERSION_IND:
            if len(c) >= 6:
                self.remote_version = struct.unpack_from("<BHH", c, 1)
            if not self._version_sent:
                self._version_sent = True
                self._ctrl(bytes([LL_VERSION_IND, 0x0B]) + struct.pack("<HH", 0xFFFF, 0))
        elif op in (LL_PERIPHERAL_FEATURE_REQ, LL_FEATURE_REQ):
            self._ctrl(bytes([LL_FEATURE_RSP]) + bytes(8))
        elif op == LL_PING_REQ:
            self._ctrl(bytes([LL_PING_RSP]))
        elif op == LL_LENGTH_REQ:
            self._ctrl(bytes([LL_LENGTH_RSP]) + struct.pack("<HHHH", 27, 328, 27, 328))
        elif op == LL_CONNECTION_PARAM_REQ:
            self._ctrl(bytes([LL_REJECT_EXT_IND, op, 0x1A]))
        elif op == LL_ENC_RSP and self._enc_setup is not None and len(c) >= 13:
            from cryptography.hazmat.primitives.ciphers.aead import AESCCM
            ltk, skdm, ivm = self._enc_setup
            sk = aes_e(ltk, skdm + bytes(c[1:9]))          # SKD = SKDs || SKDm
            self._pending_enc = (AESCCM(bytes(reversed(sk)), tag_length=4),
                                 ivm + bytes(c[9:13]))      # IV = IVs || IVm
        elif op == LL_START_ENC_REQ and getattr(self, "_pending_enc", None) is not None:
            self._enc, self._pending_enc = self._pending_enc, None
            self._enc_tx = self._enc_rx = 0
            self._ctrl(bytes([LL_START_ENC_RSP]))
        elif op == LL_START_ENC_RSP and self._enc is not None:
            self._enc_setup = None
            self._encryption_result(True)
        elif op in (LL_REJECT_IND, LL_REJECT_EXT_IND) and self._enc_setup is not None:
            self._enc_setup = None
            self._encryption_result(False, f"the watch rejected encryption ({c.hex()})")
        elif op == LL_TERMINATE_IND:         # closed once acknowledged in the next event
            self._closing_event = self._event_count
            self._closing_code = c[1] if len(c) > 1 else 0x13
            self._closing = (f"terminated by the watch (reason {c[1]:#04x})" if len(c) > 1
                             else "terminated by the watch")
        elif op in (LL_UNKNOWN_RSP, LL_FEATURE_RSP, LL_REJECT_IND, LL_REJECT_EXT_IND,
                    LL_PING_RSP, LL_LENGTH_RSP):
            pass
        else:
            self._ctrl(bytes([LL_UNKNOWN_RSP, op]))
