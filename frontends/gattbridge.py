"""The --bridge for firmware with its own Bluetooth stack (InfiniTime): JSON lines.

When the watch drives its RADIO itself there is no UART byte stream to
forward, so a client of ``pinetime-emu run FW --bridge PORT`` talks to the
emulated phone (emu/phone/gattphone.py) in lines of JSON instead.  On connecting
the client gets ``{"bridge": "gatt"}``; the phone then connects to the
watch over the air and discovers its services (``{"event": "connected",
...}``).  Each line the client sends is one command, answered by one line
with ``"ok"`` and the same ``"id"`` when one was given:

    {"op": "set_time", "unix": 1767274620}     # Current Time Service
    {"op": "notify", "title": "Hi", "body": "there"}   # Alert Notification
    {"op": "call", "name": "Alice", "number": "123"}
    {"op": "battery"} -> {"ok": true, "value": 66}
    {"op": "steps"}, {"op": "firmware"}
    {"op": "music", "artist": "A", "track": "T", "album": ""}
    {"op": "music_state", "playing": true}
    {"op": "read", "uuid": "2a19"} -> {"ok": true, "hex": "42"}
    {"op": "write", "uuid": "2a46", "hex": "..."}
    {"op": "zip_data", "hex": "...", "first": true}   # a .zip, in pieces of at most 1.5 KiB
    {"op": "dfu", "prn": 10}                     # then the update (emu/phone/dfu.py):
        -> {"event": "dfu", "sent": 4000, "total": 392884} ... {"op": "dfu", "ok": true}
    {"op": "resources"}                          # or InfiniTime's resources into its files
        -> {"event": "resources", "sent": n, "total": t, "path": p} ... (emu/phone/fstransfer.py)

Gadgetbridge lines as wasp-os gets them (``GB({"t": "notify", ...})``, with
or without the leading 0x10) are accepted too for notify, call, musicinfo
and musicstate, so ``pinetime-emu phone --notify/--call/--gb`` work against
both firmware families.  What the watch sends by itself comes as events:
``{"event": "music", "value": "play"}``, ``{"event": "call", "value":
"answer"}``, ``{"event": "disconnected", "reason": ...}``.  A line that is
not understood is answered ``{"ok": false, "error": ...}``; it never stops
the emulator.  Closing the socket ends the link (LL_TERMINATE_IND).
"""
from __future__ import annotations

import json
from typing import Optional

from emu.phone.gatt import GattError

MAX_LINE = 4096
MAX_ANSWER = 1 << 20        # bytes of one answer line the phone client waits for


