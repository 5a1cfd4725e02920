"""wasptool's verbs (emu/phone/wasptool.py) against a fake MicroPython REPL,
without firmware: the logic of upload's write-then-rename, reset without the
REPL's parser, and a peer that streams without ever prompting.

Before issue 24: reset() typed ``watch.reset()``, which a REPL answering
every line MemoryError (wasp-os's heap after its first boot) cannot run; a
failed upload left a truncated file under the real name; a bridge streaming
bytes without a prompt grew the client's buffer until the timeout.
(tests/firmware/test_wasptool.py runs the same verbs on the real wasp-os image.)
"""
from __future__ import annotations

import base64
import builtins
import contextlib
import io
import socket
import threading
import time

import pytest

from emu.phone.wasptool import SocketTransport, WaspTool, WaspToolError, _first, paste_lines


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
    """A transport whose far end is a MicroPython-like REPL running Python,
    with wasp-os's bits wasptool uses: echo, output, '>>> '; Ctrl-C; paste
    mode (Ctrl-E, '=== ', Ctrl-D runs it); ``shell.upload`` (its own '=== '
    prompts until Ctrl-D); ``wasp.system.run()``; ``machine.reset()``.
    ``fragmented``: every line and paste answers MemoryError, as wasp-os
    after its first boot; Ctrl-D at an empty line is a soft reset (a fresh
    heap).  ``fail_after``: the link drops after that many lines."""

    def __init__(self, files=None, fragmented=False, fail_after=None):
        self.fs = dict(files or {})
        self.fragmented = fragmented
        self.fail_after = fail_after
        self.lines = []
        self.sent = bytearray()
        self.out = bytearray(b">>> ")
        self.line = bytearray()
        self.soft_resets = 0
        self.hard_resets = 0
        self.pastes = 0
        self.paste = None                   # the lines of a paste, in paste mode
        self.upload = None                  # the open file, in shell.upload
        self._fresh()

    def _fresh(self):
        fs, repl = self.fs, self

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

            @staticmethod
            def stat(a):
                if a not in fs:
                    raise OSError(2, "ENOENT")
                return (0x8000, 0, 0, 0, 0, 0, len(fs[a]), 0, 0, 0)

            @staticmethod
            def mkdir(a):
                raise OSError(17, "EEXIST")

        def upload(path):
            print("upload mode; Ctrl-C to cancel, Ctrl-D to finish")
            repl.upload = FakeFile(fs, path, "w")
        gc = type("gc", (), {"collect": staticmethod(lambda: None),
                             "mem_free": staticmethod(lambda: 9000)})
        system = type("system", (), {"run": staticmethod(
            lambda: print("Watch already running in the background")),
            "notify": staticmethod(lambda i, m: None), "notify_duration": 80})
        mods = {"os": Os, "gc": gc,
                "ubinascii": type("ub", (), {"a2b_base64": staticmethod(base64.b64decode)}),
                "shell": type("shell", (), {"upload": staticmethod(upload)}),
                "machine": type("machine", (), {"reset": staticmethod(self._hard_reset)})}

        mods["wasp"] = type("wasp", (), {"gc": gc, "system": system})

        def imp(name, globals=None, locals=None, fromlist=(), level=0):
            return mods[name]
        self.ns = {"__builtins__": dict(builtins.__dict__, __import__=imp,
                                        open=lambda n, m="r": FakeFile(fs, n, m)),
                   "wasp": mods["wasp"],
                   "watch": type("watch", (), {"battery": type("b", (), {
                       "level": staticmethod(lambda: 87)}), "vibrator": type("v", (), {
                           "pulse": staticmethod(lambda ms: None)})})}

    def _hard_reset(self):
        self.hard_resets += 1
        raise SystemExit               # the watch is gone: no prompt follows

    # the transport interface (as SocketTransport)
    def mark(self):
        return len(self.out)

    def send(self, data: bytes):
        if self.fail_after is not None and len(self.lines) >= self.fail_after:
            raise WaspToolError("the bridge closed the connection")
        self.sent += data
        for b in data:
            if b == 0x03:                               # Ctrl-C
                self.line.clear()
                if self.upload is not None:
                    self.upload.close()
                    self.upload = None
                    self.out += b"\r\nTraceback (most recent call last):\r\nKeyboardInterrupt: \r\n"
                self.paste = None
                self.out += b"\r\n>>> "
            elif b == 0x05 and self.paste is None and not self.line:     # Ctrl-E
                self.paste = []
                self.out += b"\r\npaste mode; Ctrl-C to cancel, Ctrl-D to finish\r\n=== "
            elif b == 0x04 and self.upload is not None:                   # EOF to input()
                self.upload.close()
                self.upload = None
                self.out += b"\r\n>>> "
            elif b == 0x04 and self.paste is not None:                    # run the paste
                src, self.paste = "\n".join(self.paste), None
                self.pastes += 1
                self.out += b"\r\n"
                if self.fragmented:
                    self.out += b"MemoryError: memory allocation failed\r\n>>> "
                else:
                    self._run(src, "exec")
            elif b == 0x04 and not self.line:           # Ctrl-D: soft reset
                self.soft_resets += 1
                self.fragmented = False
                self._fresh()
                self.out += b"MPY: soft reboot\r\n>>> "
            elif b == 0x0D:
                text = bytes(self.line).decode()
                self.line.clear()
                self.lines.append(text)
                self.out += text.encode() + b"\r\n"
                if self.upload is not None:
                    self.upload.write(text.encode() + b"\n")
                    self.out += b"=== "
                elif self.paste is not None:
                    self.paste.append(text)
                    self.out += b"=== "
                elif text.strip() and self.fragmented:
                    self.out += b"MemoryError: \r\n>>> "
                else:
                    self._run(text, "single")
            else:
                self.line.append(b)

    def _run(self, src, mode):
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                exec(compile(src, "<stdin>", mode), self.ns)
        except SystemExit:
            return
        except Exception as e:                           # as the REPL prints it
            buf.write(f"Traceback (most recent call last):\n  File \"<stdin>\", line 1, in "
                      f"<module>\n{type(e).__name__}: {e}\n")
        self.out += buf.getvalue().replace("\n", "\r\n").encode()
        self.out += b"=== " if self.upload is not None else b">>> "

    def read_until(self, marker, timeout_s, start=None):
        start = len(self.out) if start is None else start
        got = _first(self.out, marker, start)
        if got is None:
            raise WaspToolError(f"no {marker!r} from the watch within {timeout_s:g} s")
        self.last_end, self.matched = got
        return bytes(self.out[start:self.last_end])


