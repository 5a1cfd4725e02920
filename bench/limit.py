"""The execution limit, for every bench (issue 46): a workload's **execution
limit** is the core's rate on CPU-bound code (cycles a wall second, cycle
exact: firmware/build/bench_cpu.elf, measured here first) divided by the
cycles the firmware executes in an emulated second (counted loops
included: they are cycles the firmware spends).  Everything between a
bench's real-time factor and that limit is overhead: the clock, the
peripherals, Python.  ``share_line`` prints the busy cycles, the rate, the
limit and the share of it a bench reached."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_rates: dict = {}
# core -> (image, board, emulated ms): the same workload (common/bench_workload.h),
# run to its end (the M4's ends at 1.05 emulated s: a 0.05 s run; a shorter
# one weighs the first translation of its code more)
_WORKLOADS = {"m4": ("bench_cpu.elf", "nrf52832", 2000),
              "m0": ("nrf51/bench_cpu51.elf", "microbit", 2000)}


def cpu_rate(core: str = "m4") -> float:
    """CPU-bound cycles per wall second of ``core`` ("m4": the nRF52832's
    Cortex-M4, firmware/build/bench_cpu.elf; "m0": the micro:bit's Cortex-M0,
    build/nrf51/bench_cpu51.elf) on this host: the rate the core can reach
    (the best of five runs)."""
    if core not in _rates:
        subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s", "-j2"], check=True)
        from emu import Machine
        image, board, ms = _WORKLOADS[core]
        best = 0.0
        for _ in range(5):
            m = Machine(str(ROOT / "firmware" / "build" / image), board=board)
            t = time.perf_counter()
            m.run(ms=ms)
            best = max(best, m.cpu.cycles / (time.perf_counter() - t))
        _rates[core] = best
    return _rates[core]


def share_line(label: str, busy_per_s: float, times_real: float, rate: float = None,
               core: str = "m4") -> str:
    """``label``: its busy cycles per emulated second, the limit they give at
    ``rate`` (default: cpu_rate(core)) and the share of it ``times_real`` is."""
    rate = cpu_rate(core) if rate is None else rate
    limit = rate / max(busy_per_s, 1.0)
    return (f"{label}: {busy_per_s / 1e6:.2f} M busy cycles per emulated s; CPU-bound rate "
            f"{rate / 1e9:.2f} G cycles/s; execution limit {limit:,.0f}x real time; "
            f"{times_real:.1f}x is {100 * times_real / limit:.1f} % of it")
