"""Soak: an emulated hour of real wasp-os's idle clock face, heap and clock checked.

    python3 bench/soak_wasp.py [--minutes N]

The image comes from ``$PINETIME_EMU_WASP_IMAGE`` or the cache path
tests/firmware/test_wasp.py uses.  The watch boots from an erased NOR flash, the
emulated phone connects over Bluetooth (as Gadgetbridge stays connected) and
soft-resets the REPL once (as tests/firmware/test_wasp.py does: the first boot's heap
is fragmented by the format), then the watch idles on its clock face.  Every
emulated minute the phone asks, through the REPL, for ``gc.mem_free()`` and
the watch's clock (``wasp.watch.rtc.time()``), and the script prints both
with the drift of the watch's clock against emulated time and the wall time
so far.  At the end: the heap's trend (least squares, bytes per emulated
hour), the largest drift, and the speed (emulated over wall time).

Not a test: it prints what it saw; a heap that keeps shrinking or a clock
that drifts is for a person to look at.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CACHE = Path.home() / ".cache" / "pinetime-emu" / "wasp-os" / "upstream" / "micropython.elf"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=int, default=60, help="emulated minutes (default 60)")
    args = ap.parse_args()
    if not 1 <= args.minutes <= 24 * 60:
        ap.error("--minutes must be 1..1440")
    path = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(CACHE)
    if not Path(path).exists():
        print(f"soak_wasp: no wasp-os image: set PINETIME_EMU_WASP_IMAGE or build one into "
              f"{CACHE.parent} (docs/firmware.md, 'Real wasp-os')")
        return 2
    from emu import Machine
    t_start = time.perf_counter()
    m = Machine(path, flash_file=None)
    m.run(seconds=5.0)
    p = m.phone
    p.connect()
    start = len(p.output)
    p.send(b"\x04")                                   # soft reset, then reconnect
    m.run_until(lambda: not p.central.connected, timeout_ms=3000)
    p.connect(timeout_ms=8000)
    if not p.wait_for(b">>> ", start=start, timeout_ms=8000):
        print("soak_wasp: no REPL prompt after the soft reset")
        return 1
    p.repl("import gc, wasp")

    def sample():
        free = int(p.repl("print(gc.mem_free())").strip())
        watch = int(p.repl("print(wasp.watch.rtc.time())").strip())
        return free, watch

    emu0 = m.clock.now / 512e6
    free0, watch0 = sample()
    print(f"soak_wasp: {path}; booted and connected in {time.perf_counter() - t_start:.1f} s wall;"
          f" heap free {free0} B")
    print(" minute  heap free  watch clock drift   wall s")
    rows = []
    wall0 = time.perf_counter()
    for minute in range(1, args.minutes + 1):
        target = emu0 + 60.0 * minute
        m.run(seconds=max(0.0, target - m.clock.now / 512e6))
        at = m.clock.now / 512e6
        free, watch = sample()
        drift = (watch - watch0) - (at - emu0)
        rows.append((at - emu0, free, drift))
        print(f" {minute:6d} {free:10d} {drift:+17.3f} s {time.perf_counter() - wall0:8.1f}",
              flush=True)
    wall = time.perf_counter() - wall0
    n = len(rows)
    xs = [r[0] / 3600 for r in rows]
    ys = [r[1] for r in rows]
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0
    worst = max(rows, key=lambda r: abs(r[2]))
    emu_s = m.clock.now / 512e6 - emu0
    print(f"soak_wasp: {emu_s / 60:.1f} emulated minutes in {wall:.1f} s wall "
          f"({emu_s / wall:.1f}x real time, phone connected, sampling every minute)")
    print(f"  heap free: first {ys[0]} B, last {ys[-1]} B, min {min(ys)} B, trend "
          f"{slope:+.0f} B per emulated hour")
    print(f"  watch clock against emulated time: largest drift {worst[2]:+.3f} s "
          f"(at {worst[0] / 60:.0f} min; the clock is read with 1 s resolution)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
