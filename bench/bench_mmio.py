"""MMIO benchmark: a firmware polling peripheral registers in a tight loop.

    python3 bench/bench_mmio.py [--runs N] [--python]

Builds firmware/ with make, runs firmware/build/bench_mmio.elf (1 000 000
register reads: RTC1 COUNTER, which depends on time, and GPIO IN, which does
not, alternately) N times (default 5) in fresh machines and prints
peripheral accesses per wall second and per CPU second for each run, their
medians, and the host's load average (the figure depends on what else runs).
``--python`` uses the ctypes callbacks instead of the native ``emu.soc._mmio``
ones (PINETIME_EMU_PURE_PYTHON also makes the cycle counter pure Python, so
it is not used here).  Target (issue 3): at least 1 M accesses/s.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import Machine  # noqa: E402
from emu.soc import bus as bus_mod  # noqa: E402


def one_run(native: bool) -> tuple[int, float, float, Machine]:
    orig = bus_mod.PeripheralBus.__init__

    def init(self, cpu, symbolize=None, native_=None, **_kw):
        orig(self, cpu, symbolize, native=native)
    bus_mod.PeripheralBus.__init__ = init
    try:
        m = Machine(str(ROOT / "firmware" / "build" / "bench_mmio.elf"), board="nrf52832")
    finally:
        bus_mod.PeripheralBus.__init__ = orig
    before = m.soc.bus.accesses
    t0, c0 = time.perf_counter(), time.process_time()
    r = m.run(seconds=10)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert r.reason == "exit" and "mmio done" in m.console_text(), r
    return m.soc.bus.accesses - before, wall, cpu, m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--python", action="store_true", help="ctypes callbacks, not _mmio.c")
    args = ap.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_mmio", pure=args.python)
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s"], check=True)
    native = not args.python and _native.load("emu.soc._mmio") is not None
    load = os.getloadavg()[0]
    walls, cpus, speeds = [], [], []
    for i in range(args.runs):
        n, wall, cpu, m = one_run(native)
        speeds.append((m.time / wall, m.cpu.cycles / m.time))
        walls.append(n / wall)
        cpus.append(n / cpu)
        print(f"  run {i + 1}: {n} accesses, {wall:.3f} s wall = {n / wall / 1e6:.2f} M/s, "
              f"{cpu:.3f} s CPU = {n / cpu / 1e6:.2f} M/s; {m.cpu.cycles} cycles = "
              f"{m.time:.4f} s emulated")
    print(f"bench_mmio ({'native _mmio.c' if native else 'ctypes'} callbacks, "
          f"1-min load average {load:.2f} at start): median "
          f"{statistics.median(walls) / 1e6:.2f} M peripheral accesses per wall second, "
          f"{statistics.median(cpus) / 1e6:.2f} M per CPU second over {args.runs} runs")
    sys.path.insert(0, str(ROOT / "bench"))
    from limit import share_line
    x, busy = sorted(speeds)[len(speeds) // 2]
    print(share_line("bench_mmio", busy, x))


if __name__ == "__main__":
    main()
