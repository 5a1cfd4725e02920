"""What the MPU costs: bench_cpu's workload with the MPU off, with the MPU on
as Zephyr sets it up (guard in an unused page), and with the guard in the
page the stack works in (every store there decided by emu/cpu/mpu.py: the
worst case).  Medians of alternating rounds in one process, in emulated
cycles per wall second, and each one's ratio to the MPU-off run.

    python3 bench/bench_mpu.py [--rounds N]

The three images end on the same checksum; the run checks it."""
import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from emu import Machine  # noqa: E402

IMAGES = ("bench_cpu", "bench_mpu", "bench_mpu_hot")


def one(name: str) -> tuple:
    m = Machine(str(ROOT / "firmware" / "build" / f"{name}.elf"), board="nrf52832")
    t = time.perf_counter()
    r = m.run(ms=5000)
    dt = time.perf_counter() - t
    assert r.reason == "exit" and r.exit_code == 0, (name, r)
    return m.cpu.cycles / dt, m.console_text().split("checksum")[-1].strip()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_mpu")      # never slow figures unsaid
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s", "-j2"], check=True)
    rates = {n: [] for n in IMAGES}
    sums = set()
    for _ in range(args.rounds):
        for n in IMAGES:
            rate, checksum = one(n)
            rates[n].append(rate)
            sums.add(checksum)
    assert len(sums) == 1, f"checksums differ: {sums}"
    base = statistics.median(rates["bench_cpu"])
    sys.path.insert(0, str(ROOT / "bench"))
    from limit import share_line
    for n in IMAGES:
        med = statistics.median(rates[n])
        print(f"{n:15s} median {med / 1e6:7.1f} M cycles/s  ({med / 64e6:5.1f}x real time)  "
              f"ratio to MPU off {med / base:.2f}")
        # CPU-bound: every cycle of an emulated second is the firmware's
        print("  " + share_line(n, 64e6, med / 64e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
