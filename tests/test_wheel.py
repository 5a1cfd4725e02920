"""What the wheel installs: one top-level package, and every file the
program reads at run time.

The wheel is ``$PINETIME_EMU_WHEEL`` (scripts/check_wheel.sh passes the one
``python -m build`` made from the sdist), else one built here from the
checkout (``python -m build --no-isolation``, about a minute).  The
checker is also run on listings with a file taken out, to show it fails.
What the installed wheel does (the demo, doctor, the plugin, the web view)
is scripts/check_wheel.sh's part.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from helpers.paths import ROOT

TOP = "pinetime_emu"


def runtime_files() -> list:
    """The files a run reads besides the Python modules, as the wheel names
    them: the web view's static files (every file of
    frontends/web/static), the demo image, the build's version record, the
    start-up hook that makes ``emu`` importable, and the native helpers."""
    static = sorted(p.name for p in (ROOT / "frontends/web/static").iterdir() if p.is_file())
    assert static, "frontends/web/static is empty"
    return ([f"{TOP}/frontends/web/static/{n}" for n in static]
            + [f"{TOP}/frontends/data/pinetime_demo.elf", f"{TOP}/emu/_build_info.py",
               f"{TOP}.pth"])


def native_stems() -> list:
    """pinetime_emu/emu/cpu/_core and the others: the wheel holds each as
    <stem>.cpython-...so (emu/native_build.py lists them)."""
    sys.path.insert(0, str(ROOT))
    from emu.native_build import NATIVE_MODULES
    return [f"{TOP}/" + name.replace(".", "/") for name in NATIVE_MODULES]


def source_modules() -> list:
    """Every Python module of the checkout's packages, as the wheel names it."""
    out = [f"{TOP}/{p.name}" for p in (ROOT / TOP).glob("*.py")]
    for folder in ("emu", "frontends"):
        out += [f"{TOP}/{p.relative_to(ROOT).as_posix()}" for p in (ROOT / folder).rglob("*.py")
                if "__pycache__" not in p.parts and p.name != "_build_info.py"]
    return sorted(out)


def version() -> str:
    return re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(),
                     re.M).group(1)


def wheel_problems(names: list) -> list:
    """What is wrong with a wheel's listing ([] when nothing is)."""
    problems = []
    tops = {n.split("/", 1)[0] for n in names}
    extra = {t for t in tops if t not in (TOP, f"{TOP}.pth")
             and not re.fullmatch(rf"{TOP}-[^/]+\.dist-info", t)}
    if extra:
        problems.append(f"top-level names besides {TOP}/ and {TOP}.pth: {sorted(extra)}")
    have = set(names)
    for f in runtime_files() + source_modules():
        if f not in have:
            problems.append(f"missing {f}")
    for stem in native_stems():
        if not any(re.fullmatch(re.escape(stem) + r"\.[^/]*\.(so|pyd)", n) for n in names):
            problems.append(f"missing the native helper {stem}")
    return problems


def entry_point_problems(text: str) -> list:
    want = {("console_scripts", "pinetime-emu"): f"{TOP}.cli:main",
            ("pytest11", "pinetime_emu"): f"{TOP}.pytest_plugin"}
    section, got = None, {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line:
            k, v = (s.strip() for s in line.split("=", 1))
            got[(section, k)] = v
    return [f"entry point {s}:{k} is {got.get((s, k))!r}, not {v!r}"
            for (s, k), v in want.items() if got.get((s, k)) != v]


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """(wheel, sdist): the ones named in the environment, else built here."""
    wheel, sdist = os.environ.get("PINETIME_EMU_WHEEL"), os.environ.get("PINETIME_EMU_SDIST")
    if wheel and sdist:
        return Path(wheel), Path(sdist)
    out = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, PINETIME_EMU_REQUIRE_NATIVE="1")
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out)],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return next(out.glob("*.whl")), next(out.glob("*.tar.gz"))


def test_the_wheel_installs_one_package_and_every_run_time_file(dist):
    wheel, _ = dist
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        eps = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        ep_text = z.read(eps).decode()
        info = z.read(f"{TOP}/emu/_build_info.py").decode()
        pth = z.read(f"{TOP}.pth").decode()
    tops = sorted({n.split("/", 1)[0] for n in names})
    assert tops == [TOP, f"{TOP}-{version()}.dist-info", f"{TOP}.pth"], tops
    assert wheel_problems(names) == []
    assert entry_point_problems(ep_text) == []
    assert re.search(r"COMMIT = '[0-9a-f]{12}(-dirty)?'", info), info
    assert pth.strip() == f"import {TOP}"


def test_the_sdist_builds_the_same_wheel_without_the_cross_compiler(dist):
    _, sdist = dist
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for f in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "firmware/Makefile",
              "firmware/tests/pinetime_demo.c", "firmware/common/startup.c",
              "firmware/common/nrf52832.ld", "firmware/build/pinetime_demo.elf",
              "emu/_build_info.py", "emu/_clock.c", "emu/cpu/_core.h", f"{TOP}/_names.py",
              "frontends/web/static/app.js"):
        assert f in names, f
    assert not any(n.endswith((".so", ".pyc")) for n in names)


@pytest.mark.parametrize("drop", ["frontends/web/static/app.js", "frontends/web/static/index.html",
                                  "frontends/data/pinetime_demo.elf", "emu/_build_info.py",
                                  "emu/machine.py", "frontends/scenario.py"])
def test_the_checker_fails_when_a_run_time_file_is_missing(drop):
    names = runtime_files() + source_modules() + [s + ".cpython-311-x86_64-linux-gnu.so"
                                                  for s in native_stems()]
    names.append(f"{TOP}-0.1.0.dist-info/RECORD")
    assert wheel_problems(names) == []
    gone = [n for n in names if n != f"{TOP}/{drop}"]
    assert len(gone) == len(names) - 1
    assert wheel_problems(gone) == [f"missing {TOP}/{drop}"]


def test_the_checker_fails_on_another_top_level_name_or_a_lost_helper():
    names = runtime_files() + source_modules() + [s + ".abi3.so" for s in native_stems()]
    assert wheel_problems(names) == []
    assert wheel_problems(names + ["emu/__init__.py"]) == [
        f"top-level names besides {TOP}/ and {TOP}.pth: ['emu']"]
    assert wheel_problems(names[:-1]) == [f"missing the native helper {native_stems()[-1]}"]
    assert entry_point_problems("[console_scripts]\npinetime-emu = frontends.cli:main\n")