DATA = bytes(range(256)) * 3
SOURCE = '''"""An app."""
import wasp

# a comment


class App():
    """Its docstring,
    on two lines."""
    NAME = 'App'   # kept: not a comment line

    def foreground(self):
        print("hello")
class Two():
    pass
'''


def test_binary_upload_writes_a_part_file_and_renames_it_over_the_old_one():
    repl = FakeRepl({"app.py": b"old"})
    WaspTool(repl).upload(DATA, "app.py", binary=True)
    assert repl.fs == {"app.py": DATA}
    assert "f = open('app.py.part', 'wb')" in repl.lines
    assert "w = lambda d: f.write(ubinascii.a2b_base64(d))" in repl.lines
    chunks = [l for l in repl.lines if l.startswith("w(b'")]
    assert len(chunks) == len(DATA) // 64 and all(l.endswith("\\n')") for l in chunks)
    assert "import os; os.rename('app.py.part', 'app.py'); del os" in repl.lines


def test_text_upload_is_shell_upload_with_wasptools_filter():
    repl = FakeRepl({"app.py": b"old"})
    WaspTool(repl).upload(SOURCE.encode(), "app.py")
    want = "".join(l + "\n" for l in paste_lines(SOURCE))
    assert repl.fs == {"app.py": want.encode()}
    assert "upload('app.py.part')" in repl.lines and "from shell import upload" in repl.lines
    assert "# a comment" not in want and "docstring" not in want and "An app" not in want
    assert "    NAME = 'App'   # kept: not a comment line\n" in want


def test_text_upload_of_bytes_that_are_not_text_says_binary():
    with pytest.raises(WaspToolError, match="--binary"):
        WaspTool(FakeRepl()).upload(b"\xff\xfe", "x.bin")


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("fail_after", [2, 5, 9])
def test_a_failed_upload_says_so_and_leaves_the_old_file(fail_after, binary):
    repl = FakeRepl({"app.py": b"old"}, fail_after=fail_after)
    with pytest.raises(WaspToolError, match="the watch's app.py is unchanged"):
        WaspTool(repl).upload(DATA if binary else SOURCE.encode(), "app.py", binary=binary)
    assert repl.fs["app.py"] == b"old"


def test_a_watch_error_mid_upload_removes_the_part_file():
    repl = FakeRepl({"app.py": b"old"})
    tool = WaspTool(repl)
    real = repl._run

    def run(src, mode):                     # the heap runs out at the third chunk
        if src.startswith("w(b'") and sum(l.startswith("w(b'") for l in repl.lines) == 3:
            repl.out += b"MemoryError: memory allocation failed\r\n>>> "
            return
        real(src, mode)
    repl._run = run
    with pytest.raises(WaspToolError, match=r"MemoryError.*app.py is unchanged"):
        tool.upload(DATA, "app.py", binary=True)
    assert repl.fs == {"app.py": b"old"}        # and no app.py.part left behind


