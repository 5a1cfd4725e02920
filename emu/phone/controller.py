"""A Bluetooth LE controller on the emulated air, for real hosts over HCI.

The host (Google's Bumble, BlueZ through ``btattach``, any HCI stack) sends
HCI packets in the UART transport's framing (H4: a type byte, then a
command, ACL data, or from us an event; Core spec v5.3 Vol 4 Parts A and E)
to :meth:`HciController.feed`; what the controller answers comes out
through ``on_output`` listeners as H4 bytes.  The link layer under it is
the phone's own (emu/phone/scanner.py hears advertising and sends scan
requests, emu/phone/link.py initiates and runs the connection as a central),
so everything happens in emulated time, against whatever advertises on the
air: InfiniTime's NimBLE, Nordic's real S132, our own test firmware.

Commands (the subset a host needs to scan, connect, exchange data, pair and
encrypt): Reset, Set Event Mask (and page 2), Read Local Version
Information, Read Local Supported Commands, Read Local Supported Features,
Read BD_ADDR, Read Buffer Size, Read RSSI, Read Remote Version Information,
Disconnect, and LE: Set Event Mask, Read Buffer Size, Read Local Supported
Features, Set Random Address, Set Scan Parameters, Set Scan Enable (with
duplicate filtering), Create Connection and its Cancel, Read/Clear Filter
Accept List (size 0: the list is not used), Connection Update (the LL
connection update procedure, an instant six events ahead), Read Remote
Features, Encrypt, Rand, Enable Encryption,
Read Supported States.  Anything else is answered with Unknown HCI Command
(0x01), as the spec asks.

Events: Command Complete/Status, Disconnection Complete, Encryption Change,
Read Remote Version Information Complete, Number Of Completed Packets (a
host ACL packet is complete once the watch acknowledged it on the air), LE
Meta: Connection Complete, Advertising Report, Connection Update Complete,
Read Remote Features Complete, each filtered by the host's event masks.

ACL data: a host ACL packet (at most 27 bytes: the LE buffer size we
report) becomes one LL data PDU (packet boundary "first" -> LLID start,
"continuing" -> LLID continuation) and the watch's data PDUs come back as
ACL packets; L2CAP, ATT, GATT and SMP are the host's business.

Not modelled: advertising and the peripheral role, more than one
connection, the filter accept list and address resolution (privacy),
extended scanning and advertising, data length extension and the 2M PHY,
the connection parameters request procedure (a peripheral's request is
rejected), channel map updates, HCI flow control from the controller to
the host.
"""
from __future__ import annotations

import hashlib
import logging
import struct

from emu.phone.link import LL_PAYLOAD, LLID_CONT, LLID_START, LinkCentral, aes_e
from emu.phone.scanner import Scanner

log = logging.getLogger("emu.phone.controller")

H4_COMMAND, H4_ACL, H4_EVENT = 0x01, 0x02, 0x04
HANDLE = 0x0001                   # the one connection's handle
ACL_BUFFERS = 8                   # LE ACL buffers we report (and keep)

# Read Local Supported Commands: (octet, bit) of each command we answer
# (Core spec v5.3 Vol 4 Part E 6.27; Read Local Supported Commands itself
# has no bit: every controller has it).
SUPPORTED = {
    0x0406: (0, 5),   # Disconnect
    0x041D: (2, 7),   # Read Remote Version Information
    0x0C01: (5, 6),   # Set Event Mask
    0x0C03: (5, 7),   # Reset
    0x1001: (14, 3),  # Read Local Version Information
    0x1003: (14, 5),  # Read Local Supported Features
    0x1005: (14, 7),  # Read Buffer Size
    0x1009: (15, 1),  # Read BD_ADDR
    0x1405: (15, 5),  # Read RSSI
    0x0C63: (22, 2),  # Set Event Mask Page 2
    0x2001: (25, 0),  # LE Set Event Mask
    0x2002: (25, 1),  # LE Read Buffer Size
    0x2003: (25, 2),  # LE Read Local Supported Features
    0x2005: (25, 4),  # LE Set Random Address
    0x200B: (26, 2),  # LE Set Scan Parameters
    0x200C: (26, 3),  # LE Set Scan Enable
    0x200D: (26, 4),  # LE Create Connection
    0x200E: (26, 5),  # LE Create Connection Cancel
    0x200F: (26, 6),  # LE Read Filter Accept List Size
    0x2010: (26, 7),  # LE Clear Filter Accept List
    0x2013: (27, 2),  # LE Connection Update
    0x2016: (27, 5),  # LE Read Remote Features
    0x2017: (27, 6),  # LE Encrypt
    0x2018: (27, 7),  # LE Rand
    0x2019: (28, 0),  # LE Enable Encryption
    0x201C: (28, 3),  # LE Read Supported States
}

