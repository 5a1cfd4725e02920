"""wasptool's verbs against the emulated watch's REPL, with wasptool's wire protocol.

wasp-os developers drive a watch with ``tools/wasptool`` over the Nordic UART
console.  :class:`WaspTool` types the same lines and keys as wasptool (wasp-os
14cc035, ``tools/wasptool``), so what wasptool can do to a watch, this can
too, over either the in-process phone (``machine.phone.wasp``: everything
runs on the emulated clock) or a running emulator's ``--bridge`` socket
(``pinetime-emu phone --upload FILE`` etc.: wall-clock timeouts):

* ``sync()`` / ``unsync()``: Ctrl-C and a tagged ``print`` (the watch stops
  and answers at the prompt), and ``wasp.system.run()`` (it runs again);
  ``pinetime-emu phone`` wraps every verb in them, as wasptool does;
* ``eval(code)``: Ctrl-E (paste mode), the text, Ctrl-D: what it printed
  (as wasptool, a bare expression shows nothing: ``print`` it, or use
  ``repl(line)``, which types a line at the prompt and returns what the
  REPL shows);
* ``exec_text(src)`` / ``exec_file(path)``: paste mode, line by line, each
  waiting for the ``=== `` prompt; comments, docstrings and blank lines are
  left out and every ``class`` starts a new paste (wasptool's ``paste``:
  the watch compiles a class at a time, which its heap can hold);
* ``upload(data, name)``: wasp-os's own ``shell.upload`` (the text, line
  by line, filtered as ``exec``'s); ``upload(..., binary=True)`` and
  ``push``: 64-byte chunks through ``ubinascii.a2b_base64``
  (``w = lambda d: ...``); both write ``name.part`` and then rename it over
  ``name`` (``os.rename``), so a transfer that fails part-way leaves the
  watch's old ``name`` as it was (wasptool writes ``name`` itself);
* ``pull(name)``: ``os.stat``, then ``repr(f.read(24))`` until empty;
* ``set_rtc(t)`` / ``check_rtc(t)``: ``watch.rtc.set_localtime`` with
  wasptool's 8-tuple, and the watch's time minus ``t`` in seconds;
* ``memfree()`` (before and after ``wasp.gc.collect()``), ``battery()``,
  ``notify(title, body, id)`` (``wasp.system.notify`` and the vibrator's
  pulse, as ``--send-notification``);
* ``reset()``: Ctrl-C, then paste mode ``import machine`` /
  ``machine.reset()``, as wasptool; when the watch cannot compile even that
  (its heap), Ctrl-C, Ctrl-C, Ctrl-D: MicroPython's soft reset, which needs
  no parser.  Unlike the other verbs it needs no ``sync()`` first, whose
  ``print`` such a watch answers MemoryError.

Errors raised by the watch (a Python exception printed at the REPL, or
wasp-os's ``FATAL: uncaught exception``) raise :class:`WaspToolError` with
the exception's line.

wasp-os's MicroPython heap is small (about 8 KB free at the clock face on
the upstream build, as on a real watch): the parser needs a 512-byte block
for every line, so a fragmented heap answers ``MemoryError`` (on a real
watch too, wasp-os issue #473); a reset clears it.  Builds that leave more
heap (the phone build, docs/firmware.md) take a whole session of verbs.
"""
from __future__ import annotations

import ast
import base64
import re
import select
import time
from typing import Optional, Sequence, Union

PROMPT = b">>> "
PASTE = b"=== "
FATAL = b"FATAL: uncaught exception"
SOFT_REBOOT = b"soft reboot"            # MicroPython's answer to Ctrl-D at a prompt
CHUNK = 64                  # bytes per base64 line (wasptool's --binary upload)
PULL_CHUNK = 24             # bytes per repr(f.read(n)) (wasptool's --pull)
SYNC_TAG = "WASPSYNC"       # wasptool's tag is random; any text that its echo does not contain
RUNNING = (b"Watch is running, use Ctrl-C to stop", b"Watch already running in the background")

Markers = Union[bytes, Sequence[bytes]]


class WaspToolError(Exception):
    pass


def _first(buf, markers: Markers, start: int):
    """(end of the earliest marker in buf[start:], the marker), or None."""
    if isinstance(markers, (bytes, bytearray)):
        markers = (markers,)
    best = None
    for mk in markers:
        i = buf.find(mk, start)
        if i >= 0 and (best is None or i < best[0]):
            best = (i, mk)
    return None if best is None else (best[0] + len(best[1]), best[1])


