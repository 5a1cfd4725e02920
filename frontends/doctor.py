"""``pinetime-emu doctor``: what this installation can do, one line each,
and how to fix what it cannot.

Each line is ``ok``, ``slow`` (works, on the pure-Python reference),
``no`` (an optional part is missing: what it is for and the fix) or
``FAIL`` (the core does not work).  The core is this package, its Python
dependencies, Unicorn's version and a run of the demo firmware; the exit
status is 0 when it works, 1 when it does not.  The rest: the native
helpers, a display for the window, Chromium (the web view's browser tests),
gdb-multiarch, tshark, QEMU (the micro:bit comparison) and the firmware
images in the user cache (``~/.cache/pinetime-emu``: wasp-os, InfiniTime,
the S132 SoftDevice, Zephyr builds) with the board detected for each.
"""
from __future__ import annotations

import importlib
import os
import shutil
import sys
import time
from collections import Counter
from typing import Optional

from frontends.common import ArgumentParser

# the distribution's run-time dependencies (pyproject.toml), by import name
DEPENDENCIES = ("unicorn", "capstone", "elftools", "intelhex", "pygame", "cryptography",
                "numpy", "yaml", "PIL", "vcd", "littlefs", "tqdm", "websockets")
UNICORN = ((2, 1, 4), (2, 2))          # >= the first, < the second (pyproject.toml)
APT = "sudo apt-get install"
IMAGE_SUFFIXES = (".elf", ".out", ".zip", ".hex")
MAX_IMAGES = 80                         # per cache folder: a line, not an inventory


class Report:
    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.core_ok = True

    def line(self, status: str, what: str, text: str) -> None:
        if status == "FAIL":
            self.core_ok = False
        print(f"{status:5s} {what}: {text}", file=self.out, flush=True)


