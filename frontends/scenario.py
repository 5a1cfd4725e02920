"""YAML scenarios: scripted tests of a firmware on the emulator.

    pinetime-emu test SCENARIO.yaml... --firmware FIRMWARE [--board B] [--junit out.xml]

A scenario file is a mapping with ``steps`` (a list) and optional ``name``
and ``board``, or just the list of steps.  Each step is a one-key mapping::

    name: boots and reports
    board: nrf52832
    steps:
      - run: {ms: 5}
      - wait_text: {text: "PASS cpuid", timeout_ms: 100}
      - expect_text: "PASS ICER clears"            # already printed, no running
      - wait_symbol: {name: main, timeout_ms: 10}
      - expect_pin: {pin: 17, level: 1}            # optional timeout_ms to wait for it
      - tap: {x: 120, y: 120}
      - swipe: up                                 # up | down | left | right
      - button: {press_ms: 200}                   # runs through the press and release
      - screenshot: out/screen.png
      - expect_screen: {png: golden.png, tolerance: 8, mask: [[0, 0, 240, 20]]}
      - expect_motor: on                          # on | off
      - save_snapshot: out/booted.snap            # the whole machine state to a file
      - load_snapshot: out/booted.snap            # back to it (same firmware and board)
      - run: {s: 2}                               # ms or s

Screen steps (boxes are ``[x, y, w, h]``; a pixel is *lit* when its
brightest channel is above ``threshold``, default 64)::

      - expect_region: {box: [0, 60, 240, 90], min_lit: 2000}    # and/or max_lit
      - wait_region: {box: [30, 10, 80, 65], max_lit: 0, timeout_ms: 1500}
      - expect_pixel: {x: 75, y: 91, rgb: "#7879aa", tolerance: 8}  # or rgb: [r, g, b]
      - mark_screen:                              # take the checkpoint now
      - expect_screen_changed: {box: [60, 75, 170, 55]}     # box defaults to the screen
      - expect_screen_unchanged: {box: [60, 75, 170, 55], tolerance: 0}
      - wait_screen_change: {box: [60, 75, 170, 55], timeout_ms: 500}

The *checkpoint* is the screen at the start of the scenario, then at the end
of the last ``mark_screen``, ``expect_screen_changed``,
``expect_screen_unchanged``, ``wait_screen_change`` or ``load_snapshot``;
the three compare steps compare the box with the checkpoint, then move the
checkpoint to now ("mark, run 2 s, changed" checks a stopwatch counts).

Phone steps (``machine.phone``, emu/phone/phone.py: a BLE central on the Nordic UART
Service; boards with the emulated S132 SoftDevice; with firmware that has its
own Bluetooth stack, InfiniTime, ``phone_connect``, ``call``, ``notify``,
``music`` and ``set_time`` go over the air to its GATT services instead,
emu/phone/gattphone.py, and the UART steps fail saying there is no UART)::

      - phone_connect: {timeout_ms: 5000}         # wait for advertising, connect
      - phone_send: "1+1\\r"                      # raw bytes (UTF-8; "\\x03" is Ctrl-C)
      - wait_phone: {text: ">>> ", timeout_ms: 1000}
      - repl: {cmd: "1+1", expect: "2", timeout_ms: 5000}   # or contains: "..."
      - call: {name: Ann, number: "555-0100"}     # Gadgetbridge incoming call
      - end_call:
      - notify: {title: Alice, body: "Lunch?", src: Messages}
      - music: {artist: Queen, track: Bohemian Rhapsody, state: play}  # state: play|pause
      - set_time: "2025-12-03T14:42:00"           # the watch's local time, as wasptool sets it
      - upload: {file: hello.py, as: hello.py}    # into the watch's filesystem (wasptool --upload;
                                                  # binary: true as --binary, bytes unfiltered)
      - exec: {file: register.py, contains: ok}   # paste mode (wasptool --exec); or code: "..."

      - expect_phone_message: {t: call, n: ACCEPT, timeout_ms: 3000}

Steps that send (``phone_send``, ``repl``, ``call``, ``end_call``,
``notify``, ``music``, ``set_time``) run until the watch has taken every
write (``timeout_ms``, default 5000).  ``wait_phone`` searches what the watch
sent after a cursor: the cursor is set by ``phone_connect`` and by every
sending step to the end of the output at the moment of sending (so replies to
earlier commands never match), and a successful ``wait_phone`` moves it past
the text it matched (so two ``wait_phone`` steps match two occurrences, in
order).  ``expect_phone_message`` waits for a JSON message from the watch
(``phone.messages``) holding every given key and value, looking only at
messages received after the same kind of cursor (moved past each match).
Default timeouts: ``wait_*`` steps and ``expect_phone_message`` 1000 ms,
``expect_region``/``expect_pixel`` 0 (check now, no running), steps that send
5000 ms.
``repl`` sends the line, runs until the next ``>>>`` prompt and compares what
it printed (stripped) with ``expect``, or looks for ``contains`` in it.
Phone steps other than ``phone_connect``, ``wait_phone`` and
``expect_phone_message`` fail when the phone is not connected.

Paths in steps are relative to the scenario file.  Each scenario gets a
fresh machine (with ``--snapshot FILE``: a machine restored from FILE, so a
suite boots once and every scenario starts from the booted state); after a
failing step the rest of that scenario is skipped.  A file a step or
``--junit`` writes may not be one the command reads (the firmware, a
scenario, ``--snapshot``, a golden PNG, a file to upload) nor another
output (a ``screenshot`` step may write its file again, a later step may
read what an earlier one wrote, ``save_snapshot`` may write what a
``load_snapshot`` step read): that is refused before any scenario runs.  Screenshots, snapshots and the report are written atomically.
Output is one line per step, ``PASS``/``FAIL``/``SKIP`` with the emulated
time; a failure says what was seen instead (the console tail, the lit count,
the pixel colour, how many pixels changed and where, the last 200 bytes the
watch sent the phone, the messages received).  Exit status: 0 all passed, 1
any failed, 2 bad input (unreadable scenario, unknown step, bad arguments,
unloadable firmware) with a one-line error naming the file and step.  A
scenario is UTF-8 text of at most 256 KiB, with at most 100 000 values once
its aliases are expanded, nested at most 64 deep; times are finite and within
the emulated clock's range (as ``--seconds``), taps on the 240x240 panel.

Not modelled / limits: ``set_time`` sends wasp-os's
``watch.rtc.set_localtime(...)`` line (what wasptool sends), not Gadgetbridge's
Bangle.js ``setTime()``; a time zone in the value is ignored (the fields are
used as local time); with InfiniTime it writes the Current Time Service.
The phone does not pair in scenarios.  Touch, button and motor steps need the PineTime board
API (``board.touch``, ``board.button``, ``board.motor``); on a board without
one the step fails saying so.  On the PineTime board the external NOR flash
starts blank and is kept in memory (no flash file), so runs are repeatable.  Steps run strictly in sequence; there is no
parallel input while waiting.
"""
from __future__ import annotations