class GattBridge:
    def __init__(self, phone, send):
        self.gp = phone                  # a GattPhone
        self.send = send                 # fn(bytes) to the client
        self.line = bytearray()
        self.waiting: list = []          # commands until the link is up: (id, op, gen factory)
        self.setup = None                # the discovery task
        self.said_connected = False
        self._music = len(self.gp.music_events)
        self._calls = len(self.gp.call_responses)
        self._state = self.gp.link.state
        self.dfu_zip = bytearray()       # a .zip as zip_data lines bring it
        self.send_json({"bridge": "gatt", "device": self.gp.name})
        self.gp.start_connect()

    def send_json(self, obj: dict) -> None:
        self.send((json.dumps(obj, separators=(", ", ": ")) + "\n").encode())

    # ------------------------------------------------------------------ poll
    def feed(self, data: bytes) -> None:
        for b in data:
            if b in (0x0A, 0x0D):
                if self.line.strip():
                    self._command(bytes(self.line))
                self.line.clear()
            elif len(self.line) < MAX_LINE:
                self.line.append(b)

    def poll(self) -> None:
        gp = self.gp
        link = gp.link
        if link.state != self._state:
            self._state = link.state
            if link.state in ("closed", "lost") and self.said_connected:
                self.send_json({"event": "disconnected", "reason": link.reason})
            if link.state in ("closed", "lost"):
                self.said_connected = False
                self.setup = None
        if link.state in ("idle", "closed", "lost") and self.waiting:
            gp.start_connect()               # a command wants the link back
        if link.connected and self.setup is None:
            self.setup = gp.start_discovery()
        if self.setup is not None and self.setup.done and not self.said_connected:
            self.said_connected = True
            if self.setup.error:
                self.send_json({"event": "error", "error": self.setup.error})
            else:
                self.send_json({"event": "connected", "address": link.peer,
                                "services": len(gp.gatt.services)})
        if self.said_connected and not self.setup.error:
            waiting, self.waiting = self.waiting, []
            for ident, op, make in waiting:
                self._start(ident, op, make)
        for v in gp.music_events[self._music:]:
            self.send_json({"event": "music", "value": v})
        for v in gp.call_responses[self._calls:]:
            self.send_json({"event": "call", "value": v})
        self._music, self._calls = len(gp.music_events), len(gp.call_responses)

    def close(self) -> None:
        self.gp.link.disconnect()

    # ------------------------------------------------------------------ commands
    def _start(self, ident, op, make) -> None:
        try:
            gen, conv = make()
        except (GattError, ValueError, TypeError, OverflowError) as e:
            return self._reply(ident, op, error=str(e))
        task = self.gp.gatt.start(gen, op)

        def done(t, ident=ident, op=op, conv=conv):
            finished = getattr(conv, "finished", None)      # a DFU: the watch resets at the end
            if t.error and not (finished is not None and finished(t)):
                self._reply(ident, op, error=t.error)
                return
            try:
                kw = conv(t.result)
            except (IndexError, ValueError, TypeError) as e:   # e.g. an empty value
                self._reply(ident, op, error=f"unexpected value {t.result!r} ({e})")
                return
            self._reply(ident, op, **kw)
        task.callbacks.append(done)
        if task.done:
            done(task)

    def _reply(self, ident, op, error: Optional[str] = None, **kw) -> None:
        out = {"op": op, "ok": error is None}
        if ident is not None:
            out["id"] = ident
        if error is not None:
            out["error"] = error
        out.update(kw)
        self.send_json(out)

    def _command(self, line: bytes) -> None:
        s = line.strip().lstrip(b"\x10")
        ident = None
        try:
            if s.startswith(b"GB(") and s.endswith(b")"):
                msg = json.loads(s[3:-1].decode("utf-8"))
                if not isinstance(msg, dict):
                    raise ValueError("not a JSON object")
                op, make = self._gadgetbridge(msg)
            else:
                msg = json.loads(s.decode("utf-8"))
                if not isinstance(msg, dict):
                    raise ValueError("not a JSON object")
                ident = msg.get("id")
                if msg.get("op") == "zip_data":                # no link needed: kept here
                    return self._zip_data(ident, msg)
                op, make = self._op(msg)
        except (ValueError, TypeError, KeyError, UnicodeDecodeError, OverflowError,
                RecursionError) as e:       # RecursionError: JSON nested thousands deep
            text = line.decode("utf-8", "replace")[:60]
            return self._reply(ident, "?", error=f"cannot understand {text!r}: {e}")
        self.waiting.append((ident, op, make))
        self.poll()

    def _gadgetbridge(self, m: dict):
        t = m.get("t")
        if t == "notify":
            return self._op({"op": "notify", "title": m.get("title") or m.get("src") or "",
                             "body": m.get("body", "")})
        if t == "call" and m.get("cmd") == "incoming":
            return self._op({"op": "call", "name": m.get("name", ""),
                             "number": m.get("number", "")})
        if t == "musicinfo":
            return self._op({"op": "music", "artist": m.get("artist", ""),
                             "track": m.get("track", ""), "album": m.get("album", "")})
        if t == "musicstate":
            return self._op({"op": "music_state", "playing": m.get("state") == "play"})
        raise ValueError(f"Gadgetbridge message {t!r} has no InfiniTime service here")

    def _op(self, m: dict):
        from emu.phone import gattphone as G
        gatt = self.gp.gatt
        op = m.get("op")
        nothing = (lambda r: {})

        def text(key):
            v = m.get(key, "")
            if not isinstance(v, str):
                raise ValueError(f"{key!r} must be a string")
            return v
        if op == "set_time":
            unix = m["unix"]
            if not isinstance(unix, int) or not 0 <= unix < 2 ** 32:
                raise ValueError("'unix' must be seconds since 1970")
            return op, lambda: (gatt.write(G.CTS_CURRENT_TIME, G.cts_bytes(unix)), nothing)
        if op in ("notify", "call"):
            title, body = (text("title"), text("body")) if op == "notify" else \
                (text("name"), text("number"))
            cat = G.CATEGORY_CALL if op == "call" else int(m.get("category", 0))
            return op, lambda: (gatt.write(G.ANS_NEW_ALERT, G.alert_bytes(title, body, cat)),
                                nothing)
        if op == "battery":
            return op, lambda: (gatt.read(G.BATTERY_LEVEL), lambda v: {"value": v[0]})
        if op == "steps":
            return op, lambda: (gatt.read(G.STEP_COUNT),
                                lambda v: {"value": int.from_bytes(v[:4], "little")})
        if op == "firmware":
            return op, lambda: (gatt.read(G.FIRMWARE_REVISION),
                                lambda v: {"value": v.decode("utf-8", "replace")})
        if op == "music":
            vals = [(G.MUSIC[k], text(k).encode()) for k in ("artist", "track", "album")]

            def music():
                for u, v in vals:
                    yield from gatt.write(u, v)
            return op, lambda: (music(), nothing)
        if op == "music_state":
            b = bytes([1 if m.get("playing") else 0])
            return op, lambda: (gatt.write(G.MUSIC["status"], b), nothing)
        if op in ("read", "write"):
            u = G.uuid(text("uuid"))
            if op == "read":
                return op, lambda: (gatt.read(u), lambda v: {"hex": v.hex()})
            data = bytes.fromhex(text("hex"))
            return op, lambda: (gatt.write(u, data), nothing)
        if op == "dfu":
            return op, lambda: self._dfu(m)
        if op == "resources":
            return op, lambda: self._resources()
        raise ValueError(f"unknown op {op!r} (set_time, notify, call, battery, steps, "
                         "firmware, music, music_state, read, write, zip_data, dfu, "
                         "resources)")

    def _zip_data(self, ident, m: dict) -> None:
        from emu.loader import MAX_DFU_PACKAGE
        try:
            piece = bytes.fromhex(m.get("hex", "") if isinstance(m.get("hex"), str) else "?")
        except ValueError:
            return self._reply(ident, "zip_data", error="'hex' must be hex bytes")
        if m.get("first"):
            self.dfu_zip.clear()
        if len(self.dfu_zip) + len(piece) > MAX_DFU_PACKAGE:
            self.dfu_zip.clear()
            return self._reply(ident, "zip_data", error="the package is too large")
        self.dfu_zip += piece
        self._reply(ident, "zip_data", size=len(self.dfu_zip))

    def _dfu(self, m: dict):
        from emu.loader import FirmwareError
        from emu.phone.dfu import LegacyDfu, package_from_bytes
        prn = m.get("prn", 10)
        if not isinstance(prn, int) or not 1 <= prn <= 255:
            raise ValueError("'prn' must be 1 to 255")
        try:
            pkg = package_from_bytes("the DFU package", bytes(self.dfu_zip))
        except FirmwareError as e:
            raise ValueError(str(e)) from None
        self.dfu_zip = bytearray()

        def progress(sent, total):
            self.send_json({"event": "dfu", "sent": sent, "total": total})
        d = LegacyDfu(self.gp.gatt, pkg, prn=prn, on_progress=progress)

        def conv(_result):
            return {"value": d.total}
        conv.finished = d.finished
        return d.procedure(), conv

    def _resources(self):
        from emu.phone.fstransfer import resources_from_bytes
        files, obsolete = resources_from_bytes("the resources package", bytes(self.dfu_zip))
        self.dfu_zip = bytearray()
        ft = self.gp.files

        def progress(sent, total, path):
            self.send_json({"event": "resources", "sent": sent, "total": total, "path": path})
        return (ft.upload_resources(files, obsolete, on_progress=progress),
                lambda n: {"value": n})


