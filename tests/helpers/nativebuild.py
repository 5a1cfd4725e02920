"""Test builds of the native modules: the same sources, other flags.

* ``faults``: the fault switches compiled in (emu/_faults.h).  Companion
  tests break a native fast path on purpose (a tail-chain left pending, a
  frame stacked without the MPU's check, the loop watch's checks taken as
  passed, ...) and check that the test meant to catch the break does.
  The production build has no such switches.
* ``coverage``: gcc's --coverage, for tests/twins/test_coverage.py (which
  lines of each twin's C side our firmware reaches).

Each is built once per source state (a hash of the sources and the flags)
into ``build/native-<kind>/<hash>/`` and loaded in place of the installed
modules (:func:`swap_in` for one test, with the ``fault_build`` fixture of
tests/conftest.py; :func:`load` for a whole process).  A machine built then
runs entirely on the test build (its modules import one another by name,
so all are swapped together); a fault switch is then an attribute of its
objects (``m.cpu._exc_hook.chain_bug = 1``).
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT

sys.path.insert(0, str(ROOT))
from emu.native_build import NATIVE_MODULES  # noqa: E402


def _sources() -> list:
    files = sorted({p for srcs in NATIVE_MODULES.values() for p in srcs})
    files += sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("emu/**/*.h"))
    return files + ["setup.py", "emu/native_build.py"]


FLAGS = {"faults": {"CFLAGS": "-DEMU_TEST_FAULTS"},
         "coverage": {"CFLAGS": "--coverage", "LDFLAGS": "--coverage",
                      "EMU_NATIVE_CFLAGS": "-O0"}}


def build_dir(kind: str = "faults") -> Path:
    """The test build for the current sources, built if not there yet
    (concurrent test workers wait for one build)."""
    flags = FLAGS[kind]
    h = hashlib.sha256(repr(sorted(flags.items())).encode())
    for f in _sources():
        h.update(f.encode() + b"\0" + (ROOT / f).read_bytes())
    out = ROOT / "build" / f"native-{kind}" / h.hexdigest()[:16]
    done = out / ".built"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            env = dict(os.environ)
            for var, val in flags.items():
                env[var] = (env.get(var, "") + " " + val).strip()
            r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext",
                                "--build-lib", str(out / "lib"),
                                "--build-temp", str(out / "tmp"), "--force"],
                               cwd=ROOT, env=env, capture_output=True, text=True)
            missing = [n for n in NATIVE_MODULES if _module_file(out, n) is None]
            if r.returncode != 0 or missing:
                raise RuntimeError(f"the test build of the native modules failed "
                                   f"({', '.join(missing)} missing):\n{r.stdout[-2000:]}"
                                   f"{r.stderr[-4000:]}")
            done.touch()
    return out


def _module_file(out: Path, name: str):
    """The built file of ``name``: setup.py names the extensions as they are
    installed, inside pinetime_emu/ (docs/setup.md, "Installed names")."""
    d = out / "lib" / "pinetime_emu" / Path(*name.split(".")[:-1])
    found = sorted(d.glob(name.split(".")[-1] + ".*.so")) if d.is_dir() else []
    return found[0] if found else None


class _Setter:
    """monkeypatch's setitem/setattr, for good (a whole process)."""
    @staticmethod
    def setitem(d, k, v):
        d[k] = v

    @staticmethod
    def setattr(o, k, v, raising=True):
        setattr(o, k, v)


def swap_in(monkeypatch, kind: str = "faults") -> dict:
    """Load the test build of every native module in place of the installed
    ones for the rest of the test (``monkeypatch`` undoes it): {name: module}."""
    from emu import native
    from emu.cpu import cycles
    out = build_dir(kind)
    mods = {}
    for name in NATIVE_MODULES:          # in the order of the list: the clock first
        path = _module_file(out, name)
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
        mod = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, mod)
        loader.exec_module(mod)
        parent, _, child = name.rpartition(".")
        monkeypatch.setattr(importlib.import_module(parent), child, mod, raising=False)
        mods[name] = mod
    monkeypatch.setattr(cycles, "_native_lib", None)
    monkeypatch.setattr(cycles, "BhState", None)
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setattr(native, "_why", {})
    return mods


def load(kind: str) -> dict:
    """The test build ``kind`` in place of the installed modules for the rest
    of this process (a subprocess's: a coverage build writes its counts at
    exit)."""
    return swap_in(_Setter, kind)