import argparse
import calendar
import datetime
import json
import math
import os
import reprlib
import stat
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional
from xml.sax.saxutils import quoteattr, escape

from emu.clock import NEVER, TICKS_PER_MS, TICKS_PER_SECOND
from emu.outputs import Files, atomic_write, file_identity, path_problem
from frontends import testbench as tb

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_TIMEOUT_MS = 1000.0
PHONE_TIMEOUT_MS = 5000.0
MAX_MS = float(NEVER // 2 // TICKS_PER_MS)  # the emulated clock's range (about 142 years)
PANEL = 240                     # the touch panel (CST816S over the 240x240 ST7789)
MAX_COORD = 4095                # screen coordinates (boxes, pixels): checked on the screen too
# a scenario file is small: these bound what reading one can cost
MAX_FILE_BYTES = 256 << 10
MAX_VALUES = 100_000            # values in the document, each use of an alias (*x) counted
MAX_CHARS = 4 << 20             # characters in its strings, the same way
MAX_DEPTH = 64                  # lists and mappings inside each other

_reprlib = reprlib.Repr()
_reprlib.maxstring = _reprlib.maxother = 60
_reprlib.maxlong = 24
_reprlib.maxlevel, _reprlib.maxlist, _reprlib.maxdict = 2, 4, 4


class ScenarioError(Exception):
    """Bad scenario input (exit status 2).  The message is always one line."""

    def __init__(self, msg: str):
        super().__init__(msg.replace("\r", "\\r").replace("\n", "\\n"))


@dataclass
class Step:
    kind: str
    args: dict
    label: str
    index: int


@dataclass
class StepResult:
    step: Step
    status: str              # PASS | FAIL | SKIP
    time_s: float = 0.0
    message: str = ""


@dataclass
class Scenario:
    path: str
    name: str
    board: Optional[str]
    steps: list
    results: list = field(default_factory=list)
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and all(r.status == "PASS" for r in self.results)


# ----------------------------------------------------------------------
# parsing
# ----------------------------------------------------------------------
def _num(v: Any, what: str, positive: bool = False, most: Optional[float] = None) -> float:
    """A time: a finite number >= 0 (> 0 if ``positive``), at most ``most``
    (default: the emulated clock's range in ms, as the CLI bounds --seconds)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ScenarioError(f"{what} must be a number, got {_show(v)}")
    most = MAX_MS if most is None else most
    if isinstance(v, float) and not math.isfinite(v):
        raise ScenarioError(f"{what} must be a finite number, got {_show(v)}")
    if v < 0 or (positive and v == 0):
        raise ScenarioError(f"{what} must be {'positive' if positive else '>= 0'}, got {_show(v)}")
    if v > most:
        raise ScenarioError(f"{what} must be at most {most:.15g} (the emulated clock's range), "
                            f"got {_show(v)}")
    return float(v)


def _int(v: Any, what: str, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    """An integer, within lo..hi (inclusive) when they are given."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ScenarioError(f"{what} must be an integer, got {_show(v)}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ScenarioError(f"{what} must be {lo}..{hi}, got {_show(v)}")
    return v


def _show(v: Any) -> str:
    """A value for an error message: its repr, one line, cut short."""
    return _reprlib.repr(v)


def _mapping(v: Any, kind: str, required: tuple, optional: tuple = ()) -> dict:
    if not isinstance(v, dict):
        keys = f" with {', '.join(required)}" if required else ""
        raise ScenarioError(f"{kind}: expected a mapping{keys}, got {_show(v)}")
    missing = [k for k in required if k not in v]
    if missing:
        raise ScenarioError(f"{kind}: missing {', '.join(missing)}")
    extra = [k for k in v if k not in required + optional]
    if extra:
        raise ScenarioError(f"{kind}: unknown key(s) {', '.join(map(_show, extra))}")
    return dict(v)


def _onoff(v: Any, kind: str) -> bool:
    # YAML 1.1 reads bare on/off as booleans
    if v in (True, "on", "ON", "On"):
        return True
    if v in (False, "off", "OFF", "Off"):
        return False
    raise ScenarioError(f"{kind}: expected on or off, got {_show(v)}")


def _parse_step(raw: Any, index: int, base: str) -> Step:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ScenarioError(f"step {index}: expected a one-key mapping like 'run: {{ms: 10}}', "
                            f"got {_show(raw)}")
    (kind, v), = raw.items()
    kind = str(kind)
    where = f"step {index} ({kind})"
    if kind == "run":
        if isinstance(v, dict) and "ms" not in v and "s" not in v:
            raise ScenarioError(f"{where}: missing ms (or s)")
        a = _mapping(v, where, (), ("ms", "s"))
        if "ms" in a and "s" in a:
            raise ScenarioError(f"{where}: give exactly one of ms or s")
        if "s" in a:
            a = {"ms": _num(a["s"], f"{where} s", most=MAX_MS / 1000) * 1000.0}
            label = f"run {a['ms'] / 1000:g} s"
        else:
            a["ms"] = _num(a["ms"], f"{where} ms")
            label = f"run {a['ms']:g} ms"
    elif kind in ("wait_text", "expect_text"):
        if isinstance(v, str):
            v = {"text": v}
        a = _mapping(v, where, ("text",), ("timeout_ms",) if kind == "wait_text" else ())
        if not isinstance(a["text"], str) or not a["text"]:
            raise ScenarioError(f"{where}: text must be a non-empty string")
        a["timeout_ms"] = _num(a.get("timeout_ms", DEFAULT_TIMEOUT_MS if kind == "wait_text"
                                     else 0), f"{where} timeout_ms")
        label = f"{kind} {a['text']!r}"
    elif kind == "wait_symbol":
        if isinstance(v, str):
            v = {"name": v}
        a = _mapping(v, where, ("name",), ("timeout_ms",))
        a["timeout_ms"] = _num(a.get("timeout_ms", DEFAULT_TIMEOUT_MS), f"{where} timeout_ms")
        label = f"wait_symbol {a['name']}"
    elif kind == "tap":
        a = _mapping(v, where, ("x", "y"))
        a["x"] = _int(a["x"], f"{where} x (on the {PANEL}x{PANEL} touch panel)", 0, PANEL - 1)
        a["y"] = _int(a["y"], f"{where} y (on the {PANEL}x{PANEL} touch panel)", 0, PANEL - 1)
        label = f"tap ({a['x']},{a['y']})"
    elif kind == "swipe":
        if v not in ("up", "down", "left", "right"):
            raise ScenarioError(f"{where}: expected up, down, left or right, got {_show(v)}")
        a = {"direction": v}
        label = f"swipe {v}"
    elif kind == "button":
        a = _mapping(v if v is not None else {}, where, (), ("press_ms",))
        a["press_ms"] = _num(a.get("press_ms", 100), f"{where} press_ms", positive=True)
        label = f"button {a['press_ms']:g} ms"
    elif kind == "expect_pin":
        a = _mapping(v, where, ("pin", "level"), ("timeout_ms",))
        a["pin"] = _int(a["pin"], f"{where} pin")
        if not 0 <= a["pin"] < 32:
            raise ScenarioError(f"{where}: pin must be 0..31, got {a['pin']}")
        if a["level"] not in (0, 1):
            raise ScenarioError(f"{where}: level must be 0 or 1, got {_show(a['level'])}")
        a["timeout_ms"] = _num(a.get("timeout_ms", 0), f"{where} timeout_ms")
        label = f"expect_pin P0.{a['pin']:02d} == {int(a['level'])}"
    elif kind == "screenshot":
        if not isinstance(v, str) or not v:
            raise ScenarioError(f"{where}: expected a PNG path")
        a = {"path": _path(base, v, where)}
        label = f"screenshot {v}"
    elif kind == "expect_screen":
        if isinstance(v, str):
            v = {"png": v}
        a = _mapping(v, where, ("png",), ("tolerance", "mask"))
        a["png"] = _path(base, str(a["png"]), f"{where} png")
        a["tolerance"] = _int(a.get("tolerance", 0), f"{where} tolerance", 0, 255)
        masks = a.get("mask", []) or []
        if not isinstance(masks, list) or not all(
                isinstance(m, list) and len(m) == 4
                and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_COORD
                        for i in m) for m in masks):
            raise ScenarioError(f"{where}: mask must be a list of [x, y, w, h] "
                                f"(integers 0..{MAX_COORD})")
        a["mask"] = [tuple(m) for m in masks]
        label = f"expect_screen {v['png']}"
    elif kind == "expect_motor":
        a = {"on": _onoff(v, where)}
        label = f"expect_motor {'on' if a['on'] else 'off'}"
    elif kind in ("save_snapshot", "load_snapshot"):
        if not isinstance(v, str) or not v:
            raise ScenarioError(f"{where}: expected a snapshot file path")
        a = {"path": _path(base, v, where)}
        label = f"{kind} {v}"
    elif kind == "upload":
        a = _mapping({"file": v} if isinstance(v, str) else v, where, ("file",),
                     ("as", "binary", "timeout_ms"))
        a["path"] = _path(base, _text(a.pop("file"), f"{where} file"), f"{where} file")
        if not isinstance(a.get("binary", False), bool):
            raise ScenarioError(f"{where}: binary is true or false")
        if not os.path.isfile(a["path"]):
            raise ScenarioError(f"{where}: no file {a['path']}")
        a["as"] = str(a.get("as") or os.path.basename(a["path"]))
        _timeout(a, where, 10_000.0)
        label = f"upload {os.path.basename(a['path'])} as {a['as']}"
    elif kind == "exec":
        a = _mapping({"file": v} if isinstance(v, str) else v, where, (),
                     ("file", "code", "expect", "contains", "timeout_ms"))
        if ("file" in a) == ("code" in a):
            raise ScenarioError(f"{where}: give exactly one of file or code")
        if "file" in a:
            path = _path(base, _text(a.pop("file"), f"{where} file"), f"{where} file")
            if not os.path.isfile(path):
                raise ScenarioError(f"{where}: no file {path}")
            try:
                with open(path, encoding="utf-8") as f:
                    a["code"], shown = f.read(), os.path.basename(path)
            except (OSError, UnicodeDecodeError) as e:
                raise ScenarioError(f"{where}: cannot read {path} as UTF-8 text "
                                    f"({getattr(e, 'strerror', None) or e})") from None
            a["source"] = path
        else:
            a["code"] = _text(a["code"], f"{where} code")
            shown = repr(a["code"][:30])
        for k in ("expect", "contains"):
            if k in a:
                a[k] = str(a[k])
        _timeout(a, where, 10_000.0)
        label = f"exec {shown}" + (f" -> {a['expect']!r}" if "expect" in a else "")
    elif kind in PHONE_STEPS or kind in SCREEN_STEPS:
        a, label = (_parse_phone_step if kind in PHONE_STEPS else _parse_screen_step)(kind, v, where)
    else:
        raise ScenarioError(f"step {index}: unknown step {_show(kind)} "
                            f"(known: {', '.join(STEPS)})")
    return Step(kind, a, label, index)


