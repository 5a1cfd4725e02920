"""MMIO benchmark: a firmware polling peripheral registers in a tight loop.

    python3 bench/bench_mmio.py

Builds firmware/ with make, runs firmware/build/bench_mmio.elf (1 000 000
register reads: RTC1 COUNTER and GPIO IN alternately) and prints peripheral
accesses per wall second.  Target (issue 3): at least 1 M accesses/s.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import Machine  # noqa: E402


def main() -> None:
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s"], check=True)
    m = Machine(str(ROOT / "firmware" / "build" / "bench_mmio.elf"), board="nrf52832")
    before = m.soc.bus.accesses
    t0 = time.perf_counter()
    r = m.run(seconds=10)
    wall = time.perf_counter() - t0
    n = m.soc.bus.accesses - before
    assert r.reason == "exit" and "mmio done" in m.console_text(), r
    print(f"bench_mmio: {n} peripheral accesses in {wall:.3f} s wall = {n / wall / 1e6:.2f} M "
          f"accesses/s; {m.cpu.cycles} cycles = {m.time:.4f} s emulated "
          f"(real-time factor {m.time / wall:.3f})")


if __name__ == "__main__":
    main()
