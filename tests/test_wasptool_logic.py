"""wasptool's verbs (emu/phone/wasptool.py) against a fake MicroPython REPL,
without firmware: the logic of upload's write-then-rename, reset without the
REPL's parser, and a peer that streams without ever prompting.

Before issue 24: reset() typed ``watch.reset()``, which a REPL answering
every line MemoryError (wasp-os's heap after its first boot) cannot run; a
failed upload left a truncated file under the real name; a bridge streaming
bytes without a prompt grew the client's buffer until the timeout.
(tests/test_wasptool.py runs the same verbs on the real wasp-os image.)
"""
from __future__ import annotations

import base64
import builtins
import contextlib
import io
import socket
import threading

import pytest

from emu.phone.wasptool import SocketTransport, WaspTool, WaspToolError


class FakeFile(io.BytesIO):
    def __init__(self, fs, name, mode):
        super().__init__(fs.get(name, b"") if "r" in mode else b"")
        if "r" in mode and name not in fs:
            raise OSError(2, "ENOENT")
        self.fs, self.name, self.mode = fs, name, mode

    def close(self):
        if "w" in self.mode and not self.closed:
            self.fs[self.name] = self.getvalue()
        super().close()


class FakeRepl:
    """A transport whose far end is a MicroPython-like REPL running Python:
    echo, output, '>>> '.  ``fragmented``: every non-empty line answers
    MemoryError, as wasp-os after its first boot; Ctrl-D at an empty line
    is a soft reset (a fresh heap).  ``fail_after``: the link drops after
    that many lines."""

    def __init__(self, files=None, fragmented=False, fail_after=None):
        self.fs = dict(files or {})
        self.fragmented = fragmented
        self.fail_after = fail_after
        self.lines = []
        self.out = bytearray(b">>> ")
        self.line = bytearray()
        self.soft_resets = 0
        self._fresh()

    def _fresh(self):
        fs = self.fs

        class Os:
            @staticmethod
            def rename(a, b):
                if a not in fs:
                    raise OSError(2, "ENOENT")
                fs[b] = fs.pop(a)

            @staticmethod
            def remove(a):
                if a not in fs:
                    raise OSError(2, "ENOENT")
                del fs[a]
        mods = {"os": Os, "gc": type("gc", (), {"collect": staticmethod(lambda: None),
                                                "mem_free": staticmethod(lambda: 9000)}),
                "ubinascii": type("ub", (), {"a2b_base64": staticmethod(base64.b64decode)})}

        def imp(name, *a, **k):
            return mods[name]
        self.ns = {"__builtins__": dict(builtins.__dict__, __import__=imp,
                                        open=lambda n, m="r": FakeFile(fs, n, m))}

    # the transport interface (as SocketTransport)
    def mark(self):
        return len(self.out)

    def send(self, data: bytes):
        if self.fail_after is not None and len(self.lines) >= self.fail_after:
            raise WaspToolError("the bridge closed the connection")
        for b in data:
            if b == 0x03:                               # Ctrl-C: a fresh prompt
                self.line.clear()
                self.out += b"\r\n>>> "
            elif b == 0x04 and not self.line:           # Ctrl-D: soft reset
                self.soft_resets += 1
                self.fragmented = False
                self._fresh()
                self.out += b"MPY: soft reboot\r\n>>> "
            elif b == 0x0D:
                self._line(bytes(self.line).decode())
                self.line.clear()
            else:
                self.line.append(b)

    def _line(self, text):
        self.lines.append(text)
        self.out += text.encode() + b"\r\n"
        if text.strip() and self.fragmented:
            self.out += b"MemoryError: \r\n>>> "
            return
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                exec(compile(text, "<stdin>", "single"), self.ns)
        except Exception as e:                           # as the REPL prints it
            buf.write(f"Traceback (most recent call last):\n  File \"<stdin>\", line 1, in "
                      f"<module>\n{type(e).__name__}: {e}\n")
        self.out += buf.getvalue().replace("\n", "\r\n").encode() + b">>> "

    def read_until(self, marker, timeout_s, start=None):
        start = len(self.out) if start is None else start
        i = self.out.find(marker, start)
        if i < 0:
            raise WaspToolError(f"no {marker!r} from the watch within {timeout_s:g} s")
        end = i + len(marker)
        self.last_end = end
        return bytes(self.out[start:end])


DATA = bytes(range(256)) * 3


