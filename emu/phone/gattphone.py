"""The phone for firmware with its own Bluetooth stack: Gadgetbridge's InfiniTime driver.

``machine.phone.gatt`` (and ``machine.phone``'s own methods, when the
firmware never enabled the emulated SoftDevice).  Over the link layer of
emu/phone/link.py and the GATT client of emu/phone/gatt.py it does what
Gadgetbridge does with InfiniTime:

* connect: scan actively until the advertiser named ``name`` (default
  "InfiniTime") answers, send CONNECT_IND, exchange the MTU and discover
  every service, characteristic and CCCD;
* ``set_time``: write the Current Time Service's Current Time (0x2A2B):
  year, month, day, hours, minutes, seconds, day of week, fractions,
  adjust reason;
* ``notify``: write the Alert Notification Service's New Alert (0x2A46):
  category, count, 0, then "title\\0body" (InfiniTime splits there);
  ``incoming_call`` uses category 3 (call), whose answer/reject/mute comes
  back as a notification of InfiniTime's event characteristic
  (``call_responses``);
* ``battery`` (0x2A19), ``steps`` (InfiniTime's motion service),
  ``firmware_version`` (0x2A26);
* ``dfu``: a firmware update over the air (emu/phone/dfu.py, the legacy
  Nordic DFU); ``fs``, ``upload_resources``: files over InfiniTime's file
  transfer service (emu/phone/fstransfer.py);
* ``music_info``/``music_state``: InfiniTime's music service (artist,
  track, album, status), its events (play, pause, next...) in
  ``music_events``.

Methods that wait run the machine on the emulated clock.  Not modelled:
pairing (InfiniTime's default needs none), Gadgetbridge's weather and
navigation services, reconnecting by itself after the
watch drops the link (call ``connect`` again).
"""
from __future__ import annotations

import struct
import time as _time_fmt      # gmtime() for a timestamp only, never the host clock
from typing import Optional

from emu.phone.link import LinkCentral
from emu.phone.scanner import Scanner
from emu.phone.gatt import GattClient, GattError, uuid

CTS_CURRENT_TIME = 0x2A2B
ANS_NEW_ALERT = 0x2A46
BATTERY_LEVEL = 0x2A19
FIRMWARE_REVISION = 0x2A26
_IT = "-78fc-48fe-8e23-433b3a1942d0"
STEP_COUNT = "00030001" + _IT
NOTIFICATION_EVENT = "00020001" + _IT
MUSIC = {"event": "00000001" + _IT, "status": "00000002" + _IT, "artist": "00000003" + _IT,
         "track": "00000004" + _IT, "album": "00000005" + _IT}
MUSIC_EVENTS = {0x00: "play", 0x01: "pause", 0x03: "next", 0x04: "prev", 0x05: "volup",
                0x06: "voldown", 0xE0: "open"}
CALL_RESPONSES = {0: "reject", 1: "answer", 2: "mute"}
CATEGORY_CALL = 3
# the Nordic UART Service (wasp-os's REPL on the real SoftDevice)
NUS_RX = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
NUS_TX = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"


