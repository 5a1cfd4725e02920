"""Previews for pull requests: ``pinetime-emu preview FIRMWARE --script "..."``.

    pinetime-emu preview FIRMWARE --script "run 1s, screenshot, swipe up, run 300ms, screenshot"
    pinetime-emu preview FIRMWARE --scenario SCENARIO.yaml [--out DIR] [--name NAME]

Runs the firmware headless, from power-on (or ``--snapshot``), through the
steps, and writes into ``--out`` (default ``preview/``, made if its parent
exists):

- ``NAME.png``: the screenshots side by side (a strip, exact pixels, scaled
  by ``--scale`` with nearest-neighbour sampling);
- ``NAME.gif``: the screenshots one after another, each shown
  ``--frame-ms`` (default 1000), looping (GIF: at most 256 colours a frame);
- ``NAME.md``: a Markdown snippet showing both, with one caption per
  screenshot (what was done since the one before, and the emulated time),
  image links prefixed with ``--url`` (where CI publishes the images);
- ``NAME-1.png`` ... : each screenshot (``--script`` only; a scenario's
  ``screenshot`` steps write where they say).

``--script`` is a comma-separated list of steps, each translated into the
scenario language of frontends/scenario.py (``pinetime-emu test``), so both
run the same code::

    run 1s | run 300ms | run 1.5 s       -> run: {ms: ...}
    screenshot                           -> screenshot: NAME-<n>.png
    tap X Y                              -> tap: {x: X, y: Y}
    swipe up|down|left|right             -> swipe: DIR
    button [DURATION]                    -> button: {press_ms: ...} (default 100 ms)
    notify TITLE [BODY]                  -> notify: {title: ..., body: ...}
    call NAME [NUMBER] | end_call        -> call: {...} | end_call:
    music ARTIST TRACK [play|pause]      -> music: {...}
    set_time 2025-12-03T14:42:00         -> set_time: ...
    phone_connect                        -> phone_connect:

Words with spaces are quoted (``notify "Lunch?" "At one, at the usual place"``;
a comma inside quotes does not end a step).  A phone step connects the phone
first (a ``phone_connect`` step is added before the first one).  A
``--scenario`` file's own ``screenshot`` steps are the frames; with none,
the screen at the end is the one frame.

Deterministic: the same firmware and steps give the same PNG and GIF bytes
(emulated time only; the PineTime's NOR flash starts blank in memory).
Exit status: 0 written; 1 a step failed (what was captured before it is
still written, and the step's line says why); 2 bad input (an unknown step,
a bad value, a file that cannot be read or written), one line, before
anything runs.

Not modelled / limits: the GIF holds only the screenshots, not the motion
between them (``run --record out.gif`` records every frame the firmware
sent); the strip has no text in it (the captions are in the Markdown, so the
images are the same on every machine).
"""
from __future__ import annotations

import argparse
import io
import os
import re
import shlex
import sys
from dataclasses import dataclass
from typing import Optional

from frontends.common import EXIT_GUEST, EXIT_OK, EXIT_USAGE, _scale

DIRECTIONS = ("up", "down", "left", "right")
PHONE_VERBS = ("notify", "call", "end_call", "music", "set_time")
GAP = 8                          # pixels between two screens of the strip
STRIP_BG = (32, 33, 38)
MAX_SCRIPT = 64 * 1024           # characters of a --script
MAX_FRAMES = 200


class ScriptError(ValueError):
    """A --script that cannot be run (one line; exit status 2)."""


# ----------------------------------------------------------------------
# the script language: comma-separated steps -> scenario steps
# ----------------------------------------------------------------------
def split_steps(text: str) -> list:
    """The script's steps as lists of words: split at commas outside quotes,
    each then split as a shell would (quotes, backslashes)."""
    if len(text) > MAX_SCRIPT:
        raise ScriptError(f"the script is longer than {MAX_SCRIPT} characters")
    items, cur, quote = [], [], None
    for ch in text:
        if quote is not None:
            cur.append(ch)
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch == ",":
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if quote is not None:
        raise ScriptError(f"unbalanced {quote} in the script")
    items.append("".join(cur))
    out = []
    for n, item in enumerate(items, 1):
        try:
            words = shlex.split(item)
        except ValueError as e:
            raise ScriptError(f"step {n} ({item.strip()!r}): {e}") from None
        if not words:
            if item.strip() or n < len(items):         # ", ," or a leading comma
                raise ScriptError(f"step {n} is empty (two commas in a row?)")
            continue                                   # a trailing comma
        out.append(words)
    if not out:
        raise ScriptError("the script has no steps")
    return out