def test_a_watch_error_mid_text_upload_cancels_it_and_removes_the_part_file():
    repl = FakeRepl({"app.py": b"old"})
    real = repl.send

    def send(data):                             # wasp-os dies at the fourth line
        if repl.upload is not None and sum(1 for _ in repl.upload.getvalue().splitlines()) == 3 \
                and data.endswith(b"\r"):
            repl.out += data[:-1] + b"\r\nFATAL: uncaught exception 20004680\r\n"
            return
        real(data)
    repl.send = send
    with pytest.raises(WaspToolError, match=r"FATAL.*app.py is unchanged"):
        WaspTool(repl).upload(SOURCE.encode(), "app.py")
    assert repl.fs == {"app.py": b"old"}


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
    WaspTool(repl).upload(DATA, "app.py", binary=True)
    assert fs == {"app.py": DATA}


def test_pull_reads_reprs_of_24_bytes():
    repl = FakeRepl({"x.bin": DATA})
    assert WaspTool(repl).pull("x.bin") == DATA
    assert repl.lines.count("repr(f.read(24))") == len(DATA) // 24 + 1
    assert "os.stat('x.bin')[6]" in repl.lines


def test_pull_of_a_missing_file_is_the_watchs_error():
    with pytest.raises(WaspToolError, match="pull nope.py: .*ENOENT"):
        WaspTool(FakeRepl()).pull("nope.py")


def test_eval_is_paste_mode_as_wasptool():
    repl = FakeRepl()
    tool = WaspTool(repl)
    assert tool.eval("6*7").strip() == ""           # a bare expression shows nothing
    assert tool.eval("print(6*7)").strip() == "42"
    assert tool.repl("6*7").strip() == "42"         # a line at the prompt shows its value
    assert repl.pastes == 2
    with pytest.raises(WaspToolError, match="NameError"):
        tool.eval("print(no_such_name)")


def test_exec_pastes_a_class_at_a_time():
    repl = FakeRepl()
    out = WaspTool(repl).exec_text(SOURCE + "App().foreground()\n")
    assert out.strip() == "hello"
    assert repl.pastes == 3                         # before App, before Two, the end


def test_sync_unsync_and_the_small_verbs_type_what_wasptool_types():
    repl = FakeRepl()
    tool = WaspTool(repl)
    tool.sync()
    assert repl.sent.startswith(b"") and 'print("WASP""SYNC")' in repl.lines
    assert tool.memfree() == (9000, 9000)
    assert tool.battery() == 87
    tool.notify("Ann", "Lunch?", 3)
    assert "wasp.system.notify(3,  {'title': 'Ann', 'body': 'Lunch?'})" in repl.lines
    assert "watch.vibrator.pulse(ms=wasp.system.notify_duration)" in repl.lines
    tool.unsync()
    assert repl.lines[-1] == "wasp.system.run()"


def test_reset_is_machine_reset_in_paste_mode():
    repl = FakeRepl()
    WaspTool(repl).reset()
    assert repl.hard_resets == 1 and repl.soft_resets == 0
    assert repl.lines[-2:] == ["import machine", "machine.reset()"]


def test_reset_of_a_watch_that_cannot_compile_is_a_soft_reset():
    repl = FakeRepl(fragmented=True)
    tool = WaspTool(repl)
    with pytest.raises(WaspToolError, match="MemoryError"):
        tool.repl("1+1")                        # every line: MemoryError
    tool.reset()
    assert repl.soft_resets == 1 and repl.hard_resets == 0
    assert tool.repl("1+1").strip() == "2"      # a fresh heap


def test_pull_with_a_reply_that_is_not_bytes_is_an_error():
    repl = FakeRepl({"x": b"abc"})
    repl.ns["__builtins__"]["repr"] = lambda *a: "(" * 5000
    with pytest.raises(WaspToolError, match="unexpected reply"):
        WaspTool(repl).pull("x")


