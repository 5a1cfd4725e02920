"""Zephyr's twister against the emulator, as against a board on a serial port.

Twister's hardware mode (``--device-testing``) runs a program as the board's
serial port (``--device-serial-pty PROGRAM``: the program's standard output
is read as the UART, its standard input is the UART's receive line) and,
with ``--west-flash``, calls ``west flash --skip-rebuild -d BUILD_DIR`` to
flash each test before it reads the result.  Twister starts the serial
program first and flashes after, one test at a time.  So:

* ``pinetime-emu twister-flash [west flash's arguments]`` (what the ``west``
  in ``scripts/twister/`` runs) records which build was flashed:
  ``BUILD_DIR/zephyr/zephyr.elf``, in a small state file;
* ``pinetime-emu twister-serial [--board B]`` waits for a flash made after it
  started, then runs that image headless with UART0 on its standard output
  and input, until twister ends it (SIGTERM, SIGHUP or the pty closing).

The state file is ``$PINETIME_EMU_TWISTER_STATE`` or
``~/.cache/pinetime-emu/twister/flashed``; one twister run at a time uses it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Optional

EXIT_USAGE = 2


def state_path() -> str:
    p = os.environ.get("PINETIME_EMU_TWISTER_STATE")
    if p:
        return p
    return os.path.join(os.path.expanduser("~"), ".cache", "pinetime-emu", "twister", "flashed")


def _error(prog: str, msg: str) -> int:
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def flash_main(argv: list) -> int:
    """``west flash`` as twister calls it: record the build's zephyr.elf."""
    prog = "pinetime-emu twister-flash"
    if argv and argv[0] == "flash":          # called as `west flash ...`
        argv = argv[1:]
    elif argv and not argv[0].startswith("-"):
        return _error(prog, f"only 'west flash' is emulated here, not 'west {argv[0]}'")
    p = argparse.ArgumentParser(prog=prog, description="Record the build twister flashes "
                                "(stands in for `west flash`).")
    p.add_argument("-d", "--build-dir", default=os.getcwd())
    p.add_argument("--skip-rebuild", action="store_true")
    p.add_argument("-r", "--runner", default=None)
    args, _rest = p.parse_known_args(argv)    # runner options: not ours
    if "\x00" in args.build_dir:
        return _error(prog, "--build-dir: a file name cannot hold a NUL byte")
    elf = os.path.join(args.build_dir, "zephyr", "zephyr.elf")
    if not os.path.isfile(elf):
        return _error(prog, f"no zephyr/zephyr.elf in {args.build_dir}")
    path = state_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump({"elf": os.path.abspath(elf), "time": time.time()}, f)
    os.replace(tmp, path)                     # atomic: the serial side never reads half
    print(f"{prog}: {elf} handed to pinetime-emu twister-serial")
    return 0


def _wait_for_flash(since: float, timeout: float) -> Optional[str]:
    path = state_path()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(path) as f:
                rec = json.load(f)
            if rec.get("time", 0) >= since and os.path.isfile(rec.get("elf", "")):
                return rec["elf"]
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return None


def serial_main(argv: list, run_main) -> int:
    """``run_main``: the CLI's main (frontends/cli.py passes itself), given
    ``run ELF --headless --console stdout``."""
    prog = "pinetime-emu twister-serial"
    p = argparse.ArgumentParser(prog=prog, description="The board's serial port for "
                                "twister's --device-serial-pty: runs what twister-flash "
                                "recorded, UART0 on standard output and input.")
    p.add_argument("--board", default=None,
                   help="board to emulate (default: detected from the image)")
    p.add_argument("--wait", type=float, default=120.0, metavar="SECONDS",
                   help="how long to wait for twister's flash (default 120)")
    args = p.parse_args(argv)
    since = time.time() - 0.5
    elf = _wait_for_flash(since, args.wait)
    if elf is None:
        return _error(prog, f"nothing was flashed within {args.wait:g} s (is the 'west' of "
                      f"scripts/twister/ first on PATH, and --west-flash given?)")
    run = ["run", elf, "--headless", "--console", "stdout"]
    if args.board:
        run += ["--board", args.board]
    return run_main(run)