class MachineTransport:
    """The in-process phone (emu/phone/phone.py): waits run the machine."""

    def __init__(self, phone):
        self.phone = phone

    def send(self, data: bytes) -> None:
        self.phone.send(data)

    def read_until(self, marker: Markers, timeout_s: float, start: Optional[int] = None) -> bytes:
        p = self.phone
        if start is None:
            start = len(p.output)
        ok = p.machine.run_until(lambda: _first(p.output, marker, start) is not None
                                 and p.central.writes_pending == 0,
                                 timeout_ms=timeout_s * 1000)
        if not ok:
            raise WaspToolError(f"no {marker!r} from the watch within {timeout_s:g} emulated s; "
                                f"it printed {bytes(p.output[start:])[-200:]!r}")
        end, self.matched = _first(p.output, marker, start)
        self.last_end = end
        return bytes(p.output[start:end])

    def mark(self) -> int:
        return len(self.phone.output)


MAX_REPLY = 4 << 20        # bytes a reply may run to before the watch is given up on


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
            if len(self.buf) > MAX_REPLY:       # a peer that streams and never prompts
                raise WaspToolError(f"more than {MAX_REPLY} bytes from the bridge without "
                                    f"the reply waited for")

    def mark(self) -> int:
        return len(self.buf)

    def read_until(self, marker: Markers, timeout_s: float, start: Optional[int] = None) -> bytes:
        if start is None:
            start = len(self.buf)
        end = time.monotonic() + timeout_s       # a host tool: the host clock
        while _first(self.buf, marker, start) is None:
            left = end - time.monotonic()
            if left <= 0:
                raise WaspToolError(f"no {marker!r} from the watch within {timeout_s:g} s; it "
                                    f"printed {bytes(self.buf[start:])[-200:]!r}")
            self._fill(min(left, 0.1))
        stop, self.matched = _first(self.buf, marker, start)
        self.last_end = stop
        return bytes(self.buf[start:stop])


_ERROR_LINE = re.compile(r"^[A-Za-z]*(Error|Exception|Interrupt)\b.*", re.M)


def _check_error(text: str, what: str) -> str:
    """Raise WaspToolError when the REPL printed an exception (with or
    without a traceback: MicroPython reports a MemoryError while parsing
    the line on its own)."""
    m = _ERROR_LINE.search(text)
    if "Traceback (most recent call last)" in text or "FATAL: uncaught" in text or m:
        lines = [l for l in text.strip().splitlines() if l.strip()]
        raise WaspToolError(f"{what}: {(m.group(0) if m else lines[-1]).strip()}")
    return text


def paste_lines(text: str) -> list:
    """The lines wasptool's ``paste`` sends of a source file: right-stripped,
    without comment lines, blank lines and docstrings (a line that starts
    with triple double quotes opens one, a line that ends with them closes
    it: wasptool's rule, kept as it is so a file lands as wasptool lands it)."""
    out, docstring = [], False
    for ln in text.splitlines():
        ln = ln.rstrip()
        if ln.lstrip().startswith('"""'):
            docstring = True
        if docstring:
            if ln.rstrip().endswith('"""'):
                docstring = False
            continue
        if ln.lstrip().startswith("#") or ln.strip() == "":
            continue
        out.append(ln)
    return out


def rtc_line(t: time.struct_time) -> str:
    """The REPL line wasptool --rtc types to set the watch's clock to ``t``."""
    return "watch.rtc.set_localtime((%d, %d, %d, %d, %d, %d, %d, %d))" % (
        t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, t.tm_wday, t.tm_yday)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").replace("\r\n", "\n")


