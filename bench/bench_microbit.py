"""micro:bit REPL benchmark: our emulator against QEMU's ``-M microbit``.

    python3 bench/bench_microbit.py [--iterations N] [--repeat R]

Both run Debian's MicroPython hex (firmware-microbit-micropython) through
the same workload: boot to the ``>>>`` prompt, then type
``for i in range(N): pass`` (N = 200 000) on the UART console and wait for
the prompt after it.  Printed: the wall time of each (median of R runs),
their ratio, the CPU time each process used (less sensitive to a busy
host), and for ours the emulated time and cycles (cycle accounting is
always on).  QEMU runs with ``-device loader,file=firmware.hex -serial
stdio``; if ``qemu-system-arm`` is not installed only our time is printed.

Not a test: wall times depend on the host.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEX = "/usr/share/firmware-microbit-micropython/firmware.hex"
PROMPT = b">>> "


def command(n: int) -> bytes:
    return f"for i in range({n}): pass\r\r".encode()


def run_ours(n: int) -> tuple:
    from emu import Machine
    c0 = time.process_time()
    t0 = time.perf_counter()
    m = Machine(HEX, board="microbit")
    if not m.run_until(lambda: m.console.endswith(PROMPT), timeout_ms=5000):
        raise RuntimeError("no prompt: " + m.console_text())
    t_boot = time.perf_counter() - t0
    cmd = command(n)
    start = len(m.console)
    m.board.uart_send(cmd)
    if not m.run_until(lambda: m.console[start + len(cmd):].endswith(PROMPT),
                       timeout_ms=600_000, poll_ms=50):
        raise RuntimeError("loop did not finish: " + m.console_text()[-200:])
    wall = time.perf_counter() - t0
    return wall, t_boot, m.time, m.cpu.cycles, time.process_time() - c0


def breakdown(n: int) -> None:
    """One more run of our side, untimed, counting where it goes: the
    ``emu_start`` slices and the wall time inside and outside them, the
    registers whose accesses went through a model's Python, and what the
    TIMERs' C steps (emu.soc._mmio.TimerCore) did."""
    from emu import Machine
    from emu.soc.bus import reg_name
    m = Machine(HEX, board="microbit")
    cpu = m.cpu
    t0 = time.perf_counter()
    m.run_until(lambda: m.console.endswith(PROMPT), timeout_ms=5000)
    cmd = command(n)
    at = len(m.console)
    m.board.uart_send(cmd)
    m.run_until(lambda: m.console[at + len(cmd):].endswith(PROMPT), timeout_ms=600_000,
                poll_ms=50)
    wall = time.perf_counter() - t0
    acc = {"slices": cpu.slices, "in": cpu.slice_wall}
    bus = m.soc.bus
    stats = bus.access_stats()
    model = sorted(((s[1] + s[3], base, off, s) for (base, off), s in stats.items()
                    if s[1] + s[3]), reverse=True)
    total = bus.accesses
    through = sum(r[0] for r in model)
    print(f"\nbreakdown of one run of ours (untimed by the figures above, {wall:.2f} s wall): "
          f"{acc['slices']} emu_start slices; wall inside them (Unicorn, our C, model code "
          f"called from it) {acc['in']:.2f} s, the run loop outside them "
          f"{wall - acc['in']:.2f} s ({(wall - acc['in']) / max(1, acc['slices']) * 1e6:.1f} us "
          f"a slice)")
    print(f"  {total} guest peripheral accesses, {through} through a model's Python:")
    for cnt, base, off, st in model[:8]:
        per = bus.slots[base]
        print(f"    {per.name + ' ' + reg_name(per, off):28s} reads {st[1]:7d}  writes {st[3]:7d}")
    for name in ("timer0", "timer1", "timer2"):
        core = getattr(m.soc, name)._core
        if core is not None:
            print(f"  {name} in C: {core.fired} compares, {core.captures} CAPTUREs "
                  f"({core.handed} compares handed to the model)")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_qemu(n: int, qemu: str) -> tuple:
    c0 = _children_cpu()
    t0 = time.perf_counter()
    p = subprocess.Popen([qemu, "-M", "microbit", "-device", f"loader,file={HEX}",
                          "-display", "none", "-monitor", "none", "-serial", "stdio"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    out = bytearray()

    def read_until(pred, timeout):
        end = time.perf_counter() + timeout
        while not pred():
            if time.perf_counter() > end:
                raise RuntimeError("QEMU timed out: " + out.decode("utf-8", "replace")[-200:])
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError("QEMU exited: " + out.decode("utf-8", "replace")[-200:])
            out.extend(chunk)
    try:
        read_until(lambda: out.endswith(PROMPT), 30)
        t_boot = time.perf_counter() - t0
        cmd = command(n)
        start = len(out)
        p.stdin.write(cmd)
        p.stdin.flush()
        read_until(lambda: out[start + len(cmd):].endswith(PROMPT), 600)
        wall = time.perf_counter() - t0
    finally:
        p.kill()
        p.wait()
    return wall, t_boot, _children_cpu() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_microbit")      # never slow figures unsaid
    if not os.path.exists(HEX):
        print(f"bench_microbit: {HEX} missing (apt-get install firmware-microbit-micropython)")
        return 1
    ours = [run_ours(args.iterations) for _ in range(args.repeat)]
    wall = statistics.median(r[0] for r in ours)
    cpu = statistics.median(r[4] for r in ours)
    _, boot, emu_s, cycles, _ = ours[0]
    print(f"ours: {wall:.3f} s wall, {cpu:.3f} s CPU (boot to prompt {boot:.3f} s); emulated "
          f"{emu_s:.3f} s, {cycles} cycles at 16 MHz ({emu_s / wall:.2f}x real time)")
    from limit import share_line
    print(share_line("ours (Cortex-M0)", cycles / emu_s, emu_s / wall, core="m0"))
    qemu = shutil.which("qemu-system-arm")
    if qemu is None:
        print("qemu: qemu-system-arm not installed (apt-get install qemu-system-arm); "
              "only our time is shown")
        return 0
    q = [run_qemu(args.iterations, qemu) for _ in range(args.repeat)]
    qwall = statistics.median(r[0] for r in q)
    qcpu = statistics.median(r[2] for r in q)
    print(f"qemu: {qwall:.3f} s wall, {qcpu:.3f} s CPU (boot to prompt {q[0][1]:.3f} s)")
    print(f"ratio ours/qemu: {wall / qwall:.2f} wall, {cpu / qcpu:.2f} CPU   "
          f"target <= 1.5 wall (issue 46)")
    breakdown(args.iterations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