class GattPhone:
    def __init__(self, machine, name: str = "InfiniTime", address: Optional[str] = None):
        """``machine``: the watch's Machine, or a phone node of a World
        (emu/world.py) to talk to any watch on its air; ``name``: the
        advertised name to connect to; ``address``: the watch's address
        instead ('c7:6a:...'), when two watches share a name."""
        air = machine.air
        if air is None:
            raise GattError("this board has no RADIO: nothing to connect to")
        self.machine = machine
        self.name = name
        self.address = address.lower() if address else None
        self.scanner: Optional[Scanner] = None
        self.link = LinkCentral(air)
        self.gatt = GattClient(self.link)
        self.music_events: list = []
        self.call_responses: list = []
        self.gatt.listeners.append(self._notified)
        self._event_handles: dict = {}
        self._nus_tx = None                 # the NUS TX handle, once subscribed
        self.nus_output = bytearray()       # what the watch sent over the NUS

    @property
    def connected(self) -> bool:
        return self.link.connected and bool(self.gatt.services)

    # ------------------------------------------------------------------ link
    def start_connect(self) -> None:
        """Begin connecting (scanning for ``name``) without waiting."""
        if self.scanner is None:
            self.scanner = Scanner(self.machine.air)
        if self.address is not None:
            self.link.connect(target=self.address)
        else:
            self.link.connect(name=self.name)

    def start_discovery(self):
        """Start the GATT set-up (MTU, discovery, subscriptions) as a task."""
        return self.gatt.start(self._setup(), "discovery")

    def _setup(self):
        yield from self.gatt.discover()
        for u in (MUSIC["event"], NOTIFICATION_EVENT):
            try:
                c = self.gatt.characteristic(u)
            except GattError:
                continue
            if c.cccd is not None:
                self._event_handles[c.value_handle] = u
                yield from self.gatt.subscribe(u)
        return len(self.gatt.services)

    def connect(self, timeout_ms: float = 10_000) -> None:
        m = self.machine
        if self.connected:
            return
        self.start_connect()
        if not m.run_until(lambda: self.link.state != "initiating", timeout_ms=timeout_ms):
            self.link.disconnect()
            raise GattError(f"no connectable advertising from {self.name!r} in "
                            f"{timeout_ms:g} ms")
        if not self.link.connected:
            raise GattError(f"the connection failed ({self.link.reason})")
        self.gatt.wait(m, self.start_discovery(), timeout_ms=timeout_ms)

    def disconnect(self, timeout_ms: float = 2000) -> None:
        if self.link.connected:
            self.link.disconnect()
            self.machine.run_until(lambda: not self.link.connected, timeout_ms=timeout_ms)

    def pair(self, timeout_ms: float = 10_000) -> bytes:
        """Pair (LE Secure Connections, Just Works, bonding) and encrypt the
        link (emu/phone/smp.py); returns the LTK."""
        from emu.phone.smp import Pairing
        self.connect()
        if self.link.encrypted:
            return self.pairing.ltk
        self.pairing = Pairing(self.link)
        self.pairing.start()
        if not self.machine.run_until(lambda: self.pairing.done, timeout_ms=timeout_ms):
            raise GattError(f"pairing: no answer in {timeout_ms:g} ms (step: "
                            f"{self.pairing.step})")
        if self.pairing.error:
            raise GattError(f"pairing failed: {self.pairing.error}")
        return self.pairing.ltk

    def encrypt(self, ltk: bytes, timeout_ms: float = 5000) -> None:
        """Encrypt the link with a key from an earlier ``pair()`` (a bonded
        watch keeps it), without pairing again."""
        self.connect()
        result: list = []
        self.link.on_encryption.append(lambda ok, why: result.append((ok, why)))
        self.link.start_encryption(ltk, b"reconnect" + bytes(3))
        if not self.machine.run_until(lambda: result or not self.link.connected,
                                      timeout_ms=timeout_ms):
            raise GattError(f"encryption: no answer in {timeout_ms:g} ms")
        if not result or not result[0][0]:
            raise GattError("encryption failed: " + (result[0][1] if result else
                                                     f"link {self.link.state} "
                                                     f"({self.link.reason})"))

    def _do(self, gen, name: str, timeout_ms: float = 5000):
        self.connect()
        return self.gatt.wait(self.machine, self.gatt.start(gen, name), timeout_ms)

    # ------------------------------------------------------------------ Gadgetbridge
    def set_time(self, unix_seconds: int):
        return self._do(self.gatt.write(CTS_CURRENT_TIME, cts_bytes(unix_seconds)), "set time")

    def notify(self, title: str, body: str, category: int = 0):
        return self._do(self.gatt.write(ANS_NEW_ALERT, alert_bytes(title, body, category)),
                        "notify")

    def incoming_call(self, name: str, number: str = ""):
        return self.notify(name, number, CATEGORY_CALL)

    def battery(self) -> int:
        return self._do(self.gatt.read(BATTERY_LEVEL), "battery")[0]

    def steps(self) -> int:
        v = self._do(self.gatt.read(STEP_COUNT), "steps")
        return int.from_bytes(v[:4], "little")

    def firmware_version(self) -> str:
        return self._do(self.gatt.read(FIRMWARE_REVISION), "firmware").decode("utf-8", "replace")

    def music_info(self, artist: str, track: str, album: str = ""):
        for key, text in (("artist", artist), ("track", track), ("album", album)):
            self._do(self.gatt.write(MUSIC[key], text.encode()), "music " + key)

    def music_state(self, playing: bool):
        return self._do(self.gatt.write(MUSIC["status"], bytes([1 if playing else 0])), "music")

    def dfu(self, package, prn: int = 10, crc=None, on_progress=None,
            timeout_ms: float = 900_000):
        """Update the watch's firmware over the air with the legacy Nordic DFU
        (emu/phone/dfu.py), as Gadgetbridge and InfiniTime's ota-dfu-python
        do: ``package`` a DFU .zip path (or a DfuPackage), ``prn`` packets
        per receipt notification, ``crc`` a CRC16 to send instead of the
        package's, ``on_progress(bytes, total)``.  Returns the LegacyDfu
        (``sent``, ``total``) once the watch was told to activate the image
        and reset; GattError if it refused (a CRC error, say)."""
        from emu.phone.dfu import DfuPackage, LegacyDfu, read_package
        pkg = package if isinstance(package, DfuPackage) else read_package(package)
        d = LegacyDfu(self.gatt, pkg, prn=prn, crc=crc, on_progress=on_progress)
        from emu.phone.dfu import STALL
        self.connect()
        d.last_heard = self.machine.clock.now
        task = self.gatt.start(d.procedure(), "DFU")
        m = self.machine
        m.run_until(lambda: task.done or d.quiet_ticks() > STALL, timeout_ms=timeout_ms)
        if not task.done:
            self.disconnect()
            if self.link.connected:
                self.link.abandon("DFU timeout")
            raise GattError(f"DFU {d.step}: the watch said nothing for "
                            f"{d.quiet_ticks() / 512e6:.0f} s (a CRC error: InfiniTime drops "
                            "the update without a word)" if d.step == "validate" else
                            f"DFU {d.step}: the watch said nothing for "
                            f"{d.quiet_ticks() / 512e6:.0f} s")
        if task.error and not d.finished(task):
            # the watch refused (a CRC error, say): leave, as nRF Connect,
            # ota-dfu-python and Gadgetbridge do, so it advertises again
            self.disconnect()
            raise GattError(f"DFU: {task.error}")
        return d

    @property
    def files(self):
        """The watch's files over its file transfer service (emu/phone/fstransfer.py)."""
        from emu.phone.fstransfer import FileTransfer
        ft = self.__dict__.get("_files")
        if ft is None or ft.gatt is not self.gatt:
            ft = self.__dict__["_files"] = FileTransfer(self.gatt)
        return ft

    def fs(self, procedure: str, *args, timeout_ms: float = 600_000, **kw):
        """Run one of FileTransfer's procedures ("write", "read", "listdir",
        "mkdir", "makedirs", "delete", "upload_resources") and return its result;
        FsError/GattError if the watch refuses or goes silent for 30 s."""
        from emu.phone.fstransfer import STALL
        self.connect()
        ft = self.files
        ft.last_heard = self.machine.clock.now
        task = self.gatt.start(getattr(ft, procedure)(*args, **kw), procedure)
        self.machine.run_until(lambda: task.done or ft.quiet_ticks() > STALL,
                               timeout_ms=timeout_ms)
        if not task.done:
            self.disconnect()
            raise GattError(f"{procedure}: the watch said nothing for "
                            f"{ft.quiet_ticks() / 512e6:.0f} s")
        if task.error:
            raise GattError(task.error)
        return task.result

    def upload_resources(self, package: str, on_progress=None) -> int:
        """Put an InfiniTime resources package (infinitime-resources-*.zip)
        into the watch's filesystem as the companion apps do; returns the
        bytes sent.  ValueError for a package that is not one."""
        from emu.phone.fstransfer import read_resources
        files, obsolete = read_resources(package)
        return self.fs("upload_resources", files, obsolete, on_progress=on_progress)

    # -------------------------------------------------- the Nordic UART (NUS)
    def nus_send(self, data: bytes, timeout_ms: float = 5000) -> None:
        """Write ``data`` to the watch's Nordic UART Service (a watch on the
        real SoftDevice: wasp-os's REPL), subscribing to its TX first; what
        the watch sends back collects in ``nus_output``."""
        self.connect()
        if self._nus_tx is None:
            try:
                handle = self.gatt.wait(self.machine, self.gatt.start(
                    self.gatt.subscribe(NUS_TX), "NUS subscribe"), timeout_ms=timeout_ms)
            except GattError as e:
                raise GattError(f"the watch has no Nordic UART Service ({e})") from None
            self._nus_tx = handle
            self._event_handles[handle] = NUS_TX
        data = bytes(data)
        room = self.gatt.mtu - 3
        for off in range(0, len(data), room):
            self.gatt.wait(self.machine, self.gatt.start(
                self.gatt.write(NUS_RX, data[off:off + room]), "NUS write"), timeout_ms=timeout_ms)

    def enter_bootloader(self, timeout_ms: float = 5000) -> None:
        """What ``wasptool --bootloader`` does: ``machine.enter_ota_dfu()`` at
        wasp-os's REPL over the NUS; the watch resets into its bootloader's
        OTA DFU mode (GPREGRET 0xA8).  Waits for the link to end."""
        self.nus_send(b"\x03\x03import machine\r")
        self.nus_send(b"machine.enter_ota_dfu()\r")
        m = self.machine
        if not m.run_until(lambda: not self.link.connected, timeout_ms=timeout_ms):
            raise GattError("the watch did not reset after machine.enter_ota_dfu() (not "
                            "wasp-os, or its REPL is busy)")

    def ota(self, package, bootloader_name: str = "PineDFU", **kw):
        """What ``wasptool --ota FILE`` does: the bootloader entered over the
        REPL (:meth:`enter_bootloader`), then the legacy DFU of ``package``
        to the watch advertising ``bootloader_name``.  Returns the LegacyDfu."""
        from emu.phone.dfu import DfuPackage, read_package
        pkg = package if isinstance(package, DfuPackage) else read_package(package)
        self.enter_bootloader()
        boot = GattPhone(self.machine, name=bootloader_name)
        try:
            return boot.dfu(pkg, **kw)
        except GattError as e:
            raise GattError(f"after machine.enter_ota_dfu(): {e} (a watch without wasp-os's "
                            "bootloader restarts its application instead)") from None

    def _notified(self, handle: int, value: bytes) -> None:
        u = self._event_handles.get(handle)
        if u == NUS_TX:
            self.nus_output += value
            return
        if u == MUSIC["event"] and value:
            self.music_events.append(MUSIC_EVENTS.get(value[0], f"{value[0]:#04x}"))
        elif u == NOTIFICATION_EVENT and value:
            self.call_responses.append(CALL_RESPONSES.get(value[0], f"{value[0]:#04x}"))


def cts_bytes(unix_seconds: int) -> bytes:
    t = _time_fmt.gmtime(int(unix_seconds))
    return struct.pack("<HBBBBBBBB", t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min,
                       t.tm_sec, t.tm_wday + 1, 0, 1)


def alert_bytes(title: str, body: str, category: int = 0) -> bytes:
    return bytes([category & 0xFF, 1, 0]) + title.encode() + b"\0" + body.encode()


__all__ = ["GattPhone", "GattError", "cts_bytes", "alert_bytes", "uuid"]
