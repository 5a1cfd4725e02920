"""Real InfiniTime soak: an emulated hour (or --minutes) of the idle watch.

    python3 bench/soak_infinitime.py [--minutes N]

The image as bench/bench_infinitime.py finds it.  The watch boots with an
erased NOR (littlefs formats it), the emulated phone's scanner listens, and
the watch idles (its screen times out after 15 s).  Every emulated minute the
run checks that nothing faulted or reset; every ten it prints the wall time
and the advertisements heard.  At the end the button wakes the screen, the
face must be drawn, and its screenshot (bench/out/soak_infinitime.png) shows
the watch's time, which started at 00:00 at boot: after an hour, 01:00.

Not a test: wall times depend on the host.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> int:
    from bench_infinitime import face_drawn, image

    from emu import Machine
    from emu.phone.scanner import Scanner
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=int, default=60)
    a = ap.parse_args()
    if a.minutes < 1:
        print("soak_infinitime: --minutes must be >= 1")
        return 2
    m = Machine(image(), flash_file=None)
    sc = Scanner(m.air)
    t0 = time.perf_counter()
    for minute in range(1, a.minutes + 1):
        r = m.run(seconds=60)
        if not r.ok or m.resets or 3 <= m.cpu._ipsr <= 6:
            print(f"minute {minute}: PROBLEM {r} {r.info} resets={m.resets} ipsr={m.cpu._ipsr}")
            return 1
        if minute % 10 == 0 or minute == a.minutes:
            adverts = sum(d.adverts for d in sc.devices.values())
            print(f"minute {minute}: {time.perf_counter() - t0:.0f} s wall, "
                  f"{adverts} advertisements heard, no fault, no reset", flush=True)
    wall = time.perf_counter() - t0
    before = m.board.screen()[85:155].copy()
    m.board.button.press()
    m.run(ms=100)
    m.board.button.release()
    m.run(seconds=1)
    shot = ROOT / "bench" / "out"
    shot.mkdir(exist_ok=True)
    m.board.screenshot(str(shot / "soak_infinitime.png"))
    print(f"{a.minutes} emulated minutes in {wall:.0f} s of wall time "
          f"({a.minutes * 60 / wall:.1f}x real time); the face after the button: "
          f"{'drawn' if face_drawn(m) else 'NOT drawn'} (screenshot {shot / 'soak_infinitime.png'};"
          f" it should read {a.minutes // 60:02d}:{a.minutes % 60:02d})")
    return 0 if face_drawn(m) and not (before == m.board.screen()[85:155]).all() else 1


if __name__ == "__main__":
    sys.exit(main())
