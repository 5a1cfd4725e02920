"""The real-wasp-os example scenarios, through the CLI (`pinetime-emu test`).

Needs the wasp-os images built by hand outside the repository (never
committed); each test is skipped with a message when its image is absent:

* ``$PINETIME_EMU_WASP_IMAGE`` or ``~/.cache/pinetime-emu/wasp-os/upstream/micropython.elf``
  for examples/scenarios/wasp_stopwatch.yaml;
* ``$PINETIME_EMU_WASP_PHONE_IMAGE`` or ``~/.cache/pinetime-emu/wasp-os/phone/micropython.elf``
  for examples/scenarios/wasp_phone.yaml.

Each wasp-os boot costs about a minute of wall time, so the stopwatch
scenario runs once per module; it saves a snapshot of the booted watch
(``save_snapshot`` step), and the deliberately failing scenarios start from
it with ``--snapshot`` instead of booting again.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT

SCEN = ROOT / "examples" / "scenarios"
CACHE = Path.home() / ".cache" / "pinetime-emu" / "wasp-os"


def _image(env: str, sub: str) -> str:
    p = os.environ.get(env) or str(CACHE / sub / "micropython.elf")
    if not Path(p).exists():
        pytest.skip(f"no wasp-os image: set {env} or build one into {CACHE / sub} "
                    "(docs/firmware.md, 'Real wasp-os')")
    return p


def cli(*args, cwd) -> subprocess.CompletedProcess:
    exe = shutil.which("pinetime-emu")
    cmd = [exe] if exe else [sys.executable, "-m", "frontends.cli"]
    return subprocess.run(cmd + ["test", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=900)


def step_lines(out: str, status: str) -> list:
    return [l for l in out.splitlines() if l.startswith(f"  {status} ")]


def copy_scenario(name: str, d: Path) -> Path:
    shutil.copy(SCEN / name, d / name)     # screenshots and snapshots land next to it
    return d / name


@pytest.fixture(scope="module")
def stopwatch_run(tmp_path_factory):
    image = _image("PINETIME_EMU_WASP_IMAGE", "upstream")
    d = tmp_path_factory.mktemp("wasp_scen")
    sc = copy_scenario("wasp_stopwatch.yaml", d)
    r = cli(sc, "--firmware", image, "--junit", d / "junit.xml", cwd=d)
    return {"r": r, "dir": d, "image": image}


def test_wasp_stopwatch_scenario_passes(stopwatch_run):
    r, d = stopwatch_run["r"], stopwatch_run["dir"]
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    from frontends.scenario import load_scenario
    n = len(load_scenario(str(SCEN / "wasp_stopwatch.yaml")).steps)
    assert len(step_lines(out, "PASS")) == n and not step_lines(out, "FAIL")
    assert "scenario wasp-os launcher and stopwatch: PASSED" in out
    # the steps that carry the story: launcher icons, counting, stopped
    for label in ("wait_region [30, 10, 80, 65] 1500 <= lit",
                  "expect_region [60, 75, 170, 55] 800 <= lit <= 1600",
                  "expect_screen_changed [60, 75, 170, 55]",
                  "wait_screen_change [60, 75, 170, 55]",
                  "expect_screen_unchanged [60, 75, 170, 55]"):
        assert any(label in l for l in step_lines(out, "PASS")), label
    from frontends.testbench import read_png
    for png in ("wasp_clock", "wasp_launcher", "wasp_stopwatch_running"):
        img = read_png(str(d / "out" / f"{png}.png"))
        assert img.shape == (240, 240, 3) and (img.max(axis=2) > 64).sum() > 1000, png
    assert 'failures="0"' in (d / "junit.xml").read_text()


FAILING = {
    # the clock face has no launcher icon: the Alarm box is black
    "launcher_not_open.yaml": """\
name: launcher icons without a swipe
board: pinetime
steps:
  - expect_region: {box: [30, 10, 80, 65], min_lit: 1500}
  - swipe: up
""",
    # not started with the button: the stopwatch does not count
    "stopwatch_not_started.yaml": """\
name: stopwatch counts without the button
board: pinetime
steps:
  - swipe: left
  - wait_region: {box: [0, 170, 240, 35], max_lit: 0, timeout_ms: 1500}
  - wait_region: {box: [60, 75, 170, 55], min_lit: 800, timeout_ms: 1500}
  - run: {ms: 300}
  - mark_screen:
  - run: {s: 1}
  - expect_screen_changed: {box: [60, 75, 170, 55]}
""",
}


def test_wasp_failing_scenarios_name_time_and_what_was_seen(stopwatch_run, tmp_path):
    snap = stopwatch_run["dir"] / "out" / "wasp_booted.snap"
    assert snap.exists(), "the stopwatch scenario's save_snapshot step wrote nothing"
    paths = []
    for name, body in FAILING.items():
        (tmp_path / name).write_text(body)
        paths.append(tmp_path / name)
    r = cli(*paths, "--firmware", stopwatch_run["image"], "--snapshot", snap, cwd=tmp_path)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "2 scenario(s): 0 passed, 2 failed" in out
    lines = out.splitlines()
    fails = [i for i, l in enumerate(lines) if l.startswith("  FAIL ")]
    assert len(fails) == 2
    # restored at the booted state (t=5 s): the failure names the time and the lit count
    assert lines[fails[0]].startswith("  FAIL [t=5.000000 s]  1. expect_region [30, 10, 80, 65]")
    assert "saw lit = 0 of 5200 pixels" in lines[fails[0] + 1]
    assert any(l.startswith("  SKIP") and "swipe up" in l for l in lines)
    # the stopwatch was shown, but nothing changed in its digits over 1 s
    assert "expect_screen_changed [60, 75, 170, 55]" in lines[fails[1]]
    assert "changed since the checkpoint at t=" in lines[fails[1] + 1]
    assert "saw no pixel changed" in lines[fails[1] + 1]
    t_mark = [l for l in lines if "mark_screen" in l][0].split("t=")[1].split()[0]
    t_fail = lines[fails[1]].split("t=")[1].split()[0]
    assert float(t_fail) == pytest.approx(float(t_mark) + 1.0, abs=1e-5)
    # deterministic: the same scenarios from the same snapshot print the same report
    again = cli(*paths, "--firmware", stopwatch_run["image"], "--snapshot", snap, cwd=tmp_path)
    assert again.stdout == out


def test_wasp_phone_scenario_answers_the_call(tmp_path):
    image = _image("PINETIME_EMU_WASP_PHONE_IMAGE", "phone")
    sc = copy_scenario("wasp_phone.yaml", tmp_path)
    r = cli(sc, "--firmware", image, cwd=tmp_path)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    passed = step_lines(out, "PASS")
    assert not step_lines(out, "FAIL")
    assert any("repl '1+1' -> '2'" in l for l in passed)
    assert any("expect_phone_message {\"t\":\"call\",\"n\":\"ACCEPT\"}" in l for l in passed)
    assert (tmp_path / "out" / "wasp_call.png").exists()
