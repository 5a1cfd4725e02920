"""YAML scenario runner (pinetime-emu test): per-step verdicts, exit status, JUnit."""
from __future__ import annotations

import io
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from frontends.scenario import load_scenario, main, ScenarioError
from helpers.paths import ROOT

SCEN = ROOT / "examples" / "scenarios"


def run_main(*argv):
    out = io.StringIO()
    rc = main([str(a) for a in argv], out=out)
    return rc, out.getvalue()


def test_example_scenario_passes(fw):
    rc, out = run_main(SCEN / "selftest_passes.yaml", "--firmware", fw("cpu_exceptions"))
    assert rc == 0, out
    assert out.count("  PASS [t=") == 4
    assert "1 scenario(s): 1 passed, 0 failed" in out


def test_selftest_fails_reports_what_was_seen_and_exits_1(fw, tmp_path):
    junit = tmp_path / "out.xml"
    # through the real CLI entry point, as CI runs it
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "test", str(SCEN / "selftest_fails.yaml"),
                        "--firmware", fw("cpu_exceptions"), "--junit", str(junit)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(l.startswith("  PASS [t=") and "wait_text 'PASS cpuid'" in l for l in lines)
    fail = [i for i, l in enumerate(lines) if l.startswith("  FAIL [t=")]
    assert len(fail) == 1 and "this text is never printed" in lines[fail[0]]
    # the next line says what was seen instead: the console and the firmware's exit
    seen = lines[fail[0] + 1]
    assert "saw console" in seen and "PASS ICER clears" in seen and "exit code 0" in seen
    assert any(l.startswith("  SKIP") and "expect_text" in l for l in lines)
    assert "FAILED (1 failed)" in r.stdout
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "1" and suite.get("failures") == "1"
    failure = suite.find("testcase/failure")
    assert failure is not None and "step 2" in failure.get("message")


def test_junit_for_passing_run(fw, tmp_path):
    junit = tmp_path / "j.xml"
    rc, _ = run_main(SCEN / "selftest_passes.yaml", "--firmware", fw("cpu_exceptions"),
                     "--junit", junit)
    assert rc == 0
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0"
    assert suite.find("testcase").get("name") == "cpu_exceptions reports its checks"
    assert suite.find("testcase/failure") is None


@pytest.mark.parametrize("body, msg", [
    ("steps: []", "non-empty list of steps"),
    ("- jump: {ms: 1}", "unknown step 'jump'"),
    ("- run: {ms: -1}", "ms must be >= 0"),
    ("- run: {seconds: 1}", "missing ms"),
    ("- expect_pin: {pin: 40, level: 1}", "pin must be 0..31"),
    ("- swipe: sideways", "up, down, left or right"),
    ("- expect_motor: maybe", "on or off"),
    ("- run: {ms: 1\n", "invalid YAML"),
])
def test_bad_scenarios_exit_2_with_one_line_error(tmp_path, fw, capsys, body, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(body)
    rc, out = run_main(p, "--firmware", fw("cpu_exceptions"))
    err = capsys.readouterr().err
    assert rc == 2
    assert msg in err and len(err.strip().splitlines()) == 1
    assert out == ""          # nothing ran


def test_missing_firmware_and_unknown_board_exit_2(tmp_path, capsys):
    rc, _ = run_main(SCEN / "selftest_passes.yaml", "--firmware", tmp_path / "nope.elf")
    assert rc == 2 and "no such file" in capsys.readouterr().err
    rc, _ = run_main(SCEN / "selftest_passes.yaml", "--firmware", "x", "--board", "zx81")
    assert rc == 2 and "unknown board" in capsys.readouterr().err


def test_on_off_parse_and_paths_relative_to_scenario(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("- expect_motor: on\n- expect_motor: off\n- screenshot: shots/a.png\n")
    sc = load_scenario(str(p))
    assert [s.args for s in sc.steps[:2]] == [{"on": True}, {"on": False}]
    assert sc.steps[2].args["path"] == str(tmp_path / "shots" / "a.png")


def test_screen_step_on_board_without_screen_fails_clearly(fw, tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("board: nrf52832\nsteps:\n  - screenshot: a.png\n")
    rc, out = run_main(p, "--firmware", fw("cpu_exceptions"))
    assert rc == 1
    assert "has no screen" in out and not (tmp_path / "a.png").exists()


def test_pinetime_scenario_pins_and_screenshot(fw, tmp_path):
    import shutil
    from frontends.testbench import read_png
    sc = tmp_path / "pinetime_demo.yaml"           # copy: the screenshot lands next to it
    shutil.copy(SCEN / "pinetime_demo.yaml", sc)
    rc, out = run_main(sc, "--firmware", fw("pinetime_demo"))
    assert rc == 0, out
    times = [float(l.split("t=")[1].split()[0]) for l in out.splitlines() if "PASS [t=" in l]
    # the button step runs through its 50 ms press; the run step adds 10 ms
    assert times[6] - times[5] == pytest.approx(0.050, abs=1e-6)
    assert times[7] - times[6] == pytest.approx(0.010, abs=1e-6)
    img = read_png(str(tmp_path / "out" / "pinetime_demo.png"))
    assert img.shape == (240, 240, 3) and len({tuple(p) for p in img.reshape(-1, 3)}) > 2


def test_pinetime_pin_expectation_failure_names_level(fw, tmp_path):
    p = tmp_path / "s.yaml"
    # the demo drives the backlight pin P0.23 low and keeps it there
    p.write_text("board: pinetime\nsteps:\n  - run: {ms: 300}\n"
                 "  - expect_pin: {pin: 23, level: 1, timeout_ms: 3}\n")
    rc, out = run_main(p, "--firmware", fw("pinetime_demo"))
    assert rc == 1
    assert "expected P0.23 == 1" in out and "saw P0.23 = 0 (driven by" in out
    assert "t=0.303000" in out


# ----------------------------------------------------------------------
# pytest plugin (entry point pytest11 "pinetime_emu"): the watch fixture
# ----------------------------------------------------------------------
PLUGIN_TESTS = '''
import pytest
from frontends.testbench import wait_for_text

@pytest.mark.pinetime_firmware({exc!r}, board="nrf52832")
def test_marker_firmware(watch):
    m = watch()
    wait_for_text(m, "PASS cpuid", timeout_ms=50)
    assert watch() is not m                        # a fresh machine per call

def test_option_firmware_on_pinetime(watch):
    m = watch()
    assert m.board_name == "pinetime"
    wait_for_text(m, "pinetime demo running", timeout_ms=500)
    assert False, "deliberate failure"

@pytest.mark.pinetime_firmware({exc!r}, board="nrf52832")
def test_fails_with_console(watch):
    m = watch()
    m.run(ms=5)
    assert "never" in m.console_text()
'''


def test_pytest_plugin_watch_fixture_and_failure_report(fw, tmp_path):
    exc = fw("cpu_exceptions")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_w.py").write_text(PLUGIN_TESTS.format(exc=exc))
    art = tmp_path / "art"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--pinetime-firmware", fw("pinetime_demo"), "--pinetime-artifacts",
                        str(art), str(tmp_path / "test_w.py")],
                       capture_output=True, text=True, cwd=tmp_path)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "1 passed" in out and "2 failed" in out, out
    # failure sections carry the console transcript and the emulated time
    assert re.search(r"pinetime-emu machine: console at t=0\.\d{6} s \(nrf52832\)", out), out
    assert "PASS ICER clears" in out
    assert re.search(r"console at t=0\.\d{6} s \(pinetime\)", out)
    assert "pinetime demo running" in out
    # the PineTime test's last screen was saved; the bare board has no screen
    pngs = sorted(p.name for p in art.glob("*.png"))
    assert len(pngs) == 1 and "test_option_firmware_on_pinetime" in pngs[0]


def test_pytest_plugin_without_firmware_fails_clearly(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_n.py").write_text("def test_x(watch):\n    watch()\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path / "test_n.py")], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1
    assert "watch: no firmware given" in r.stdout


