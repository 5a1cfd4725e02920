"""wasp-os's own tools/wasptool, unmodified, against `run --bridge`, with
`pinetime-emu nus-console` in pynus's place (docs/phone.md): many verbs in a
row against one running emulator, as a developer at a desk runs them.

Needs a wasp-os tree (PINETIME_EMU_WASP_TREE, else
~/.cache/pinetime-emu/wasp-os/tree: its tools/wasptool is copied, never
changed), the wasp-os image (as tests/test_wasp.py) and pexpect (the test
extras); skipped, saying which is missing, without them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import free_port, served_run

from emu import Machine
from emu.phone.wasptool import paste_lines

ROOT = Path(__file__).resolve().parent.parent
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
    for wasptool's upload (tests/test_wasptool.py shows it failing)."""
    p = os.environ.get("PINETIME_EMU_WASP_LEAN_IMAGE") or str(CACHE / "lean" / "micropython.elf")
    if not Path(p).exists():
        pytest.skip("no lean wasp-os build: set PINETIME_EMU_WASP_LEAN_IMAGE or build one into "
                    f"{CACHE / 'lean'} (docs/firmware.md, 'Real wasp-os')")
    return p


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
        return r.returncode, r.stdout + r.stderr

    def phone(*args, cwd=work):
        r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port", str(port),
                            "--timeout", "60", *args], capture_output=True, text=True,
                           timeout=300, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        return r.returncode, r.stdout + r.stderr

    def reboot():
        """wasptool --reset, then the watch's boot (paced to the host's clock)."""
        rc, out = wasptool("--reset")
        assert rc == 0, out
        time.sleep(8)
        for _ in range(3):
            rc, out = wasptool("--battery")
            if rc == 0:
                break
        assert rc == 0 and "Battery:" in out, out

    with served_run(image, "--bridge", port, "--flash-file", nor):
        # wait for main.py to have run (the run is paced to the host's clock):
        # wasptool's first Ctrl-C would stop it half-way, on a watch too
        time.sleep(8)
        deadline = time.monotonic() + 60
        while True:                            # (and for the bridge to listen)
            rc, out = phone("--eval", "print(1+2)")
            if rc != 2 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert rc == 0 and out.strip().endswith("3"), out
        time.sleep(2)        # the last phone client has hung up
        rc, out = wasptool("--eval", "print(6*7)")
        assert rc == 0 and "42" in out.split("~~~")[1], out
        rc, out = wasptool("--eval", "6*7")     # paste mode, as on a watch: no value shown
        assert rc == 0 and "42" not in out, out
        rc, out = wasptool("--rtc")
        assert rc == 0, out
        rc, out = wasptool("--check-rtc")
        m_ = re.search(r"\(delta (-?\d+)\)", out)
        assert rc == 0 and m_ and abs(int(m_.group(1))) <= 1, out
        for verb in (["--battery"], ["--send-notification", "--title", "Ann"],
                     ["--exec", "t.py"], ["--memfree"], ["--battery"], ["--exec", "t.py"]):
            rc, out = wasptool(*verb)
            assert rc == 0, (verb, out)
            if verb[0] == "--battery":
                assert re.search(r"Battery: \d+%", out), out
            if verb[0] == "--exec":
                assert "exec says 42" in out, out
            if verb[0] == "--memfree":
                assert re.search(r'^"[^"]*",\d+,\d+$', out.strip().splitlines()[-1]), out
        # files: wasptool's and ours land the same, and read each other's.
        # wasp-os's heap (8 to 12 KB free) takes a few transfers before the
        # parser finds no 512-byte block, and wasptool's push and pull do not
        # check the watch's replies (a MemoryError part-way is silent), so
        # the transfers start from a fresh heap, as a careful user's would
        (work / "app.py").write_text(APP)
        (work / "blob.bin").write_bytes(BLOB)
        reboot()
        rc, out = wasptool("--upload", "app.py", "--as", "by_wasptool.py")
        assert rc == 0, out
        rc, out = phone("--upload", "app.py", "--as", "by_phone.py")
        assert rc == 0, out
        rc, out = wasptool("--push", "blob.bin")
        assert rc == 0, out
        theirs, ours = work / "theirs", work / "ours"
        theirs.mkdir()
        ours.mkdir()
        for name in ("by_wasptool.py", "by_phone.py", "blob.bin"):
            rc, out = wasptool("--pull", name, cwd=theirs)
            assert rc == 0, (name, out)
            rc, out = phone("--pull", name, cwd=ours)
            assert rc == 0, (name, out)
        landed = "".join(l + "\n" for l in paste_lines(APP)).encode()
        for d in (theirs, ours):
            assert (d / "by_wasptool.py").read_bytes() == landed
            assert (d / "by_phone.py").read_bytes() == landed
            assert (d / "blob.bin").read_bytes() == BLOB
        rc, out = wasptool("--eval", "import by_phone; print(by_phone.App().hello())")
        assert rc == 0 and "hello from an app" in out, out    # the uploaded module runs
        rc, out = wasptool("--console", stdin="print('con' + 'sole')\n\x18")
        assert rc == 0 and "console" in out, out
        rc, out = wasptool("--check-rtc")
        m_ = re.search(r"\(delta (-?\d+)\)", out)
        assert rc == 0 and m_ and abs(int(m_.group(1))) <= 1, out
        reboot()