# Event mask bits (Vol 4 Part E 7.3.1 and 7.8.1)
EVM_DISCONNECTION, EVM_ENCRYPTION, EVM_REMOTE_VERSION, EVM_LE_META = 4, 7, 11, 61
LEM_CONNECTION, LEM_ADV_REPORT, LEM_CONNECTION_UPDATE, LEM_REMOTE_FEATURES = 0, 1, 2, 3
ADV_EVENT_TYPE = {0: 0, 1: 1, 6: 2, 2: 3, 4: 4}    # PDU type -> report event type

ERR_UNKNOWN_COMMAND, ERR_UNKNOWN_CONNECTION, ERR_COMMAND_DISALLOWED = 0x01, 0x02, 0x0C
ERR_INVALID_PARAMETERS, ERR_UNSUPPORTED_PARAMETER = 0x12, 0x11
ERR_LOCAL_HOST, ERR_UNKNOWN_ADV_ID = 0x16, 0x42


def supported_commands() -> bytes:
    out = bytearray(64)
    for octet, bit in SUPPORTED.values():
        out[octet] |= 1 << bit
    return bytes(out)


class HciController:
    """One LE controller on ``air``.  ``feed(h4_bytes)`` takes the host's
    packets; ``on_output`` listeners get the controller's (H4 bytes)."""

    def __init__(self, air, address: bytes = bytes.fromhex("0e0dc0ffee00"), seed: int = 1):
        self.air = air
        self.clock = air.clock
        self.bd_addr = address            # public address, little endian
        self.on_output: list = []         # fn(bytes)
        self.sent: list = []              # (tick, H4 packet) to the host, the last 1000
        self._inbuf = bytearray()
        self._seed = seed
        self._rand_count = 0
        self.scanner = Scanner(air, active=True)
        self.scanner.enabled = False
        self.scanner.on_pdu.append(self._advert)
        self.link = LinkCentral(air)
        self.link.on_data = self._link_data
        self.link.on_acked = self._link_acked
        self.link.on_state.append(self._link_state)
        self.link.on_encryption.append(self._link_encryption)
        self.link.on_update.append(self._link_update)
        self._bad_stream_logged = False
        self.reset()

    # ------------------------------------------------------------------ host side
    def feed(self, data: bytes) -> None:
        """Bytes from the host, in H4 framing; complete packets are handled now."""
        self._inbuf += data
        while self._inbuf:
            kind = self._inbuf[0]
            if kind == H4_COMMAND:
                if len(self._inbuf) < 4 or len(self._inbuf) < 4 + self._inbuf[3]:
                    return
                n = 4 + self._inbuf[3]
                pkt, self._inbuf = bytes(self._inbuf[1:n]), self._inbuf[n:]
                self._command(struct.unpack_from("<H", pkt)[0], pkt[3:])
            elif kind == H4_ACL:
                if len(self._inbuf) < 5:
                    return
                size = struct.unpack_from("<H", self._inbuf, 3)[0]
                if len(self._inbuf) < 5 + size:
                    return
                pkt, self._inbuf = bytes(self._inbuf[1:5 + size]), self._inbuf[5 + size:]
                self._acl(pkt)
            else:                          # not H4: nothing after it can be framed
                if not self._bad_stream_logged:
                    self._bad_stream_logged = True
                    log.warning("hci: packet type %#04x is not a command or ACL data; "
                                "dropping %d bytes and signalling a hardware error",
                                kind, len(self._inbuf))
                self._inbuf.clear()
                self._event(0x10, bytes([0x01]))        # Hardware Error
                return

    def reset(self) -> None:
        """HCI Reset: scanning off, any connection dropped, masks to default."""
        self.event_mask = 0x00001FFFFFFFFFFF
        self.le_event_mask = 0x1F
        self.random_address = bytes(6)
        self.scan_enabled = False
        self.scan_active = False
        self.filter_duplicates = False
        self._reported: set = set()
        self.scanner.enabled = False
        self._connecting = False
        self._handle_open = False
        self._unacked = 0
        self._enc_pending = False
        if self.link.state in ("connected", "initiating"):
            self.link.abandon("HCI reset")
        self._inbuf.clear()

    # ------------------------------------------------------------------ output
    def _emit(self, packet: bytes) -> None:
        self.sent.append((self.clock.now, packet))
        if len(self.sent) > 1000:
            del self.sent[:len(self.sent) - 1000]
        for fn in list(self.on_output):
            fn(packet)

    def _event(self, code: int, params: bytes) -> None:
        self._emit(bytes([H4_EVENT, code, len(params)]) + params)

    def _masked(self, bit: int) -> bool:
        return bool(self.event_mask >> bit & 1)

    def _le_event(self, sub: int, params: bytes, le_bit: int) -> None:
        if self._masked(EVM_LE_META) and self.le_event_mask >> le_bit & 1:
            self._event(0x3E, bytes([sub]) + params)

    def _complete(self, opcode: int, params: bytes = b"\x00") -> None:
        self._event(0x0E, struct.pack("<BH", 1, opcode) + params)

    def _status(self, opcode: int, status: int = 0) -> None:
        self._event(0x0F, struct.pack("<BBH", status, 1, opcode))

    # ------------------------------------------------------------------ commands
    def _command(self, op: int, p: bytes) -> None:
        handler = self._COMMANDS.get(op)
        if handler is None:
            log.info("hci: command %#06x (OGF %#x OCF %#x) not supported", op, op >> 10,
                     op & 0x3FF)
            self._complete(op, bytes([ERR_UNKNOWN_COMMAND]))
            return
        name, fn, size = handler
        if size is not None and len(p) < size:
            self._complete(op, bytes([ERR_INVALID_PARAMETERS]))
            return
        fn(self, op, p)

    def _c_reset(self, op, p):
        self.reset()
        self._complete(op)

    def _c_event_mask(self, op, p):
        self.event_mask = int.from_bytes(p[:8], "little")
        self._complete(op)

    def _c_ok(self, op, p):
        self._complete(op)

    def _c_le_event_mask(self, op, p):
        self.le_event_mask = int.from_bytes(p[:8], "little")
        self._complete(op)

    def _c_version(self, op, p):
        # HCI 5.2 (0x0B), revision 0, LMP 5.2, manufacturer 0xFFFF (none), subversion 0
        self._complete(op, struct.pack("<BBHBHH", 0, 0x0B, 0, 0x0B, 0xFFFF, 0))

    def _c_commands(self, op, p):
        self._complete(op, b"\x00" + supported_commands())

    def _c_features(self, op, p):
        features = bytearray(8)
        features[4] = 0x60                # BR/EDR not supported (bit 37), LE supported (38)
        self._complete(op, b"\x00" + bytes(features))

    def _c_bd_addr(self, op, p):
        self._complete(op, b"\x00" + self.bd_addr)

    def _c_buffer_size(self, op, p):
        # no BR/EDR buffers: the host uses the LE ones
        self._complete(op, struct.pack("<BHBHH", 0, 0, 0, 0, 0))

    def _c_le_buffer_size(self, op, p):
        self._complete(op, struct.pack("<BHB", 0, LL_PAYLOAD, ACL_BUFFERS))

    def _c_le_features(self, op, p):
        self._complete(op, b"\x00" + bytes([0x01]) + bytes(7))    # LE encryption

    def _c_random_address(self, op, p):
        if self.scan_enabled or self._connecting:
            self._complete(op, bytes([ERR_COMMAND_DISALLOWED]))
            return
        self.random_address = bytes(p[:6])
        self._complete(op)

    def _c_scan_parameters(self, op, p):
        if self.scan_enabled:
            self._complete(op, bytes([ERR_COMMAND_DISALLOWED]))
            return
        if p[0] > 1:
            self._complete(op, bytes([ERR_INVALID_PARAMETERS]))
            return
        self.scan_active = p[0] == 1
        self.scan_own_random = p[5] in (1, 3)
        self._complete(op)

    def _c_scan_enable(self, op, p):
        if p[0] > 1:
            self._complete(op, bytes([ERR_INVALID_PARAMETERS]))
            return
        self.scan_enabled = p[0] == 1
        self.filter_duplicates = bool(p[1])
        self._reported = set()
        self.scanner.enabled = self.scan_enabled
        self.scanner.active = self.scan_active
        self.scanner.address = self._own_address(getattr(self, "scan_own_random", False))
        self._complete(op)

    def _c_create_connection(self, op, p):
        if self._connecting or self.link.state == "connected":
            self._status(op, ERR_COMMAND_DISALLOWED)
            return
        (scan_interval, scan_window, filter_policy, peer_type) = struct.unpack_from("<HHBB", p)
        peer = bytes(p[6:12])
        own_type = p[12]
        interval_min, interval_max, latency, timeout = struct.unpack_from("<HHHH", p, 13)
        if filter_policy != 0:
            self._status(op, ERR_UNSUPPORTED_PARAMETER)     # the accept list is not kept
            return
        if not (6 <= interval_min <= interval_max <= 3200 and 10 <= timeout <= 3200):
            self._status(op, ERR_INVALID_PARAMETERS)
            return
        link = self.link
        link.interval, link.timeout = interval_min, timeout
        link.own_random = own_type in (1, 3)
        link.address = self._own_address(link.own_random)
        self._peer_type = peer_type
        self._connecting = True
        self._status(op)
        link.connect(target=":".join(f"{b:02x}" for b in reversed(peer)))

    def _c_create_cancel(self, op, p):
        if not self._connecting:
            self._complete(op, bytes([ERR_COMMAND_DISALLOWED]))
            return
        self._connecting = False
        self.link.disconnect()               # initiating -> idle
        self._complete(op)
        self._le_event(0x01, struct.pack("<BHBB", 0x02, 0, 0, 0) + bytes(6) + bytes(7),
                       LEM_CONNECTION)           # Unknown Connection Identifier

    def _c_disconnect(self, op, p):
        handle = struct.unpack_from("<H", p)[0] & 0xFFF
        if handle != HANDLE or not self._handle_open:
            self._status(op, ERR_UNKNOWN_CONNECTION)
            return
        self._status(op)
        self.link.disconnect(p[2])

    def _c_accept_list_size(self, op, p):
        self._complete(op, b"\x00\x00")

    def _c_connection_update(self, op, p):
        handle = struct.unpack_from("<H", p)[0] & 0xFFF
        interval_min, interval_max, latency, timeout = struct.unpack_from("<HHHH", p, 2)
        if handle != HANDLE or not self._handle_open:
            self._status(op, ERR_UNKNOWN_CONNECTION)
            return
        if not (6 <= interval_min <= interval_max <= 3200 and latency <= 499
                and 10 <= timeout <= 3200
                and timeout * 4 > (1 + latency) * interval_max):   # timeout > 2 intervals
            self._status(op, ERR_INVALID_PARAMETERS)
            return
        if self.link._update is not None or self._enc_pending:
            self._status(op, ERR_COMMAND_DISALLOWED)
            return
        self._status(op)
        self.link.update(interval_min, latency, timeout)

    def _c_remote_features(self, op, p):
        if not self._handle_open:
            self._status(op, ERR_UNKNOWN_CONNECTION)
            return
        self._status(op)
        # what the watch's link layer answered to our feature exchange is not
        # kept: report encryption, which every peer here supports
        self._le_event(0x04, struct.pack("<BH", 0, HANDLE) + bytes([0x01]) + bytes(7),
                       LEM_REMOTE_FEATURES)

    def _c_remote_version(self, op, p):
        if not self._handle_open:
            self._status(op, ERR_UNKNOWN_CONNECTION)
            return
        self._status(op)
        version = self.link.remote_version or (0x09, 0xFFFF, 0)
        if self._masked(EVM_REMOTE_VERSION):
            self._event(0x0C, struct.pack("<BHBHH", 0, HANDLE, *version))

    def _c_encrypt(self, op, p):
        # LE Encrypt takes key and plaintext most significant octet last, as e() here
        self._complete(op, b"\x00" + aes_e(bytes(p[:16]), bytes(p[16:32])))

    def _c_rand(self, op, p):
        self._rand_count += 1
        r = hashlib.sha256(f"pinetime-emu hci {self._seed} {self._rand_count}".encode()).digest()
        self._complete(op, b"\x00" + r[:8])

    def _c_enable_encryption(self, op, p):
        handle = struct.unpack_from("<H", p)[0] & 0xFFF
        if handle != HANDLE or not self._handle_open:
            self._status(op, ERR_UNKNOWN_CONNECTION)
            return
        if self._enc_pending:
            self._status(op, ERR_COMMAND_DISALLOWED)
            return
        rand, ediv, ltk = bytes(p[2:10]), struct.unpack_from("<H", p, 10)[0], bytes(p[12:28])
        self._status(op)
        self._enc_pending = True
        seed = hashlib.sha256(b"skd" + ltk + self.clock.now.to_bytes(8, "little")).digest()[:12]
        self.link.start_encryption(ltk, seed, rand=rand, ediv=ediv)

    def _c_rssi(self, op, p):
        handle = struct.unpack_from("<H", p)[0] & 0xFFF
        if handle != HANDLE or not self._handle_open:
            self._complete(op, struct.pack("<BHb", ERR_UNKNOWN_CONNECTION, handle, 0))
            return
        self._complete(op, struct.pack("<BHb", 0, HANDLE, self.air.rssi_dbm))

    def _c_supported_states(self, op, p):
        # scanning (bits 4, 5), initiating (6), central (7) and their combinations
        self._complete(op, b"\x00" + struct.pack("<Q", (1 << 4) | (1 << 5) | (1 << 6)
                                                 | (1 << 7) | (1 << 22) | (1 << 23)))

    _COMMANDS: dict = {
        0x0406: ("Disconnect", _c_disconnect, 3),
        0x041D: ("Read Remote Version Information", _c_remote_version, 2),
        0x0C01: ("Set Event Mask", _c_event_mask, 8),
        0x0C03: ("Reset", _c_reset, 0),
        0x0C63: ("Set Event Mask Page 2", _c_ok, 8),
        0x1001: ("Read Local Version Information", _c_version, 0),
        0x1002: ("Read Local Supported Commands", _c_commands, 0),
        0x1003: ("Read Local Supported Features", _c_features, 0),
        0x1005: ("Read Buffer Size", _c_buffer_size, 0),
        0x1009: ("Read BD_ADDR", _c_bd_addr, 0),
        0x1405: ("Read RSSI", _c_rssi, 2),
        0x2001: ("LE Set Event Mask", _c_le_event_mask, 8),
        0x2002: ("LE Read Buffer Size", _c_le_buffer_size, 0),
        0x2003: ("LE Read Local Supported Features", _c_le_features, 0),
        0x2005: ("LE Set Random Address", _c_random_address, 6),
        0x200B: ("LE Set Scan Parameters", _c_scan_parameters, 7),
        0x200C: ("LE Set Scan Enable", _c_scan_enable, 2),
        0x200D: ("LE Create Connection", _c_create_connection, 25),
        0x200E: ("LE Create Connection Cancel", _c_create_cancel, 0),
        0x200F: ("LE Read Filter Accept List Size", _c_accept_list_size, 0),
        0x2010: ("LE Clear Filter Accept List", _c_ok, 0),
        0x2013: ("LE Connection Update", _c_connection_update, 14),
        0x2016: ("LE Read Remote Features", _c_remote_features, 2),
        0x2017: ("LE Encrypt", _c_encrypt, 32),
        0x2018: ("LE Rand", _c_rand, 0),
        0x2019: ("LE Enable Encryption", _c_enable_encryption, 28),
        0x201C: ("LE Read Supported States", _c_supported_states, 0),
    }

    # ------------------------------------------------------------------ ACL
    def _acl(self, pkt: bytes) -> None:
        hdr, size = struct.unpack_from("<HH", pkt)
        handle, pb = hdr & 0xFFF, (hdr >> 12) & 3
        data = pkt[4:4 + size]
        if handle != HANDLE or not self._handle_open or self.link.state != "connected":
            log.info("hci: ACL data for handle %#x with no connection: dropped", handle)
            return
        if not data:
            self._completed(1)
            return
        llid = LLID_CONT if pb == 0b01 else LLID_START
        chunks = [data[i:i + LL_PAYLOAD] for i in range(0, len(data), LL_PAYLOAD)]
        # a packet longer than our buffers is carried in several PDUs, and
        # completes with its last one
        self._pieces = getattr(self, "_pieces", [])
        for i, chunk in enumerate(chunks):
            self._pieces.append(i == len(chunks) - 1)
            self.link.send_data(llid if i == 0 else LLID_CONT, chunk)
        self._unacked += 1

    def _link_acked(self, n: int) -> None:
        done = 0
        for _ in range(n):
            if self._pieces and self._pieces.pop(0):
                done += 1
        if done:
            self._completed(done)

    def _completed(self, n: int) -> None:
        self._unacked = max(0, self._unacked - n)
        self._event(0x13, struct.pack("<BHH", 1, HANDLE, n))

    def _link_data(self, llid: int, payload: bytes) -> None:
        if not self._handle_open:
            return
        pb = 0b10 if llid == LLID_START else 0b01
        self._emit(bytes([H4_ACL]) + struct.pack("<HH", HANDLE | pb << 12, len(payload))
                   + payload)

    # ------------------------------------------------------------------ link events
    def _link_state(self, state: str) -> None:
        link = self.link
        if state == "connected" and self._connecting:
            self._connecting = False
            self._handle_open = True
            self._pieces = []
            self._unacked = 0
            self._enc_pending = False
            peer_type = 1 if link.peer_random else 0
            self._le_event(0x01, struct.pack("<BHBB", 0, HANDLE, 0, peer_type) + link.peer_bytes
                           + struct.pack("<HHHB", link.interval, 0, link.timeout, 0),
                           LEM_CONNECTION)
        elif state in ("closed", "lost") and self._handle_open:
            self._handle_open = False
            if self._enc_pending:
                self._enc_pending = False
            reason = link.reason_code if link.reason_code is not None else ERR_LOCAL_HOST
            if self._masked(EVM_DISCONNECTION):
                self._event(0x05, struct.pack("<BHB", 0, HANDLE, reason))

    def _link_update(self, interval: int, latency: int, timeout: int) -> None:
        if self._handle_open:
            self._le_event(0x03, struct.pack("<BHHHH", 0, HANDLE, interval, latency, timeout),
                           LEM_CONNECTION_UPDATE)

    def _link_encryption(self, ok: bool, why: str) -> None:
        if not self._handle_open:
            return
        self._enc_pending = False
        if self._masked(EVM_ENCRYPTION):
            # failure: "PIN or Key Missing", as a controller reports a rejected LTK
            self._event(0x08, struct.pack("<BHB", 0 if ok else 0x06, HANDLE, 1 if ok else 0))

    # ------------------------------------------------------------------ scanning
    def _own_address(self, random: bool) -> bytes:
        return self.random_address if random and any(self.random_address) else self.bd_addr

    def _advert(self, ptype: int, random: bool, adva: bytes, data: bytes) -> None:
        if not self.scan_enabled:
            return
        if ptype == 4 and not self.scan_active:
            return                               # a scan response to someone else's request
        etype = ADV_EVENT_TYPE[ptype]
        if self.filter_duplicates:
            key = (etype, adva)
            if key in self._reported:
                return
            self._reported.add(key)
        report = struct.pack("<BBB", 1, etype, 1 if random else 0) + adva \
            + bytes([len(data)]) + data + struct.pack("<b", self.air.rssi_dbm)
        self._le_event(0x02, report, LEM_ADV_REPORT)


__all__ = ["HciController", "supported_commands", "SUPPORTED"]