def _version_tuple(v: str) -> tuple:
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def check_package(r: Report) -> None:
    from emu.version import ROOT, describe, installed
    where = ROOT if not installed() else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    r.line("ok", "pinetime-emu", f"{describe()}, "
           f"{'installed' if installed() else 'a checkout'} at {where}; Python "
           f"{sys.version.split()[0]} ({sys.executable})")
    gone = []
    for mod in DEPENDENCIES:
        try:
            importlib.import_module(mod)
        except Exception as e:        # ImportError, or a broken binary wheel
            gone.append(f"{mod} ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
    if gone:
        r.line("FAIL", "Python dependencies", f"cannot import {', '.join(gone)}; fix: pip "
               "install --force-reinstall pinetime-emu (into this environment)")
    else:
        r.line("ok", "Python dependencies", f"{len(DEPENDENCIES)} import")


def check_unicorn(r: Report) -> None:
    try:
        import unicorn
    except Exception:
        return                          # said by the dependencies' line
    v = getattr(unicorn, "__version__", "?")
    lo, hi = UNICORN
    if lo <= _version_tuple(v) < hi:
        r.line("ok", "Unicorn", f"{v} ({unicorn.__file__ and os.path.dirname(unicorn.__file__)})")
    else:
        r.line("FAIL", "Unicorn", f"{v}, this emulator needs >= {'.'.join(map(str, lo))}, < "
               f"{'.'.join(map(str, hi))}; fix: pip install 'unicorn>=2.1.4,<2.2'")


def check_demo(r: Report) -> None:
    """The core at work: the demo firmware boots (its console line, within
    2 emulated s)."""
    from frontends.demo import DemoMissing, firmware
    try:
        fw = firmware()
    except DemoMissing as e:
        r.line("FAIL", "demo firmware", str(e))
        return
    if not r.core_ok:
        r.line("no", "demo run", "skipped: the core above is broken")
        return
    try:
        from emu import Machine
        t0 = time.process_time()
        m = Machine(fw, flash_file=None)
        try:
            for _ in range(20):
                m.run(ms=100)
                text = m.console_text()
                if "pinetime demo running" in text:
                    break
            emulated = m.time
        finally:
            m.close()
        cpu = time.process_time() - t0
    except Exception as e:
        r.line("FAIL", "demo run", f"{type(e).__name__}: {e}")
        return
    if "pinetime demo running" not in text:
        r.line("FAIL", "demo run", f"{fw}: no 'pinetime demo running' on the console after "
               "2 emulated s")
        return
    r.line("ok", "demo run", f"{fw} booted in {emulated:.2f} emulated s, {cpu:.2f} s CPU "
           "(pinetime-emu demo)")


def check_native(r: Report) -> None:
    from emu import native
    from emu.native_build import NATIVE_MODULES
    for name in NATIVE_MODULES:        # asked for as a run asks (the checks are registered)
        native.load(name)
    if native.pure_python():
        r.line("slow", "native helpers", "off: PINETIME_EMU_PURE_PYTHON is set (the pure-Python "
               "reference, many times slower); unset it for the native helpers")
        return
    gone = native.not_built()
    if gone:
        what = ", ".join(f"{n} ({why})" for n, why in sorted(gone.items()))
        r.line("slow", "native helpers", f"missing: {what}: runs are many times slower; "
               f"fix: {native.fix()}")
    else:
        r.line("ok", "native helpers", f"loaded ({', '.join(NATIVE_MODULES)})")


def check_display(r: Report) -> None:
    from frontends.common import display_available
    if display_available():
        r.line("ok", "display", f"for the pygame window "
               f"({os.environ.get('WAYLAND_DISPLAY') and 'WAYLAND_DISPLAY' or 'DISPLAY'}="
               f"{os.environ.get('WAYLAND_DISPLAY') or os.environ.get('DISPLAY') or '?'})")
    else:
        r.line("no", "display", "no DISPLAY or WAYLAND_DISPLAY: no window; use --headless or "
               "--web (pinetime-emu demo --web), or xvfb-run")


def _which(*names) -> Optional[str]:
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


def check_tools(r: Report) -> None:
    chrome = _which("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    driver = _which("chromedriver")
    if chrome and driver:
        r.line("ok", "Chromium", f"{chrome} and {driver} (the web view's browser tests)")
    else:
        lack = " and ".join(n for n, p in (("a Chromium", chrome), ("chromedriver", driver))
                            if not p)
        r.line("no", "Chromium", f"no {lack}: the web view's browser tests skip; fix: {APT} "
               "chromium chromium-driver")
    for tool, use, pkg in (("gdb-multiarch", "debugging with --gdb (docs/debugging.md)",
                            "gdb-multiarch"),
                           ("tshark", "decoding --pcap captures as Wireshark does", "tshark"),
                           ("qemu-system-arm", "the micro:bit comparison (bench_microbit.py)",
                            "qemu-system-arm")):
        p = shutil.which(tool)
        if p:
            r.line("ok", tool, f"{p} ({use})")
        else:
            r.line("no", tool, f"not found: needed for {use}; fix: {APT} {pkg}")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pinetime-emu")


def _images(folder: str) -> list:
    """The firmware images under ``folder``: an ELF where there is one, not
    its .hex and .bin beside it."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        have_elf = any(f.endswith((".elf", ".out")) for f in files)
        for f in sorted(files):
            if f.endswith(IMAGE_SUFFIXES) and not (have_elf and f.endswith(".hex")):
                out.append(os.path.join(root, f))
    return out


def check_cache(r: Report) -> None:
    from emu.detect import detect
    top = cache_dir()
    if not os.path.isdir(top):
        r.line("no", "firmware cache", f"{top} does not exist: no wasp-os, InfiniTime or "
               "Zephyr images (docs/firmware.md says how to build or fetch them)")
        return
    names = {"wasp-os": "wasp-os", "infinitime": "InfiniTime", "s132": "S132",
             "zephyr": "Zephyr"}
    found_any = False
    for sub in sorted(os.listdir(top)):
        folder = os.path.join(top, sub)
        if not os.path.isdir(folder):
            continue
        images = _images(folder)
        if not images:
            continue
        found_any = True
        boards: Counter = Counter()
        for path in images[:MAX_IMAGES]:
            if sub == "s132" or "softdevice" in os.path.basename(path):
                boards["SoftDevice (--softdevice-hex)"] += 1
                continue
            try:
                d = detect(path)
                boards[d.board or "no board"] += 1
            except Exception:
                boards["other files"] += 1
        more = f" (the first {MAX_IMAGES} looked at)" if len(images) > MAX_IMAGES else ""
        what = ", ".join(f"{b} {n}" for b, n in sorted(boards.items()))
        r.line("ok", f"firmware {names.get(sub, sub)}",
               f"{len(images)} image{'s' if len(images) != 1 else ''} in {folder}{more}: {what}")
    if not found_any:
        r.line("no", "firmware cache", f"no images in {top} (docs/firmware.md)")


def main(argv: Optional[list] = None) -> int:
    p = ArgumentParser(prog="pinetime-emu doctor",
                       description="What this installation can do, one line each, and how "
                                   "to fix what it cannot.  Exit status 0 when the core "
                                   "works (this package, its dependencies, Unicorn, a run of "
                                   "the demo firmware), 1 when it does not.")
    p.parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    from emu import native
    os.environ[native._SAID] = "1"           # this report says it itself, on its own line
    r = Report()
    check_package(r)
    check_unicorn(r)
    if r.core_ok:
        check_native(r)
    check_demo(r)
    check_display(r)
    check_tools(r)
    check_cache(r)
    r.line("ok" if r.core_ok else "FAIL", "core",
           "works" if r.core_ok else "does not work (see the FAIL lines)")
    return 0 if r.core_ok else 1


if __name__ == "__main__":          # pragma: no cover
    sys.exit(main())