# ---------------------------------------------------------------------- the CLI side
def client_verb(a, s, early: bytes) -> int:
    """``pinetime-emu phone`` against the JSON-lines bridge: one command, its
    answer printed (values plainly, errors as one line and exit 1)."""
    import socket
    import sys
    import time as _host_time        # a host tool: timeouts are host time
    from frontends.common import EXIT_GUEST, EXIT_OK, EXIT_USAGE

    def err(msg, code: int) -> int:
        msg = str(msg).replace("\r", "\\r").replace("\n", "\\n")      # one line
        print(f"pinetime-emu phone: error: {msg}", file=sys.stderr)
        return code
    if getattr(a, "bootloader", False):
        return err("the watch serves GATT itself (InfiniTime, or a bootloader already in DFU "
                   "mode): --bootloader is for wasp-os's REPL", EXIT_USAGE)
    if getattr(a, "ota", None):
        a.dfu = a.ota                 # already where --ota leads: the update itself
        return _zip_client(a, s, early, err)
    if getattr(a, "dfu", None) or getattr(a, "resources", None):
        return _zip_client(a, s, early, err)
    if a.set_time is not None:
        cmd = {"op": "set_time", "unix": a.set_time}
    elif a.rtc:
        import calendar
        cmd = {"op": "set_time", "unix": calendar.timegm(_host_time.localtime())}
    elif a.notify or a.send_notification:
        title, body = a.notify if a.notify else (a.title, a.body)
        cmd = {"op": "notify", "title": title, "body": body}
    elif a.call:
        cmd = {"op": "call", "name": a.call[0], "number": a.call[1]}
    elif a.battery:
        cmd = {"op": "battery"}
    elif a.steps:
        cmd = {"op": "steps"}
    elif a.firmware_version:
        cmd = {"op": "firmware"}
    elif a.music:
        cmd = {"op": "music", "artist": a.music[0], "track": a.music[1]}
    elif a.music_state:
        cmd = {"op": "music_state", "playing": a.music_state == "play"}
    elif a.read:
        cmd = {"op": "read", "uuid": a.read}
    elif a.write:
        try:
            bytes.fromhex(a.write[1])
        except ValueError:
            return err(f"--write: not hex bytes: {a.write[1]!r}", EXIT_USAGE)
        cmd = {"op": "write", "uuid": a.write[0], "hex": a.write[1]}
    elif a.gb is not None:
        cmd = None
    else:
        return err("the watch runs firmware with its own Bluetooth stack (InfiniTime): it has "
                   "no REPL; use --notify, --call, --set-time/--rtc, --battery, --steps, "
                   "--music, --music-state, --firmware-version, --read, --write or --gb",
                   EXIT_USAGE)
    line = (json.dumps(dict(cmd, id=1)) if cmd is not None else
            "GB(" + json.dumps(a.gb) + ")").encode() + b"\n"
    buf = bytearray(early)
    deadline = _host_time.monotonic() + max(a.timeout, 1.0) + 10.0
    try:
        s.settimeout(0.5)
        s.sendall(line)
        while _host_time.monotonic() < deadline:
            while b"\n" in buf:
                raw, _, rest = bytes(buf).partition(b"\n")
                buf = bytearray(rest)
                try:
                    msg = json.loads(raw.decode("utf-8", "replace"))
                except (ValueError, RecursionError):    # not a line of the bridge's
                    continue
                if not isinstance(msg, dict) or "ok" not in msg:
                    continue                        # events (connected, music...)
                if not msg["ok"]:
                    return err(msg.get("error", "failed"), EXIT_GUEST)
                if "value" in msg:
                    v = msg["value"]
                    print(f"{v}%" if msg.get("op") == "battery" else v)
                elif "hex" in msg:
                    print(msg["hex"])
                return EXIT_OK
            try:
                data = s.recv(4096)
            except socket.timeout:
                continue
            if not data:
                return err("the bridge closed the connection", EXIT_GUEST)
            buf += data
            if len(buf) > MAX_ANSWER and b"\n" not in buf:
                return err(f"the bridge sent more than {MAX_ANSWER} bytes without a line end: "
                           f"not a pinetime-emu bridge", EXIT_USAGE)
    except OSError as e:
        return err(f"connection to the bridge lost ({e.strerror or e})", EXIT_GUEST)
    return err("no answer from the watch", EXIT_GUEST)


