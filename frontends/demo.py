"""``pinetime-emu demo``: our own demo firmware, with nothing to build.

    pinetime-emu demo                    # the window (headless, with a note, without a display)
    pinetime-emu demo --headless [--seconds 3] [--screenshot demo.png]
    pinetime-emu demo --web [PORT]       # the browser view (8080), opened when there is a display
    pinetime-emu demo --where            # the image's path (for run, test, info ...)

The image is firmware/tests/pinetime_demo.c, built when the package is
built and shipped inside it (``frontends/data/pinetime_demo.elf`` in the
installed tree, setup.py); a checkout uses firmware/build/pinetime_demo.elf,
built with ``make`` when it is missing.  Other options go to ``pinetime-emu
run`` (``pinetime-emu demo --headless --record demo.gif``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading

from frontends.common import (EXIT_OK, EXIT_USAGE, ArgumentParser, _port, _seconds,
                              display_available)

NAME = "pinetime_demo.elf"


class DemoMissing(Exception):
    """No demo image here, and none can be built (the message says why)."""


def firmware() -> str:
    """The demo image's path: the package's own, else the checkout's
    (built with make when it is missing and the cross compiler is here)."""
    from importlib import resources
    shipped = resources.files("frontends").joinpath("data", NAME)
    if shipped.is_file():
        return str(shipped)
    from emu.version import ROOT
    fw = os.path.join(ROOT, "firmware")
    built = os.path.join(fw, "build", NAME)
    if os.path.isfile(built):
        return built
    if not os.path.isfile(os.path.join(fw, "Makefile")):
        raise DemoMissing("the demo firmware is not in this installation (reinstall "
                          "pinetime-emu from its wheel)")
    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("make") is None:
        raise DemoMissing(f"{built} is not built and arm-none-eabi-gcc is missing (Debian: "
                          "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi make; or "
                          "install pinetime-emu's wheel, which carries it)")
    print("pinetime-emu demo: building firmware/build/pinetime_demo.elf", file=sys.stderr)
    r = subprocess.run(["make", "-C", fw, "-s", "build/" + NAME], capture_output=True,
                       text=True)
    if r.returncode != 0 or not os.path.isfile(built):
        tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or ["?"]
        raise DemoMissing(f"building {built} failed: {tail[0]}")
    return built


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="pinetime-emu demo",
                       description="Run our own demo firmware (shipped in the package): a "
                                   "window, a headless run with a screenshot, or the browser "
                                   "view.  Other options go to `pinetime-emu run`.")
    p.add_argument("--headless", action="store_true",
                   help="no window: run --seconds and write --screenshot")
    p.add_argument("--seconds", type=_seconds, default=None, metavar="N",
                   help="emulated seconds to run headless (3)")
    p.add_argument("--screenshot", default=None, metavar="FILE.png",
                   help="the screen at the end of a headless run (demo.png)")
    p.add_argument("--web", type=_port, nargs="?", const=8080, default=None, metavar="PORT",
                   help="the browser view on 127.0.0.1:PORT (8080), opened in the browser "
                        "when there is a display")
    p.add_argument("--where", action="store_true", help="print the demo image's path and exit")
    return p


def _open_browser_when_up(port: int) -> None:
    """Opens http://127.0.0.1:PORT/ once the web view listens (a thread)."""
    import socket
    import time
    import webbrowser

    def wait_and_open():
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            return
        webbrowser.open(f"http://127.0.0.1:{port}/")

    threading.Thread(target=wait_and_open, name="demo-browser", daemon=True).start()


def run_args(argv: list, run_parser=None):
    """The ``run`` command line that shows the demo (the command line runs
    it), or an exit status (``--where``, a problem: one line on stderr).
    ``run_parser()`` is the command line's parser: the options left for
    ``run`` are checked against it first."""
    args, extra = build_parser().parse_known_args(argv)
    if extra and run_parser is not None:
        _, unknown = run_parser().parse_known_args(["run", "x"] + extra)
        if unknown:
            print(f"pinetime-emu demo: error: unrecognized arguments: {' '.join(unknown)} "
                  "(see pinetime-emu demo --help)", file=sys.stderr)
            return EXIT_USAGE
    try:
        fw = firmware()
    except DemoMissing as e:
        print(f"pinetime-emu demo: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.where:
        if extra:
            print(f"pinetime-emu demo: error: --where takes no other options: {' '.join(extra)}",
                  file=sys.stderr)
            return EXIT_USAGE
        print(fw)
        return EXIT_OK
    run = ["run", fw]
    if args.web is not None:
        if args.headless:
            print("pinetime-emu demo: error: --web and --headless: choose one (see "
                  "pinetime-emu demo --help)", file=sys.stderr)
            return EXIT_USAGE
        run += ["--web", str(args.web)]
        if display_available():
            _open_browser_when_up(args.web)
    elif args.headless or args.seconds or args.screenshot or not display_available():
        if not (args.headless or args.seconds or args.screenshot):
            print("pinetime-emu demo: no display; running headless (see demo.png)",
                  file=sys.stderr)
        run += ["--headless", "--seconds", f"{args.seconds or 3:g}",
                "--screenshot", args.screenshot or "demo.png"]
    return run + extra
