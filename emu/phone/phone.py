"""The phone: Gadgetbridge (Bangle.js protocol, as wasp-os speaks it) over BLE.

``machine.phone`` on the PineTime board.  It drives the host central of the
emulated SoftDevice (emu/softdevice/central.py): connect, find the Nordic UART
Service, enable TX notifications, write RX in 20-byte writes paced by
connection events (wasp-os's RX ring holds 128 bytes), and collect what the
watch prints.  Everything runs on the emulated clock: methods that wait
(`connect`, `repl`, `wait_for`) run the machine.

Gadgetbridge messages are ``\\x10GB({...})\\n``: wasp-os's REPL drops the 0x10
and evaluates the line, with ``GB``, ``true``, ``false`` and ``null`` defined by
/flash/main.py.  ``set_time`` sends what ``wasptool --rtc`` sends
(``watch.rtc.set_localtime((y, m, d, H, M, S, wday, yday))``, as wasptool); Gadgetbridge's Bangle.js
driver sends JavaScript (``setTime(t);E.setTimeZone(z)``) that wasp-os does
not define, so it is available separately as ``bangle_set_time``.

Firmware that never enables the emulated SoftDevice and drives the RADIO
itself (InfiniTime) gets ``phone.gatt`` instead (emu/phone/gattphone.py: a link
layer central, GATT, and Gadgetbridge's InfiniTime services); ``connect``,
``notify``, ``incoming_call``, ``music_info``, ``music_state``, ``set_time``
and ``battery`` go there by themselves in that case.

Not modelled: pairing/bonding, Gadgetbridge's own reconnect policy, the
phone's notification ids (a counter is used).
"""
from __future__ import annotations

import json
import time as _time_fmt   # only for gmtime() formatting, never the host clock
from typing import Callable

from emu.phone.errors import PhoneError
from emu.softdevice.central import Central, NusClient

PROMPT = b">>> "


