"""wasp-os's own tools/wasptool, unmodified, against `run --bridge`, with
`pinetime-emu nus-console` in pynus's place (docs/phone.md): many verbs in a
row against one running emulator, as a developer at a desk runs them.

Needs a wasp-os tree (PINETIME_EMU_WASP_TREE, else
~/.cache/pinetime-emu/wasp-os/tree: its tools/wasptool is copied, never
changed), the wasp-os image (as tests/firmware/test_wasp.py) and pexpect (the test
extras); skipped, saying which is missing, without them.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from conftest import free_port, repl_ready, served_run

from emu import Machine
from emu.phone.wasptool import paste_lines
from helpers.paths import ROOT

APP = '''"""A module uploaded by wasptool and by pinetime-emu phone."""
# a comment: wasptool's upload leaves it out


class App():
    """Its docstring goes too."""
    def hello(self):
        return 'hello from an app'
'''
BLOB = bytes(range(256)) + b"\r\n\x00\x03\x04 end"
CACHE = Path.home() / ".cache" / "pinetime-emu" / "wasp-os"


def _tree() -> Path:
    t = Path(os.environ.get("PINETIME_EMU_WASP_TREE") or CACHE / "tree")
    if not (t / "tools" / "wasptool").is_file():
        pytest.skip(f"no wasp-os tree with tools/wasptool at {t}: set PINETIME_EMU_WASP_TREE "
                    f"to a wasp-os checkout (or put one at {CACHE / 'tree'})")
    return t


def _image() -> str:
    """The lean build (docs/firmware.md: the clock face alone at boot, 12 KB
    of heap free): the upstream build's heap at the clock face has no room
    for wasptool's upload (tests/firmware/test_wasptool.py shows it failing)."""
    p = os.environ.get("PINETIME_EMU_WASP_LEAN_IMAGE") or str(CACHE / "lean" / "micropython.elf")
    if not Path(p).exists():
        pytest.skip("no lean wasp-os build: set PINETIME_EMU_WASP_LEAN_IMAGE or build one into "
                    f"{CACHE / 'lean'} (docs/firmware.md, 'Real wasp-os')")
    return p