_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ms|s)$", re.I)


def duration_ms(words: list, what: str) -> float:
    """'1s', '300ms', '1.5 s' -> milliseconds."""
    m = _DURATION.match(" ".join(words).strip())
    if not m:
        raise ScriptError(f"{what}: expected a time like 1s or 300ms, got "
                          f"{' '.join(words)!r}")
    v = float(m.group(1))
    return v * 1000.0 if m.group(2).lower() == "s" else v


def _int(word: str, what: str) -> int:
    try:
        return int(word, 10)
    except ValueError:
        raise ScriptError(f"{what}: expected a whole number, got {word!r}") from None


def script_steps(text: str, frame_name: str = "preview") -> list:
    """The scenario steps (raw one-key mappings, as a scenario file holds
    them) for a --script.  Screenshots are written as FRAME_NAME-<n>.png."""
    steps, shots, connected = [], 0, False
    for n, words in enumerate(split_steps(text), 1):
        verb, rest = words[0].lower(), words[1:]
        where = f"step {n} ({' '.join(words)!r})"
        if verb in PHONE_VERBS and not connected:
            steps.append({"phone_connect": None})
            connected = True
        if verb == "run":
            steps.append({"run": {"ms": duration_ms(rest, where)}})
        elif verb == "screenshot":
            if rest:
                raise ScriptError(f"{where}: screenshot takes nothing after it")
            shots += 1
            steps.append({"screenshot": f"{frame_name}-{shots}.png"})
        elif verb == "tap":
            if len(rest) != 2:
                raise ScriptError(f"{where}: expected tap X Y (a pixel of the 240x240 panel)")
            steps.append({"tap": {"x": _int(rest[0], where), "y": _int(rest[1], where)}})
        elif verb == "swipe":
            if len(rest) != 1 or rest[0].lower() not in DIRECTIONS:
                raise ScriptError(f"{where}: expected swipe up, down, left or right")
            steps.append({"swipe": rest[0].lower()})
        elif verb == "button":
            steps.append({"button": {"press_ms": duration_ms(rest, where) if rest else 100}})
        elif verb == "notify":
            if not 1 <= len(rest) <= 2:
                raise ScriptError(f"{where}: expected notify TITLE [BODY] (quote words "
                                  f"with spaces)")
            steps.append({"notify": {"title": rest[0], "body": rest[1] if len(rest) > 1
                                     else ""}})
        elif verb == "call":
            if not 1 <= len(rest) <= 2:
                raise ScriptError(f"{where}: expected call NAME [NUMBER]")
            steps.append({"call": {"name": rest[0], "number": rest[1] if len(rest) > 1
                                   else ""}})
        elif verb == "end_call":
            steps.append({"end_call": None})
        elif verb == "music":
            if len(rest) not in (2, 3) or (len(rest) == 3 and rest[2] not in ("play", "pause")):
                raise ScriptError(f"{where}: expected music ARTIST TRACK [play|pause]")
            a = {"artist": rest[0], "track": rest[1]}
            if len(rest) == 3:
                a["state"] = rest[2]
            steps.append({"music": a})
        elif verb == "set_time":
            if len(rest) != 1:
                raise ScriptError(f"{where}: expected set_time 2025-12-03T14:42:00")
            steps.append({"set_time": rest[0]})
        elif verb == "phone_connect":
            if not connected:
                steps.append({"phone_connect": None})
                connected = True
        else:
            raise ScriptError(f"{where}: unknown step {verb!r} (known: run, screenshot, tap, "
                              f"swipe, button, notify, call, end_call, music, set_time, "
                              f"phone_connect)")
    if shots > MAX_FRAMES:
        raise ScriptError(f"{shots} screenshots: at most {MAX_FRAMES}")
    return steps


# ----------------------------------------------------------------------
# the outputs
# ----------------------------------------------------------------------
@dataclass
class Frame:
    image: object                  # (H, W, 3) uint8
    time_s: float
    caption: str


def _scaled(img, scale: int):
    import numpy as np
    a = np.asarray(img, dtype=np.uint8)
    if scale != 1:
        a = a.repeat(scale, axis=0).repeat(scale, axis=1)
    return a


