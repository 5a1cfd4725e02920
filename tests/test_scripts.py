"""The front door: scripts/setup.sh, demo.sh and test.sh work from a clean
copy of the repository with only /usr/bin:/bin on PATH (on Debian, Debian's
own python3, which refuses `pip install` into itself: PEP 668), installing
into the project's venv .venv/ and not reinstalling when nothing changed.

The copy holds the files a fresh clone would have if the working tree were
committed as it is (tracked and untracked files, not the ignored ones), so it
tests the same code as the rest of the suite.  It takes about a minute, most of it pip
installing the dependencies into the new venv (from pip's cache when warm)."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers.paths import ROOT

DROP = ("PYTHON", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "DISPLAY", "WAYLAND_DISPLAY",
        "SDL_VIDEODRIVER", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")


def clean_copy(dest: Path) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: cannot tell which files a clone has")
    r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       cwd=ROOT, capture_output=True, check=True)
    for name in r.stdout.decode().split("\0"):
        if not name or not (ROOT / name).is_file():
            continue                     # deleted in the working tree
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    return dest


def bare_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in DROP and not k.startswith(("PYENV", "PINETIME_EMU"))}
    env["PATH"] = "/usr/bin:/bin"
    return env


def sh(tree: Path, *args, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", *args], cwd=tree, env=bare_env(), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_demo_and_test_scripts_from_a_clean_copy_with_system_python(tmp_path):
    if not os.path.exists("/usr/bin/python3"):
        pytest.skip("no /usr/bin/python3 (scripts/setup.sh installs Debian's python3)")
    tree = clean_copy(tmp_path / "clone")
    assert not (tree / ".venv").exists()

    r = sh(tree, "scripts/demo.sh")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "externally-managed-environment" not in r.stderr
    assert "as the 'root' user" not in r.stderr            # pip inside a venv
    assert (tree / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    base = subprocess.run([str(tree / ".venv/bin/python"), "-c",
                           "import sys; print(sys.base_prefix)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    real = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.base_prefix)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert base == real                  # the venv is made from python3 on PATH

    t0 = time.monotonic()
    r = sh(tree, "scripts/setup.sh")     # nothing changed: nothing to install
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    assert time.monotonic() - t0 < 30

    r = sh(tree, "scripts/test.sh", "-p", "no:cacheprovider", "tests/board/test_demo.py")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "setup: installing" not in r.stdout
