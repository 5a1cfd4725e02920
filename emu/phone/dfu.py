"""Firmware updates over the air: Nordic's legacy DFU, as phones run it on InfiniTime.

The phone's side of the legacy (SDK 11-era) Nordic DFU protocol that
InfiniTime's DfuService implements (src/components/ble/DfuService.cpp) and
that Gadgetbridge, ITD, Amazfish and InfiniTime's own
bootloader/ota-dfu-python speak: service 00001530-1212-efde-1523-785feabcd123,
control point 0x1531 (write, notify), packet 0x1532 (write without
response), DFU revision 0x1534.

1. subscribe to the control point's notifications;
2. START DFU (0x01, image type 4: application), then on the packet
   characteristic the image sizes (softdevice 0, bootloader 0, application
   n, little-endian words); the watch erases its NOR's secondary slot and
   answers [0x10, 0x01, 0x01];
3. INIT DFU PARAMETERS (0x02 0x00), the init packet (the package's
   ``.dat``: device type and revision, application version, SoftDevice
   list, CRC16 of the image) on the packet characteristic, 0x02 0x01;
   answer [0x10, 0x02, 0x01];
4. PACKET RECEIPT NOTIFICATION REQUEST (0x08, N as 16 bits), RECEIVE FIRMWARE IMAGE
   (0x03), then the image in 20-byte packets (InfiniTime asserts that
   size); after every N packets the watch notifies [0x11, bytes received
   (4 bytes)] and the phone sends the next N; at the end [0x10, 0x03, 0x01];
5. VALIDATE (0x04): the watch computes the CRC16 of what it wrote and
   answers [0x10, 0x04, 0x01], or 0x05 (CRC error: it drops the update);
6. ACTIVATE AND RESET (0x05): the watch resets, its bootloader (MCUBoot)
   finds the new image in the secondary slot and swaps it in.

:class:`LegacyDfu` runs that as one GATT procedure (a generator, see
emu/phone/gatt.py) that waits for the watch's notifications; ``sent`` and
``total`` follow the transfer and ``on_progress(sent, total)`` hears each
receipt.  :func:`read_package` reads a package (``adafruit-nrfutil dfu
genpkg``) as hostile (emu/loader.py's reader).  ``crc`` replaces the init
packet's CRC16 (to see a watch refuse a transfer).

A watch that stops answering is given up after ``STALL`` (30 s) of
silence: InfiniTime 1.16 never sends its CRC error (its DfuService::Reset
stops the timer that would send it), so a phone sees only silence after
VALIDATE; Gadgetbridge and ota-dfu-python time out the same way.

Not modelled: the secure (SDK 12+) DFU, sending a SoftDevice or bootloader,
resuming an interrupted transfer, and InfiniTime's 10 s inactivity timeout
is the watch's own (a phone that stops sending sees the update dropped).
"""
from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional

from emu.phone.gatt import NEXT_NOTIFICATION, GattError, uuid

_BASE = "-1212-efde-1523-785feabcd123"
DFU_SERVICE = "00001530" + _BASE
DFU_CONTROL_POINT = "00001531" + _BASE
DFU_PACKET = "00001532" + _BASE
DFU_REVISION = "00001534" + _BASE

START_DFU, INIT_PARAMS, RECEIVE_IMAGE, VALIDATE, ACTIVATE_RESET = 1, 2, 3, 4, 5
PRN_REQUEST, RESPONSE, PRN = 8, 0x10, 0x11
APPLICATION = 4
STALL = 30 * 512_000_000        # ticks of silence before the phone gives up
PACKET = 20                     # bytes per packet: InfiniTime's DfuImage asserts it
RESULTS = {1: "success", 2: "invalid state", 3: "not supported", 4: "data size exceeds limit",
           5: "CRC error", 6: "operation failed"}


@dataclass
class DfuPackage:
    name: str
    image: bytes
    init: bytes                 # the legacy init packet (.dat)

    @property
    def crc(self) -> Optional[int]:
        if len(self.init) < 12:
            return None
        n = struct.unpack_from("<H", self.init, 8)[0]
        if len(self.init) < 12 + 2 * n:
            return None
        return struct.unpack_from("<H", self.init, 10 + 2 * n)[0]


def read_package(path: str) -> DfuPackage:
    """A DFU .zip from ``path`` (FirmwareError, one line, if it is not one)."""
    from emu.loader import MAX_DFU_PACKAGE, FirmwareError
    from emu.safezip import ZipError, read_regular_file
    try:
        data = read_regular_file(path, MAX_DFU_PACKAGE)
    except FileNotFoundError:
        raise FirmwareError(f"{path}: no such file") from None
    except (OSError, ZipError) as e:
        raise FirmwareError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    return package_from_bytes(str(path), data)


def package_from_bytes(name: str, data: bytes) -> DfuPackage:
    from emu.loader import FirmwareError, read_dfu_package
    image, dat, _notes = read_dfu_package(name, bytes(data))
    if len(dat) < 14:
        raise FirmwareError(f"{name}: the DFU package has no legacy init packet (.dat): the "
                            "legacy DFU sends one")
    return DfuPackage(name, image, dat)


