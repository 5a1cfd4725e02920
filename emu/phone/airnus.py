"""The Nordic UART Service over the air: ``machine.phone`` for the real SoftDevice.

With the emulated S132 API (emu/softdevice) the phone's central reads the
SoftDevice's GATT table directly.  When the real S132 binary runs
(``Machine(app, softdevice_hex=...)``, ``run --softdevice-hex``) that table
lives in the SoftDevice's own RAM, so the phone has to go over the air like
a real one: :class:`AirCentral` and :class:`AirNus` give
:class:`emu.phone.Phone` (and through it the REPL, Gadgetbridge messages,
wasptool's verbs and the ``--bridge``) the interface of
emu.softdevice.central's ``Central`` and ``NusClient``, built on the
link-layer central and GATT client of emu/phone/gattphone.py.

Writes to the RX characteristic are 20-byte Write Requests, one after the
other (each waits for the watch's Write Response), which paces them as
Gadgetbridge's writes are paced; TX notifications are enabled through its
CCCD and passed to the listeners.  Connecting is asynchronous: ``connect``
starts it, ``connected`` says when the link is up, ``nus.discover()`` starts
the GATT discovery and answers None until it is done.

Not modelled: pairing (wasp-os asks for none), the emulated SoftDevice's
shortcuts (its fully-cached discovery); one phone at a time.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Optional

from emu.phone.gattphone import GattPhone

NUS_RX = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
NUS_TX = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"


class AirCentral:
    max_chunk = 20

    def __init__(self, machine, name: str = "PineTime"):
        self.gp = GattPhone(machine, name=name)
        self.listeners: list[Callable[[int, bytes], None]] = []
        self.notifications: list[tuple[int, bytes]] = []
        self._chunks: deque = deque()        # RX writes not yet answered
        self._writer = None                   # the GATT task writing them
        self.gp.gatt.listeners.append(self._notified)
        self.gp.link.on_state.append(self._link_state)

    @property
    def connected(self) -> bool:
        """The link is up and not being terminated."""
        link = self.gp.link
        return link.connected and not link.terminating

    def can_connect(self) -> bool:
        """Start scanning for the watch (once the last link has closed); True
        when the link is up."""
        if self.gp.link.state not in ("initiating", "connected"):
            self.gp.start_connect()
        return self.connected

    def _link_state(self, state: str) -> None:
        if state != "connected":
            self._chunks.clear()             # writes for a link that is gone

    def connect(self, interval: int = 12, mtu: int = 247) -> bool:
        return self.can_connect()

    def disconnect(self, reason: int = 0x13) -> None:
        self.gp.link.disconnect()
        self._chunks.clear()

    @property
    def writes_pending(self) -> int:
        return len(self._chunks)

    def write_chunks(self, uuid: str, data: bytes) -> None:
        for i in range(0, len(data), self.max_chunk):
            self._chunks.append((uuid, bytes(data[i:i + self.max_chunk])))
        if self._writer is None or self._writer.done:
            self._writer = self.gp.gatt.start(self._write_all(), "NUS write")
            if self._writer.done:              # the link is down: nothing will go
                self._chunks.clear()

    def _write_all(self):
        while self._chunks:
            uuid, chunk = self._chunks[0]
            yield from self.gp.gatt.write(uuid, chunk)
            self._chunks.popleft()

    def _notified(self, handle: int, data: bytes) -> None:
        self.notifications.append((handle, data))
        for fn in list(self.listeners):
            fn(handle, data)


class AirNus:
    """emu.softdevice.central.NusClient's interface over :class:`AirCentral`."""

    def __init__(self, central: AirCentral):
        self.central = central
        self.rx_handle: Optional[int] = None
        self.tx_handle: Optional[int] = None
        self.received = bytearray()
        self.listeners: list[Callable[[bytes], None]] = []
        self._setup = None
        central.listeners.append(self._notified)
        central.gp.link.on_state.append(self._link_state)

    def discover(self) -> Optional[bool]:
        """Start discovering NUS (once per link): True when found, False when
        the watch has none or the link failed, None while it is going on."""
        gatt = self.central.gp.gatt
        if self._setup is None:
            if not self.central.connected:
                return False
            self._setup = gatt.start(self._find(), "NUS discovery")
        if not self._setup.done:
            return None
        return self._setup.error is None and self.tx_handle is not None

    def _find(self):
        gatt = self.central.gp.gatt
        yield from gatt.discover()
        rx, tx = gatt.characteristic(NUS_RX), gatt.characteristic(NUS_TX)
        yield from gatt.subscribe(NUS_TX)
        self.rx_handle, self.tx_handle = rx.value_handle, tx.value_handle
        return True

    def _link_state(self, state: str) -> None:
        if state != "connected":
            self._setup = None
            self.rx_handle = self.tx_handle = None

    def send(self, data: bytes) -> None:
        self.central.write_chunks(NUS_RX, data)

    def _notified(self, handle: int, data: bytes) -> None:
        if handle == self.tx_handle and self.tx_handle is not None:
            self.received += data
            for fn in list(self.listeners):
                fn(data)
