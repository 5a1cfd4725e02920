"""Seeded fuzzing of the scenario reader (frontends/scenario.py load_scenario).

Each case is a scenario file built from the step vocabulary with hostile
values (huge, non-finite and negative numbers, wrong types, aliases and
anchors, deep nesting, bytes that are not UTF-8), sometimes mutated byte by
byte.  Every case must end, within a time bound, either in a Scenario whose
steps are sane (finite times within the emulated clock's range, taps on the
panel) or in a ScenarioError of one line naming the file; any other
exception, a multi-line message or a slow case fails the test with the seed
and the case number.  Before the fixes of issue 24 this found
UnicodeDecodeError, OverflowError, RecursionError, TypeError (unhashable
board), alias bombs that never end, and accepted taps at -1 and times of
1e29 ms.
"""
from __future__ import annotations

import math
import random

import pytest

from helpers.fuzz import CaseTooSlow, time_bound
from emu.clock import NEVER, TICKS_PER_MS
from frontends.scenario import STEPS, ScenarioError, load_scenario

MAX_MS = NEVER // 2 // TICKS_PER_MS         # the emulated clock's range, as --seconds
PANEL = 240                                 # the touch panel is 240x240

SEED = 24
CASES = 700
CASE_SECONDS = 5.0

KEYS = ["ms", "s", "text", "timeout_ms", "name", "x", "y", "pin", "level", "press_ms", "png",
        "tolerance", "mask", "box", "min_lit", "max_lit", "threshold", "rgb", "cmd", "expect",
        "contains", "number", "title", "body", "src", "artist", "track", "state", "time",
        "file", "code", "as", "t", "n"]
NUMBERS = ["-1", "0", "1", "239", "240", "1e309", "-1e309", ".inf", "-.inf", ".nan",
           "1.0e+30", "1.0e+29", "2e3", "9" * 400, "-" + "9" * 400, "18446744073709551616",
           "0x7fffffff", "4503599627371", "4503599627.38", "1.5", "1_000", "0o777", "~",
           "true", "off", "2025-12-03T14:42:00", "2025-12-03"]
TEXTS = ['""', '" "', '"\\x00"', '"\\ud800"', '"\\u202e"', '"é"', '"\\e[2J"', '"a\\nb"',
         '"' + "x" * 300 + '"', "up", "left", "play", "on", "pinetime", "nrf52832", "'*'",
         "'&'", "'#f00'", '"#7879aa"', "%s%n", "../../x", "hello.py"]
BYTES = [b"\xff", b"\xfe", b"\xe9", b"\x00", b"\t", b"\r", b"\x1b", b"\xc3", b"\xef\xbb\xbf",
         b"[", b"{", b"]", b"}", b":", b"- ", b"&a ", b"*a", b"!!binary ", b"? ", b"<<: *a",
         b"---\n", b"...\n", b"%YAML 1.1\n", b"\n  ", b"!!python/object:os.system "]


def scalar(rng: random.Random) -> str:
    return rng.choice(NUMBERS if rng.random() < 0.5 else TEXTS)