class WaspTool:
    def __init__(self, transport, timeout_s: float = 10.0):
        self.t = transport
        self.timeout_s = timeout_s

    # -- the REPL ------------------------------------------------------------
    def run(self, line: str, timeout_s: Optional[float] = None) -> str:
        """One REPL line (wasptool's ``run_command``); what it printed, the
        echo and the prompt removed.  Anything the watch printed before the
        line's echo (a banner after a reset, a stray prompt) is skipped."""
        timeout = timeout_s or self.timeout_s
        start = self.t.mark()
        self.t.send(line.encode() + b"\r")
        self.t.read_until(line.encode() + b"\r\n", timeout, start)
        out = self.t.read_until(PROMPT, timeout, self.t.last_end)
        text = _text(out)
        return text[:text.rfind(">>>")]

    def repl(self, line: str) -> str:
        """Type ``line`` at the prompt; what the REPL shows (a value's repr)."""
        return _check_error(self.run(line), f"{line!r}")

    def sync(self) -> None:
        """Stop the watch and meet it at the prompt (wasptool's ``sync``):
        Ctrl-C, the prompt, then a print whose text its echo does not hold."""
        start = self.t.mark()
        self.t.send(b"\x03")
        self.t.read_until(PROMPT, self.timeout_s, start)
        out = self.run(f'print("{SYNC_TAG[:4]}""{SYNC_TAG[4:]}")')
        if SYNC_TAG not in out:
            raise WaspToolError(f"cannot sync with the watch: {_check_error(out, 'sync')!r}")

    def unsync(self) -> None:
        """Set the watch running again (wasptool's ``unsync``)."""
        start = self.t.mark()
        self.t.send(b"wasp.system.run()\r")
        self.t.read_until(b"wasp.system.run()\r\n", self.timeout_s, start)      # the echo
        out = self.t.read_until(RUNNING + (PROMPT, ), self.timeout_s, self.t.last_end)
        if self.t.matched not in RUNNING:
            _check_error(_text(out), "wasp.system.run()")
            raise WaspToolError(f"wasp.system.run(): the watch answered {_text(out)!r}")

    def _paste(self, lines, what: str, chunk_at_class: bool = False) -> str:
        """Each line, then the ``=== `` it is answered with (wasptool's
        ``paste``); what the watch printed when a chunk ran, when
        ``chunk_at_class`` (paste mode: Ctrl-D runs what was pasted, Ctrl-E
        starts again before each class)."""
        printed = []
        for ln in lines:
            if chunk_at_class and ln.startswith("class"):
                printed.append(self._paste_end(what))
                self._paste_begin()
            start = self.t.mark()
            self.t.send(ln.encode() + b"\r")
            self.t.read_until(b"\r\n", self.timeout_s, start)         # the echo
            out = self.t.read_until((PASTE, PROMPT, FATAL), self.timeout_s, self.t.last_end)
            if self.t.matched != PASTE:
                if self.t.matched == FATAL:        # the message follows: its line
                    try:
                        out += self.t.read_until(b"\n", 2.0, self.t.last_end)
                    except WaspToolError:
                        pass
                _check_error(_text(out), what)
                raise WaspToolError(f"{what}: the watch left paste mode at {ln[:60]!r}")
        return "".join(printed)

    def _paste_begin(self) -> None:
        start = self.t.mark()
        self.t.send(b"\x05")                          # Ctrl-E: paste mode
        self.t.read_until(PASTE, self.timeout_s, start)

    def _paste_end(self, what: str, timeout_s: Optional[float] = None) -> str:
        start = self.t.mark()
        self.t.send(b"\x04")                          # Ctrl-D: run it
        text = _text(self.t.read_until(PROMPT, timeout_s or self.timeout_s * 3, start))
        text = text[:text.rfind(">>>")]
        return _check_error(text.lstrip("\n"), what)

    def eval(self, code: str) -> str:
        """wasptool's --eval: ``code`` run in paste mode; what it printed
        (a bare expression prints nothing, as on a watch)."""
        self._paste_begin()
        self._paste([code], "eval")
        return self._paste_end(f"eval {code!r}")

    def exec_text(self, src: str, timeout_s: Optional[float] = None) -> str:
        """wasptool's --exec: ``src`` pasted line by line, a class at a time;
        what it printed."""
        self._paste_begin()
        printed = self._paste(paste_lines(src), "exec", chunk_at_class=True)
        return printed + self._paste_end("exec", timeout_s)

    def exec_file(self, path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return self.exec_text(f.read())

    # -- files ---------------------------------------------------------------
    def upload(self, data: bytes, name: str, binary: bool = False) -> None:
        """Write ``data`` as the watch's file ``name``, as wasptool --upload
        (``shell.upload``: the text's lines, filtered as wasptool filters
        them) or --upload --binary (``binary``: the bytes as they are), into
        ``name.part`` and then renamed over ``name``: a failure part-way (the
        watch's heap, a lost link) leaves the old ``name`` as it was."""
        part = name + ".part"
        d = name.rpartition("/")[0]
        if d:                                   # wasptool: os.mkdir, whatever it answers
            self.run("import os")
            self.run(f"os.mkdir({d!r})")
            self.run("del os")
        if binary:
            self._upload_binary(data, name, part)
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise WaspToolError(f"upload {name}: not UTF-8 text; send it as binary "
                                    f"(--binary, or --push)") from None
            self._upload_text(text, name, part)
        # littlefs (wasp-os) renames over an existing file; FAT needs it removed first.
        # A line the parser has no room for (MemoryError) is typed again: the
        # failed attempt collected the heap, and the line is short.
        renamed = self._retry(f"import os; os.rename({part!r}, {name!r}); del os")
        if renamed is None:
            self._retry(f"import os; os.remove({name!r}); del os")
            if self._retry(f"import os; os.rename({part!r}, {name!r}); del os") is None:
                raise WaspToolError(f"upload {name}: written as {part}, not renamed: "
                                    f"{self._last_error}")

    def _retry(self, line: str, tries: int = 3) -> Optional[str]:
        """Run a line, again while it answers MemoryError; None if it failed."""
        for _ in range(tries):
            try:
                return _check_error(self.run(line), line)
            except WaspToolError as e:
                self._last_error = str(e)
                if "MemoryError" not in str(e):
                    return None
            except OSError as e:
                self._last_error = str(e)
                return None
        return None

    def _upload_text(self, text: str, name: str, part: str) -> None:
        _check_error(self.run("from shell import upload"), f"upload {name}")
        try:
            start = self.t.mark()
            self.t.send(f"upload({part!r})\r".encode())
            out = self.t.read_until((PASTE, PROMPT), self.timeout_s, start)
            if self.t.matched != PASTE:
                _check_error(_text(out), f"upload {name}")
                raise WaspToolError(f"upload {name}: shell.upload did not start")
            self._paste(paste_lines(text), f"upload {name}")
            self._paste_end(f"upload {name}")
        except (WaspToolError, OSError) as e:
            # Ctrl-C cancels shell.upload; then the part file goes
            self._try_keys(b"\x03")
            gone = self._try(f"import os; os.remove({part!r}); del os", min(self.timeout_s, 5.0))
            raise WaspToolError(f"{e} ({self._left(name, part, gone)})") from None

    def _upload_binary(self, data: bytes, name: str, part: str) -> None:
        try:
            _check_error(self.run("import ubinascii"), f"upload {name}")
            _check_error(self.run(f"f = open({part!r}, 'wb')"), f"upload {name}")
            _check_error(self.run("w = lambda d: f.write(ubinascii.a2b_base64(d))"),
                         f"upload {name}")
            for i in range(0, len(data), CHUNK):
                b64 = base64.b64encode(data[i:i + CHUNK]) + b"\n"    # binascii.b2a_base64's
                _check_error(self.run(f"w({b64!r})"), f"upload {name}")
            _check_error(self.run("f.close()"), f"upload {name}")
            self.run("del w")
            self.run("del ubinascii")
        except (WaspToolError, OSError) as e:
            gone = self._try(f"f.close(); import os; os.remove({part!r}); del os, f, w",
                             min(self.timeout_s, 5.0))      # tidy up if the watch still can
            raise WaspToolError(f"{e} ({self._left(name, part, gone)})") from None

    @staticmethod
    def _left(name: str, part: str, gone) -> str:
        if gone is not None:
            return f"the watch's {name} is unchanged"
        return (f"the watch's {name} is unchanged; it could not remove {part}, "
                f"which the next upload of {name} replaces")

    def _try(self, line: str, timeout_s: Optional[float] = None) -> Optional[str]:
        """Run a line; None if it failed (the REPL raised, or the link is gone)."""
        try:
            return _check_error(self.run(line, timeout_s), line)
        except (WaspToolError, OSError):
            return None

    def _try_keys(self, keys: bytes) -> None:
        try:
            start = self.t.mark()
            self.t.send(keys)
            self.t.read_until(PROMPT, min(self.timeout_s, 5.0), start)
        except (WaspToolError, OSError):
            pass

    def push(self, data: bytes, name: str) -> None:
        """wasptool's --push: the bytes as they are (--upload --binary)."""
        self.upload(data, name, binary=True)

    def pull(self, name: str) -> bytes:
        """The watch's file ``name``, byte for byte (wasptool's --pull:
        ``os.stat``, then ``repr(f.read(24))`` until it is empty)."""
        self.run("import os")
        size = self.run(f"os.stat({name!r})[6]").strip()
        if "Error" in size:
            self.run("del os")
            _check_error(size, f"pull {name}")
        _check_error(self.run(f"f = open({name!r}, 'rb')"), f"pull {name}")
        out = bytearray()
        try:
            while True:
                reply = _check_error(self.run(f"repr(f.read({PULL_CHUNK}))"),
                                     f"pull {name}").strip()
                try:                            # the REPL shows the repr of a repr
                    chunk = ast.literal_eval(ast.literal_eval(reply))
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    raise WaspToolError(f"pull {name}: unexpected reply {reply[:80]!r}") from None
                if not isinstance(chunk, bytes) or len(chunk) > PULL_CHUNK:
                    raise WaspToolError(f"pull {name}: unexpected reply {reply[:80]!r}")
                if not chunk:
                    break
                out += chunk
        finally:
            self._try("f.close()", min(self.timeout_s, 5.0))
            self._try("del f", min(self.timeout_s, 5.0))
            self._try("del os", min(self.timeout_s, 5.0))
        if size.isdigit() and int(size) != len(out):
            raise WaspToolError(f"pull {name}: the watch said {size} bytes and sent {len(out)}")
        return bytes(out)

    # -- the watch -----------------------------------------------------------
    def set_rtc(self, t: time.struct_time) -> None:
        """Set the watch's clock (wasptool --rtc sends the host's local time,
        just after the host's second has ticked over)."""
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

    def memfree(self) -> tuple:
        """Free heap in bytes before and after a collection (wasptool --memfree)."""
        before = _check_error(self.run("wasp.gc.mem_free()"), "memfree").strip()
        _check_error(self.run("wasp.gc.collect()"), "memfree")
        after = _check_error(self.run("wasp.gc.mem_free()"), "memfree").strip()
        try:
            return int(before), int(after)
        except ValueError:
            raise WaspToolError(f"memfree: unexpected reply {before!r}, {after!r}") from None

    def battery(self) -> int:
        text = _check_error(self.run("watch.battery.level()"), "battery").strip()
        try:
            return int(text)
        except ValueError:
            raise WaspToolError(f"battery: unexpected reply {text!r}") from None

    def notify(self, title: str, body: str, id: int = 1) -> None:
        """wasptool's --send-notification: ``wasp.system.notify`` and a pulse."""
        msg = {"title": title, "body": body}
        _check_error(self.run(f"wasp.system.notify({int(id)},  {msg!r})"), "notify")
        _check_error(self.run("watch.vibrator.pulse(ms=wasp.system.notify_duration)"), "notify")

    def reset(self) -> None:
        """wasptool's --reset: paste mode ``machine.reset()``, no prompt
        waited for.  When the watch answers instead (it could not compile
        even that: a fragmented heap), Ctrl-C, Ctrl-C and Ctrl-D at the
        empty prompt: MicroPython's soft reset, which reruns wasp-os with a
        fresh heap and needs no parser.  It needs no :meth:`sync` first
        (whose ``print`` a fragmented heap answers MemoryError): Ctrl-C
        stops the watch and clears the line, and its prompt, which the REPL
        prints without parsing anything, is waited for only briefly."""
        start = self.t.mark()
        self.t.send(b"\x03")
        try:
            self.t.read_until(PROMPT, min(self.timeout_s, 5.0), start)
        except WaspToolError:
            pass                                # paste mode's "=== " tells below
        self._paste_begin()
        self._paste(["import machine", "machine.reset()"], "reset")
        start = self.t.mark()
        self.t.send(b"\x04")
        try:
            out = _text(self.t.read_until(PROMPT, 2.0, start))
        except (WaspToolError, OSError):
            return                              # it went: no prompt
        if _ERROR_LINE.search(out) or "Traceback" in out:
            start = self.t.mark()
            self.t.send(b"\x03\x03\x04")
            try:                                # its answer, briefly: the bytes
                self.t.read_until(SOFT_REBOOT, 2.0, start)   # arrived before a hang-up
            except (WaspToolError, OSError):
                pass                            # it went (a link dropped): fine
