"""wasptool's verbs against the emulated watch's REPL.

wasp-os developers drive a watch with ``tools/wasptool`` over the Nordic UART
console.  :class:`WaspTool` does the same things with the same meanings, over
either the in-process phone (``machine.phone.wasp``: everything runs on the
emulated clock) or a running emulator's ``--bridge`` socket (``pinetime-emu
phone --exec FILE`` etc.: wall-clock timeouts, the emulator paces itself):

* ``exec_text(src)`` / ``exec_file(path)``: run code in the REPL's paste mode
  (Ctrl-E ... Ctrl-D), return what it printed;
* ``eval(expr)``: type an expression at the REPL, return what it shows;
* ``upload(data, name)`` / ``push``: write a file into the watch's
  filesystem, 48 bytes per REPL line through ``ubinascii.a2b_base64`` (the
  REPL line buffer and the heap stay small, as with wasptool);
* ``pull(name)``: read a file back the same way (base64 lines);
* ``set_rtc(t)`` / ``check_rtc(t)``: set the watch's clock to a time tuple,
  or return the watch's time minus ``t`` in seconds;
* ``memfree()``, ``battery()``, ``reset()``, ``notify(title, body)``
  (``wasp.system.notify`` as wasptool's ``--send-notification`` does).

Errors raised by the watch (a Python exception printed at the REPL) raise
:class:`WaspToolError` with the exception's line.

wasp-os's MicroPython heap is small (about 8 KB free at the clock face):
every string constant typed at the REPL is interned for good and the parser
needs a 512-byte block per line, so after a long session (an upload, then a
pull) the watch may answer ``MemoryError``, on a real watch as here.  A
reset clears it (``reset()``, or Ctrl-D with ``machine.phone.send(b"\\x04")``
and a reconnect); the first boot after formatting the flash leaves the heap
in that state too.
"""
from __future__ import annotations

import ast
import base64
import re
import select
import time
from typing import Optional

PROMPT = b">>> "
CHUNK = 48


class WaspToolError(Exception):
    pass


class MachineTransport:
    """The in-process phone (emu/phone/phone.py): waits run the machine."""

    def __init__(self, phone):
        self.phone = phone

    def send(self, data: bytes) -> None:
        self.phone.send(data)

    def read_until(self, marker: bytes, timeout_s: float, start: Optional[int] = None) -> bytes:
        p = self.phone
        if start is None:
            start = len(p.output)
        ok = p.machine.run_until(lambda: marker in p.output[start:]
                                 and p.central.writes_pending == 0,
                                 timeout_ms=timeout_s * 1000)
        if not ok:
            raise WaspToolError(f"no {marker!r} from the watch within {timeout_s:g} emulated s; "
                                f"it printed {bytes(p.output[start:])[-200:]!r}")
        data = bytes(p.output[start:])
        end = data.index(marker) + len(marker)
        self.last_end = start + end
        return data[:end]

    def mark(self) -> int:
        return len(self.phone.output)


class SocketTransport:
    """A running emulator's --bridge (raw TCP): waits use the host clock."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        sock.setblocking(False)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, timeout: float) -> None:
        r, _, _ = select.select([self.sock], [], [], timeout)
        if r:
            data = self.sock.recv(4096)
            if not data:
                raise WaspToolError("the bridge closed the connection")
            self.buf += data

    def mark(self) -> int:
        return len(self.buf)

    def read_until(self, marker: bytes, timeout_s: float, start: Optional[int] = None) -> bytes:
        if start is None:
            start = len(self.buf)
        end = time.monotonic() + timeout_s       # a host tool: the host clock
        while marker not in self.buf[start:]:
            left = end - time.monotonic()
            if left <= 0:
                raise WaspToolError(f"no {marker!r} from the watch within {timeout_s:g} s; it "
                                    f"printed {bytes(self.buf[start:])[-200:]!r}")
            self._fill(min(left, 0.1))
        data = bytes(self.buf[start:])
        end = data.index(marker) + len(marker)
        self.last_end = start + end
        return data[:end]


_ERROR_LINE = re.compile(r"^[A-Za-z]*(Error|Exception|Interrupt)\b.*", re.M)


def _check_error(text: str, what: str) -> str:
    """Raise WaspToolError when the REPL printed an exception (with or
    without a traceback: MicroPython reports a MemoryError while parsing
    the line on its own)."""
    m = _ERROR_LINE.search(text)
    if "Traceback (most recent call last)" in text or m:
        lines = [l for l in text.strip().splitlines() if l.strip()]
        raise WaspToolError(f"{what}: {(m.group(0) if m else lines[-1]).strip()}")
    return text


def rtc_line(t: time.struct_time) -> str:
    """The REPL line wasptool --rtc types to set the watch's clock to ``t``."""
    return "watch.rtc.set_localtime((%d, %d, %d, %d, %d, %d))" % (
        t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)


