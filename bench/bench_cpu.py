"""CPU benchmarks: a CPU-bound firmware and an idle (SysTick + WFI) firmware.

    python3 bench/bench_cpu.py [--pure-python]

Builds firmware/ with make, runs each image to completion and prints emulated
MIPS-ish cycles/s and the real-time factor at 64 MHz.  The wall clock is read
here only, never inside the emulator."""
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from emu import Machine  # noqa: E402


def bench(name: str, ms: float, pure_python: bool) -> None:
    m = Machine(str(ROOT / "firmware" / "build" / f"{name}.elf"), board="nrf52832",
                pure_python=pure_python)
    t0 = time.perf_counter()
    r = m.run(ms=ms)
    wall = time.perf_counter() - t0
    emu_s = m.clock.now / 512e6
    print(f"{name}: {r.reason} exit={r.exit_code} cycles={m.cpu.cycles} emulated={emu_s:.3f}s "
          f"wall={wall:.3f}s cycles/s={m.cpu.cycles / wall / 1e6:.1f}M "
          f"real-time factor={emu_s / wall:.1f}x  {m.console_text().strip()}")


if __name__ == "__main__":
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s"], check=True)
    pp = "--pure-python" in sys.argv
    bench("bench_cpu", 60_000, pp)
    bench("bench_idle", 200_000, pp)