def parse_step(raw: Any, index: int, base: str) -> Step:
    """One step as a scenario file holds it (a one-key mapping), checked;
    ``base`` is the folder relative paths are taken from (ScenarioError on
    bad input).  ``pinetime-emu preview --script`` builds its steps here."""
    return _parse_step(raw, index, base)


def _path(base: str, v: str, what: str) -> str:
    """A step's file, relative to the scenario's folder; one that no file
    can have (a NUL byte in it) is refused here, naming the step."""
    problem = path_problem(v)
    if problem is not None:
        raise ScenarioError(f"{what}: {_show(v)}: {problem}")
    return os.path.join(base, v)


def _text(v: Any, what: str) -> str:
    if not isinstance(v, str) or not v:
        raise ScenarioError(f"{what} must be a non-empty string, got {_show(v)}")
    return v


def _timeout(a: dict, where: str, default: float) -> None:
    a["timeout_ms"] = _num(a.get("timeout_ms", default), f"{where} timeout_ms")


def _parse_phone_step(kind: str, v: Any, where: str) -> tuple:
    if kind == "phone_connect":
        a = _mapping(v if v is not None else {}, where, (), ("timeout_ms",))
        _timeout(a, where, PHONE_TIMEOUT_MS)
        return a, "phone_connect"
    if kind == "phone_send":
        a = _mapping({"text": v} if isinstance(v, str) else v, where, ("text",), ("timeout_ms",))
        a["data"] = _text(a.pop("text"), f"{where} text").encode("utf-8")
        _timeout(a, where, PHONE_TIMEOUT_MS)
        return a, f"phone_send {a['data'].decode('utf-8')!r}"
    if kind == "wait_phone":
        a = _mapping({"text": v} if isinstance(v, str) else v, where, ("text",), ("timeout_ms",))
        a["text"] = _text(a["text"], f"{where} text")
        _timeout(a, where, DEFAULT_TIMEOUT_MS)
        return a, f"wait_phone {a['text']!r}"
    if kind == "repl":
        a = _mapping({"cmd": v} if isinstance(v, str) else v, where, ("cmd",),
                     ("expect", "contains", "timeout_ms"))
        a["cmd"] = _text(a["cmd"], f"{where} cmd")
        for k in ("expect", "contains"):
            if k in a:
                a[k] = str(a[k])          # `expect: 2` is the text "2"
        _timeout(a, where, PHONE_TIMEOUT_MS)
        return a, f"repl {a['cmd']!r}" + (f" -> {a['expect']!r}" if "expect" in a else "")
    if kind == "call":
        a = _mapping(v, where, ("name", "number"), ("timeout_ms",))
        a["name"], a["number"] = str(a["name"]), str(a["number"])
        _timeout(a, where, PHONE_TIMEOUT_MS)
        return a, f"call from {a['name']} ({a['number']})"
    if kind == "end_call":
        a = _mapping(v if v is not None else {}, where, (), ("timeout_ms",))
        _timeout(a, where, PHONE_TIMEOUT_MS)
        return a, "end_call"
    if kind == "notify":
        a = _mapping(v, where, ("title", "body"), ("src", "timeout_ms"))
        a = {**a, "title": str(a["title"]), "body": str(a["body"]),
             "src": str(a.get("src", "Messages"))}
        _timeout(a, where, PHONE_TIMEOUT_MS)
        return a, f"notify {a['title']!r}: {a['body']!r}"
    if kind == "music":
        a = _mapping(v, where, (), ("artist", "track", "album", "state", "timeout_ms"))
        if "state" in a and a["state"] not in ("play", "pause"):
            raise ScenarioError(f"{where}: state must be play or pause, got {_show(a['state'])}")
        if ("artist" in a) != ("track" in a):
            raise ScenarioError(f"{where}: give artist and track together")
        if "artist" not in a and "state" not in a:
            raise ScenarioError(f"{where}: expected artist and track, state, or both")
        _timeout(a, where, PHONE_TIMEOUT_MS)
        what = [f"{a['artist']} - {a['track']}"] if "artist" in a else []
        return a, "music " + ", ".join(what + ([a["state"]] if "state" in a else []))
    if kind == "set_time":
        a = _mapping(v if isinstance(v, dict) else {"time": v}, where, ("time",), ("timeout_ms",))
        t = a["time"]
        if isinstance(t, str):
            try:
                t = datetime.datetime.fromisoformat(t)
            except ValueError:
                raise ScenarioError(f"{where}: expected a time like 2025-12-03T14:42:00, "
                                    f"got {_show(a['time'])}") from None
        if not isinstance(t, datetime.datetime):
            raise ScenarioError(f"{where}: expected a time like 2025-12-03T14:42:00, "
                                f"got {_show(t)}")
        if t.tzinfo is not None:        # the watch keeps local time: use the wall-clock fields
            t = t.replace(tzinfo=None)
        a["unix"] = calendar.timegm(t.timetuple())
        _timeout(a, where, PHONE_TIMEOUT_MS)
        return a, f"set_time {t.isoformat()}"
    # expect_phone_message
    if not isinstance(v, dict):
        raise ScenarioError(f"{where}: expected a mapping of keys and values the message "
                            f"holds, e.g. {{t: call, n: ACCEPT}}, got {_show(v)}")
    match = {str(k): val for k, val in v.items() if k != "timeout_ms"}
    if not match:
        raise ScenarioError(f"{where}: give at least one key the message must hold")
    try:
        shown = json.dumps(match, separators=(",", ":"))
    except (TypeError, ValueError):
        raise ScenarioError(f"{where}: values must be what JSON holds (text, numbers, true, "
                            f"false, null, lists, mappings), got {_show(match)}") from None
    a = {"match": match}
    _timeout(a, where, dict(v).get("timeout_ms", DEFAULT_TIMEOUT_MS))
    return a, "expect_phone_message " + shown