@pytest.mark.wallclock          # paced to the host's clock: run alone (scripts/test.sh)
def test_real_wasptool_verbs_in_a_row(tmp_path):
    tree, image = _tree(), _image()
    pytest.importorskip("pexpect", reason="wasptool needs pexpect (pip install pexpect)")
    # wasptool spawns <its own folder>/pynus/pynus.py: a copy of it, and our console there
    tools = tmp_path / "tools"
    (tools / "pynus").mkdir(parents=True)
    shutil.copy(tree / "tools" / "wasptool", tools / "wasptool")
    port = free_port()
    pynus = tools / "pynus" / "pynus.py"
    pynus.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                     "from frontends.nus_console import main\n"
                     f"sys.exit(main(['--port', '{port}', '--wait', '60'] + sys.argv[1:]))\n")
    pynus.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    (work / "t.py").write_text("x = 6 * 7\nprint('exec says', x)\n")
    # a formatted flash (the first boot's format leaves the heap too
    # fragmented for the REPL's parser until a reset)
    nor = str(tmp_path / "nor.bin")
    m = Machine(image, flash_file=nor)
    m.run(seconds=5.0)
    m.board.close()

    def wasptool(*args, stdin=None, cwd=work):
        r = subprocess.run([sys.executable, str(tools / "wasptool"), *args], cwd=cwd,
                           capture_output=True, text=True, timeout=180, input=stdin)
        return r.returncode, f"[wasptool {' '.join(args)}]\n" + r.stdout + r.stderr

    def phone(*args, cwd=work):
        r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port", str(port),
                            "--timeout", "60", *args], capture_output=True, text=True,
                           timeout=300, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        return r.returncode, f"[phone {' '.join(args)}]\n" + r.stdout + r.stderr

    def check_rtc() -> int:
        """wasptool --check-rtc: the host's time minus the watch's, in s."""
        rc, out = wasptool("--check-rtc")
        m_ = re.search(r"\(delta (-?\d+)\)", out)
        assert rc == 0 and m_, out
        return int(m_.group(1))

    def rtc_then_check_rtc():
        """--rtc, then --check-rtc within a second.  The emulated clock keeps
        the host's while the emulator keeps up; a host too loaded for that
        (two of these sessions and a test suite on two cores: the watch fell
        6-8 s behind in the 5 s between the two verbs) lets it fall behind
        until it catches up, so the pair is tried up to five times, a few
        seconds apart: once must hold to the second."""
        deltas = []
        for _ in range(5):
            rc, out = wasptool("--rtc")
            assert rc == 0, out
            deltas.append(check_rtc())
            if abs(deltas[-1]) <= 1:
                return
            time.sleep(3)
        raise AssertionError(f"--check-rtc after --rtc: deltas {deltas} s")

    lost_ctrl_d = []

    def booted(after_reset=False):
        """Wait for wasp-os to have booted (the run is paced to the host's
        clock, which a loaded host lets it fall behind): wasptool's verbs
        start with Ctrl-C, which stops main.py half-way if it still runs, on
        a watch too (then the files seem gone: the directory is still '/').
        After --reset: wasptool types Ctrl-D and exits at once, closing its
        console's terminal; a console not scheduled in those few ms never
        reads the Ctrl-D (the kernel drops a closed pty's unread input; with
        BlueZ's pynus too), and the watch waits in paste mode: the Ctrl-D is
        typed again then, and counted."""
        if repl_ready(port, in_paste_mode=b"\x04" if after_reset else b""):
            lost_ctrl_d.append(1)
            repl_ready(port)
        rc, out = phone("--eval", "print(1+2)")
        assert rc == 0 and out.strip().endswith("3"), out
        assert "'/flash'" in phone("--repl", "__import__('os').getcwd()")[1]

    def reboot():
        """wasptool --reset, then the watch's boot; a name set before is gone
        after (wasptool types Ctrl-D and hangs up at once: that Ctrl-D was
        once lost with the connection, and the watch never reset)."""
        rc, out = phone("--repl", "before_reset = 1")
        assert rc == 0, out
        rc, out = wasptool("--reset")
        assert rc == 0, out
        booted(after_reset=True)
        rc, out = phone("--repl", "'before_reset' in globals()")
        assert rc == 0 and "\nFalse\n" in out, f"no reset: {out}"

    with served_run(image, "--bridge", port, "--flash-file", nor, "--log-level", "info"):
        booted()

        def verb(*args):
            """One wasptool verb and what it must print."""
            if args == ("--rtc", "--check-rtc"):
                return rtc_then_check_rtc()
            rc, out = wasptool(*args)
            assert rc == 0, f"{args}: {out}"
            if args == ("--eval", "print(6*7)"):
                assert "42" in out.split("~~~")[1], out
            elif args == ("--eval", "6*7"):          # paste mode, as on a watch: no value
                assert "42" not in out, out
            elif args[0] == "--battery":
                assert re.search(r"Battery: \d+%", out), out
            elif args[0] == "--exec":
                assert "exec says 42" in out, out
            elif args[0] == "--memfree":
                assert re.search(r'^"[^"]*",\d+,\d+$', out.strip().splitlines()[-1]), out
        quick = [("--eval", "print(6*7)"), ("--eval", "6*7"), ("--rtc", "--check-rtc"),
                 ("--battery",), ("--send-notification", "--title", "Ann"),
                 ("--exec", "t.py"), ("--memfree",), ("--battery",), ("--exec", "t.py")]
        for args in quick:
            verb(*args)
        # files: wasptool's and ours land the same, and read each other's.
        # wasp-os's heap (8 to 12 KB free) takes a few transfers before the
        # parser finds no 512-byte block (how soon depends on when the lines
        # arrive: the clock face redraws between them), and wasptool's push
        # and pull do not check the watch's replies (a MemoryError part-way
        # is silent or a traceback), so each group of transfers starts from a
        # fresh heap, as a careful user's would
        (work / "app.py").write_text(APP)
        (work / "blob.bin").write_bytes(BLOB)
        reboot()
        rc, out = wasptool("--upload", "app.py", "--as", "by_wasptool.py")
        assert rc == 0, out
        rc, out = phone("--upload", "app.py", "--as", "by_phone.py")
        assert rc == 0, out
        reboot()
        rc, out = wasptool("--push", "blob.bin")
        assert rc == 0, out
        reboot()
        theirs, ours = work / "theirs", work / "ours"
        theirs.mkdir()
        ours.mkdir()
        for name in ("by_wasptool.py", "by_phone.py", "blob.bin"):
            rc, out = wasptool("--pull", name, cwd=theirs)
            assert rc == 0, (name, out)
        reboot()
        for name in ("by_wasptool.py", "by_phone.py", "blob.bin"):
            rc, out = phone("--pull", name, cwd=ours)
            assert rc == 0, (name, out)
        landed = "".join(l + "\n" for l in paste_lines(APP)).encode()
        for d in (theirs, ours):
            for name, want in (("by_wasptool.py", landed), ("by_phone.py", landed),
                               ("blob.bin", BLOB)):
                got = (d / name).read_bytes()
                assert got == want, (f"{d.name}/{name}: {len(got)} bytes, "
                                     f"{got[:48]!r}..., want {len(want)}")
        rc, out = wasptool("--eval", "import by_phone; print(by_phone.App().hello())")
        assert rc == 0 and "hello from an app" in out, out    # the uploaded module runs
        # --console: a line typed, its answer read, then Ctrl-X, as a person
        # does.  (Typed ahead with the Ctrl-X, the console hangs up while the
        # watch still echoes the line: MicroPython's nrf BLE driver counts the
        # notifications it queued and never forgets the ones the SoftDevice
        # drops at a disconnect, so after a few such hang-ups its REPL output
        # waits forever, on a watch too: docs/phone.md)
        con = subprocess.Popen([sys.executable, str(tools / "wasptool"), "--console"], cwd=work,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
        os.set_blocking(con.stdout.fileno(), False)
        seen, typed, deadline = b"", False, time.monotonic() + 120
        while time.monotonic() < deadline and con.poll() is None:
            time.sleep(0.2)
            seen += con.stdout.read() or b""
            if not typed and b"Exit console using Ctrl-X" in seen:
                con.stdin.write(b"print('con' + 'sole')\n")
                con.stdin.flush()
                typed = True
            if re.search(rb"^console\r*$", seen, re.M):
                con.stdin.write(b"\x18")
                con.stdin.flush()
                break
        try:
            con.wait(timeout=30)
        finally:
            if con.poll() is None:
                con.kill()
        seen += con.stdout.read() or b""
        assert con.returncode == 0 and re.search(rb"^console\r*$", seen, re.M), seen
        # a minute of verbs later: the watch never runs ahead of the host (the
        # run is paced); behind by more than a second only if the host was
        # too busy to keep up (the full suite on two cores), then set again
        delta = check_rtc()
        assert delta >= -1, f"the watch ran {-delta} s ahead of the host"
        if delta > 1:
            rtc_then_check_rtc()
        reboot()
        # the same verbs again in another order ("in any order"; seeded)
        random.Random(25).shuffle(quick)
        for args in quick:
            verb(*args)
    if lost_ctrl_d:
        warnings.warn(f"wasptool --reset: its console missed the last Ctrl-D {len(lost_ctrl_d)} "
                      f"time(s) of 5 (wasptool exits right after typing it); typed again")