def _wasptool_module():
    """wasp-os's tools/wasptool as a module (its functions; not run)."""
    import importlib.machinery
    import importlib.util
    import os
    from pathlib import Path
    tree = Path(os.environ.get("PINETIME_EMU_WASP_TREE")
                or Path.home() / ".cache" / "pinetime-emu" / "wasp-os" / "tree")
    path = tree / "tools" / "wasptool"
    if not path.is_file():
        pytest.skip(f"no wasp-os tree with tools/wasptool at {tree}: set PINETIME_EMU_WASP_TREE")
    pytest.importorskip("pexpect", reason="wasptool imports pexpect")
    loader = importlib.machinery.SourceFileLoader("wasptool_under_test", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_paste_lines_sends_what_wasptools_paste_sends():
    """Our filter against wasptool's own ``paste`` (a recording console)."""
    wt = _wasptool_module()

    class Console:
        def __init__(self):
            self.sent = []

        def sendline(self, line):
            self.sent.append(line)

        def expect(self, patterns, timeout=None):
            return 0
    for text in (SOURCE, '"""\nodd\n"""\nx = 1\n', "a=1\n\n   # c\n\tb=2  \n"):
        c = Console()
        wt.paste(c, io.StringIO(text), verbose=True)
        assert paste_lines(text) == c.sent, text


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
    from helpers.wasp import wasp_image              # skips without the image
    from emu import Machine
    m = Machine(wasp_image(), flash_file=str(tmp_path / "nor.bin"))
    m.run(seconds=5.0)
    p = m.phone
    p.connect()
    w = p.wasp
    with pytest.raises(WaspToolError, match="MemoryError"):
        w.repl("1+1")
    w.reset()
    assert m.run_until(lambda: not p.central.connected, timeout_ms=3000), "no restart"
    p.connect(timeout_ms=8000)
    assert p.wait_for(b">>> ", start=len(p.output), timeout_ms=8000)
    assert w.repl("1+1").strip() == "2"


def _serve_fake_repl(repl):
    """A --bridge stand-in whose far end is ``repl`` (FakeRepl): bytes from
    each client go to it, what it prints comes back.  (port, stop)."""
    from helpers.fakeserver import serve_clients

    def handle(c, stop):
        c.settimeout(0.05)
        sent = len(repl.out)          # a new client sees what is printed from now
        while not stop.is_set():
            try:
                data = c.recv(4096)
            except socket.timeout:
                data = None
            if data == b"":
                break
            if data:
                repl.send(data)
            if len(repl.out) > sent:
                c.sendall(bytes(repl.out[sent:]))
                sent = len(repl.out)
    return serve_clients(handle)


def test_phone_reset_needs_nothing_from_the_repls_parser(capsys):
    """`pinetime-emu phone --reset` against a REPL that answers every line
    MemoryError (wasp-os after its first boot): the reset goes first, without
    wasptool's sync line (which that REPL answers MemoryError: it gave up,
    exit 1, before issue 45), and ends in MicroPython's soft reset.  The
    other verbs still sync first, and say what the watch answered."""
    from frontends.bridge import phone_client_main
    repl = FakeRepl(fragmented=True)
    port, stop = _serve_fake_repl(repl)
    try:
        assert phone_client_main(["--port", str(port), "--timeout", "5", "--battery"]) == 1
        assert "MemoryError" in capsys.readouterr().err
        assert repl.soft_resets == 0 and any("WASP" in line for line in repl.lines)
        before = len(repl.lines)
        assert phone_client_main(["--port", str(port), "--timeout", "5", "--reset"]) == 0
        assert capsys.readouterr().err == ""
        deadline = time.monotonic() + 10               # the stand-in's thread catches up
        while repl.soft_resets == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert repl.soft_resets == 1 and repl.pastes == 1      # machine.reset() tried first
        assert repl.lines[before:] == ["import machine", "machine.reset()"]   # no sync line
        assert phone_client_main(["--port", str(port), "--timeout", "5", "--battery"]) == 0
        assert capsys.readouterr().out.strip() == "87%"        # a fresh heap: it answers
    finally:
        stop.set()


def test_phone_reset_on_a_real_wasp_os_watch_after_its_first_boot(tmp_path):
    """The same through a real --bridge on the upstream wasp-os image, on a
    NOR it has just formatted: every verb's sync answers MemoryError (so did
    --reset's, before issue 45); `phone --reset` restarts it, and the verbs
    work again."""
    import subprocess
    import sys
    import time
    from conftest import free_port, repl_ready, served_run
    from helpers.wasp import wasp_image              # skips without the image
    from emu import Machine
    image = wasp_image()
    port = free_port()
    # the first boot, in emulated time (as the test above): with the bridge
    # paced to the host's clock, where the heap stands when a phone comes
    # depends on the host's speed
    m = Machine(image, flash_file=str(tmp_path / "nor.bin"))
    m.run(seconds=5.0)
    m.save_snapshot(str(tmp_path / "booted.snap"))
    m.board.close()

    def phone(*args):
        return subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port",
                               str(port), "--timeout", "10", *args], capture_output=True,
                              text=True, timeout=120)
    with served_run(image, "--bridge", port, "--flash-file", tmp_path / "nor.bin",
                    "--snapshot", tmp_path / "booted.snap"):
        deadline = time.monotonic() + 60
        while True:                                  # until the bridge listens
            r = phone("--battery")
            if "cannot connect" not in r.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert r.returncode == 1 and "sync: MemoryError" in r.stderr, (r.stdout, r.stderr)
        r = phone("--reset")
        assert r.returncode == 0 and not r.stderr, r.stderr
        deadline = time.monotonic() + 90
        while True:                                  # it boots again, then answers
            repl_ready(port)
            r = phone("--battery")
            if r.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert r.returncode == 0 and r.stdout.strip().endswith("%"), (r.stdout, r.stderr)