def _zip_client(a, s, early: bytes, err) -> int:
    """``phone --dfu FILE.zip`` or ``--resources FILE.zip``: the package checked
    here, sent to the bridge in zip_data lines, then the update or the
    upload with a progress bar (tqdm, on a terminal)."""
    import socket
    import sys
    import time as _host_time        # a host tool: its timeouts are host time
    from emu.loader import FirmwareError
    from frontends.common import EXIT_GUEST, EXIT_OK, EXIT_USAGE
    dfu = bool(getattr(a, "dfu", None))
    path = a.dfu if dfu else a.resources
    try:
        if dfu:
            from emu.phone.dfu import read_package
            total = len(read_package(path).image)
        else:
            from emu.phone.fstransfer import read_resources
            total = sum(len(d) for _p, d in read_resources(path)[0])
    except (FirmwareError, ValueError) as e:
        return err(str(e), EXIT_USAGE)
    with open(path, "rb") as f:
        data = f.read()
    op = "dfu" if dfu else "resources"
    lines = []
    for i, off in enumerate(range(0, len(data), 1536)):
        lines.append(json.dumps({"op": "zip_data", "first": i == 0,
                                 "hex": data[off:off + 1536].hex()}))
    lines.append(json.dumps({"op": op, "id": 1}))
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="DFU" if dfu else "resources",
                   file=sys.stderr)
    buf = bytearray(early)
    s.settimeout(0.5)
    last = _host_time.monotonic()
    quiet = max(a.timeout, 60.0)
    try:
        s.sendall(("\n".join(lines) + "\n").encode())
        while True:
            while b"\n" in buf:
                raw, _, rest = bytes(buf).partition(b"\n")
                buf = bytearray(rest)
                try:
                    msg = json.loads(raw.decode("utf-8", "replace"))
                except (ValueError, RecursionError):    # not a line of the bridge's
                    continue
                if not isinstance(msg, dict):
                    continue
                if msg.get("event") == op:
                    last = _host_time.monotonic()
                    if bar is not None:
                        bar.update(msg["sent"] - bar.n)
                    continue
                if msg.get("op") == "zip_data" and not msg.get("ok"):
                    return err(msg.get("error", "failed"), EXIT_GUEST)
                if msg.get("op") != op:
                    continue
                if not msg["ok"]:
                    return err(f"the {'update' if dfu else 'upload'} failed: "
                               f"{msg.get('error', '?')}", EXIT_GUEST)
                if bar is not None:
                    bar.update(total - bar.n)
                    bar.close()
                if dfu:
                    print(f"sent {total} bytes; the watch activates the update (its "
                          "bootloader installs it and starts it)")
                else:
                    print(f"sent {total} bytes of resources")
                return EXIT_OK
            if _host_time.monotonic() - last > quiet:
                return err(f"no progress from the bridge for {quiet:g} s", EXIT_GUEST)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                return err("the bridge closed the connection", EXIT_GUEST)
            buf += chunk
    except OSError as e:
        return err(f"the bridge connection failed ({e.strerror or e})", EXIT_GUEST)
    finally:
        if bar is not None:
            bar.close()


