"""Hostile arguments to the Python API (docs/usage.md, Python API).

A bounded, seeded fuzz: calls of the machine's API (touch, button, heart
rate, battery, run, run_until, memory access, construction with board
options) with arguments drawn from a pool of odd values (negative, huge, not
finite, of the wrong type) and plausible ones.  Each call must either work,
after which the machine still runs, or raise one of the documented
exceptions (TypeError, ValueError, FirmwareError) with a one-line message,
within CASE_SECONDS.  Then the reproductions of issue 24, one test each.
"""
from __future__ import annotations

import math
import os
import random
import time

import pytest

from emu import Machine
from emu.loader import FirmwareError

SEED = int(os.environ.get("PINETIME_EMU_FUZZ_SEED", "24"))
SCALE = int(os.environ.get("PINETIME_EMU_FUZZ_SCALE", "1"))     # more cases, by hand
CASE_SECONDS = 3.0
DOCUMENTED = (TypeError, ValueError, FirmwareError)

ODD = [-1, -0.5, -10 ** 30, 10 ** 9, 2 ** 64, 2 ** 70, math.nan, math.inf, -math.inf, "a", "",
       None, [], {}, (1, 2), b"x", True, object(), 1e300, -1e-9]
SMALL = [0, 1, 0.25, 3, 239, 120, 12.5]          # plausible and quick


def pick(rng: random.Random, good=SMALL):
    return rng.choice(ODD) if rng.random() < 0.6 else rng.choice(good)


@pytest.fixture
def demo(firmware_dir) -> str:
    return str(firmware_dir / "pinetime_demo.elf")


def api_calls(rng: random.Random, fw: str):
    """(description, function of the machine) for one random API call."""
    kind = rng.choice(("tap", "double_tap", "long_press", "swipe", "press", "release", "hold",
                       "bpm", "voltage", "run", "run_until", "read_mem", "write_mem"))
    if kind in ("tap", "double_tap", "long_press"):
        x, y, d = pick(rng), pick(rng), pick(rng)
        return f"touch.{kind}({x!r}, {y!r}, delay_ms={d!r})", \
            lambda m: getattr(m.board.touch, kind)(x, y, delay_ms=d)
    if kind == "swipe":
        a, d = rng.choice(["up", "left", "sideways", 3, None]), pick(rng)
        return f"touch.swipe({a!r}, {d!r})", lambda m: m.board.touch.swipe(a, delay_ms=d)
    if kind in ("press", "release"):
        d = pick(rng)
        return f"button.{kind}({d!r})", lambda m: getattr(m.board.button, kind)(d)
    if kind == "hold":
        ms, d = pick(rng), pick(rng)
        return f"button.hold(ms={ms!r}, delay_ms={d!r})", \
            lambda m: m.board.button.hold(ms=ms, delay_ms=d)
    if kind == "bpm":
        v = pick(rng, [0, 60, 72.5, 200])
        return f"heart_rate.bpm = {v!r}", lambda m: setattr(m.board.heart_rate, "bpm", v)
    if kind == "voltage":
        v = pick(rng, [3.0, 3.7, 4.2])
        return f"battery.voltage = {v!r}", lambda m: setattr(m.board.battery, "voltage", v)
    if kind == "run":
        key = rng.choice(("seconds", "ms", "us", "ticks", "until_tick", "stop"))
        good = {"seconds": [0, 0.0005], "ms": [0, 0.5], "us": [0, 100], "ticks": [0, 1000],
                "until_tick": [0, 1], "stop": [lambda: True]}[key]
        v = pick(rng, good)
        if key == "stop" and v is not None and not callable(v):
            return f"run(ms=0.1, stop={v!r})", lambda m: m.run(ms=0.1, stop=v)
        return f"run({key}={v!r})", lambda m: m.run(**{key: v})
    if kind == "run_until":
        pred = rng.choice([lambda: True, lambda: False, None, 5, "x"])
        t, p = pick(rng, [0, 0.5, 1]), pick(rng, [0.1, 0.5])
        return f"run_until({pred!r}, {t!r}, {p!r})", lambda m: m.run_until(pred, t, p)
    if kind == "read_mem":
        a = pick(rng, [0, 0x20000000, 0x1000_0000, 0x30000000, 0xFFFFFFFF])
        n = pick(rng, [0, 4, 64, 1 << 20])
        return f"cpu.read_mem({a!r}, {n!r})", lambda m: m.cpu.read_mem(a, n)
    a = pick(rng, [0x20000000, 0x2000FFFC, 0x30000000])
    data = rng.choice([b"\0" * 4, bytearray(8), "text", 5, None, b"\0" * 100])
    return f"cpu.write_mem({a!r}, {data!r:.20})", lambda m: m.cpu.write_mem(a, data)


