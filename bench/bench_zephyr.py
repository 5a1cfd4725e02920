"""Zephyr on the emulated nRF52 DK: its kernel tests as shipped, timed to
ztest's verdict, and where the time goes.

    python3 bench/bench_zephyr.py [--runs N] [--tests a,b,...] [--profile]

Images: ``$PINETIME_EMU_ZEPHYR_DIR/nrf52dk_nrf52832/<name>/zephyr.elf``
(default ``~/.cache/pinetime-emu/zephyr``; the shared ZEPHYR-BUILD.md says how
they are built).  For each test (default: ``fpu_sharing_generic``, the
CPU-bound one with FP context switches, target >= 15x real time; `sleep`: >= 5x; then the
userspace ones) it prints the medians of ``--runs`` (default 3) runs: the
emulated time to ``PROJECT EXECUTION SUCCESSFUL``, the wall time, emulated
cycles per wall second and the real-time factor at 64 MHz, and what the
MPU cost: page-map computations, mem_protect runs, stores done in C and
faults decided in Python.  ``--profile`` adds cProfile's top entries of one
more run (Python's share; the rest is the engine).  There is no peer to run
in the same process (Renode is not packaged here); the figures from before
the MPU and privilege work are in docs/performance.md.

Not a test: wall times depend on the host; the load average is printed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from emu import Machine  # noqa: E402

import logging  # noqa: E402
logging.getLogger("emu").setLevel(logging.ERROR)     # the tests fault on purpose

ZEPHYR = Path(os.environ.get("PINETIME_EMU_ZEPHYR_DIR")
              or Path.home() / ".cache" / "pinetime-emu" / "zephyr")
DEFAULT = ["fpu_sharing_generic", "kernel_common", "mem_protect", "fatal_exception", "sleep",
           "semaphore", "timer_api"]
TARGETS = {"fpu_sharing_generic": ">= 15x real time (issue 46)",
           "sleep": ">= 5x real time (issue 46)"}
VERDICTS = (b"PROJECT EXECUTION SUCCESSFUL", b"PROJECT EXECUTION FAILED")


def one(path: Path) -> dict:
    m = Machine(str(path), board="nrf52dk")
    mpu = m.cpu.mpu
    calls = {"page_maps": 0, "protect_runs": 0}
    page_map = mpu._page_map

    def counted_map(priv):
        calls["page_maps"] += 1
        return page_map(priv)
    mpu._page_map = counted_map
    uc_protect = m.cpu.uc.mem_protect

    def counted_protect(*a):
        calls["protect_runs"] += 1
        return uc_protect(*a)
    m.cpu.uc.mem_protect = counted_protect
    t = time.perf_counter()
    # the verdict is looked for at every slice's end (run_until's stop) and
    # at least every 100 emulated ms: the same cycles and emulated time as
    # polling every 1 ms, without 137 000 Machine.run calls on fpu_sharing
    # (measured: 17 % of its wall time)
    m.run_until(lambda: any(v in m.board.uart_output() for v in VERDICTS), timeout_ms=600_000,
                poll_ms=100)
    wall = time.perf_counter() - t
    out = m.board.uart_output()
    guard = m.cpu._flash_guard
    return {"ok": VERDICTS[0] in out, "emulated": m.time, "wall": wall, "cycles": m.cpu.cycles,
            "c_stores": guard.mpu_stores if guard is not None else 0,
            **calls}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--tests", default=",".join(DEFAULT))
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_zephyr")      # never slow figures unsaid
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name in args.tests.split(","):
        path = ZEPHYR / "nrf52dk_nrf52832" / name / "zephyr.elf"
        if not path.exists():
            print(f"{name:28s} no image {path}: skipped")
            continue
        runs = [one(path) for _ in range(args.runs)]
        r0 = runs[0]
        assert all(r["cycles"] == r0["cycles"] for r in runs), "runs differ in cycles"
        wall = statistics.median(r["wall"] for r in runs)
        print(f"{name:28s} {'PASS' if r0['ok'] else 'FAIL'}  emulated {r0['emulated']:7.2f} s  "
              f"wall {wall:6.2f} s  {r0['cycles'] / wall / 1e6:6.0f} M cycles/s  "
              f"{r0['emulated'] / wall:5.1f}x real time  |  MPU: {r0['page_maps']} page maps, "
              f"{r0['protect_runs']} mem_protect runs, {r0['c_stores']} stores in C")
        from limit import share_line
        print("  " + share_line(name, r0["cycles"] / r0["emulated"], r0["emulated"] / wall)
              + (f"   target {TARGETS[name]}" if name in TARGETS else ""))
        if args.profile:
            import cProfile
            import pstats
            prof = cProfile.Profile()
            prof.enable()
            one(path)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(8)
    return 0


if __name__ == "__main__":
    sys.exit(main())
