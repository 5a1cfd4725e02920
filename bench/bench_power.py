"""What the energy model costs: the same emulated run with and without it.

    python3 bench/bench_power.py [--runs N] [--seconds S]

For each image present (our firmware/build/pinetime_demo.elf always; real
InfiniTime from ``$PINETIME_EMU_INFINITIME_IMAGE`` or
``~/.cache/pinetime-emu/infinitime/``, wasp-os from ``$PINETIME_EMU_WASP_IMAGE``
or ``~/.cache/pinetime-emu/wasp-os/upstream/``): boot it (not timed), take a
snapshot, then ``--runs`` times (default 5) restore the snapshot and run
``--seconds`` emulated seconds (default 10) of the idle watch, alternately
without and with ``machine.power()`` (keeping its record, rows of 1 s, as
``run --power`` does).  Printed: the median wall time of each, the overhead in per
cent, and the number of state changes the meter saw per emulated second.

Not a test: wall times depend on the host; the load average is printed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import Machine  # noqa: E402
from limit import share_line  # noqa: E402

CACHE = Path.home() / ".cache" / "pinetime-emu"


def images() -> list:
    out = [("demo (firmware/)", str(ROOT / "firmware" / "build" / "pinetime_demo.elf"), 1.0)]
    it = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE") or next(
        iter(sorted((CACHE / "infinitime").glob("pinetime-app-*.out"), reverse=True)), "")
    if it and Path(it).exists():
        out.append(("InfiniTime", str(it), 3.0))
    wasp = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(CACHE / "wasp-os" / "upstream" /
                                                           "micropython.elf")
    if Path(wasp).exists():
        out.append(("wasp-os", wasp, 5.0))
    return out


def one(snap: str, seconds: float, power: bool) -> tuple:
    m = Machine.from_snapshot(snap)
    meter = m.power() if power else None
    t, c = time.perf_counter(), m.cpu.cycles
    m.run(seconds=seconds)
    wall = time.perf_counter() - t
    changes = meter.changes if meter is not None else 0
    return wall, changes, (m.cpu.cycles - c) / seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_power")      # never slow figures unsaid
    print(f"load average {os.getloadavg()[0]:.2f}; {a.runs} runs of {a.seconds} emulated s")
    with tempfile.TemporaryDirectory() as d:
        for name, path, boot in images():
            m = Machine(path, flash_file=None)
            m.run(seconds=boot)
            snap = os.path.join(d, "boot.snap")
            m.save_snapshot(snap)
            off, on, changes = [], [], 0
            for _ in range(a.runs):
                w, _c, busy = one(snap, a.seconds, False)
                off.append(w)
                w, changes, _b = one(snap, a.seconds, True)
                on.append(w)
            mo, mi = statistics.median(off), statistics.median(on)
            print(f"{name:18s} without {mo:7.3f} s  with {mi:7.3f} s  overhead "
                  f"{(mi / mo - 1) * 100:+6.1f} %  ({changes / a.seconds:.0f} changes per "
                  "emulated s)")
            print("  " + share_line(f"{name}, without", busy, a.seconds / mo))
            print("  " + share_line(f"{name}, with", busy, a.seconds / mi))
    return 0


if __name__ == "__main__":
    sys.exit(main())
