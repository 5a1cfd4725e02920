"""ATT and GATT on the host-side central (emu/phone/link.py): the phone's GATT client.

One ATT bearer (L2CAP CID 4) as the Core spec (Vol 3 Parts F and G)
describes it.  Client procedures, one request outstanding at a time:
exchange MTU (247), discover all primary services (Read By Group Type),
all characteristics of a service (Read By Type), their descriptors (Find
Information), read (with Read Blob for long values), write with and without
response (prepared writes for values longer than the MTU allows), and
subscribing to notifications/indications through the CCCD.  Notifications
and indications from the watch go to ``notifications`` and to listeners;
indications are confirmed.

The phone's own GATT server is empty: the watch's discovery (InfiniTime
looks for the phone's Current Time and Alert Notification services) is
answered "attribute not found", its reads and writes "invalid handle", its
MTU request with 247.

Procedures are generators that yield ATT requests and receive the
responses; :meth:`GattClient.start` runs one as a :class:`Task` that
advances as responses arrive on the emulated air.  A caller that owns the
machine waits with ``machine.run_until(lambda: task.done)``
(:meth:`GattClient.wait` does that); the TCP bridge starts tasks and
answers when they finish, without blocking the emulator.

Not modelled: signed writes, reliable writes beyond one prepared sequence,
multiple-handle reads, ATT over enhanced credit-based channels, the 30 s
transaction timeout (``wait``'s timeout drops the link instead).
"""
from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from emu.phone.link import CID_ATT
from emu.phone.errors import PhoneError

ATT_ERROR, MTU_REQ, MTU_RSP, FIND_INFO_REQ, FIND_INFO_RSP = 0x01, 0x02, 0x03, 0x04, 0x05
FIND_BY_TYPE_REQ, READ_BY_TYPE_REQ, READ_BY_TYPE_RSP = 0x06, 0x08, 0x09
READ_REQ, READ_RSP, READ_BLOB_REQ, READ_BLOB_RSP = 0x0A, 0x0B, 0x0C, 0x0D
READ_BY_GROUP_REQ, READ_BY_GROUP_RSP, WRITE_REQ, WRITE_RSP = 0x10, 0x11, 0x12, 0x13
PREP_WRITE_REQ, PREP_WRITE_RSP, EXEC_WRITE_REQ, EXEC_WRITE_RSP = 0x16, 0x17, 0x18, 0x19
NOTIFY, INDICATE, CONFIRM, WRITE_CMD = 0x1B, 0x1D, 0x1E, 0x52
ERR_INVALID_HANDLE, ERR_NOT_SUPPORTED, ERR_NOT_FOUND = 0x01, 0x06, 0x0A
ERRORS = {0x01: "invalid handle", 0x02: "read not permitted", 0x03: "write not permitted",
          0x04: "invalid PDU", 0x05: "insufficient authentication",
          0x06: "request not supported", 0x07: "invalid offset",
          0x08: "insufficient authorization", 0x0A: "attribute not found",
          0x0D: "invalid attribute value length", 0x0E: "unlikely error",
          0x0F: "insufficient encryption", 0x11: "insufficient resources"}
REQUESTS = {0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20}
BASE_UUID = "-0000-1000-8000-00805f9b34fb"
PROP_NOTIFY, PROP_INDICATE = 0x10, 0x20
MTU = 247


def uuid_str(raw: bytes) -> str:
    """A UUID from its little-endian bytes (2 or 16) as the 128-bit string."""
    if len(raw) == 2:
        return f"0000{int.from_bytes(raw, 'little'):04x}" + BASE_UUID
    h = raw[::-1].hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid(u) -> str:
    """Normalise 0x2a19, "2a19" or a 128-bit string to the 128-bit string."""
    if isinstance(u, int):
        return f"0000{u:04x}" + BASE_UUID
    s = str(u).lower()
    if len(s) <= 4:
        return f"0000{int(s, 16):04x}" + BASE_UUID
    return s


class GattError(PhoneError):
    """A GATT procedure failed (a PhoneError: scenario steps report it)."""


@dataclass
class Characteristic:
    uuid: str
    handle: int            # its declaration
    value_handle: int
    props: int
    service: str
    end: int = 0           # last handle that belongs to it
    cccd: Optional[int] = None


@dataclass
class Service:
    uuid: str
    start: int
    end: int
    characteristics: list = field(default_factory=list)


class Task:
    """A GATT procedure in progress: ``done``, then ``result`` or ``error``."""

    def __init__(self, gen, name: str):
        self.gen, self.name = gen, name
        self.done = False
        self.result = None
        self.error: Optional[str] = None
        self.callbacks: list = []

    def _finish(self, result=None, error: Optional[str] = None) -> None:
        self.done, self.result, self.error = True, result, error
        for fn in self.callbacks:
            fn(self)


NEXT_NOTIFICATION = object()
"""A procedure that yields this is resumed (with None) when the next
notification or indication arrives, instead of sending a request: for
protocols that wait on the watch's notifications (emu/phone/dfu.py); it
keeps what it needs with its own listener."""