class LegacyDfu:
    """One update of ``package`` through ``gatt`` (a connected GattClient)."""

    def __init__(self, gatt, package: DfuPackage, prn: int = 10, crc: Optional[int] = None,
                 on_progress: Optional[Callable[[int, int], None]] = None):
        if not 1 <= prn <= 255:
            raise ValueError("prn (packets per receipt notification) must be 1 to 255")
        self.gatt = gatt
        self.package = package
        self.prn = prn
        self.init = package.init
        if crc is not None:
            n = struct.unpack_from("<H", self.init, 8)[0]
            at = 10 + 2 * n
            self.init = self.init[:at] + struct.pack("<H", crc & 0xFFFF) + self.init[at + 2:]
        self.on_progress = on_progress
        self.total = len(package.image)
        self.sent = 0
        self.acknowledged = 0
        self.step = "not started"
        self.activating = False          # ACTIVATE AND RESET sent
        self._notes: deque = deque()
        self._handle = None
        self._clock = gatt.link.clock
        self.last_heard = self._clock.now      # tick of the watch's last notification

    def quiet_ticks(self) -> int:
        """Ticks since the watch last notified anything (or since the start)."""
        return self._clock.now - self.last_heard

    # the procedure ---------------------------------------------------------
    def procedure(self):
        """Generator for GattClient.start: the whole update."""
        g = self.gatt
        try:
            cp = g.characteristic(DFU_CONTROL_POINT)
            g.characteristic(DFU_PACKET)
        except GattError:
            raise GattError("the watch has no DFU service (00001530-...: InfiniTime's "
                            "legacy DFU)") from None
        self._handle = cp.value_handle
        g.listeners.append(self._heard)
        try:
            self.step = "subscribe"
            yield from g.subscribe(DFU_CONTROL_POINT)
            self.step = "start"
            yield from g.write(DFU_CONTROL_POINT, bytes([START_DFU, APPLICATION]))
            yield from g.write(DFU_PACKET, struct.pack("<III", 0, 0, self.total), response=False)
            yield from self._response(START_DFU)             # after the NOR slot's erase
            self.step = "init packet"
            yield from g.write(DFU_CONTROL_POINT, bytes([INIT_PARAMS, 0]))
            for off in range(0, len(self.init), PACKET):
                yield from g.write(DFU_PACKET, self.init[off:off + PACKET], response=False)
            yield from g.write(DFU_CONTROL_POINT, bytes([INIT_PARAMS, 1]))
            yield from self._response(INIT_PARAMS)
            self.step = "image"
            # N as a 16-bit word, as ota-dfu-python sends it (Nordic's SDK 11
            # bootloaders refuse a shorter request; InfiniTime reads the low byte)
            yield from g.write(DFU_CONTROL_POINT, struct.pack("<BH", PRN_REQUEST, self.prn))
            yield from g.write(DFU_CONTROL_POINT, bytes([RECEIVE_IMAGE]))
            image = self.package.image
            packets = 0
            while self.sent < self.total:
                chunk = image[self.sent:self.sent + PACKET]
                yield from g.write(DFU_PACKET, chunk, response=False)
                self.sent += len(chunk)
                packets += 1
                if packets % self.prn == 0 and self.sent < self.total:
                    got = yield from self._next()
                    if got[0] != PRN:
                        raise GattError(f"DFU image: expected a packet receipt, got {got.hex()}")
                    self.acknowledged = struct.unpack_from("<I", got, 1)[0]
                    if self.acknowledged != self.sent:
                        raise GattError(f"DFU image: the watch has {self.acknowledged} bytes, "
                                        f"{self.sent} were sent")
                    self._progress()
            yield from self._response(RECEIVE_IMAGE)
            self.acknowledged = self.sent
            self._progress()
            self.step = "validate"
            yield from g.write(DFU_CONTROL_POINT, bytes([VALIDATE]))
            yield from self._response(VALIDATE)
            self.step = "activate"
            self.activating = True
            yield from g.write(DFU_CONTROL_POINT, bytes([ACTIVATE_RESET]))
            self.step = "done"
            return self.total
        finally:
            if self._heard in g.listeners:
                g.listeners.remove(self._heard)

    def finished(self, task) -> bool:
        """The update went through: the procedure ended, or the watch reset
        (dropping the link) before answering ACTIVATE AND RESET, as
        InfiniTime does; phones count that as done."""
        if task.done and task.error is None:
            return True
        if task.done and self.activating and task.error.startswith("link"):
            self.step = "done"
            return True
        return False

    # helpers ---------------------------------------------------------------
    def _heard(self, handle: int, value: bytes) -> None:
        if handle == self._handle:
            self.last_heard = self._clock.now
            self._notes.append(bytes(value))

    def _next(self):
        while not self._notes:
            yield NEXT_NOTIFICATION
        return self._notes.popleft()

    def _response(self, opcode: int):
        while True:
            got = yield from self._next()
            if got[:1] == bytes([PRN]):
                continue                         # a late receipt
            if len(got) >= 3 and got[0] == RESPONSE and got[1] == opcode:
                if got[2] != 1:
                    raise GattError(f"DFU {self.step}: the watch answered "
                                    f"{RESULTS.get(got[2], f'error {got[2]:#04x}')}")
                return got
            raise GattError(f"DFU {self.step}: unexpected notification {got.hex()}")

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.acknowledged, self.total)


__all__ = ["LegacyDfu", "DfuPackage", "read_package", "package_from_bytes", "DFU_SERVICE",
           "DFU_CONTROL_POINT", "DFU_PACKET", "uuid"]