def strip_image(frames: list, scale: int = 1):
    """The screens side by side, GAP pixels apart (and around), as an array."""
    import numpy as np
    imgs = [_scaled(f.image, scale) for f in frames]
    h = max(i.shape[0] for i in imgs)
    w = sum(i.shape[1] for i in imgs) + GAP * (len(imgs) + 1)
    out = np.empty((h + 2 * GAP, w, 3), dtype=np.uint8)
    out[:, :] = STRIP_BG
    x = GAP
    for i in imgs:
        out[GAP:GAP + i.shape[0], x:x + i.shape[1]] = i
        x += i.shape[1] + GAP
    return out


def gif_bytes(frames: list, scale: int = 1, frame_ms: int = 1000) -> bytes:
    """An animated GIF of the screens, each shown ``frame_ms``, looping."""
    from PIL import Image
    images = [Image.fromarray(_scaled(f.image, scale), "RGB") for f in frames]
    buf = io.BytesIO()
    images[0].save(buf, format="GIF", save_all=True, append_images=images[1:],
                   duration=[frame_ms] * len(images), loop=0)
    return buf.getvalue()


def markdown(frames: list, name: str, url: str, title: str, script: Optional[str]) -> str:
    """The snippet for a pull request: the GIF, the strip, the captions."""
    prefix = url if not url or url.endswith("/") else url + "/"
    lines = [f"<!-- pinetime-emu preview: {title} -->",
             f"**{_md(title)}** on pinetime-emu"
             + (f" (`{script.replace('`', chr(39))}`)" if script else "") + ":",
             "",
             f"![{_md(title)}: the screens one after another]({prefix}{name}.gif)",
             f"![{_md(title)}: the screens side by side]({prefix}{name}.png)",
             ""]
    for i, f in enumerate(frames, 1):
        lines.append(f"{i}. t={f.time_s:.3f} s: {_md(f.caption)}")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    """Text safe inside Markdown (no markup, no HTML, one line)."""
    text = " ".join(str(text).split())
    return re.sub(r"([\\`*_{}\[\]()<>#+!|~])", r"\\\1", text)


# ----------------------------------------------------------------------
# running
# ----------------------------------------------------------------------
def capture(scenario, machine, out=sys.stdout) -> tuple:
    """Run ``scenario`` (frontends.scenario) on ``machine``; returns (frames,
    passed).  Each screenshot step's file is a frame, captioned with the
    steps since the one before."""
    from emu.clock import TICKS_PER_SECOND
    from emu.png import read_png
    from frontends.scenario import run_scenario
    run_scenario(scenario, machine, out)
    frames, since = [], []
    for r in scenario.results:
        if r.status != "PASS":
            break
        if r.step.kind == "screenshot":
            frames.append(Frame(read_png(r.step.args["path"]), r.time_s,
                                ", ".join(since) or "start"))
            since = []
        else:
            since.append(r.step.label)
    passed = scenario.passed
    if passed and not any(s.kind == "screenshot" for s in scenario.steps):
        from frontends import testbench as tb
        frames.append(Frame(tb.screen(machine).copy(), machine.clock.now / TICKS_PER_SECOND,
                            ", ".join(since) or "the end"))
    return frames, passed


def build_parser() -> argparse.ArgumentParser:
    from frontends.common import ArgumentParser, path_arg
    p = ArgumentParser(prog="pinetime-emu preview",
                       description="Run a firmware through a few steps and write its "
                                   "screenshots as a PNG strip, a GIF and a Markdown snippet "
                                   "(for a pull request).  Bad input is one line on stderr "
                                   "and exit status 2, before anything runs.")
    p.add_argument("firmware", type=path_arg, metavar="FIRMWARE",
                   help="ELF, Intel HEX, raw .bin, flash dump, MCUBoot image or DFU .zip")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--script", metavar="STEPS",
                     help='comma-separated steps: "run 1s, screenshot, swipe up, run 300ms, '
                          'screenshot, tap 120 200, run 300ms, screenshot"')
    how.add_argument("--scenario", type=path_arg, metavar="YAML",
                     help="a scenario file (pinetime-emu test); its screenshot steps are "
                          "the frames")
    p.add_argument("--out", type=path_arg, default="preview", metavar="DIR",
                   help="folder for the outputs (default preview/; made if missing)")
    p.add_argument("--name", default="preview", metavar="NAME",
                   help="file names: NAME.png, NAME.gif, NAME.md (default preview)")
    p.add_argument("--board", default=None,
                   help="board (default: the scenario's, else the one the firmware was "
                        "built for)")
    p.add_argument("--snapshot", type=path_arg, metavar="FILE", default=None,
                   help="start from this machine snapshot instead of power-on")
    p.add_argument("--scale", type=_scale, default=1, metavar="N",
                   help="scale the images by N, 1 to 8 (nearest neighbour; default 1)")
    p.add_argument("--frame-ms", type=_frame_ms, default=1000, metavar="MS",
                   help="how long the GIF shows each screen (default 1000)")
    p.add_argument("--url", default="", metavar="PREFIX",
                   help="prefix of the image links in the Markdown (where CI publishes "
                        "them; default: beside the .md file)")
    p.add_argument("--title", default=None,
                   help="what the Markdown calls the firmware (default: its file name)")
    return p