class WaspTool:
    def __init__(self, transport, timeout_s: float = 10.0):
        self.t = transport
        self.timeout_s = timeout_s

    # -- the REPL ------------------------------------------------------------
    def run(self, line: str, timeout_s: Optional[float] = None) -> str:
        """One REPL line; what it printed (the echo and the prompt removed).
        Anything the watch printed before the line's echo (a banner after a
        reset, a stray prompt) is skipped."""
        timeout = timeout_s or self.timeout_s
        start = self.t.mark()
        self.t.send(line.encode() + b"\r")
        self.t.read_until(line.encode() + b"\r\n", timeout, start)
        out = self.t.read_until(PROMPT, timeout, self.t.last_end)
        text = out.decode("utf-8", "replace").replace("\r\n", "\n")
        return text[:text.rfind(">>>")]

    def exec_text(self, src: str, timeout_s: Optional[float] = None) -> str:
        """Run ``src`` in paste mode; what it printed."""
        start = self.t.mark()
        self.t.send(b"\x05")                          # Ctrl-E: paste mode
        self.t.read_until(b"=== ", self.timeout_s, start)
        body = src.replace("\r\n", "\n").rstrip("\n") + "\n"
        start = self.t.mark()
        self.t.send(body.replace("\n", "\r").encode() + b"\x04")   # Ctrl-D runs it
        out = self.t.read_until(PROMPT, timeout_s or self.timeout_s * 3, start)
        text = out.decode("utf-8", "replace").replace("\r\n", "\n")
        text = text[:text.rfind(">>>")]
        # the paste echo is each line followed by the next "=== " prompt; the
        # output starts after the last one (the empty line Ctrl-D ended)
        i = text.rfind("=== ")
        if i >= 0:
            text = text[i + 4:]
        return _check_error(text.lstrip("\n"), "exec")

    def exec_file(self, path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return self.exec_text(f.read())

    def eval(self, expr: str) -> str:
        """Type ``expr`` at the REPL; what the REPL shows (its repr)."""
        return _check_error(self.run(expr), f"eval {expr!r}")

    # -- files ---------------------------------------------------------------
    def upload(self, data: bytes, name: str) -> None:
        """Write ``data`` as the watch's file ``name``."""
        # short lines and a collection around the transfer: the watch's heap
        # is small and its parser needs a 512-byte block for every line
        _check_error(self.run("from ubinascii import a2b_base64 as _a; import gc; gc.collect()"),
                     "upload")
        _check_error(self.run(f"_f = open({name!r}, 'wb')"), f"upload {name}")
        try:
            for i in range(0, len(data), CHUNK):
                b64 = base64.b64encode(data[i:i + CHUNK]).decode()
                _check_error(self.run(f"_f.write(_a({b64!r}))"), f"upload {name}")
        finally:
            self.run("_f.close(); del _f, _a; gc.collect()")

    def push(self, data: bytes, name: str) -> None:
        """wasptool's --push: the same bytes, binary-safe (as upload)."""
        self.upload(data, name)

    def pull(self, name: str) -> bytes:
        """The watch's file ``name``, byte for byte: each chunk printed as a
        bytes literal (short REPL lines: the watch's heap is small)."""
        _check_error(self.run(f"import gc; gc.collect(); _f = open({name!r}, 'rb')"),
                     f"pull {name}")
        out = bytearray()
        try:
            while True:
                line = _check_error(self.run(f"print(_f.read({CHUNK}))"), f"pull {name}").strip()
                try:
                    chunk = ast.literal_eval(line)
                except (ValueError, SyntaxError):
                    raise WaspToolError(f"pull {name}: unexpected reply {line!r}") from None
                if not isinstance(chunk, bytes):
                    raise WaspToolError(f"pull {name}: unexpected reply {line!r}")
                if not chunk:
                    break
                out += chunk
        finally:
            self.run("_f.close(); del _f; gc.collect()")
        return bytes(out)

    # -- the watch -----------------------------------------------------------
    def set_rtc(self, t: time.struct_time) -> None:
        """Set the watch's clock (wasptool --rtc sends the host's local time)."""
        _check_error(self.run(rtc_line(t)), "rtc")

    def get_rtc(self) -> tuple:
        text = _check_error(self.run("print(watch.rtc.get_localtime())"), "rtc").strip()
        m = re.search(r"\(([\d,\s]+)\)", text)
        if m is None:
            raise WaspToolError(f"rtc: unexpected reply {text!r}")
        return tuple(int(x) for x in m.group(1).split(",") if x.strip())

    def check_rtc(self, t: time.struct_time) -> float:
        """The watch's time minus ``t``, in seconds (wasptool --check-rtc)."""
        y, mo, d, h, mi, s = self.get_rtc()[:6]
        watch = time.mktime((y, mo, d, h, mi, s, 0, 0, -1))
        return watch - time.mktime(t)

    def memfree(self) -> int:
        text = _check_error(self.run("import gc; gc.collect(); print(gc.mem_free())"), "memfree")
        return int(text.strip().split()[-1])

    def battery(self) -> int:
        text = _check_error(self.run("print(watch.battery.level())"), "battery")
        return int(text.strip().split()[-1])

    def notify(self, title: str, body: str, src: str = "Hangouts") -> None:
        msg = {"src": src, "title": title, "body": body}
        _check_error(self.run(f"wasp.system.notify(watch.rtc.get_uptime_ms(), {msg!r})"),
                     "notify")

    def reset(self) -> None:
        """wasptool --reset, as it does it: ``import machine`` and
        ``machine.reset()`` in paste mode, then Ctrl-D; the watch restarts (no
        prompt is waited for).  (This sent ``watch.reset()``, which wasp-os's
        ``watch`` does not have: the watch printed an AttributeError, and a
        phone that hung up during that output left wasp-os waiting for
        notifications that never completed.)"""
        for part, marker in ((b"\x05", b"=== "), (b"import machine\r", b"=== "),
                             (b"machine.reset()\r", b"=== ")):
            start = self.t.mark()
            self.t.send(part)
            self.t.read_until(marker, self.timeout_s, start)
        self.t.send(b"\x04")
