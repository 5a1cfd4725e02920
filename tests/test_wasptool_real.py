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

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "pinetime-emu" / "wasp-os"


def _tree() -> Path:
    t = Path(os.environ.get("PINETIME_EMU_WASP_TREE") or CACHE / "tree")
    if not (t / "tools" / "wasptool").is_file():
        pytest.skip(f"no wasp-os tree with tools/wasptool at {t}: set PINETIME_EMU_WASP_TREE "
                    f"to a wasp-os checkout (or put one at {CACHE / 'tree'})")
    return t


def _image() -> str:
    p = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(CACHE / "upstream" / "micropython.elf")
    if not Path(p).exists():
        pytest.skip("no wasp-os image: set PINETIME_EMU_WASP_IMAGE or build one into "
                    f"{CACHE / 'upstream'} (docs/firmware.md, 'Real wasp-os')")
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

    def wasptool(*args, stdin=None):
        r = subprocess.run([sys.executable, str(tools / "wasptool"), *args], cwd=work,
                           capture_output=True, text=True, timeout=120, input=stdin)
        return r.returncode, r.stdout + r.stderr

    with served_run(image, "--bridge", port, "--flash-file", nor):
        # wait for main.py to have run: wasptool's first Ctrl-C would stop it
        # half-way (on a watch too), a REPL line waits for the prompt
        deadline = time.monotonic() + 60
        while True:                            # (and for the bridge to listen)
            r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port",
                                str(port), "--eval", "1+2", "--timeout", "60"],
                               capture_output=True, text=True, timeout=120, cwd=ROOT)
            if r.returncode != 2 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert r.returncode == 0 and r.stdout.strip().endswith("3"), r.stdout + r.stderr
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
        rc, out = wasptool("--console", stdin="print('con' + 'sole')\n\x18")
        assert rc == 0 and "console" in out, out
        rc, out = wasptool("--check-rtc")
        m_ = re.search(r"\(delta (-?\d+)\)", out)
        assert rc == 0 and m_ and abs(int(m_.group(1))) <= 1, out
        rc, out = wasptool("--reset")
        assert rc == 0, out
        for _ in range(3):                     # the watch reboots: a few seconds
            rc, out = wasptool("--battery")
            if rc == 0:
                break
        assert rc == 0 and "Battery:" in out, out
