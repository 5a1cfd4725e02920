"""pinetime-emu preview: screenshots after a few steps as a PNG strip, a GIF
and a Markdown snippet (frontends/preview.py), on firmware/tests/pinetime_web.c
(a swipe up repaints its background blue, a tap paints a white 12x12
square, a Gadgetbridge notification an orange banner)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from emu.png import read_png
from helpers.paths import ROOT

ISSUE_SCRIPT = ("run 1s, screenshot, swipe up, run 300ms, screenshot, tap 120 200, "
                "run 300ms, screenshot")


def preview(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "frontends.cli", "preview", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_issue_s_script(fw, tmp_path):
    out = tmp_path / "pv"
    r = preview(fw("pinetime_web"), "--script", ISSUE_SCRIPT, "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASS") == 8
    frames = [read_png(str(out / f"preview-{i}.png")) for i in (1, 2, 3)]
    strip = read_png(str(out / "preview.png"))
    assert strip.shape == (240 + 16, 3 * 240 + 4 * 8, 3)
    for i, f in enumerate(frames):                      # the strip holds the frames, exactly
        x = 8 + i * (240 + 8)
        assert np.array_equal(strip[8:248, x:x + 240], f)
    assert frames[0][10, 10, 2] < 100                   # before the swipe: dark
    assert frames[1][10, 10, 2] > 150                   # after it: blue
    assert tuple(frames[2][200, 120]) == (255, 255, 255)   # the tap's square at (120, 200)
    assert tuple(frames[1][200, 120]) != (255, 255, 255)
    from PIL import Image
    gif = Image.open(out / "preview.gif")
    assert gif.n_frames == 3 and gif.info.get("loop") == 0
    for i, f in enumerate(frames):
        gif.seek(i)
        assert gif.info["duration"] == 1000
        # few colours: the GIF's palette holds them all
        assert np.array_equal(np.asarray(gif.convert("RGB")), f)
    md = (out / "preview.md").read_text()
    assert "](preview.gif)" in md and "](preview.png)" in md
    assert "1. t=1.000 s: run 1000 ms" in md
    assert "2. t=1.300 s: swipe up, run 300 ms" in md
    assert "3. t=1.600 s: tap \\(120,200\\), run 300 ms" in md


def test_the_same_steps_give_the_same_bytes(fw, tmp_path):
    for d in ("a", "b"):
        r = preview(fw("pinetime_web"), "--script", "run 500ms, screenshot, swipe right, "
                    "run 200ms, screenshot", "--out", str(tmp_path / d), "--scale", "2")
        assert r.returncode == 0, r.stderr
    for name in ("preview.png", "preview.gif", "preview.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert read_png(str(tmp_path / "a" / "preview.png")).shape == (480 + 16, 2 * 480 + 3 * 8, 3)


def test_phone_steps_connect_first(fw, tmp_path):
    r = preview(fw("pinetime_web"), "--script", 'run 300ms, notify "Lunch?" "at one, as usual",'
                ' run 300ms, screenshot', "--out", str(tmp_path), "--name", "note",
                "--url", "https://example.org/pr/7", "--title", "my watch")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "phone_connect" in r.stdout and "notify 'Lunch?': 'at one, as usual'" in r.stdout
    img = read_png(str(tmp_path / "note-1.png"))
    assert img[30, 20, 0] > 200 and img[30, 20, 2] < 60          # the orange banner
    md = (tmp_path / "note.md").read_text()
    assert "](https://example.org/pr/7/note.gif)" in md and "**my watch**" in md


def test_a_scenario_file(fw, tmp_path):
    sc = tmp_path / "tour.yaml"
    sc.write_text("steps:\n"
                  "  - run: {ms: 400}\n"
                  "  - screenshot: shots/first.png\n"
                  "  - swipe: down\n"
                  "  - run: {ms: 300}\n"
                  "  - screenshot: shots/second.png\n")
    r = preview(fw("pinetime_web"), "--scenario", str(sc), "--out", str(tmp_path / "pv"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "shots" / "second.png").exists()
    strip = read_png(str(tmp_path / "pv" / "preview.png"))
    assert strip.shape[1] == 2 * 240 + 3 * 8
    assert strip[8 + 10, 8 + 248 + 10, 1] > 100                  # green after a swipe down


def test_a_failing_step_keeps_what_was_captured(fw, tmp_path):
    sc = tmp_path / "fails.yaml"
    sc.write_text("steps:\n"
                  "  - run: {ms: 300}\n"
                  "  - screenshot: one.png\n"
                  "  - wait_text: {text: never printed, timeout_ms: 50}\n"
                  "  - screenshot: two.png\n")
    r = preview(fw("pinetime_web"), "--scenario", str(sc), "--out", str(tmp_path / "pv"))
    assert r.returncode == 1
    assert "FAIL" in r.stdout
    assert read_png(str(tmp_path / "pv" / "preview.png")).shape == (256, 256, 3)   # one frame


@pytest.mark.parametrize("args, says", [
    (["--script", "run 1s, screenshot, jump"], "unknown step 'jump'"),
    (["--script", "run fast"], "expected a time like 1s or 300ms"),
    (["--script", "tap 300 10, screenshot"], "must be 0..239"),
    (["--script", "swipe sideways"], "expected swipe up, down, left or right"),
    (["--script", "run 1s,, screenshot"], "empty"),
    (["--script", 'notify "unclosed'], "unbalanced"),
    (["--script", "screenshot now"], "screenshot takes nothing"),
    (["--script", "run 1s", "--scenario", "x.yaml"], "not allowed with"),
    ([], "one of the arguments --script --scenario is required"),
    (["--script", "screenshot", "--name", "a/b"], "a file name without folders"),
    (["--script", "screenshot", "--frame-ms", "5"], "must be 20 to 60000"),
    (["--scenario", "missing.yaml"], "cannot read"),
])
def test_bad_input_is_one_line_and_status_2(fw, tmp_path, args, says):
    r = preview(fw("pinetime_web"), *args, "--out", str(tmp_path / "pv"), cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr
    assert not (tmp_path / "pv" / "preview.png").exists()


def test_outputs_never_overwrite_inputs(fw, tmp_path):
    import shutil
    firmware = tmp_path / "preview.png"                          # the firmware has that name
    shutil.copy(fw("pinetime_web"), firmware)
    r = preview(str(firmware), "--script", "screenshot", "--out", str(tmp_path))
    assert r.returncode == 2 and "overwritten" in r.stderr, r.stderr


def test_the_script_language():
    from frontends.preview import ScriptError, script_steps, split_steps
    assert split_steps('notify "a, b" c, run 1s,') == [["notify", "a, b", "c"], ["run", "1s"]]
    assert script_steps("run 1.5 s, screenshot, button, button 250ms, set_time "
                        "2025-12-03T14:42:00, call Ann", "x") == [
        {"run": {"ms": 1500.0}}, {"screenshot": "x-1.png"}, {"button": {"press_ms": 100}},
        {"button": {"press_ms": 250.0}}, {"phone_connect": None},
        {"set_time": "2025-12-03T14:42:00"}, {"call": {"name": "Ann", "number": ""}}]
    with pytest.raises(ScriptError):
        script_steps("")


def test_the_ci_workflow_parses():
    """examples/ci/previews.yml (the README links to it) is YAML, and its
    preview command line is one the real parser takes."""
    import shlex
    import yaml
    from frontends.preview import build_parser
    flow = yaml.safe_load((ROOT / "examples" / "ci" / "previews.yml").read_text())
    assert "examples/ci/previews.yml" in (ROOT / "README.md").read_text()
    steps = flow["jobs"]["preview"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    line = next(r for r in runs if r.lstrip().startswith("pinetime-emu preview"))
    argv = shlex.split(line.replace("${{ github.repository }}", "o/r")
                       .replace("${{ github.event.number }}", "7"))
    args = build_parser().parse_args(argv[2:])
    assert args.script and args.url.endswith("/previews/pr-7")
    assert any("gh pr comment" in r for r in runs)