def _box_arg(v: Any, where: str) -> tuple:
    if v is None:
        return None
    if (not isinstance(v, list) or len(v) != 4
            or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_COORD
                       for i in v)
            or v[2] == 0 or v[3] == 0):
        raise ScenarioError(f"{where}: box must be [x, y, w, h] (integers 0..{MAX_COORD}, "
                            f"w and h > 0), "
                            f"got {_show(v)}")
    return tuple(v)


def _parse_screen_step(kind: str, v: Any, where: str) -> tuple:
    if kind in ("expect_region", "wait_region"):
        a = _mapping(v, where, ("box",), ("min_lit", "max_lit", "threshold", "timeout_ms"))
        a["box"] = _box_arg(a["box"], where)
        if "min_lit" not in a and "max_lit" not in a:
            raise ScenarioError(f"{where}: give min_lit, max_lit or both")
        for k in ("min_lit", "max_lit"):
            if k in a:
                a[k] = _int(a[k], f"{where} {k}")
        if "threshold" in a:
            a["threshold"] = _int(a["threshold"], f"{where} threshold", 0, 255)
        a.setdefault("threshold", 64)
        _timeout(a, where, DEFAULT_TIMEOUT_MS if kind == "wait_region" else 0)
        rng = (f"{a['min_lit']} <= " if "min_lit" in a else "") + "lit" + (
            f" <= {a['max_lit']}" if "max_lit" in a else "")
        return a, f"{kind} {list(a['box'])} {rng}"
    if kind == "mark_screen":
        if v is not None:
            raise ScenarioError(f"{where}: takes no arguments (write 'mark_screen:')")
        return {}, "mark_screen"
    if kind in ("expect_screen_changed", "expect_screen_unchanged", "wait_screen_change"):
        opt = ("box", "tolerance") + (("timeout_ms",) if kind == "wait_screen_change" else ())
        a = _mapping(v if v is not None else {}, where, (), opt)
        a["box"] = _box_arg(a.get("box"), where)
        a["tolerance"] = _int(a.get("tolerance", 0), f"{where} tolerance", 0, 255)
        if kind == "wait_screen_change":
            _timeout(a, where, DEFAULT_TIMEOUT_MS)
        return a, kind + (f" {list(a['box'])}" if a["box"] else "")
    # expect_pixel
    a = _mapping(v, where, ("x", "y", "rgb"), ("tolerance", "timeout_ms"))
    a["x"] = _int(a["x"], f"{where} x", 0, MAX_COORD)
    a["y"] = _int(a["y"], f"{where} y", 0, MAX_COORD)
    rgb = a["rgb"]
    try:
        a["rgb"] = tb._rgb(rgb)
        if len(a["rgb"]) != 3 or not all(0 <= c <= 255 for c in a["rgb"]):
            raise ValueError
    except (TypeError, ValueError):
        raise ScenarioError(f"{where}: rgb must be \"#rrggbb\" or [r, g, b], "
                            f"got {_show(rgb)}") from None
    a["tolerance"] = _int(a.get("tolerance", 0), f"{where} tolerance", 0, 255)
    _timeout(a, where, 0)
    return a, f"expect_pixel ({a['x']},{a['y']}) #{'%02x%02x%02x' % a['rgb']}"