def dfu_after_reset(a) -> int:
    """``phone --ota``, once wasp-os was asked into its bootloader: the bridge
    again, until it serves the bootloader's DFU (its GATT phone follows the
    watch's latest advertising: the DFU service, "PineDFU"), then ``--dfu``."""
    import socket
    import sys
    import time as _host_time        # a host tool: its timeouts are host time
    from frontends.common import EXIT_GUEST

    def err(msg, code: int) -> int:
        print(f"pinetime-emu phone: error: {msg}", file=sys.stderr)
        return code
    deadline = _host_time.monotonic() + max(a.timeout, 30.0)
    while _host_time.monotonic() < deadline:
        try:
            s2 = socket.create_connection((a.host, a.port), timeout=5)
        except OSError as e:
            return err(f"cannot connect to the bridge again ({e.strerror or e})", EXIT_GUEST)
        device, rest = _hello(s2)
        if device is not None and "DFU" in device:
            a.dfu = a.ota
            with s2:
                return _zip_client(a, s2, rest, err)
        s2.close()
        _host_time.sleep(0.5)
    return err("the watch never came back in its bootloader's DFU mode: --ota needs "
               "wasp-os's own bootloader and S132 on the watch (on the emulated SoftDevice "
               "machine.enter_ota_dfu() only restarts wasp-os; docs/flash.md)", EXIT_GUEST)


def _hello(s) -> tuple:
    """The device the JSON-lines bridge serves, from its first line, and the
    bytes after it; (None, b"") when the bridge says something else."""
    import socket
    got = bytearray()
    s.settimeout(5)
    try:
        while b"\n" not in got and len(got) < 65536:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except (OSError, socket.timeout):
        return None, b""
    line, _, rest = bytes(got).partition(b"\n")
    try:
        msg = json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None, b""
    if not isinstance(msg, dict) or msg.get("bridge") != "gatt":
        return None, b""
    return str(msg.get("device", "")), rest
