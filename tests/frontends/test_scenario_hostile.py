"""Hostile scenario files (issue 24): each is one line on stderr naming the
file, the step where there is one, and the problem; exit status 2; nothing
runs.  Before the fixes these raised UnicodeDecodeError, TypeError,
RecursionError and OverflowError tracebacks, hung on alias bombs, ran
forever on huge times, and passed taps off the panel."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest

from frontends.scenario import main

BOMB = ("[&a [lol, lol, lol, lol, lol, lol, lol, lol, lol], "
        + ", ".join(f"&{c} [" + ", ".join([f"*{p}"] * 9) + "]"
                    for p, c in zip("abcdefgh", "bcdefghi")) + "]")


def refused(capsys, path, fw, *words):
    out = io.StringIO()
    rc = main([str(path), "--firmware", fw("cpu_exceptions")], out=out)
    err = capsys.readouterr().err
    assert rc == 2, (rc, out.getvalue()[-500:], err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for w in (str(path),) + words:
        assert w in lines[0], (w, lines[0])
    assert out.getvalue() == ""           # nothing ran
    return lines[0]


@pytest.mark.parametrize("data,words", [
    (b"# caf\xe9\n- run: {ms: 1}\n", ["not UTF-8", "0xe9", "line 1"]),
    ("- run: {ms: 1}\n".encode("utf-16"), ["UTF-16", "save it as UTF-8"]),
    ("- run: {ms: 1}\n".encode("utf-16-be"), ["line 1", "U+0000 is not allowed"]),
    (b"- run: {ms: 1}\n- wait_text: \"\\ud800\"\n", ["lone surrogate"]),
    (b"board: [pinetime]\nsteps:\n- run: {ms: 1}\n", ["unknown board", "['pinetime']"]),
    (b"board: {a: 1}\nsteps:\n- run: {ms: 1}\n", ["unknown board"]),
    (b"- run: " + b"[" * 5000 + b"]" * 5000 + b"\n", ["nested"]),
    (b"- run: " + b"[" * 100 + b"]" * 100 + b"\n", ["nested more than 64"]),
    (b"- run: {ms: " + b"9" * 400 + b"}\n", ["step 1 (run)", "at most"]),
    (b"- run: {ms: 1.0e+29}\n", ["step 1 (run) ms", "at most"]),
    (b"- run: {s: 18446744073709551616}\n", ["step 1 (run) s", "at most"]),
    (b"- run: {ms: .inf}\n", ["step 1 (run) ms", "finite"]),
    (b"- run: {ms: .nan}\n", ["step 1 (run) ms", "finite"]),
    (b"- wait_text: {text: x, timeout_ms: 1.0e+29}\n", ["step 1 (wait_text) timeout_ms",
                                                        "at most"]),
    (b"- button: {press_ms: 1.0e+29}\n", ["step 1 (button) press_ms", "at most"]),
    (b"- tap: {x: -1, y: 10}\n", ["step 1 (tap) x", "0..239"]),
    (b"- tap: {x: 10, y: 240}\n", ["step 1 (tap) y", "0..239"]),
    (b"- tap: {x: 18446744073709551616, y: 10}\n", ["step 1 (tap) x", "0..239"]),
    (b"- tap: {x: 1.0e+30, y: 10}\n", ["step 1 (tap) x", "integer"]),
    (b"- expect_pixel: {x: -1, y: 0, rgb: '#000000'}\n", ["step 1 (expect_pixel) x"]),
    (b"- expect_region: {box: [0, 0, 10, 10], min_lit: 1, threshold: 1000}\n",
     ["threshold", "0..255"]),
    (b"- expect_phone_message: {t: 2025-12-03T14:42:00}\n", ["step 1", "JSON"]),
    (b"- wait_phone: {text: x, timeout_ms: 5}\n- run: {ms: 1, \"a\\nb\": 1}\n",
     ["step 2 (run)", "'a\\nb'"]),
])
def test_bad_scenario_is_one_line_and_exit_2(tmp_path, capsys, fw, data, words):
    p = tmp_path / "bad.yaml"
    p.write_bytes(data)
    refused(capsys, p, fw, *words)


@pytest.mark.parametrize("step", [
    'screenshot: "a\\0b.png"', 'save_snapshot: "a\\0b.snap"', 'load_snapshot: "a\\0b.snap"',
    'expect_screen: "a\\0b.png"', 'expect_screen: {png: "a\\0b.png", tolerance: 1}',
    'upload: "a\\0b.py"', 'upload: {file: "a\\0b.py", as: x.py}', 'exec: {file: "a\\0b.py"}'])
def test_a_nul_byte_in_a_steps_file_name_is_one_line(tmp_path, capsys, fw, step):
    """A file name with a NUL byte (YAML's "\\0") is no file's name: the step
    says so (it raised ValueError: embedded null byte in emu/outputs.py)."""
    p = tmp_path / "nul.yaml"
    p.write_text("- run: {ms: 1}\n- " + step + "\n")
    line = refused(capsys, p, fw, f"step 2 ({step.split(':')[0]})", "cannot hold a NUL byte")
    assert "\x00" not in line                       # shown escaped


@pytest.mark.parametrize("option", ["--firmware", "--junit", "--snapshot", "SCENARIO"])
def test_a_nul_byte_in_a_file_option_of_test_is_one_line(tmp_path, capsys, fw, option):
    scen = tmp_path / "ok.yaml"
    scen.write_text("- run: {ms: 1}\n")
    args = {"--firmware": fw("cpu_exceptions"), "SCENARIO": str(scen)}
    args[option] = str(tmp_path / "a\x00b")
    argv = [args.pop("SCENARIO")] + [x for kv in args.items() for x in kv]
    out = io.StringIO()
    assert main(argv, out=out) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "cannot hold a NUL byte" in lines[0], lines
    assert option.split("/")[0] in lines[0] and out.getvalue() == ""


def test_a_scenario_must_be_a_small_regular_file(tmp_path, capsys, fw):
    refused(capsys, tmp_path, fw, "not a regular file")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"- run: {ms: 1}\n" * 20000)
    refused(capsys, big, fw, "more than a scenario can be")


@pytest.mark.parametrize("where", [
    "name: {b}\nsteps:\n- run: {{ms: 1}}\n",
    "steps: {b}\n",
    "- run: {b}\n", "- swipe: {b}\n", "- tap: {b}\n", "- call: {b}\n", "- music: {b}\n",
    "- expect_phone_message: {{t: {b}}}\n", "- run: {{ms: 1}}\n- wait_text: {{text: {b}}}\n"])
def test_alias_bombs_are_refused_quickly(tmp_path, fw, where):
    # through the real command: without the bound this printed or walked 9**9 values
    p = tmp_path / "bomb.yaml"
    p.write_text(where.format(b=BOMB))
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "test", str(p), "--firmware",
                        fw("cpu_exceptions")], capture_output=True, text=True, timeout=25)
    assert r.returncode == 2, (r.returncode, r.stderr[-1000:])
    assert r.stderr.count("\n") == 1 and "too big" in r.stderr and str(p) in r.stderr
    assert "Traceback" not in r.stderr


def test_aliases_of_a_reasonable_size_still_work(tmp_path):
    from frontends.scenario import load_scenario
    p = tmp_path / "ok.yaml"
    p.write_text("- run: &short {ms: 1}\n- run: *short\n- tap: &mid {x: 120, y: 120}\n"
                 "- tap: *mid\n")
    sc = load_scenario(str(p))
    assert [s.label for s in sc.steps] == ["run 1 ms", "run 1 ms", "tap (120,120)",
                                           "tap (120,120)"]


def test_largest_time_is_accepted_and_the_edge_of_the_panel_is_on_it(tmp_path):
    from frontends.scenario import MAX_MS, load_scenario
    p = tmp_path / "ok.yaml"
    p.write_text(f"- run: {{ms: {int(MAX_MS)}}}\n- tap: {{x: 0, y: 239}}\n")
    sc = load_scenario(str(p))
    assert sc.steps[0].args["ms"] == int(MAX_MS) and sc.steps[1].args == {"x": 0, "y": 239}


def test_a_box_off_the_screen_fails_the_step_saying_the_screen_size(tmp_path, fw):
    p = tmp_path / "s.yaml"
    p.write_text("board: pinetime\nsteps:\n  - expect_region: {box: [200, 0, 100, 10], "
                 "max_lit: 100000}\n  - expect_pixel: {x: 300, y: 0, rgb: '#000000'}\n")
    out = io.StringIO()
    assert main([str(p), "--firmware", fw("pinetime_demo")], out=out) == 1
    assert "the screen is 240x240" in out.getvalue()