def check(what: str, fn, *args):
    """fn(*args) works, or raises a documented exception with one line."""
    t0 = time.monotonic()
    try:
        result = fn(*args)
        ok = True
    except DOCUMENTED as e:
        result, ok = e, False
        text = str(e)
        assert text and "\n" not in text, f"{what}: {text!r}"
    except BaseException as e:           # noqa: B902 - the case must be named
        raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
    took = time.monotonic() - t0
    assert took < CASE_SECONDS, f"{what}: took {took:.1f} s"
    return ok, result


# ---------------------------------------------------------------------- fuzz
def test_fuzz_api_calls(demo):
    """1000 calls on one machine; after each that works, the machine runs on."""
    rng = random.Random(SEED)
    m = Machine(demo, flash_file=None)
    counts = {True: 0, False: 0}
    for i in range(1000 * SCALE):
        what, fn = api_calls(rng, demo)
        ok, _r = check(f"case {i}: {what}", fn, m)
        counts[ok] += 1
        # whatever was accepted must not break the next run (a tap scheduled
        # with a bad coordinate used to fail here, inside the run)
        check(f"case {i}: run after {what}", lambda: m.run(ms=0.2))
    assert counts[False] > 300 * SCALE and counts[True] > 150 * SCALE, counts


def test_fuzz_machine_options(demo, tmp_path):
    """60 machines built with odd board options and arguments."""
    rng = random.Random(SEED + 1)
    paths = ["/dev/full", "/dev/null", str(tmp_path), str(tmp_path / "flash.bin"), None, 5,
             b"/tmp/x", ""]
    for i in range(60 * SCALE):
        key = rng.choice(("flash_file", "bpm", "hrs_seed", "bogus", "base", "board",
                          "firmware"))
        if key == "flash_file":
            v = rng.choice(paths)
        elif key == "board":
            v = rng.choice(["pinetime", "nrf52832", "nope", 5, None])
        elif key == "firmware":
            v = rng.choice([demo, 5, str(tmp_path), str(tmp_path / "missing.elf"), b"x"])
        else:
            v = pick(rng, [0, 1, 72])
        kw = {} if key in ("flash_file", "firmware") else {"flash_file": None}
        if key == "firmware":
            what, fn = f"Machine({v!r})", lambda: Machine(v, flash_file=None)
        elif key == "board" and v not in ("pinetime", None):
            what, fn = f"Machine(board={v!r})", lambda: Machine(demo, board=v)
        else:
            kw[key] = v
            what, fn = f"Machine(**{kw!r})", lambda: Machine(demo, **kw)
        ok, m = check(f"case {i}: {what}", fn)
        if ok:
            check(f"case {i}: run after {what}", lambda: m.run(ms=0.2))
            m.close()


# -------------------------------------------------------------- reproductions
@pytest.fixture
def machine(demo):
    m = Machine(demo, flash_file=None)
    yield m
    m.close()


@pytest.mark.parametrize("x,y,exc", [(-1, -1, ValueError), (10 ** 9, 5, ValueError),
                                     (240, 0, ValueError), ("a", "b", TypeError),
                                     (math.nan, 3, ValueError)])
def test_touch_outside_the_screen(machine, x, y, exc):
    for fn in (machine.board.touch.tap, machine.board.touch.double_tap,
               machine.board.touch.long_press):
        with pytest.raises(exc, match="touch x"):
            fn(x, y)
    assert machine.board.touch.timeline.pending == 0
    machine.run(ms=1)


def test_touch_on_the_screen_edges(machine):
    machine.board.touch.tap(0, 239)
    machine.board.touch.tap(239, 0, delay_ms=1)
    machine.run(ms=5)
    assert [r[2:] for r in machine.board.touch.reports] == [(0, 239), (239, 0)]