def _read_text(path: str) -> str:
    """The scenario file as text: a small regular file, UTF-8."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ScenarioError(f"{path}: not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise ScenarioError(f"{path}: {st.st_size} bytes, more than a scenario can be "
                                f"({MAX_FILE_BYTES})")
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read ({e.strerror or e})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        raise ScenarioError(f"{path}: UTF-16 or UTF-32 text (it starts with a byte-order mark); "
                            f"save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ScenarioError(f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at line "
                            f"{line})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _check_size(doc: Any, path: str) -> None:
    """Refuse a document that is too big once its aliases are expanded (a
    'billion laughs' of nested *aliases is a few lines of YAML but 10**9
    values when printed or walked), nested too deeply, or holding strings
    that are not Unicode text (lone surrogates from \\ud800 escapes).
    Costs at most MAX_VALUES steps."""
    values, chars = 0, 0
    stack = [(doc, 1)]
    while stack:
        v, depth = stack.pop()
        values += 1
        if values > MAX_VALUES or chars > MAX_CHARS:
            raise ScenarioError(f"{path}: too big (more than {MAX_VALUES} values or {MAX_CHARS} "
                                f"characters, counting each use of an alias *name)")
        if isinstance(v, (dict, list)):
            if depth > MAX_DEPTH:
                raise ScenarioError(f"{path}: lists and mappings nested more than "
                                    f"{MAX_DEPTH} deep")
            items = [x for kv in v.items() for x in kv] if isinstance(v, dict) else v
            stack.extend((x, depth + 1) for x in items)
        elif isinstance(v, (str, bytes)):
            chars += len(v)
            if isinstance(v, str):
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise ScenarioError(f"{path}: the string {_show(v)} is not Unicode text "
                                        f"(a lone surrogate)") from None


def load_scenario(path: str) -> Scenario:
    """Parse and validate one scenario file; ScenarioError on bad input."""
    import yaml
    text = _read_text(path)
    try:
        doc = yaml.safe_load(text)
    except yaml.reader.ReaderError as e:         # a control character, not a YAML problem
        line = text[:e.position].count("\n") + 1
        code = ord(e.character) if isinstance(e.character, str) else e.character
        raise ScenarioError(f"{path}: invalid YAML at line {line}: control character "
                            f"U+{code:04X} is not allowed") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ScenarioError(f"{path}: invalid YAML{at}") from None
    except RecursionError:
        raise ScenarioError(f"{path}: lists and mappings nested too deeply") from None
    _check_size(doc, path)
    name = os.path.splitext(os.path.basename(path))[0]
    board = None
    if isinstance(doc, dict):
        unknown = [k for k in doc if k not in ("name", "board", "steps")]
        if unknown:
            raise ScenarioError(f"{path}: unknown top-level key(s) "
                                f"{', '.join(map(_show, unknown))}")
        name = str(doc.get("name", name))
        board = doc.get("board")
        if board is not None:
            from emu.machine import BOARDS
            if not isinstance(board, str) or board not in BOARDS:
                raise ScenarioError(f"{path}: unknown board {_show(board)} "
                                    f"(known: {', '.join(sorted(BOARDS))})")
        steps = doc.get("steps")
    else:
        steps = doc
    if not isinstance(steps, list) or not steps:
        raise ScenarioError(f"{path}: expected a non-empty list of steps")
    base = os.path.dirname(os.path.abspath(path))
    try:
        parsed = [_parse_step(s, i + 1, base) for i, s in enumerate(steps)]
    except ScenarioError as e:
        raise ScenarioError(f"{path}: {e}") from None
    return Scenario(path, name, board, parsed)


# ----------------------------------------------------------------------
# running
# ----------------------------------------------------------------------
def _t(m) -> float:
    return m.clock.now / TICKS_PER_SECOND


def _fail(m, what: str, seen: str):
    raise tb.ExpectationFailed(what, seen, _t(m))


def _do_run(m, a, ctx=None):
    r = m.run(ms=a["ms"])
    if r.reason in ("lockup", "fault"):
        _fail(m, f"run {a['ms']:g} ms", f"the firmware stopped: {r.reason} "
                                        f"{r.info.get('message', '') if r.info else ''}".strip())


def _do_wait_text(m, a, ctx=None):
    tb.wait_for_text(m, a["text"], a["timeout_ms"])


def _do_wait_symbol(m, a, ctx=None):
    tb.wait_for_symbol(m, a["name"], a["timeout_ms"])


def _do_tap(m, a, ctx=None):
    touch = tb.device(m, "touch")
    fn = getattr(touch, "tap", None)
    if fn is None:
        raise tb.BoardFeatureMissing(m, "touch.tap")
    fn(a["x"], a["y"])


def _do_swipe(m, a, ctx=None):
    touch = tb.device(m, "touch")
    fn = getattr(touch, "swipe", None)
    if fn is None:
        raise tb.BoardFeatureMissing(m, "touch.swipe")
    fn(a["direction"])


def _do_button(m, a, ctx=None):
    button = tb.device(m, "button")
    hold = getattr(button, "hold", None)
    if hold is not None:
        hold(a["press_ms"])               # press now, release press_ms later (exact ticks)
    else:
        press, release = getattr(button, "press", None), getattr(button, "release", None)
        if press is None or release is None:
            raise tb.BoardFeatureMissing(m, "button.hold or button.press/release")
        press()
        release(a["press_ms"])
    # the step covers the whole press: run until just after the release
    _do_run(m, {"ms": a["press_ms"]})


def _do_expect_pin(m, a, ctx=None):
    tb.wait_for_pin(m, a["pin"], a["level"], a["timeout_ms"])


def _do_screenshot(m, a, ctx=None):
    img = tb.screen(m)
    os.makedirs(os.path.dirname(a["path"]) or ".", exist_ok=True)
    tb.write_png(a["path"], img)


def _do_expect_screen(m, a, ctx=None):
    d = tb.compare_png(tb.screen(m), a["png"], a["tolerance"], a["mask"])
    if not d:
        _fail(m, f"screen matches {os.path.basename(a['png'])}", d.summary)


def _do_expect_motor(m, a, ctx=None):
    on = tb.motor_on(m)
    if on != a["on"]:
        _fail(m, f"motor {'on' if a['on'] else 'off'}", f"motor {'on' if on else 'off'}")


def _do_save_snapshot(m, a, ctx=None):
    os.makedirs(os.path.dirname(a["path"]) or ".", exist_ok=True)
    m.save_snapshot(a["path"])


def _do_load_snapshot(m, a, ctx=None):
    from emu.snapshot import SnapshotError
    try:
        m.load_snapshot(a["path"])
    except SnapshotError as e:
        _fail(m, f"snapshot {os.path.basename(a['path'])} restored", str(e))
    if ctx is not None:             # the cursors and checkpoint start again from here
        ph = getattr(m, "phone", None)
        if ph is not None:
            ctx.phone_now(ph)
        if ctx.checkpoint is not None:
            ctx.mark(m)


# ---------------------------------------------------------------- phone
class _Context:
    """What a scenario remembers between steps: the phone cursors and the screen
    checkpoint."""

    def __init__(self, machine):
        self.phone_out = 0          # offset into phone.output that wait_phone searches from
        self.phone_msg = 0          # index into phone.messages expect_phone_message looks from
        self.checkpoint = None      # screen at the last checkpoint (None: no screen)
        self.checkpoint_t = _t(machine)
        if callable(getattr(machine.board, "screen", None)):
            self.mark(machine)

    def phone_now(self, ph) -> None:
        """Move both phone cursors to the end of what the watch has sent so far."""
        self.phone_out, self.phone_msg = len(ph.output), len(ph.messages)

    def mark(self, machine) -> None:
        self.checkpoint = tb.screen(machine).copy()
        self.checkpoint_t = _t(machine)


def _phone(m, connected: bool = True):
    ph = tb.phone(m)
    if connected and not ph.connected:
        _fail(m, "the phone connected", "not connected (add a phone_connect step first)")
    return ph


def _sending(m, ctx, a, send: Callable) -> None:
    """Move the phone cursors to now, send, and run until the watch took every write."""
    ph = _phone(m)
    ctx.phone_now(ph)
    send(ph)
    if not ph.flush(timeout_ms=a["timeout_ms"]):
        _fail(m, f"the watch takes the phone's writes within {a['timeout_ms']:g} ms",
              f"{ph.central.writes_pending} write(s) still pending; "
              + tb.phone_tail(m, ctx.phone_out))


def _do_phone_connect(m, a, ctx):
    from emu.phone import PhoneError
    ph = _phone(m, connected=False)
    try:
        ph.connect(timeout_ms=a["timeout_ms"])
    except PhoneError as e:
        _fail(m, "the phone connects", str(e))
    ctx.phone_now(ph)


def _do_phone_send(m, a, ctx):
    _sending(m, ctx, a, lambda ph: ph.send(a["data"]))


def _do_wait_phone(m, a, ctx):
    _phone(m, connected=False)
    ctx.phone_out = tb.wait_for_phone_text(m, a["text"], a["timeout_ms"], start=ctx.phone_out)


def _do_repl(m, a, ctx):
    from emu.phone import PhoneError
    ph = _phone(m)
    ctx.phone_now(ph)
    start = ctx.phone_out
    try:
        got = ph.repl(a["cmd"], timeout_ms=a["timeout_ms"])
    except PhoneError:
        _fail(m, f"the prompt '>>> ' after {a['cmd']!r} within {a['timeout_ms']:g} ms",
              tb.phone_tail(m, start))
    ctx.phone_out = len(ph.output)
    out = got.strip()
    if "expect" in a and out != a["expect"]:
        _fail(m, f"{a['cmd']!r} prints {a['expect']!r}", f"{out!r}")
    if "contains" in a and a["contains"] not in got:
        _fail(m, f"{a['cmd']!r} prints something containing {a['contains']!r}", f"{out!r}")


def _do_call(m, a, ctx):
    _sending(m, ctx, a, lambda ph: ph.incoming_call(a["name"], a["number"]))


def _do_end_call(m, a, ctx):
    _sending(m, ctx, a, lambda ph: ph.end_call())


def _do_notify(m, a, ctx):
    _sending(m, ctx, a, lambda ph: ph.notify(a["title"], a["body"], src=a["src"]))


def _do_music(m, a, ctx):
    def send(ph):
        if "artist" in a:
            ph.music_info(str(a["artist"]), str(a["track"]), str(a.get("album", "")))
        if "state" in a:
            ph.music_state(a["state"] == "play")
    _sending(m, ctx, a, send)


def _do_set_time(m, a, ctx):
    _sending(m, ctx, a, lambda ph: ph.set_time(a["unix"]))


def _do_expect_phone_message(m, a, ctx):
    _phone(m, connected=False)
    ctx.phone_msg = tb.wait_for_phone_message(m, a["match"], a["timeout_ms"],
                                              start=ctx.phone_msg) + 1


# ---------------------------------------------------------------- screen
def _whole(m) -> tuple:
    h, w = tb.screen(m).shape[:2]       # BoardFeatureMissing on a board without a screen
    return (0, 0, w, h)


def _box(m, a) -> tuple:
    whole = _whole(m)
    return _on_screen(m, a["box"]) if a["box"] else whole


def _on_screen(m, box: tuple) -> tuple:
    """``box`` if it lies on the screen; a failed step saying the screen's size if not."""
    _x, _y, w, h = _whole(m)
    if box[0] + box[2] > w or box[1] + box[3] > h:
        _fail(m, f"box {list(box)} on the screen", f"the screen is {w}x{h}")
    return box