def test_upload_writes_a_part_file_and_renames_it_over_the_old_one():
    repl = FakeRepl({"app.py": b"old"})
    WaspTool(repl).upload(DATA, "app.py")
    assert repl.fs == {"app.py": DATA}
    assert any("os.rename('app.py.part', 'app.py')" in l for l in repl.lines)


@pytest.mark.parametrize("fail_after", [2, 5, 9])
def test_a_failed_upload_says_so_and_leaves_the_old_file(fail_after):
    repl = FakeRepl({"app.py": b"old"}, fail_after=fail_after)
    with pytest.raises(WaspToolError, match="the watch's app.py is unchanged"):
        WaspTool(repl).upload(DATA, "app.py")
    assert repl.fs["app.py"] == b"old"


def test_a_watch_error_mid_upload_removes_the_part_file():
    repl = FakeRepl({"app.py": b"old"})
    tool = WaspTool(repl)
    real = repl._line

    def line(text):                         # the heap runs out at the third chunk
        if text.startswith("_f.write") and sum(l.startswith("_f.write")
                                               for l in repl.lines) == 2:
            repl.lines.append(text)
            repl.out += text.encode() + b"\r\nMemoryError: memory allocation failed\r\n>>> "
            return
        real(text)
    repl._line = line
    with pytest.raises(WaspToolError, match=r"MemoryError.*app.py is unchanged"):
        tool.upload(DATA, "app.py")
    assert repl.fs == {"app.py": b"old"}        # and no app.py.part left behind


def test_a_rename_that_does_not_replace_falls_back_to_remove_then_rename():
    repl = FakeRepl({"app.py": b"old"})
    fs = repl.fs

    class FatOs:                                # FAT: rename refuses an existing target
        @staticmethod
        def rename(a, b):
            if b in fs:
                raise OSError(17, "EEXIST")
            fs[b] = fs.pop(a)

        @staticmethod
        def remove(a):
            del fs[a]
    imp = repl.ns["__builtins__"]["__import__"]
    repl.ns["__builtins__"]["__import__"] = lambda n, *a, **k: FatOs if n == "os" else imp(n)
    WaspTool(repl).upload(DATA, "app.py")
    assert fs == {"app.py": DATA}


def test_reset_needs_no_line_parsed():
    repl = FakeRepl(fragmented=True)
    tool = WaspTool(repl)
    with pytest.raises(WaspToolError, match="MemoryError"):
        tool.eval("1+1")                        # every line: MemoryError
    tool.reset()
    assert repl.soft_resets == 1
    assert "watch.reset()" not in repl.lines    # nothing typed for the parser
    assert tool.eval("1+1").strip() == "2"      # a fresh heap


def test_pull_with_a_reply_that_is_not_bytes_is_an_error():
    repl = FakeRepl({"x": b"abc"})
    repl.ns["__builtins__"]["print"] = lambda *a: builtins.print("(" * 5000)
    with pytest.raises(WaspToolError, match="unexpected reply"):
        WaspTool(repl).pull("x")


def test_a_bridge_that_streams_without_a_prompt_is_given_up_on():
    a, b = socket.socketpair()
    stop = threading.Event()

    def flood():
        try:
            while not stop.is_set():
                b.sendall(b"x" * 65536)
        except OSError:
            pass
    t = threading.Thread(target=flood, daemon=True)
    t.start()
    try:
        with pytest.raises(WaspToolError, match="without the reply"):
            WaspTool(SocketTransport(a), timeout_s=60).eval("1")
    finally:
        stop.set()
        a.close()
        b.close()
        t.join(5)


def test_reset_on_real_wasp_os_after_its_first_boot(tmp_path):
    """wasp-os's first boot formats the NOR and leaves the heap too
    fragmented for the REPL's parser: every line answers MemoryError, so
    wasptool's ``watch.reset()`` cannot run.  reset() (Ctrl-C, Ctrl-D) still
    restarts it, and the REPL answers again."""
    from test_wasptool import _image                 # skips without the image
    from emu import Machine
    m = Machine(_image(), flash_file=str(tmp_path / "nor.bin"))
    m.run(seconds=5.0)
    p = m.phone
    p.connect()
    w = p.wasp
    with pytest.raises(WaspToolError, match="MemoryError"):
        w.eval("1+1")
    w.reset()
    assert m.run_until(lambda: not p.central.connected, timeout_ms=3000), "no restart"
    p.connect(timeout_ms=8000)
    assert p.wait_for(b">>> ", start=len(p.output), timeout_ms=8000)
    assert w.eval("1+1").strip() == "2"
