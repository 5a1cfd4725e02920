"""What an installation says about itself: ``--version`` (with the commit),
``doctor`` (one line per part, status 0 when the core works), ``demo``
(our firmware, nothing to build), the first line of a run on the
pure-Python reference (once, with the fix), a benchmark that refuses slow
figures, and the installed names (``pinetime_emu.emu`` is ``emu``; another
package called ``emu`` is never shadowed, and the command refuses it in
one line).  Each runs the command in a new process, from the checkout.

Missing native helpers are made by a start-up hook that refuses to import
them (``BLOCK``), as on a machine with no C compiler."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from helpers.paths import ROOT

BLOCK = """
import importlib.abc, sys
from emu.native_build import NATIVE_MODULES
class _NoNative(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in NATIVE_MODULES:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NoNative())
"""


def env(**kw) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("PINETIME_EMU")}
    e.update({"PYTHONPATH": str(ROOT), "PYGAME_HIDE_SUPPORT_PROMPT": "1", **kw})
    e.pop("DISPLAY", None)
    e.pop("WAYLAND_DISPLAY", None)
    return e


def cli(*args, cwd=ROOT, block=False, **kw) -> subprocess.CompletedProcess:
    pre = BLOCK if block else ""
    code = pre + "import sys\nfrom pinetime_emu.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env(**kw),
                          capture_output=True, text=True, timeout=300)


def test_version_names_the_commit():
    r = cli("--version")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"pinetime-emu \d+\.\d+\.\d+\S* \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\n",
                        r.stdout), r.stdout
    from emu.version import version
    assert version() in r.stdout


def test_doctor_says_what_works_and_exits_0():
    r = cli("doctor")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert all(re.match(r"(ok|slow|no|FAIL) +\S", line) for line in lines), lines
    for part in ("pinetime-emu", "Python dependencies", "Unicorn", "native helpers", "demo run",
                 "display", "Chromium", "gdb-multiarch", "tshark", "qemu-system-arm", "core"):
        assert any(line.split(":")[0].split(None, 1)[1] == part for line in lines), part
    assert "ok    native helpers: loaded" in r.stdout
    assert lines[-1] == "ok    core: works"
    assert r.stderr == ""


def test_doctor_fails_without_unicorn_and_says_slow_without_the_helpers():
    r = cli("doctor", block=True)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("slow  native helpers"))
    assert "emu._clock" in line and "fix: build them with `python setup.py build_ext" in line
    r = subprocess.run([sys.executable, "-c", "import sys; sys.modules['unicorn'] = None\n"
                        "from pinetime_emu.cli import main; sys.exit(main(['doctor']))"],
                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"^FAIL  Python dependencies: cannot import unicorn", r.stdout, re.M)
    assert r.stdout.splitlines()[-1].startswith("FAIL  core: does not work")


def test_demo_headless_writes_a_screenshot_and_says_nothing_on_the_native_path(tmp_path):
    r = cli("demo", "--headless", "--seconds", "1", "--screenshot", str(tmp_path / "d.png"),
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "pure-Python" not in r.stderr and "pinetime demo running" in r.stdout
    w = cli("demo", "--where")
    assert w.returncode == 0 and w.stdout.strip().endswith("pinetime_demo.elf")


@pytest.mark.parametrize("args, says", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--seconds", "x"], "--seconds: not a number"),
    (["--web", "--headless"], "--web and --headless"),
    (["--web", "70000"], "not a TCP port"),
    (["--where", "--fast"], "--where takes no other options"),
])
def test_demo_bad_input_is_one_line_and_status_2(args, says):
    r = cli("demo", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("pinetime-emu demo: error: ")


def test_a_run_without_the_helpers_says_so_first_and_once(tmp_path):
    r = cli("demo", "--headless", "--seconds", "1", "--screenshot", str(tmp_path / "d.png"),
            cwd=tmp_path, block=True)
    assert r.returncode == 0, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("pinetime-emu: warning: native helpers missing: emu._clock"), first
    assert "pure-Python reference" in first and "fix: " in first
    assert r.stderr.count("native helpers missing") == 1


def test_the_pure_python_reference_asked_for_is_said_once(tmp_path):
    shot = str(tmp_path / "d.png")
    for how, extra in (("PINETIME_EMU_PURE_PYTHON=1", {"PINETIME_EMU_PURE_PYTHON": "1"}),
                       ("--pure-python", {})):
        args = ["demo", "--headless", "--seconds", "0.2", "--screenshot", shot]
        if not extra:
            args.append("--pure-python")
        r = cli(*args, cwd=tmp_path, **extra)
        assert r.returncode == 0, r.stderr
        first = r.stderr.splitlines()[0]
        assert first == (f"pinetime-emu: note: the pure-Python reference, as asked ({how}): the "
                         "same cycles, frames and bytes, many times slower"), first
        assert r.stderr.count("pure-Python reference") == 1


def test_a_machine_built_in_python_says_so_too():
    code = BLOCK + ("from emu import Machine\n"
                    f"m = Machine({str(ROOT / 'firmware/build/pinetime_demo.elf')!r}, "
                    "flash_file=None)\nm.run(ms=1)\n"
                    f"m2 = Machine({str(ROOT / 'firmware/build/pinetime_demo.elf')!r}, "
                    "flash_file=None)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("pinetime-emu: warning: native helpers missing") == 1, r.stderr


def test_a_benchmark_refuses_slow_figures_unless_asked():
    bench = str(ROOT / "bench" / "bench_cpu.py")
    r = subprocess.run([sys.executable, "-c", BLOCK + f"import runpy; runpy.run_path({bench!r}, "
                        "run_name='__main__')"], cwd=ROOT, env=env(), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "bench_cpu: refusing to measure: native helpers missing" in r.stderr
    assert "MIPS" not in r.stdout
    code = ("from emu import native\n"
            "print(repr(native.bench_guard('b', pure=True)))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env(), capture_output=True,
                       text=True, timeout=60)
    assert "b: the pure-Python reference, as asked" in r.stdout
    assert "'[pure-Python reference]'" in r.stdout.replace("' [", "'[")


def test_the_installed_names_are_one_copy_and_never_shadow(tmp_path):
    code = ("import pinetime_emu, emu, frontends, sys\n"
            "import pinetime_emu.emu.machine, emu.machine, pinetime_emu.frontends.web.server\n"
            "import frontends.web.server\n"
            "assert pinetime_emu.emu.machine is emu.machine\n"
            "assert pinetime_emu.emu is emu and pinetime_emu.frontends is frontends\n"
            "assert frontends.web.server is pinetime_emu.frontends.web.server\n"
            "assert emu.machine.__name__ == 'emu.machine'\n"
            "from pinetime_emu import Machine\n"
            "assert Machine is emu.machine.Machine\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=60)
    assert r.stdout == "ok\n", r.stderr
    # another package named emu, first on sys.path: it is the one imported,
    # and the command refuses to run with it, in one line
    (tmp_path / "emu").mkdir()
    (tmp_path / "emu" / "__init__.py").write_text("THEIRS = True\n")
    r = subprocess.run([sys.executable, "-c", "import pinetime_emu, emu; print(emu.THEIRS)"],
                       cwd=tmp_path, env=env(PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}"),
                       capture_output=True, text=True, timeout=60)
    assert r.stdout == "True\n", r.stderr
    r = subprocess.run([sys.executable, "-m", "pinetime_emu", "--version"], cwd=tmp_path,
                       env=env(PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr.count("\n") == 1 and "another package named 'emu'" in r.stderr, r.stderr


def test_a_snapshot_records_the_version_and_commit_that_wrote_it(tmp_path):
    from emu import Machine
    from emu.version import commit, version
    m = Machine(str(ROOT / "firmware/build/pinetime_demo.elf"), flash_file=None)
    m.run(ms=1)
    m.save_snapshot(str(tmp_path / "s.snap"))
    m.close()
    with zipfile.ZipFile(tmp_path / "s.snap") as z:
        meta = json.loads(z.read("snapshot.json"))
    assert meta["emulator"] == version() and meta["emulator_commit"] == commit()