def _do_region(m, a, ctx=None):
    _on_screen(m, a["box"])
    tb.wait_for_region(m, a["box"], a["timeout_ms"], min_lit=a.get("min_lit"),
                       max_lit=a.get("max_lit"), threshold=a["threshold"])


def _do_mark_screen(m, a, ctx):
    ctx.mark(m)


def _since(ctx) -> str:
    return f"the checkpoint at t={ctx.checkpoint_t:.6f} s"


def _do_expect_screen_changed(m, a, ctx):
    box = _box(m, a)
    n, _bb = tb.region_diff(ctx.checkpoint, tb.screen(m), box, a["tolerance"])
    if n == 0:
        _fail(m, f"box {list(box)} changed since {_since(ctx)}", "no pixel changed")
    ctx.mark(m)


def _do_expect_screen_unchanged(m, a, ctx):
    box = _box(m, a)
    n, bb = tb.region_diff(ctx.checkpoint, tb.screen(m), box, a["tolerance"])
    if n:
        _fail(m, f"box {list(box)} unchanged since {_since(ctx)}",
              f"{n} pixels changed (within x={bb[0]} y={bb[1]} w={bb[2]} h={bb[3]})")
    ctx.mark(m)


def _do_wait_screen_change(m, a, ctx):
    box = _box(m, a)
    try:
        tb.wait_for_screen_change(m, ctx.checkpoint, box, a["timeout_ms"], a["tolerance"])
    except tb.ExpectationFailed as e:
        raise tb.ExpectationFailed(f"{e.what} since {_since(ctx)}", e.seen, e.time_s) from None
    ctx.mark(m)


