"""The command line against hostile argv (issue 24).

Regression: `--trace-limit inf` (or 1e309) with --trace-mmio raised
OverflowError; `--gdb-host` with bytes that are not UTF-8 raised TypeError
when the stub bound its socket; bare `pinetime-emu` printed its usage on
stdout; `--screenshot /dev/null` was accepted.

Fuzz: seeded argv for `run` and `info` built from the real parser's options
with hostile values (non-finite and huge numbers, devices, directories,
missing directories, names that are not UTF-8, odd host names, abbreviations,
`--opt=value` forms).  main() runs in-process with the machine builder
replaced by a sentinel, so a case ends when its options have been checked:
it must end in exit 0 (--help), exit 2 with exactly one line on stderr, or
the sentinel, and then every output path must be a regular file or a new
one and every host name usable.  Before the fix it hit the OverflowError,
/dev/null outputs and undecodable hosts.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import subprocess
import sys

import pytest

from helpers.fuzz import CaseTooSlow, time_bound

SEED = 24
CASES = 1500
CASE_SECONDS = 5.0

OUTPUTS = ("--screenshot", "--save-snapshot", "--trace", "--trace-mmio", "--record", "--vcd")


def cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "frontends.cli", *map(str, args)],
                          capture_output=True, timeout=timeout)


def one_line_exit_2(r, *words):
    err = r.stderr.decode("utf-8", "backslashreplace")
    assert r.returncode == 2, (r.returncode, err[-2000:])
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.mark.parametrize("limit", ["inf", "1e309", "-inf", "nan"])
def test_trace_limit_must_be_finite(fw, tmp_path, limit):
    r = cli("run", fw("pinetime_demo"), "--headless", "--seconds", "1", "--flash-file", "none",
            "--trace-mmio", tmp_path / "t.txt", f"--trace-limit={limit}")
    one_line_exit_2(r, "--trace-limit", "finite")


def test_host_names_that_are_not_text(fw):
    bad = os.fsdecode(b"\xff\xfe")                # what argv holds for bytes that are not UTF-8
    for opt, port in (("--gdb-host", "--gdb"), ("--bridge-host", "--bridge")):
        r = cli("run", fw("pinetime_demo"), "--headless", "--seconds", "1", "--flash-file",
                "none", port, "0", opt, bad)
        one_line_exit_2(r, opt, "not a host name")
        r = cli("run", fw("pinetime_demo"), "--headless", "--seconds", "1", "--flash-file",
                "none", port, "0", opt, "a" * 300)
        one_line_exit_2(r, opt, "not a host name")
    one_line_exit_2(cli("phone", "--host", bad, "--repl", "1"), "--host", "not a host name")


def test_bare_command_is_one_line_on_stderr():
    r = cli()
    err = one_line_exit_2(r, "a command is needed")
    assert r.stdout == b"", r.stdout


@pytest.mark.parametrize("option", OUTPUTS)
def test_outputs_must_be_regular_files(fw, option):
    value = "/dev/null"
    r = cli("run", fw("pinetime_demo"), "--headless", "--seconds", "1", "--flash-file", "none",
            option, value)
    one_line_exit_2(r, option, "/dev/null", "not a regular file")


def test_a_file_name_that_is_not_utf8_is_printed_escaped(fw, tmp_path):
    out = os.fsencode(str(tmp_path)) + b"/\xff.png"
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_demo"),
                        "--headless", "--seconds", "0.05", "--flash-file", "none",
                        "--screenshot", out], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(out) and b"\\udcff.png" in r.stderr


# ---------------------------------------------------------------- fuzz
class Accepted(Exception):
    """Every option was checked: the machine would be built now."""


def hostile_values(tmp_path, demo) -> list:
    existing = tmp_path / "exists.txt"
    existing.write_text("x")
    return ["inf", "-inf", "nan", "1e309", "-1", "0", "1", "0.001", "0x10", "0x100000000",
            "9" * 400, "18446744073709551616", "1_0", "", " ", "-", "--", "64M", "1k", "0k",
            "-5M", "ten", "/dev/null", "/dev/zero", "/dev/stdout", str(tmp_path),
            str(tmp_path / "no" / "such" / "x.png"), str(tmp_path / "new.png"),
            str(tmp_path / "new.gif"), str(existing), demo, os.fsdecode(b"\xff\xfe"),
            os.fsdecode(b"caf\xe9.png"), "a" * 300, "::1", "0.0.0.0", "localhost ",
            "pinetime", "nrf52832", "apple-watch", "stdout", "none", "debug", "main",
            "0x1000-0x2000", "0x2000-0x1000", "\u202e", "é"]


def run_parser_options():
    from frontends.cli import build_parser
    p = build_parser()
    sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
    opts = {}
    for name in ("run", "info"):
        opts[name] = [(s, a.nargs != 0) for a in sub.choices[name]._actions
                      for s in a.option_strings if s not in ("-h", "--help")]
    return opts


def argv_case(rng, opts, values, demo) -> list:
    cmd = rng.choice(["run", "run", "run", "info", "", "runn", "--version", "--bogus"])
    argv = [cmd] if cmd else []
    if cmd in ("run", "info") and rng.random() < 0.9:
        argv.append(demo if rng.random() < 0.7 else rng.choice(values))
    if cmd == "run" and rng.random() < 0.8:
        argv.append("--headless")
    for _ in range(rng.randrange(0, 5)):
        name, takes = rng.choice(opts.get(cmd, opts["run"]))
        if rng.random() < 0.1:
            name = name[:max(3, len(name) - 3)]           # an abbreviation
        if not takes:
            argv.append(name)
        elif rng.random() < 0.2:
            argv.append(f"{name}={rng.choice(values)}")
        else:
            argv += [name, rng.choice(values)]
    if rng.random() < 0.05:
        argv.append(rng.choice(values))                   # a stray positional
    return argv


def check_accepted(args) -> None:
    from frontends.common import _host
    for opt in OUTPUTS:
        path = getattr(args, opt[2:].replace("-", "_"), None)
        if path is not None:
            assert not os.path.exists(path) or os.path.isfile(path), (opt, path)
    for h in (args.gdb_host, args.bridge_host):
        _host(h)                                          # raises on a host it should refuse
    assert args.seconds is None or 0 < args.seconds < 1e10


@pytest.mark.timeout(120, method="thread")
def test_fuzz_command_line(fw, tmp_path, monkeypatch):
    import frontends.cli as cli_mod
    demo = fw("pinetime_demo")
    values = hostile_values(tmp_path, demo)
    opts = run_parser_options()
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")     # a window is possible: no display check

    def accept(args):
        check_accepted(args)
        raise Accepted()
    monkeypatch.setattr(cli_mod, "_make_machine", accept)
    rng = random.Random(SEED)
    counts = {"accepted": 0, "refused": 0, "other": 0}
    problems = []
    for case in range(CASES):
        argv = argv_case(rng, opts, values, demo)
        out, err = io.StringIO(), io.StringIO()
        try:
            with time_bound(CASE_SECONDS, f"case {case}"), \
                    contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = cli_mod.main(argv)
                except SystemExit as e:                   # argparse: --help, --version, errors
                    rc = e.code if isinstance(e.code, int) else 2
        except Accepted:
            counts["accepted"] += 1
            continue
        except (CaseTooSlow, Exception) as e:
            problems.append(f"case {case} {argv!r}: {type(e).__name__}: {str(e)[:200]}")
            continue
        lines = err.getvalue().strip().splitlines()
        if rc == 2 and len(lines) == 1 and not out.getvalue():
            counts["refused"] += 1
        elif rc == 0 and out.getvalue() and "Traceback" not in err.getvalue():
            counts["other"] += 1                          # info, --help, --version print
        else:
            problems.append(f"case {case} {argv!r}: exit {rc}, stdout {out.getvalue()[:100]!r}, "
                            f"stderr {err.getvalue()[:300]!r}")
    assert not problems, f"seed {SEED}: {len(problems)} of {CASES}:\n" + "\n".join(problems[:15])
    assert counts["accepted"] > CASES // 20 and counts["refused"] > CASES // 3, counts