class GattClient:
    def __init__(self, link):
        self.link = link
        self.mtu = 23
        self.services: list = []
        self.notifications: list = []    # (tick, handle, value, "notify"|"indicate")
        self.listeners: list = []        # fn(handle, value)
        self._tasks: deque = deque()
        self._current: Optional[Task] = None
        self._waiting = False            # a request of the current task is outstanding
        self._parked = False             # the current task waits for a notification
        link.on_att = self._att
        link.on_state.append(self._link_state)

    # ------------------------------------------------------------------ tasks
    def start(self, gen, name: str = "gatt") -> Task:
        t = Task(gen, name)
        if self.link.state != "connected":
            t._finish(error="not connected")
            return t
        self._tasks.append(t)
        if self._current is None:
            self._next_task()
        return t

    def wait(self, machine, task: Task, timeout_ms: float = 5000):
        if not machine.run_until(lambda: task.done, timeout_ms=timeout_ms):
            # an ATT transaction that timed out leaves the bearer unusable
            # (Core spec Vol 3 Part F 3.3.3): drop the link, which fails the
            # tasks still queued; connect again to go on
            self.link.disconnect()
            machine.run_until(lambda: not self.link.connected, timeout_ms=1000)
            if self.link.connected:
                self.link.abandon("ATT transaction timeout")
            raise GattError(f"{task.name}: no answer from the watch in {timeout_ms:g} ms "
                            "(the link was dropped)")
        if task.error:
            raise GattError(f"{task.name}: {task.error}")
        return task.result

    def _next_task(self) -> None:
        while self._current is None and self._tasks:
            self._current = self._tasks.popleft()
            self._step(None)

    def _step(self, rsp) -> None:
        t = self._current
        try:
            req = t.gen.send(rsp) if rsp is not None else next(t.gen)
        except StopIteration as e:
            self._current = None
            t._finish(result=e.value)
            self._next_task()
            return
        except GattError as e:
            self._current = None
            t._finish(error=str(e))
            self._next_task()
            return
        if req is NEXT_NOTIFICATION:
            self._parked = True
            return
        if req[0] in (WRITE_CMD,):       # a command: no response, go on at once
            self.link.send_l2cap(CID_ATT, req)
            self._step(b"")
            return
        self._waiting = True
        self.link.send_l2cap(CID_ATT, req)

    def _link_state(self, state: str) -> None:
        if state == "connected":
            return
        tasks = ([self._current] if self._current else []) + list(self._tasks)
        self._current, self._tasks, self._waiting, self._parked = None, deque(), False, False
        self.mtu = 23
        for t in tasks:
            t._finish(error=f"link {state}")

    # ------------------------------------------------------------------ ATT in
    def _att(self, pdu: bytes) -> None:
        if not pdu:
            return
        op = pdu[0]
        if op in (NOTIFY, INDICATE) and len(pdu) >= 3:
            handle = int.from_bytes(pdu[1:3], "little")
            value = bytes(pdu[3:])
            self.notifications.append((self.link.clock.now, handle, value,
                                       "notify" if op == NOTIFY else "indicate"))
            if op == INDICATE:
                self.link.send_l2cap(CID_ATT, bytes([CONFIRM]))
            for fn in list(self.listeners):
                fn(handle, value)
            if self._parked and self._current is not None:
                self._parked = False
                self._step(b"")
        elif op in REQUESTS:
            self._serve(pdu)
        elif op & 0x40:                  # commands to our (empty) server: ignored
            pass
        elif self._waiting and self._current is not None:
            self._waiting = False
            self._step(bytes(pdu))

    def _serve(self, pdu: bytes) -> None:
        op = pdu[0]
        handle = int.from_bytes(pdu[1:3], "little") if len(pdu) >= 3 else 0
        if op == MTU_REQ:
            if len(pdu) >= 3:
                self.mtu = max(23, min(MTU, handle))
            self.link.send_l2cap(CID_ATT, bytes([MTU_RSP]) + struct.pack("<H", MTU))
            return
        if op in (FIND_INFO_REQ, FIND_BY_TYPE_REQ, READ_BY_TYPE_REQ, READ_BY_GROUP_REQ):
            code = ERR_NOT_FOUND
        elif op in (READ_REQ, READ_BLOB_REQ, WRITE_REQ, PREP_WRITE_REQ):
            code = ERR_INVALID_HANDLE
        else:
            code, handle = ERR_NOT_SUPPORTED, 0
        self.link.send_l2cap(CID_ATT, bytes([ATT_ERROR, op]) + struct.pack("<HB", handle, code))

    # ------------------------------------------------------------------ procedures
    @staticmethod
    def _check(rsp: bytes, want: int, what: str):
        if rsp[:1] == bytes([ATT_ERROR]) and len(rsp) >= 5:
            code = rsp[4]
            raise GattError(f"{what}: {ERRORS.get(code, f'error {code:#04x}')}")
        if rsp[:1] != bytes([want]):
            raise GattError(f"{what}: unexpected answer {rsp[:1].hex()}")

    def _exchange_mtu(self):
        rsp = yield bytes([MTU_REQ]) + struct.pack("<H", MTU)
        if rsp[:1] == bytes([MTU_RSP]) and len(rsp) >= 3:
            self.mtu = max(23, min(MTU, int.from_bytes(rsp[1:3], "little")))
        return self.mtu

    def discover(self):
        """Generator: MTU exchange, then every service, characteristic and CCCD."""
        yield from self._exchange_mtu()
        services = []
        start = 1
        while start <= 0xFFFF:
            rsp = yield bytes([READ_BY_GROUP_REQ]) + struct.pack("<HHH", start, 0xFFFF, 0x2800)
            if rsp[:1] == bytes([ATT_ERROR]):
                break
            self._check(rsp, READ_BY_GROUP_RSP, "service discovery")
            n = rsp[1]
            last = start
            for i in range(2, len(rsp) - n + 1, n):
                s, e = struct.unpack_from("<HH", rsp, i)
                services.append(Service(uuid_str(rsp[i + 4:i + n]), s, e))
                last = e
            if last == 0xFFFF or last < start:
                break
            start = last + 1
        for svc in services:
            start = svc.start
            while start <= svc.end:
                rsp = yield bytes([READ_BY_TYPE_REQ]) + struct.pack("<HHH", start, svc.end, 0x2803)
                if rsp[:1] == bytes([ATT_ERROR]):
                    break
                self._check(rsp, READ_BY_TYPE_RSP, "characteristic discovery")
                n = rsp[1]
                last = start
                for i in range(2, len(rsp) - n + 1, n):
                    h, props, vh = struct.unpack_from("<HBH", rsp, i)
                    svc.characteristics.append(Characteristic(uuid_str(rsp[i + 5:i + n]), h, vh,
                                                              props, svc.uuid))
                    last = h
                if last < start:
                    break
                start = last + 1
            chars = svc.characteristics
            for j, c in enumerate(chars):
                c.end = chars[j + 1].handle - 1 if j + 1 < len(chars) else svc.end
                if not c.props & (PROP_NOTIFY | PROP_INDICATE) or c.end <= c.value_handle:
                    continue
                h = c.value_handle + 1
                while h <= c.end and c.cccd is None:
                    rsp = yield bytes([FIND_INFO_REQ]) + struct.pack("<HH", h, c.end)
                    if rsp[:1] == bytes([ATT_ERROR]):
                        break
                    self._check(rsp, FIND_INFO_RSP, "descriptor discovery")
                    step = 4 if rsp[1] == 1 else 18
                    last = h
                    for i in range(2, len(rsp) - step + 1, step):
                        dh = int.from_bytes(rsp[i:i + 2], "little")
                        if uuid_str(rsp[i + 2:i + step]) == uuid(0x2902):
                            c.cccd = dh
                        last = dh
                    h = last + 1
        self.services = services
        return services

    def characteristic(self, u) -> Characteristic:
        want = uuid(u)
        for s in self.services:
            for c in s.characteristics:
                if c.uuid == want:
                    return c
        raise GattError(f"the watch has no characteristic {want}")

    def read(self, u):
        """Generator: the value of characteristic ``u`` (long values in blobs)."""
        c = self.characteristic(u)
        rsp = yield bytes([READ_REQ]) + struct.pack("<H", c.value_handle)
        self._check(rsp, READ_RSP, f"read {c.uuid}")
        value = bytes(rsp[1:])
        while len(rsp) - 1 == self.mtu - 1:
            rsp = yield bytes([READ_BLOB_REQ]) + struct.pack("<HH", c.value_handle, len(value))
            if rsp[:1] == bytes([ATT_ERROR]):
                break
            self._check(rsp, READ_BLOB_RSP, f"read {c.uuid}")
            value += rsp[1:]
        return value

    def write(self, u, data: bytes, response: bool = True):
        """Generator: write ``data`` to characteristic ``u``."""
        c = self.characteristic(u)
        data = bytes(data)
        room = self.mtu - 3
        if not response:
            yield bytes([WRITE_CMD]) + struct.pack("<H", c.value_handle) + data[:room]
            return None
        if len(data) <= room:
            rsp = yield bytes([WRITE_REQ]) + struct.pack("<H", c.value_handle) + data
            self._check(rsp, WRITE_RSP, f"write {c.uuid}")
            return None
        part = self.mtu - 5
        for off in range(0, len(data), part):
            rsp = yield bytes([PREP_WRITE_REQ]) + struct.pack("<HH", c.value_handle, off) \
                + data[off:off + part]
            self._check(rsp, PREP_WRITE_RSP, f"write {c.uuid}")
        rsp = yield bytes([EXEC_WRITE_REQ, 1])
        self._check(rsp, EXEC_WRITE_RSP, f"write {c.uuid}")
        return None

    def subscribe(self, u, indicate: bool = False):
        """Generator: enable notifications (or indications) of ``u``."""
        c = self.characteristic(u)
        if c.cccd is None:
            raise GattError(f"{c.uuid} has no client characteristic configuration")
        rsp = yield bytes([WRITE_REQ]) + struct.pack("<HH", c.cccd, 2 if indicate else 1)
        self._check(rsp, WRITE_RSP, f"subscribe {c.uuid}")
        return c.value_handle
