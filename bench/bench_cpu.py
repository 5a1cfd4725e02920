"""CPU benchmarks: a CPU-bound firmware and an idle (SysTick + WFI) firmware.

    python3 bench/bench_cpu.py [--pure-python]

Run by a Python with pinetime-emu installed (not the checkout's venv), it
measures the installed package; else the checkout.  The first line says
which.
Builds firmware/ with make, runs each image to completion and prints emulated
MIPS (million guest instructions per wall second), emulated cycles per wall
second and the real-time factor at 64 MHz.  The emulator counts cycles, not
instructions, so a second, untimed run of the same image counts the
instructions executed (a Unicorn block hook adding each basic block's
instruction count); the runs are deterministic, so the two must end on the
same cycle count, which is checked.  The wall clock is read here only, never
inside the emulator."""
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    import emu  # noqa: F401  an installed pinetime-emu (its .pth): the wheel's figures
except ImportError:
    sys.path.insert(0, str(ROOT))
from emu import Machine, native  # noqa: E402


def _machine(name: str, pure_python: bool) -> Machine:
    return Machine(str(ROOT / "firmware" / "build" / f"{name}.elf"), board="nrf52832",
                   pure_python=pure_python)


def count_instructions(name: str, ms: float, pure_python: bool) -> tuple:
    """(instructions, cycles) of a run of ``name``, counted per executed basic
    block (slow: a Python hook on every block; not timed)."""
    import capstone
    from unicorn import UC_HOOK_BLOCK
    m = _machine(name, pure_python)
    md = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB | capstone.CS_MODE_MCLASS)
    per_block: dict = {}
    total = [0]

    def on_block(uc, address, size, _user):
        n = per_block.get((address, size))
        if n is None:
            code = bytes(uc.mem_read(address, size))
            n = per_block[(address, size)] = sum(1 for _ in md.disasm_lite(code, address))
        total[0] += n

    m.cpu.uc.hook_add(UC_HOOK_BLOCK, on_block)
    m.run(ms=ms)
    return total[0], m.cpu.cycles


def bench(name: str, ms: float, pure_python: bool) -> None:
    m = _machine(name, pure_python)
    t0 = time.perf_counter()
    r = m.run(ms=ms)
    wall = time.perf_counter() - t0
    emu_s = m.clock.now / 512e6
    insns, cycles = count_instructions(name, ms, pure_python)
    if cycles != m.cpu.cycles:
        print(f"{name}: warning: the counting run ended at cycle {cycles}, the timed run at "
              f"{m.cpu.cycles}: the instruction count is approximate")
    print(f"{name}: {r.reason} exit={r.exit_code} cycles={m.cpu.cycles} instructions={insns} "
          f"emulated={emu_s:.3f}s wall={wall:.3f}s MIPS={insns / wall / 1e6:.1f} "
          f"cycles/s={m.cpu.cycles / wall / 1e6:.1f}M real-time factor={emu_s / wall:.1f}x  "
          f"{m.console_text().strip()}")
    sys.path.insert(0, str(ROOT / "bench"))
    from limit import share_line        # (the CPU-bound image is the rate itself: ~100 %)
    print("  " + share_line(name, m.cpu.cycles / emu_s, emu_s / wall))


if __name__ == "__main__":
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s"], check=True)
    pp = "--pure-python" in sys.argv
    native.bench_guard("bench_cpu", pure=pp)    # never slow figures unsaid
    bench("bench_cpu", 60_000, pp)
    bench("bench_idle", 200_000, pp)
