"""What a run leaves behind, as fingerprints: the same firmware and inputs
must give the same cycles, frames and bytes on every build of the emulator.

    python3 bench/fingerprints.py [--pure] [--only NAME,...] [--json FILE]

For each workload it prints one line: the emulated cycles, the clock's
ticks, and SHA-256 prefixes of the screen, the console (UART, RTT), the
packets on the air and the NOR flash.  Run it from two trees (``PYTHONPATH=
<other tree> python3 bench/fingerprints.py``, the script reads nothing but
the public API) and compare the lines: a refactoring of the machine must
leave every one of them unchanged, on the native path and with ``--pure``
(PINETIME_EMU_PURE_PYTHON: the Python reference).  ``--json`` writes them
for a later ``--compare``.

Workloads: our demo firmware (firmware/build), and when their images are in
~/.cache/pinetime-emu (docs/firmware.md): wasp-os (5 emulated s),
InfiniTime (5 s), Zephyr's kernel tests on the nRF52 DK (to ztest's verdict),
micro:bit MicroPython (Debian's firmware-microbit-micropython).
Not a test: it prints what it saw; the comparison is yours (``--compare``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "pinetime-emu"
ZEPHYR = Path(os.environ.get("PINETIME_EMU_ZEPHYR_DIR") or CACHE / "zephyr")
VERDICTS = (b"PROJECT EXECUTION SUCCESSFUL", b"PROJECT EXECUTION FAILED")
KERNEL = ["kernel_common", "semaphore", "timer_api", "sleep", "fpu_sharing_generic_short",
          "mem_protect", "fatal_exception", "lifo", "mp_protection", "mp_userspace"]


def h(data) -> str:
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(bytes(data)).hexdigest()[:12]


def workloads() -> list:
    out = [("demo", ROOT / "firmware" / "build" / "pinetime_demo.elf", {}, 3.0, None)]
    wasp = Path(os.environ.get("PINETIME_EMU_WASP_IMAGE") or CACHE / "wasp-os/upstream/micropython.elf")
    it = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE") or next(
        iter(sorted((CACHE / "infinitime").glob("pinetime-app-*.out"))), None)
    out.append(("wasp-os", wasp, {}, 5.0, None))
    if it:
        out.append(("infinitime", Path(it), {}, 5.0, None))
    for name in KERNEL:
        out.append((f"zephyr-{name}", ZEPHYR / "nrf52dk_nrf52832" / name / "zephyr.elf",
                    {"board": "nrf52dk"}, 40.0, "ztest"))
    mb = Path("/usr/share/firmware-microbit-micropython/firmware.hex")
    out.append(("microbit", mb, {"board": "microbit"}, 2.0, None))
    return out


def run_one(name, path, kw, seconds, until) -> dict:
    from emu import Machine
    m = Machine(str(path), flash_file=None, **kw) if kw.get("board") in (None, "pinetime") \
        else Machine(str(path), **kw)
    t = time.perf_counter()
    if until == "ztest":
        m.run_until(lambda: any(v in m.board.uart_output() for v in VERDICTS),
                    timeout_ms=seconds * 1000)
    else:
        m.run(seconds=seconds)
    wall = time.perf_counter() - t
    fp = {"name": name, "cycles": m.cpu.cycles, "ticks": m.clock.now,
          "console": h(m.console_text())}
    board = m.board
    if hasattr(board, "screen"):
        try:
            fp["screen"] = h(board.screen().tobytes())
        except Exception:          # a board without a display
            pass
    if hasattr(board, "uart_output"):
        fp["uart"] = h(board.uart_output())
    air = getattr(m, "air", None)
    if air is not None and getattr(air, "log", None) is not None:
        fp["air"] = h(repr([tuple(p) for p in air.log]))
    flash = getattr(board, "flash", None)
    if flash is not None and hasattr(flash, "data"):
        fp["nor"] = h(flash.data)
    fp["wall_s"] = round(wall, 2)
    m.close()
    return fp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pure", action="store_true", help="the pure-Python reference")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--json", help="write the fingerprints to this file")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"),
                    help="compare two --json files and exit (0 the same, 1 not)")
    a = ap.parse_args(argv)
    if a.compare:
        x, y = (json.loads(Path(f).read_text()) for f in a.compare)
        bad = 0
        for k in sorted(set(x) | set(y)):
            p, q = x.get(k), y.get(k)
            strip = lambda d: {kk: vv for kk, vv in (d or {}).items() if kk != "wall_s"}  # noqa: E731
            same = strip(p) == strip(q)
            bad += not same
            print(f"{'same' if same else 'DIFFERS'}  {k}"
                  + ("" if same else f"\n    {strip(p)}\n    {strip(q)}"))
        return 1 if bad else 0
    if a.pure:
        os.environ["PINETIME_EMU_PURE_PYTHON"] = "1"
    import logging
    logging.getLogger("emu").setLevel(logging.ERROR)
    only = set(filter(None, a.only.split(",")))
    res = {}
    for name, path, kw, seconds, until in workloads():
        if only and name not in only:
            continue
        if not Path(path).exists():
            print(f"{name:32s} skipped: no {path}")
            continue
        fp = run_one(name, path, kw, seconds, until)
        res[name] = fp
        print(f"{name:32s} " + " ".join(f"{k}={v}" for k, v in fp.items() if k != "name"),
              flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
