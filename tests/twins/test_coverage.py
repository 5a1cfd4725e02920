"""Our firmware reaches every behaviour of every twin's C side.

The registry's cases (emu/twins.py) run on a coverage build of the native
modules (gcc --coverage, tests/helpers/nativebuild.py), in a process of
their own, and gcov counts every line.  For each twin, every line of its C
functions and their helpers must have run, but for the lines that only
handle an error of the C API or of the engine (an exception set, a
reference dropped, ``return -1``/``NULL``: the firmware cannot make them
happen), functions whose first line says ``/* error path */``, and lines
marked ``/* not reached by firmware: why */``.  Besides the firmware, the
twins' differential drivers (tests/twins/drivers.py) run there too: the
Python API's own uses of the C side.  A branch
no case reaches is a behaviour the parity test never compared: the test
names the twin and the lines."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from emu import twins
from helpers.paths import ROOT


#: a line that only handles a failure of the C API or the engine
ERROR_LINE = re.compile(
    r"return -1;|return NULL;|return regs_err|regs_err\(|PyErr_|Py_X?DECREF|Py_CLEAR|"
    r"goto (out|fail|bad|error);|hook_keep_exception\(|report\(|return \(PyObject \*\)NULL|"
    r"^\s*\}?\s*$|^\s*else\s*\{?\s*$|^\s*break;\s*$|PyErr_NoMemory|return rc;\s*$|"
    r"^\s*\w+:\s*$|^\s*rc = -1;")          # (a label line counts as its jump's)
MARK = "not reached by firmware:"
#: a function that only reports an error (its first line says so)
ERROR_FUNCTION = "/* error path"

RUNNER = r"""
import sys
sys.path.insert(0, {tests!r})
from helpers.nativebuild import load
load("coverage")
import logging
logging.getLogger("emu").setLevel(logging.CRITICAL)
from emu import Machine, twins
sys.path.insert(0, {twins_dir!r})
import drivers
for d in sorted({{d for t in twins.TWINS for d in t.drivers}}):
    getattr(drivers, d.rpartition("::")[2])()
import importlib
seen = set()
for t in twins.TWINS:
    for case in t.cases:
        # natively, and with the twin's switch off (a Python step may still
        # use C: the Python exception return pops its frame with Regs)
        for off in (None, t.off if t.off[0] == "attr" else None):
            if (case, off) in seen:
                continue
            seen.add((case, off))
            saved = None
            if off is not None:
                mod, _, attr = off[1].partition(":")
                cls, _, name = attr.rpartition(".")
                owner = getattr(importlib.import_module(mod), cls)
                saved = (owner, name, getattr(owner, name))
                setattr(owner, name, off[2])
            try:
                m = case.machine({build!r})
                case.start(m)
                m.run(ms=case.ms)
                m.close()
            finally:
                if saved:
                    setattr(saved[0], saved[1], saved[2])
"""


def gcov_lines(build: Path) -> dict:
    """{(relative source path, line): count} summed over every object file."""
    counts: dict = {}
    for gcno in sorted(build.rglob("*.gcno")):
        r = subprocess.run(["gcov", "--json-format", "--stdout", "-o", str(gcno.parent),
                            str(gcno)], cwd=ROOT, capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(f"gcov failed on {gcno}: {r.stderr.decode()[-500:]}")
        for chunk in r.stdout.split(b"\n"):
            if not chunk.strip():
                continue
            data = json.loads(chunk)
            for f in data["files"]:
                rel = os.path.normpath(f["file"])
                if not rel.startswith("emu/"):
                    continue
                for line in f["lines"]:
                    key = (rel, line["line_number"])
                    counts[key] = counts.get(key, 0) + line["count"]
    return counts


def uncovered(counts: dict) -> dict:
    """{twin: ["file:line: text", ...]} of the behavioural lines no case ran."""
    index = twins.Index()
    stop = twins.own_native(index)
    out = {}
    for t in twins.TWINS:
        mine = {index.find(s) for s in t.native}
        missed = []
        for f, name in twins.native_closure(index, t.native, stop - mine):
            first, last = index.lines[(f, name)]
            text = (ROOT / f).read_text().split("\n")
            if ERROR_FUNCTION in text[first - 1]:
                continue
            for n in range(first, last + 1):
                src = text[n - 1]
                if counts.get((f, n), None) == 0 and not ERROR_LINE.search(src) \
                        and MARK not in src:
                    missed.append(f"{f}:{n}: {src.strip()}")
        if missed:
            out[t.name] = missed
    return out


@pytest.fixture(scope="module")
def counts(firmware_dir):
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.nativebuild import build_dir
    out = build_dir("coverage")
    for old in out.rglob("*.gcda"):
        old.unlink()
    r = subprocess.run([sys.executable, "-c", RUNNER.format(tests=str(ROOT / "tests"),
                                                           twins_dir=str(ROOT / "tests" / "twins"),
                                                           build=str(firmware_dir))],
                       cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    return gcov_lines(out / "tmp")


def test_every_twin_is_reached_by_our_firmware(counts):
    assert counts, "gcov counted nothing"
    missed = uncovered(counts)
    report = "\n".join(f"{name}:\n  " + "\n  ".join(lines) for name, lines in missed.items())
    assert not missed, "lines of twins no case of emu/twins.py reaches:\n" + report


def test_a_line_no_case_runs_is_named(counts):
    """Companion: the same counts with one behavioural line of a twin (the
    RTC core's re-arm) set to zero are refused, naming the twin and line."""
    index = twins.Index()
    f, name = index.find("emu/peripherals/_rtc.c:rc_rearm")
    first, last = index.lines[(f, name)]
    text = (ROOT / f).read_text().split("\n")
    n = next(n for n in range(first, last + 1)
             if "dk = 1;" in text[n - 1] and counts.get((f, n)))
    line = f"{f}:{n}: {text[n - 1].strip()}"
    assert line not in uncovered(counts).get("rtc.rearm", [])
    assert line in uncovered({**counts, (f, n): 0}).get("rtc.rearm", [])