def _frame_ms(s: str) -> int:
    try:
        v = int(s, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {s!r}") from None
    if not 20 <= v <= 60_000:
        raise argparse.ArgumentTypeError(f"must be 20 to 60000 ms, not {s}")
    return v


def _usage_error(msg: str) -> int:
    msg = msg.replace("\r", "\\r").replace("\n", "\\n")
    print(f"pinetime-emu preview: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def _name_problem(name: str) -> Optional[str]:
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        return f"--name {name!r}: a file name without folders"
    return None


def main(argv: Optional[list] = None, out=None) -> int:
    out = out or sys.stdout
    try:
        args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:
        return EXIT_OK if e.code == 0 else EXIT_USAGE
    from emu.loader import FirmwareError
    from emu.machine import BOARDS, Machine
    from emu.outputs import atomic_write
    from emu.snapshot import SnapshotError
    from frontends import scenario as sc_mod
    problem = _name_problem(args.name)
    if problem:
        return _usage_error(problem)
    if args.board is not None and args.board not in BOARDS:
        return _usage_error(f"unknown board {args.board!r} (known: {', '.join(sorted(BOARDS))})")
    if not os.path.isfile(args.firmware):
        return _usage_error(f"{args.firmware}: no such file")
    outdir = args.out
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        return _usage_error(f"--out {outdir}: not a folder")
    parent = os.path.dirname(os.path.abspath(outdir))
    if not os.path.isdir(parent):
        return _usage_error(f"--out {outdir}: its parent folder {parent} does not exist")
    try:
        if args.script is not None:
            raw = script_steps(args.script, args.name)
            base = os.path.abspath(outdir)
            steps = [sc_mod.parse_step(s, i + 1, base) for i, s in enumerate(raw)]
            scenario = sc_mod.Scenario("--script", args.name, None, steps)
        else:
            scenario = sc_mod.load_scenario(args.scenario)
    except (ScriptError, sc_mod.ScenarioError) as e:
        return _usage_error(f"--script: {e}" if args.script is not None else str(e))
    os.makedirs(outdir, exist_ok=True)
    ns = argparse.Namespace(firmware=args.firmware, snapshot=args.snapshot, junit=None)
    files = sc_mod.test_files(ns, [scenario] if args.scenario is not None else [])
    if args.script is not None:
        for step in scenario.steps:
            if step.kind == "screenshot":
                files.write(f"--script step {step.index} (screenshot)", step.args["path"],
                            kind="preview frame")
    paths = {ext: os.path.join(outdir, f"{args.name}.{ext}") for ext in ("png", "gif", "md")}
    for ext, path in paths.items():
        files.write(f"the preview's .{ext}", path, kind="preview")
    problem = files.problem()
    if problem is not None:
        return _usage_error(problem)
    board = args.board or scenario.board
    try:
        if board is None:
            from emu.detect import detect_board
            board = detect_board(args.firmware)
        opts = {"flash_file": None} if board == "pinetime" else {}
        machine = Machine(args.firmware, board=board, **opts)
        if args.snapshot is not None:
            machine.load_snapshot(args.snapshot)
    except (FirmwareError, SnapshotError) as e:
        return _usage_error(str(e))
    print(f"preview of {args.firmware} on {board}", file=out)
    frames, passed = capture(scenario, machine, out)
    machine.close()
    if not frames:
        print("pinetime-emu preview: no screenshot was taken: nothing written", file=out)
        return EXIT_GUEST
    title = args.title or os.path.basename(args.firmware)
    try:
        atomic_write(paths["png"], _png(strip_image(frames, args.scale)))
        atomic_write(paths["gif"], gif_bytes(frames, args.scale, args.frame_ms))
        atomic_write(paths["md"], markdown(frames, args.name, args.url, title, args.script))
    except OSError as e:
        return _usage_error(f"--out {outdir}: cannot write ({e.strerror or e})")
    for path in paths.values():
        print(f"wrote {path}", file=out)
    return EXIT_OK if passed else EXIT_GUEST


def _png(img) -> bytes:
    from emu.png import encode_png
    return encode_png(img)