class Phone:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_line", "_notify_id", "messages", "nus", "output")
    STRUCTURE = ("_listeners", "central", "machine", "sd",
                 "_dfu_key", "_dfu_seen")     # a cache of the air's log (dfu_watch)
    _dfu_key = _dfu_seen = None
    def __init__(self, machine, softdevice, central=None, nus=None):
        """``softdevice`` is the emulated S132 (emu/softdevice), or None when the
        real SoftDevice runs and ``central``/``nus`` reach it over the air
        (emu/phone/airnus.py)."""
        self.machine = machine
        self.sd = softdevice
        self.central = central if central is not None else Central(softdevice)
        self.nus = nus if nus is not None else NusClient(self.central)
        self.output = bytearray()
        self.messages: list[dict] = []
        self._line = bytearray()
        self._listeners: list[Callable[[bytes], None]] = []
        self._notify_id = 0
        self.nus.listeners.append(self._received)

    # ------------------------------------------------------------------ which stack
    @property
    def gatt(self):
        """The phone for firmware with its own Bluetooth stack (emu/phone/gattphone.py)."""
        g = self.__dict__.get("_gatt")
        if g is None:
            from emu.phone.gattphone import GattPhone
            g = self.__dict__["_gatt"] = GattPhone(self.machine)
        return g

    def dfu_watch(self):
        """With Nordic's real SoftDevice: (address, name) of the watch when it
        advertises the legacy DFU service (wasp-os's bootloader in DFU mode,
        "PineDFU"), else None.  Its GATT phone is then ``gatt_to(address,
        name)``: the bridge serves phone --dfu through it."""
        if self.sd is not None or self.machine.air is None:
            return None
        from emu.phone.dfu import DFU_SERVICE
        from emu.phone.scanner import recent_advertiser
        log = self.machine.air.log
        key = (len(log), log[-1] if log else None)      # read again only after new packets
        if self._dfu_key != key:
            self._dfu_key = key
            self._dfu_seen = recent_advertiser(self.machine.air, DFU_SERVICE)
        return self._dfu_seen

    def gatt_to(self, address: str, name=None):
        """The GATT phone (``gatt``) for the watch at ``address`` (a new one if
        the current one is for another watch and idle)."""
        g = self.__dict__.get("_gatt")
        if g is None or (g.address != address.lower() and g.link.state in ("idle", "closed",
                                                                          "lost")):
            from emu.phone.gattphone import GattPhone
            g = self.__dict__["_gatt"] = GattPhone(self.machine, name=name or "", address=address)
        return g

    @property
    def uart_ready(self) -> bool:
        """The watch's SoftDevice is up (the real one is assumed to be)."""
        return self.sd is None or self.sd.enabled

    @property
    def radio_firmware(self) -> bool:
        """True when the firmware drives the RADIO itself: it has not enabled
        the emulated SoftDevice but has turned the RADIO on (or the phone is
        already linked to it that way)."""
        if self.sd is None:
            return False              # the real SoftDevice: its NUS, over the air
        if "_gatt" in self.__dict__ and self.__dict__["_gatt"].link.state != "idle":
            return True
        if self.sd.enabled:
            return False
        radio = self.machine.soc.peripherals.get("radio")
        return radio is not None and self.machine.air is not None and bool(radio.air.log)

    # ------------------------------------------------------------------ link
    @property
    def connected(self) -> bool:
        if self.radio_firmware:
            return self.gatt.connected
        return self.central.connected and self.nus.tx_handle is not None

    def connect(self, timeout_ms: float = 5000) -> None:
        """Wait for the watch to advertise, connect, discover NUS, enable TX
        (or, for firmware with its own stack, connect over the air and
        discover its GATT services)."""
        m = self.machine
        if not self.uart_ready and not self.radio_firmware:     # still booting: which stack?
            m.run_until(lambda: self.uart_ready or self.radio_firmware, timeout_ms=timeout_ms)
        if self.radio_firmware:
            return self.gatt.connect(timeout_ms=max(timeout_ms, 10_000))
        if self.central.connected:
            return
        if not m.run_until(self.central.can_connect, timeout_ms=timeout_ms):
            raise PhoneError("the watch is not advertising")
        self.central.connect(mtu=247)
        found = self.nus.discover()
        if found is None:                # over the air: discovery takes connection events
            m.run_until(lambda: self.nus.discover() is not None, timeout_ms=timeout_ms)
            found = self.nus.discover()
        if not found:
            self.central.disconnect()
            raise PhoneError("Nordic UART Service not found on the watch")
        m.run_until(lambda: self.central.writes_pending == 0, timeout_ms=500)

    def disconnect(self) -> None:
        if self.radio_firmware:
            return self.gatt.disconnect()
        self.central.disconnect()
        self.nus.tx_handle = self.nus.rx_handle = None

    def on_output(self, fn: Callable[[bytes], None]) -> None:
        self._listeners.append(fn)

    # ------------------------------------------------------------------ raw REPL
    def _uart_only(self, what: str) -> None:
        if self.radio_firmware:
            raise PhoneError(f"{what}: the watch runs firmware with its own Bluetooth stack "
                             "(InfiniTime), which has no UART service or REPL")

    def send(self, data: bytes) -> None:
        """Queue raw bytes for RX (paced: one 20-byte write per connection event)."""
        self._uart_only("send")
        if not self.connected:
            raise PhoneError("not connected")
        self.nus.send(bytes(data))

    def flush(self, timeout_ms: float = 5000) -> bool:
        """Run until every queued write reached the watch."""
        return self.machine.run_until(lambda: self.central.writes_pending == 0,
                                      timeout_ms=timeout_ms)

    def wait_for(self, pattern: bytes, start: int = 0, timeout_ms: float = 2000) -> bool:
        return self.machine.run_until(lambda: pattern in self.output[start:],
                                      timeout_ms=timeout_ms)

    def repl(self, cmd: str, timeout_ms: float = 2000) -> str:
        """Send one line, run until the next prompt, return what it printed."""
        start = len(self.output)
        self.send(cmd.encode() + b"\r")
        if not self.machine.run_until(
                lambda: self.output[start:].rstrip(b" ").endswith(b">>>")
                and self.central.writes_pending == 0, timeout_ms=timeout_ms):
            raise PhoneError(f"no prompt after {cmd!r}; got {bytes(self.output[start:])!r}")
        text = bytes(self.output[start:]).decode("utf-8", "replace").replace("\r\n", "\n")
        text = text[:text.rfind(">>>")]
        echo = cmd.strip() + "\n"                   # the REPL echoes the command line
        i = text.rfind(echo)
        return text[i + len(echo):] if i >= 0 else text

    @property
    def wasp(self):
        """wasptool's verbs (exec, eval, upload, pull, rtc, memfree, ...) on
        this link, waiting on the emulated clock (emu/phone/wasptool.py)."""
        from emu.phone.wasptool import MachineTransport, WaspTool
        w = self.__dict__.get("_wasp")
        if w is None:
            w = self.__dict__["_wasp"] = WaspTool(MachineTransport(self))
        return w

    # ------------------------------------------------------------------ Gadgetbridge
    def send_gb(self, msg: dict) -> None:
        self.send(b"\x10GB(" + json.dumps(msg, separators=(",", ":")).encode() + b")\n")

    def notify(self, title: str, body: str, src: str = "Messages") -> int:
        if self.radio_firmware:
            self.gatt.notify(title, body)
            self._notify_id += 1
            return self._notify_id
        self._notify_id += 1
        self.send_gb({"t": "notify", "id": self._notify_id, "src": src, "title": title,
                      "body": body})
        return self._notify_id

    def incoming_call(self, name: str, number: str) -> None:
        if self.radio_firmware:
            return self.gatt.incoming_call(name, number)
        self.send_gb({"t": "call", "cmd": "incoming", "name": name, "number": number})

    def end_call(self) -> None:
        if self.radio_firmware:
            raise PhoneError("end_call: InfiniTime's Alert Notification Service has no "
                             "end-of-call message")
        self.send_gb({"t": "call", "cmd": "end"})

    def music_info(self, artist: str, track: str, album: str = "") -> None:
        if self.radio_firmware:
            return self.gatt.music_info(artist, track, album)
        self.send_gb({"t": "musicinfo", "artist": artist, "track": track, "album": album})

    def music_state(self, playing: bool) -> None:
        if self.radio_firmware:
            return self.gatt.music_state(playing)
        self.send_gb({"t": "musicstate", "state": "play" if playing else "pause"})

    def set_time(self, unix_seconds: int) -> None:
        if self.radio_firmware:
            return self.gatt.set_time(unix_seconds)
        from emu.phone.wasptool import rtc_line
        self.send(rtc_line(_time_fmt.gmtime(int(unix_seconds))).encode() + b"\r")

    def battery(self) -> int:
        """The battery level in % (InfiniTime's Battery Service; on wasp-os,
        what wasptool --battery prints)."""
        if self.radio_firmware:
            return self.gatt.battery()
        return int(self.wasp.battery())

    def steps(self) -> int:
        """The step count (InfiniTime's motion service)."""
        if not self.radio_firmware:
            raise PhoneError("steps are read over InfiniTime's motion service")
        return self.gatt.steps()

    def bangle_set_time(self, unix_seconds: int, tz_hours: float = 0) -> None:
        self.send(b"\x10setTime(%d);E.setTimeZone(%s);\n" % (int(unix_seconds),
                                                             repr(tz_hours).encode()))

    # ------------------------------------------------------------------ incoming
    def _received(self, data: bytes) -> None:
        self.output += data
        for b in data:
            if b == 0x0A:
                self._parse_line(bytes(self._line))
                self._line.clear()
            elif len(self._line) < 4096:
                self._line.append(b)
        for fn in list(self._listeners):
            fn(data)

    def _parse_line(self, line: bytes) -> None:
        s = line.strip()
        i = s.find(b"{")
        if i < 0 or not s.endswith(b"}"):
            return
        try:
            obj = json.loads(s[i:].decode("utf-8", "replace"))
        except (ValueError, RecursionError):    # RecursionError: arrays nested 2000 deep
            return
        if isinstance(obj, dict):
            self.messages.append(obj)
