"""A host-side BLE central talking to the emulated SoftDevice's GATT server.

It plays the phone's link layer and ATT client: connect (GAP CONNECTED with a
peer address and connection parameters), MTU exchange, service and
characteristic discovery by UUID over the server's attribute table, CCCD
writes, paced writes (one ATT write per connection event, at most MTU-3
bytes each), notifications in, disconnect and reconnect.  All of it happens
on the emulated clock through :class:`emu.softdevice.SoftDevice`.

Not modelled: ATT error responses and the on-air discovery procedure (the
central reads the server's table directly, as a fully-cached client would);
indications; security.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

from emu.softdevice import (BLE_GATTS_OP_WRITE_CMD, BLE_GATTS_OP_WRITE_REQ,
                            SoftDevice)

log = logging.getLogger("emu.softdevice.central")

NUS_BASE = bytes.fromhex("6E400000B5A3F393E0A9E50E24DCCA9E")   # big-endian text order
NUS_SERVICE, NUS_RX, NUS_TX = 0x0001, 0x0002, 0x0003
PHONE_ADDRESS = bytes.fromhex("C0FFEE123456")[::-1]
BLE_HCI_REMOTE_USER_TERMINATED_CONNECTION = 0x13


class Central:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("address", "max_chunk", "mtu", "notifications")
    STRUCTURE = ("listeners", "sd")
    def __init__(self, softdevice: SoftDevice, address: bytes = PHONE_ADDRESS):
        self.sd = softdevice
        self.address = address
        self.notifications: list[tuple[int, bytes]] = []
        self.listeners: list[Callable[[int, bytes], None]] = []
        self.mtu = 23
        self.max_chunk = 20      # Gadgetbridge-sized writes: wasp's RX ring is 128 bytes
        softdevice.central = self
        softdevice.on_notification.append(self._notified)

    # ------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.sd.connected

    def can_connect(self) -> bool:
        return self.sd.advertising and not self.sd.connected

    def connect(self, interval: int = 12, mtu: int = 247) -> bool:
        """Connect if the watch advertises; request an ATT MTU of ``mtu``."""
        if not self.can_connect():
            return False
        self.sd.link_connect(self.address, interval=interval)
        if mtu > 23:
            self.sd.link_mtu_request(mtu)
        return True

    def disconnect(self, reason: int = BLE_HCI_REMOTE_USER_TERMINATED_CONNECTION) -> None:
        self.sd.link_lost(reason)

    # discovery over the server's table -------------------------------
    def vendor_type(self, base_be: bytes) -> Optional[int]:
        le = base_be[::-1]
        for i, b in enumerate(self.sd.vs_uuids):
            if b[:12] == le[:12] and b[14:] == le[14:]:
                return 2 + i
        return None

    def find_service(self, uuid: int, uuid_type: int) -> Optional[int]:
        for a in sorted(self.sd.attrs.values(), key=lambda a: a.handle):
            if a.kind == "service" and bytes(a.value[:3]) == bytes([uuid & 0xFF, uuid >> 8,
                                                                   uuid_type]):
                return a.handle
        return None

    def find_characteristic(self, service: int, uuid: int, uuid_type: int):
        for a in self.sd.attrs.values():
            if a.kind == "value" and a.service == service and a.uuid == uuid \
                    and a.uuid_type == uuid_type:
                return a
        return None

    # ATT ----------------------------------------------------------------
    @property
    def att_mtu(self) -> int:
        return self.sd.mtu

    def write(self, handle: int, data: bytes, with_response: bool = False) -> None:
        """Queue writes; each lands at its own connection event, split to MTU-3."""
        step = max(1, min(self.sd.mtu - 3, self.max_chunk))
        op = BLE_GATTS_OP_WRITE_REQ if with_response else BLE_GATTS_OP_WRITE_CMD
        for i in range(0, max(len(data), 1), step):
            self.sd.link_write(handle, data[i:i + step], op)

    def enable_notifications(self, value_attr) -> None:
        self.sd.link_write(value_attr.cccd, b"\x01\x00", BLE_GATTS_OP_WRITE_REQ)

    @property
    def writes_pending(self) -> int:
        return len(self.sd.rx_writes)

    def _notified(self, handle: int, data: bytes) -> None:
        self.notifications.append((handle, data))
        for fn in list(self.listeners):
            fn(handle, data)


class NusClient:
    """The Nordic UART Service seen from the central: rx() bytes out, tx bytes in."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("received", "rx_handle", "tx_handle")
    STRUCTURE = ("central", "listeners")

    def __init__(self, central: Central):
        self.central = central
        self.rx_handle: Optional[int] = None
        self.tx_handle: Optional[int] = None
        self.received = bytearray()
        self.listeners: list[Callable[[bytes], None]] = []
        central.listeners.append(self._notified)

    def discover(self) -> bool:
        t = self.central.vendor_type(NUS_BASE)
        if t is None:
            return False
        svc = self.central.find_service(NUS_SERVICE, t)
        if svc is None:
            return False
        rx = self.central.find_characteristic(svc, NUS_RX, t)
        tx = self.central.find_characteristic(svc, NUS_TX, t)
        if rx is None or tx is None or tx.cccd is None:
            return False
        self.rx_handle, self.tx_handle = rx.handle, tx.handle
        self.central.enable_notifications(tx)
        return True

    def send(self, data: bytes) -> None:
        self.central.write(self.rx_handle, data)

    def _notified(self, handle: int, data: bytes) -> None:
        if handle == self.tx_handle:
            self.received += data
            for fn in list(self.listeners):
                fn(data)