# every example scenario runs in CI against the firmware it was written for
EXAMPLES = {
    "selftest_passes.yaml": ("cpu_exceptions", 0),
    "selftest_fails.yaml": ("cpu_exceptions", 1),
    "pinetime_demo.yaml": ("pinetime_demo", 0),
}


# real wasp-os images are not in the repository:
# tests/firmware/test_scenario_wasp.py runs these
# (real firmware: test_scenario_wasp, test_infinitime, test_infinitime_ble)
WASP_EXAMPLES = {"wasp_stopwatch.yaml", "wasp_phone.yaml",
                 "infinitime_tour.yaml", "infinitime_phone.yaml"}


def test_every_example_scenario_is_covered():
    assert sorted(p.name for p in SCEN.glob("*.yaml")) == sorted(set(EXAMPLES) | WASP_EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_scenarios(fw, tmp_path, name):
    import shutil
    firmware, want = EXAMPLES[name]
    shutil.copy(SCEN / name, tmp_path / name)
    rc, out = run_main(tmp_path / name, "--firmware", fw(firmware))
    assert rc == want, out


def test_scenario_output_is_deterministic(fw, tmp_path):
    import shutil
    shutil.copy(SCEN / "pinetime_demo.yaml", tmp_path / "s.yaml")
    outs = [run_main(tmp_path / "s.yaml", "--firmware", fw("pinetime_demo"))[1] for _ in range(2)]
    assert outs[0] == outs[1]


def test_expect_screen_step_compares_with_tolerance_and_mask(fw, tmp_path):
    import numpy as np
    from frontends.testbench import read_png, write_png
    shot = tmp_path / "s1.yaml"
    shot.write_text("board: pinetime\nsteps:\n  - run: {ms: 20}\n  - screenshot: golden.png\n")
    assert run_main(shot, "--firmware", fw("pinetime_demo"))[0] == 0
    img = read_png(str(tmp_path / "golden.png"))
    same = tmp_path / "s2.yaml"
    same.write_text("board: pinetime\nsteps:\n  - run: {ms: 20}\n"
                    "  - expect_screen: {png: golden.png}\n")
    assert run_main(same, "--firmware", fw("pinetime_demo"))[0] == 0
    # one pixel off by 40: fails at tolerance 8, passes when masked or at tolerance 40
    img = img.copy()
    img[100, 50] ^= 40                          # every channel off by exactly 40
    write_png(str(tmp_path / "golden.png"), img)
    rc, out = run_main(same, "--firmware", fw("pinetime_demo"))
    assert rc == 1 and "1 pixels differ" in out and "first at (50,100)" in out
    for opts, want in (("tolerance: 8", 1), ("tolerance: 40", 0),
                       ("mask: [[45, 95, 10, 10]]", 0), ("mask: [[0, 0, 10, 10]]", 1)):
        same.write_text("board: pinetime\nsteps:\n  - run: {ms: 20}\n"
                        f"  - expect_screen: {{png: golden.png, {opts}}}\n")
        assert run_main(same, "--firmware", fw("pinetime_demo"))[0] == want, opts