def _do_expect_pixel(m, a, ctx=None):
    _on_screen(m, (a["x"], a["y"], 1, 1))
    tb.wait_for_pixel(m, a["x"], a["y"], a["rgb"], a["timeout_ms"], a["tolerance"])


def _wasptool(m, a):
    from emu.phone.wasptool import MachineTransport, WaspTool
    return WaspTool(MachineTransport(_phone(m)), timeout_s=a["timeout_ms"] / 1000)


def _do_upload(m, a, ctx):
    from emu.phone.wasptool import WaspToolError
    with open(a["path"], "rb") as f:
        data = f.read()
    try:
        _wasptool(m, a).upload(data, a["as"], binary=a.get("binary", False))
    except WaspToolError as e:
        _fail(m, f"upload of {a['as']}", str(e))
    ctx.phone_out = len(m.phone.output)


def _do_exec(m, a, ctx):
    from emu.phone.wasptool import WaspToolError
    try:
        out = _wasptool(m, a).exec_text(a["code"]).strip()
    except WaspToolError as e:
        _fail(m, "the code runs without an exception", str(e))
    ctx.phone_out = len(m.phone.output)
    if "expect" in a and out != a["expect"]:
        _fail(m, f"the code prints {a['expect']!r}", f"{out!r}")
    if "contains" in a and a["contains"] not in out:
        _fail(m, f"the code prints something containing {a['contains']!r}", f"{out!r}")


PHONE_STEPS: dict = {
    "upload": _do_upload, "exec": _do_exec,
    "phone_connect": _do_phone_connect, "phone_send": _do_phone_send,
    "wait_phone": _do_wait_phone, "repl": _do_repl, "call": _do_call,
    "end_call": _do_end_call, "notify": _do_notify, "music": _do_music,
    "set_time": _do_set_time, "expect_phone_message": _do_expect_phone_message,
}
SCREEN_STEPS: dict = {
    "expect_region": _do_region, "wait_region": _do_region, "mark_screen": _do_mark_screen,
    "expect_screen_changed": _do_expect_screen_changed,
    "expect_screen_unchanged": _do_expect_screen_unchanged,
    "wait_screen_change": _do_wait_screen_change, "expect_pixel": _do_expect_pixel,
}

STEPS: dict = {
    "run": _do_run, "wait_text": _do_wait_text, "expect_text": _do_wait_text,
    "wait_symbol": _do_wait_symbol, "tap": _do_tap, "swipe": _do_swipe, "button": _do_button,
    "expect_pin": _do_expect_pin, "screenshot": _do_screenshot,
    "expect_screen": _do_expect_screen, "expect_motor": _do_expect_motor,
    "save_snapshot": _do_save_snapshot, "load_snapshot": _do_load_snapshot,
    **PHONE_STEPS, **SCREEN_STEPS,
}


def run_scenario(sc: Scenario, machine, out=sys.stdout, machine_of=None,
                 label_of=None) -> Scenario:
    """Run ``sc`` on ``machine``, printing one line per step; fills ``sc.results``.
    ``machine_of(step)``: the machine a step acts on instead (a world
    scenario's node: frontends/worldscenario.py), ``label_of(step)`` its label."""
    failed = False
    ctxs: dict = {}
    for step in sc.steps:
        m = machine_of(step) if machine_of is not None else machine
        label = label_of(step) if label_of is not None else step.label
        if failed:
            sc.results.append(StepResult(step, "SKIP", _t(m)))
            print(f"  SKIP {'':17} {step.index:2}. {label}", file=out)
            continue
        ctx = ctxs.get(id(m))
        if ctx is None:
            ctx = ctxs[id(m)] = _Context(m)
        try:
            STEPS[step.kind](m, step.args, ctx)
        except tb.ExpectationFailed as e:
            failed = True
            res = StepResult(step, "FAIL", _t(m), f"expected {e.what}; saw {e.seen}")
        except Exception as e:                    # a model or I/O error: report, keep going
            failed = True
            res = StepResult(step, "FAIL", _t(m), f"error: {type(e).__name__}: {e}")
        else:
            res = StepResult(step, "PASS", _t(m))
        sc.results.append(res)
        line = f"  {res.status} [t={res.time_s:.6f} s] {step.index:2}. {label}"
        if res.message:
            line += f"\n       {res.message}"
        print(line, file=out)
    return sc