def test_run_beyond_the_clock(machine):
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="until_tick"):
        machine.run(until_tick=2 ** 70)
    with pytest.raises(ValueError, match="clock's range|seconds"):
        machine.run(seconds=1e18)
    assert time.monotonic() - t0 < 1


@pytest.mark.parametrize("kw,exc,words", [
    ({"seconds": -1}, ValueError, "seconds"), ({"ticks": -10 ** 30}, ValueError, "ticks"),
    ({"ms": math.nan}, ValueError, "finite"), ({"us": "x"}, TypeError, "us"),
    ({"ticks": 1.5}, TypeError, "integer"), ({"until_tick": -1}, ValueError, "until_tick"),
    ({"stop": 5}, TypeError, "stop")])
def test_run_arguments(machine, kw, exc, words):
    with pytest.raises(exc, match=words):
        machine.run(**kw)
    assert machine.clock.now == 0


def test_unknown_board_option(demo):
    with pytest.raises(TypeError, match="bogus_option.*flash_file, bpm, hrs_seed"):
        Machine(demo, bogus_option=1)
    with pytest.raises(TypeError, match="unknown option bpm for board nrf52832"):
        Machine(demo, board="nrf52832", bpm=60)
    with pytest.raises(TypeError, match="unknown option flash_file for board nrf52832"):
        Machine(demo, board="nrf52832", flash_file="flash.bin")
    Machine(demo, board="nrf52832", flash_file=None)      # no file for no flash: fine


@pytest.mark.parametrize("bpm,exc", [("x", TypeError), (math.nan, ValueError),
                                     (-5, ValueError), (1e9, ValueError)])
def test_heart_rate(demo, machine, bpm, exc):
    with pytest.raises(exc, match="heart rate"):
        Machine(demo, flash_file=None, bpm=bpm)
    with pytest.raises(exc, match="heart rate"):
        machine.board.heart_rate.bpm = bpm
    assert machine.board.heart_rate.bpm == 70.0
    machine.board.heart_rate.bpm = 0                 # no pulse: allowed
    machine.run(ms=1)


@pytest.mark.parametrize("path,words", [("/dev/full", "not a regular file"),
                                        ("/dev/null", "not a regular file"),
                                        (".", "is a directory")])
def test_flash_file_that_is_not_a_file(demo, path, words):
    with pytest.raises(ValueError, match=words):
        Machine(demo, flash_file=path)
    with pytest.raises(TypeError, match="flash_file"):
        Machine(demo, flash_file=5)


@pytest.mark.parametrize("kw", [{"ms": -1}, {"ms": math.inf}, {"ms": 10, "delay_ms": -1}])
def test_button_hold(machine, kw):
    with pytest.raises(ValueError):
        machine.board.button.hold(**kw)
    with pytest.raises(TypeError):
        machine.board.button.hold(ms="long")
    assert machine.board.button.timeline.pending == 0


@pytest.mark.parametrize("addr,size,exc", [(-1, 4, ValueError), (0xFFFFFFFF, 4, ValueError),
                                           (0x30000000, 4, ValueError), ("a", 4, TypeError),
                                           (0, -1, ValueError),
                                           (0, 10 ** 9, ValueError)])   # found by the fuzz: 8 s
def test_memory_access(machine, addr, size, exc):
    t0 = time.monotonic()
    with pytest.raises(exc):
        machine.cpu.read_mem(addr, size)
    assert time.monotonic() - t0 < 0.5
    if 0 <= size < 1 << 20 and exc is ValueError:
        with pytest.raises(exc):
            machine.cpu.write_mem(addr, bytes(size))
    assert machine.cpu.read_mem(0x20000000, 4) is not None


def test_other_arguments(demo, machine):
    with pytest.raises(TypeError, match="firmware"):
        Machine(5)
    with pytest.raises(ValueError, match="base"):
        Machine(demo, base=-1)
    with pytest.raises(ValueError, match="battery voltage"):
        machine.board.battery.voltage = math.nan
    with pytest.raises(TypeError, match="predicate"):
        machine.run_until(5, timeout_ms=1)
    with pytest.raises(ValueError, match="poll_ms"):
        machine.run_until(lambda: False, timeout_ms=1, poll_ms=0)