def value(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 2 or r < 0.45:
        return scalar(rng)
    if r < 0.65:
        return "[" + ", ".join(value(rng, depth + 1) for _ in range(rng.randrange(5))) + "]"
    if r < 0.7:
        return "[" * 40 + "1" + "]" * 40
    keys = rng.sample(KEYS, rng.randrange(4))
    return "{" + ", ".join(f"{k}: {value(rng, depth + 1)}" for k in keys) + "}"


def bomb(rng: random.Random) -> str:
    """Nested aliases: 9**levels values once expanded."""
    levels = rng.randrange(3, 10)
    parts = ["&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        parts.append(f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "[" + ", ".join(parts) + "]"


# well-formed steps and values that fit them; a case may swap the value for a hostile one
TIMES = ["0", "1", "10", "0.5", "200"]
GOOD = [("run: {{ms: {}}}", TIMES), ("run: {{s: {}}}", TIMES),
        ("wait_text: {{text: PASS, timeout_ms: {}}}", TIMES),
        ("tap: {{x: {}, y: 120}}", ["0", "120", "239"]), ("tap: {{x: 10, y: {}}}", ["0", "239"]),
        ("swipe: {}", ["up", "left"]), ("button: {{press_ms: {}}}", ["1", "50.5"]),
        ("expect_pin: {{pin: {}, level: 1}}", ["0", "31"]), ("expect_motor: {}", ["on", "off"]),
        ("mark_screen: {}", [""]), ("expect_region: {{box: [0, 0, {}, 10], min_lit: 1}}",
                                   ["1", "240"]),
        ("set_time: {}", ["2025-12-03T14:42:00", "'2025-12-03T14:42:00+02:00'"]),
        ("expect_pixel: {{x: {}, y: 1, rgb: '#000000'}}", ["0", "239"]),
        ("call: {{name: {}, number: '1'}}", ["Ann", "'é'", "1"]),
        ("music: {{state: {}}}", ["play", "pause"]),
        ("wait_phone: {{text: {}, timeout_ms: 10}}", ["'>>> '", "x"]),
        ("expect_phone_message: {{t: {}}}", ["call", "1", "[1, 2]", "null"]),
        ("wait_screen_change: {{tolerance: {}}}", ["0", "255"])]


def good_step(rng: random.Random, hostile: float) -> str:
    template, values = rng.choice(GOOD)
    pick = rng.random()
    v = (rng.choice(values) if pick >= hostile else scalar(rng) if pick > hostile / 20
         else bomb(rng))
    return template.format(v)


def document(rng: random.Random) -> bytes:
    """A case: a third are well-formed steps with a few hostile values, the rest
    anything, then a quarter damaged byte by byte."""
    kinds = list(STEPS) + ["jump", "run run", "0", "null"]
    tame = rng.random() < 0.35
    steps = []
    for _ in range(rng.randrange(1, 5)):
        if tame or rng.random() < 0.6:
            steps.append(f"  - {good_step(rng, 0.15 if tame else 0.5)}")
            continue
        kind = rng.choice(kinds)
        v = bomb(rng) if rng.random() < 0.08 else value(rng)
        steps.append(f"  - {kind}: {v}")
    head = ""
    if rng.random() < 0.6:
        if rng.random() < 0.4:
            head += f"name: {bomb(rng) if rng.random() < 0.3 else value(rng)}\n"
        if rng.random() < 0.4:
            head += f"board: {rng.choice(['pinetime', value(rng)])}\n"
        head += "steps:\n"
    doc = (head + "\n".join(steps) + "\n").encode("utf-8", "surrogatepass")
    damage = 0 if tame or rng.random() < 0.6 else rng.choice([1, 2, 4])
    for _ in range(damage):                               # byte-level damage
        at = rng.randrange(len(doc) + 1)
        op = rng.random()
        if op < 0.6:
            doc = doc[:at] + rng.choice(BYTES) + doc[at:]
        elif op < 0.8:
            doc = doc[:at] + doc[at + rng.randrange(1, 8):]
        elif op < 0.85:
            doc = b"\xff\xfe" + doc.decode("latin-1").encode("utf-16-le")
        else:
            doc = doc[:at]
    return doc


def check_sane(sc) -> None:
    """What an accepted scenario must hold for the run not to go astray."""
    for st in sc.steps:
        for k in ("ms", "timeout_ms", "press_ms"):
            if k in st.args:
                t = st.args[k]
                assert math.isfinite(t) and 0 <= t <= MAX_MS, (st.label, k, t)
        if st.kind == "tap":
            assert 0 <= st.args["x"] < PANEL and 0 <= st.args["y"] < PANEL, st.label
    assert sc.board is None or isinstance(sc.board, str)


@pytest.mark.timeout(120, method="thread")
def test_fuzz_scenario_reader(tmp_path):
    rng = random.Random(SEED)
    accepted = refused = 0
    problems = []
    for case in range(CASES):
        doc = document(rng)
        path = tmp_path / f"case{case}.yaml"
        path.write_bytes(doc)
        try:
            with time_bound(CASE_SECONDS, f"case {case}"):
                sc = load_scenario(str(path))
                check_sane(sc)
            accepted += 1
        except ScenarioError as e:
            refused += 1
            msg = str(e)
            if "\n" in msg or "\r" in msg or not msg.startswith(str(path)) or len(msg) > 600:
                problems.append(f"case {case}: error message not one short line naming the "
                                f"file: {msg[:300]!r}")
        except (CaseTooSlow, Exception) as e:      # anything else is a defect
            problems.append(f"case {case}: {type(e).__name__}: {str(e)[:200]} "
                            f"for {doc[:200]!r}")
    assert not problems, f"seed {SEED}: {len(problems)} of {CASES} cases:\n" + "\n".join(
        problems[:20])
    # the generator reaches both sides (a generator that only makes junk proves little)
    assert accepted > CASES // 10 and refused > CASES // 2, (accepted, refused)