def write_junit(path: str, scenarios: list, firmware: str) -> None:
    """One <testsuite>, one <testcase> per scenario (time = emulated seconds)."""
    failures = sum(1 for s in scenarios if not s.passed)
    parts = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuite name="pinetime-emu" tests="{len(scenarios)}" failures="{failures}" '
             f'errors="0" skipped="0">']
    for s in scenarios:
        t = s.results[-1].time_s if s.results else 0.0
        parts.append(f'  <testcase classname={quoteattr(os.path.basename(firmware))} '
                     f'name={quoteattr(s.name)} file={quoteattr(s.path)} time="{t:.6f}">')
        bad = [r for r in s.results if r.status == "FAIL"]
        if s.error or bad:
            msg = s.error or f"step {bad[0].step.index} ({bad[0].step.label}): {bad[0].message}"
            parts.append(f'    <failure message={quoteattr(msg)}>{escape(msg)}</failure>')
        log = "\n".join(f"{r.status} t={r.time_s:.6f} {r.step.label}"
                        + (f": {r.message}" if r.message else "") for r in s.results)
        parts.append(f"    <system-out>{escape(log)}</system-out>")
        parts.append("  </testcase>")
    parts.append("</testsuite>")
    atomic_write(path, "\n".join(parts) + "\n")     # whole, or the previous report kept


def build_parser() -> argparse.ArgumentParser:
    from frontends.common import ArgumentParser, path_arg  # one-line usage errors, exit status 2
    p = ArgumentParser(prog="pinetime-emu test",
                       description="Run YAML scenarios against a firmware.  Bad input (a "
                                   "scenario or firmware that cannot be loaded, a report "
                                   "that cannot be written, a bad option) is one line on "
                                   "stderr and exit status 2, before any scenario runs.")
    p.add_argument("scenarios", type=path_arg, nargs="+", metavar="SCENARIO",
                   help="scenario .yaml files")
    p.add_argument("--firmware", "-f", type=path_arg, required=True,
                   help="ELF, Intel HEX, raw .bin, flash dump or DFU .zip")
    p.add_argument("--board", default=None,
                   help="board (default: the scenario's 'board', else the one the "
                        "firmware was built for, as 'run' picks it)")
    p.add_argument("--junit", type=path_arg, metavar="OUT.xml",
                   help="write a JUnit XML report (its directory must exist)")
    p.add_argument("--snapshot", type=path_arg, metavar="FILE", default=None,
                   help="start every scenario from this machine snapshot (taken on the same "
                        "firmware and board, e.g. with 'pinetime-emu run --save-snapshot')")
    return p


# the step kinds that write a file, and those that read one (besides the
# scenario files themselves)
_STEP_OUTPUTS = ("screenshot", "save_snapshot")
_STEP_INPUTS = {"expect_screen": "png", "load_snapshot": "path", "upload": "path",
                "exec": "source"}


def test_files(args, scenarios: list) -> Files:
    """Every file ``test`` reads and writes (emu/outputs.py): a report or a
    step's output that is an input (the firmware, a scenario, --snapshot, a
    golden PNG, a file to upload) or another output is refused before any
    scenario runs.  A file an earlier step wrote is not an input (screenshot,
    then compare with it later; save a snapshot, then load it).  Exceptions:
    a step may write its file again (two ``screenshot`` steps to one file),
    and ``save_snapshot`` may write the file a ``load_snapshot`` step read
    (a snapshot continued in place)."""
    files = Files()
    files.read("--firmware", args.firmware)
    files.read("--snapshot", args.snapshot)
    for sc in scenarios:
        files.read("SCENARIO", sc.path)
    written = set()              # identities of the files steps have written so far
    for sc in scenarios:
        name = os.path.basename(sc.path)
        for step in sc.steps:
            label = f"{name} step {step.index} ({step.kind})"
            kind = f"{step.kind} step"
            if step.kind in _STEP_OUTPUTS:
                path = step.args["path"]
                also = ("load_snapshot step",) if step.kind == "save_snapshot" else ()
                # the step makes its folder: only clashes are checked
                files.write(label, path, kind=kind, may_replace=(kind,) + also, checked=False)
                written.add(file_identity(path))
            elif step.kind in _STEP_INPUTS:
                path = step.args.get(_STEP_INPUTS[step.kind])
                if path is not None and file_identity(path) not in written:
                    files.read(label, path, kind=kind)    # not one an earlier step wrote
    files.write("--junit", args.junit)
    return files


def _usage_error(msg: str) -> int:
    msg = msg.replace("\r", "\\r").replace("\n", "\\n")         # one line, always
    print(f"pinetime-emu test: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Optional[list] = None, out=None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:          # argparse printed its one-line usage error
        return EXIT_OK if e.code == 0 else EXIT_USAGE
    from emu.loader import FirmwareError
    from emu.machine import BOARDS, Machine
    if args.board is not None and args.board not in BOARDS:
        return _usage_error(f"unknown board {args.board!r} (known: {', '.join(sorted(BOARDS))})")
    try:
        scenarios = [load_scenario(p) for p in args.scenarios]
    except ScenarioError as e:
        return _usage_error(str(e))
    for sc in scenarios:
        if sc.board is not None and sc.board not in BOARDS:
            return _usage_error(f"{sc.path}: unknown board {sc.board!r}")
    if not os.path.exists(args.firmware):
        return _usage_error(f"{args.firmware}: no such file")
    problem = test_files(args, scenarios).problem()
    if problem is not None:
        return _usage_error(problem)
    from emu.snapshot import SnapshotError
    detected = None
    for sc in scenarios:
        board = args.board or sc.board
        if board is None:                 # the board the image was built for (emu.detect)
            if detected is None:
                from emu.detect import detect_board
                try:
                    detected = detect_board(args.firmware)
                except FirmwareError as e:
                    return _usage_error(str(e))
            board = detected
        print(f"scenario {sc.name} ({sc.path}) on {board}", file=out)
        try:
            # hermetic: the PineTime's NOR flash starts blank in memory, no file
            opts = {"flash_file": None} if board == "pinetime" else {}
            m = Machine(args.firmware, board=board, **opts)
            if args.snapshot is not None:
                m.load_snapshot(args.snapshot)
        except (FirmwareError, SnapshotError) as e:
            return _usage_error(str(e))
        run_scenario(sc, m, out)
        nfail = sum(r.status == "FAIL" for r in sc.results)
        verdict = "PASSED" if sc.passed else f"FAILED ({nfail} failed)"
        print(f"scenario {sc.name}: {verdict} at t={_t(m):.6f} s", file=out)
    npass = sum(s.passed for s in scenarios)
    print(f"{len(scenarios)} scenario(s): {npass} passed, {len(scenarios) - npass} failed",
          file=out)
    if args.junit:
        try:
            write_junit(args.junit, scenarios, args.firmware)
        except OSError as e:
            return _usage_error(f"{args.junit}: cannot write ({e.strerror or e})")
    return EXIT_OK if npass == len(scenarios) else EXIT_FAILED
