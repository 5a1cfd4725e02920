"""Real InfiniTime benchmark: the first second, the watch face, idle with the
screen on and off, and where the time goes.

    python3 bench/bench_infinitime.py [--runs N] [--idle SECONDS]
                                      [--infiniemu "COMMAND {image}"]
                                      [--loop-skip-pairs N] [--profile]

The image comes from ``$PINETIME_EMU_INFINITIME_IMAGE`` or the newest
``pinetime-app-*.out`` in ``~/.cache/pinetime-emu/infinitime/`` (the path
tests/firmware/test_mcuboot.py uses; the shared INFINITIME-BUILD.md says how it was
built).  Each run builds a machine with an erased NOR flash
(``flash_file=None``) and

* runs the first emulated second (display and sensor set-up, littlefs
  formatting the NOR; InfiniTime's busy waits live here) against issue 15's
  target of <= 1 s wall;
* goes on in 50 ms steps until the watch face's digits are drawn;
* runs ``--idle`` emulated seconds (default 5) of the face with the screen
  on, from 4 emulated s (target >= 10x real time);
* then lets the screen time out and runs ``--idle`` seconds with it off.

Printed: each run, the medians of ``--runs`` (default 3) next to the
targets, and a breakdown of the first second: guest accesses per register
(by the bus's ops or by the model), the slices, and wall time inside them
against the run loop's own Python, the work its hooks do without ending a
slice (exception returns and entries, new blocks costed, WFEs), and the
slices and exceptions per emulated second of 2 s of idle with the screen
on.  ``--infiniemu`` times another emulator on the same image with the
command given (``{image}`` is replaced by the image's path; it must stop by
itself) and prints the ratio of its wall time to ours (machine built and
run) for the emulated time that command covers, which you state with
``--infiniemu-seconds`` (default 1).  ``--loop-skip-pairs N`` times only the
first second, N times with polling loops counted (``CortexM.loop_skip``,
the default) and N times with every iteration run, alternating in this
process, and prints both medians and both cycle counts (which must agree).

``--profile`` adds the breakdown per emulated second of idle with the
screen on, from 4 emulated s (clock events, exceptions, register accesses
through Python, slices, profiled Python time by category:
bench/idle_profile.py).

Not a test: wall times depend on the host; the load average is printed.
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CACHE = Path.home() / ".cache" / "pinetime-emu" / "infinitime"
FIRST_S = 1.0
IDLE_FROM_S = 4.0
TARGETS = {"first": "<= 0.15 s wall (issue 46)", "idle": ">= 100x real time (issue 46)"}


def image() -> str:
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if not p:
        found = sorted(CACHE.glob("pinetime-app-*.out"))
        p = str(found[-1]) if found else ""
    if not p or not Path(p).exists():
        print("bench_infinitime: no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or "
              f"build pinetime-app into {CACHE} (shared INFINITIME-BUILD.md)")
        sys.exit(2)
    return p


def face_drawn(m) -> bool:
    """The digital face's big time digits are on the screen (rows 60-150)."""
    return int((m.board.screen()[60:150, 0:240].max(axis=2) > 64).sum()) > 2000


def screen_off(m) -> bool:
    d = m.board.display
    return d.sleeping or not d.display_on or m.board.backlight.level == 0


def one_run(path: str, idle_s: float, probe: bool = False):
    from bench_wasp import Probe

    from emu import Machine
    t0 = time.perf_counter()
    m = Machine(path, flash_file=None)
    build = time.perf_counter() - t0
    p = Probe(m) if probe else None
    t0, c0 = time.perf_counter(), time.process_time()
    m.run(seconds=FIRST_S)
    first = time.perf_counter() - t0
    first_cpu = time.process_time() - c0
    cycles_first = m.cpu.cycles
    if p is not None:
        p.boot = p.figures()
        p.boot["shortcuts"] = shortcuts(m)
    while not face_drawn(m) and m.time < IDLE_FROM_S:
        m.run(ms=50)
    face = (m.time, time.perf_counter() - t0) if face_drawn(m) else (None, None)
    m.run(seconds=max(0.0, IDLE_FROM_S - m.time))
    if p is not None:
        before = (p.slices, sum(p.entries.values()), shortcuts(m))
    t1, k1 = time.perf_counter(), m.cpu.cycles
    m.run(seconds=idle_s)
    idle_on = idle_s / (time.perf_counter() - t1)
    busy_on = (m.cpu.cycles - k1) / idle_s
    if p is not None:
        after = shortcuts(m)
        p.idle = dict(seconds=idle_s, slices=p.slices - before[0],
                      entries=sum(p.entries.values()) - before[1],
                      shortcuts={k: after[k] - before[2][k] for k in after})
    on_at_end = not screen_off(m)
    limit = m.time + 60
    while not screen_off(m) and m.time < limit:
        m.run(ms=500)
    off_at = m.time if screen_off(m) else None
    t1, k1 = time.perf_counter(), m.cpu.cycles
    m.run(seconds=idle_s)
    idle_off = idle_s / (time.perf_counter() - t1)
    busy_off = (m.cpu.cycles - k1) / idle_s
    return dict(build=build, first=first, first_cpu=first_cpu, face=face, idle_on=idle_on,
                busy_on=busy_on, busy_off=busy_off, busy_first=cycles_first / FIRST_S,
                on_at_end=on_at_end, off_at=off_at, idle_off=idle_off,
                cycles=(cycles_first, m.cpu.cycles)), m, p


def shortcuts(m) -> dict:
    """The run loop's work done without ending a slice (emu/cpu/cortexm.py)."""
    cpu = m.cpu
    return {"returns": cpu.returns_in_hook, "entries": cpu.entries_in_hook,
            "new blocks costed": cpu.costed_in_hook, "WFEs": cpu.wfe_in_hook,
            "polling-loop iterations counted, not run": cpu.loops_skipped[1]}


def breakdown(m, p, wall: float) -> None:
    from emu.soc.bus import reg_name
    b = p.boot
    bus = m.soc.bus
    stats, total = b["stats"], b["accesses"]
    op_total = sum(s[0] + s[2] for s in stats.values())
    print(f"\nbreakdown of the first second ({wall:.2f} s wall): {total} guest peripheral "
          f"accesses, {op_total} ({100 * op_total / max(1, total):.1f} %) by the bus's ops, "
          f"{total - op_total} by the model")
    print("  register                    op reads  model reads   op writes  model writes")
    for (base, off), s in sorted(stats.items(), key=lambda kv: -sum(kv[1]))[:12]:
        per = bus.slots[base]
        print(f"  {per.name + ' ' + reg_name(per, off):26s} {s[0]:10d} {s[1]:12d} {s[2]:11d} "
              f"{s[3]:13d}")
    ent = b["entries"]
    print(f"  exceptions entered in Python: {sum(ent.values())}; emu_start slices: "
          f"{b['slices']}; stores into read-only flash dropped: {b['flash']}")
    print(f"  wall inside slices (Unicorn + C MMIO + model code called from it): "
          f"{b['in_slice']:.2f} s; run loop outside slices: {wall - b['in_slice']:.2f} s")
    print("  done inside slices (hooks), without a slice each: "
          + ", ".join(f"{v} {k}" for k, v in b["shortcuts"].items()))
    i = p.idle
    per = 1 / i["seconds"]
    print(f"idle with the screen on, per emulated second: {i['slices'] * per:.0f} slices, "
          f"{i['entries'] * per:.0f} exceptions entered; inside slices: "
          + ", ".join(f"{v * per:.0f} {k}" for k, v in i["shortcuts"].items()))


def loop_skip_pairs(path: str, pairs: int) -> None:
    """The first second with and without polling-loop skipping, alternating."""
    from emu import Machine
    cpu_s: dict = {True: [], False: []}
    cycles: dict = {True: set(), False: set()}
    for i in range(2 * pairs):
        skip = i % 2 == 0
        m = Machine(path, flash_file=None)
        m.cpu.loop_skip = skip
        c0 = time.process_time()
        m.run(seconds=FIRST_S)
        cpu_s[skip].append(time.process_time() - c0)
        cycles[skip].add(m.cpu.cycles)
        m.close()
    for skip in (True, False):
        t = cpu_s[skip]
        print(f"first second, loops {'counted' if skip else 'run'}: CPU median "
              f"{statistics.median(t):.3f} s ({min(t):.3f}-{max(t):.3f}), cycles "
              f"{', '.join(str(c) for c in sorted(cycles[skip]))}")
    if cycles[True] != cycles[False] or len(cycles[True]) != 1:
        print("  the cycles differ: skipping is not exact")


def other_emulator(cmd: str, path: str) -> float:
    argv = [a.replace("{image}", path) for a in shlex.split(cmd)]
    t0 = time.perf_counter()
    try:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"bench_infinitime: --infiniemu command failed: {e}")
        sys.exit(2)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle", type=float, default=5.0, help="emulated seconds of each idle part")
    ap.add_argument("--infiniemu", metavar="COMMAND",
                    help='another emulator\'s command line, "{image}" for the image')
    ap.add_argument("--infiniemu-seconds", type=float, default=FIRST_S,
                    help="emulated seconds that command runs for (default 1)")
    ap.add_argument("--profile", action="store_true",
                    help="idle with the screen on, broken down per emulated second")
    ap.add_argument("--loop-skip-pairs", type=int, metavar="N",
                    help="only time the first second, N times with polling loops counted "
                         "and N times without, alternating")
    a = ap.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_infinitime")      # never slow figures unsaid
    if a.loop_skip_pairs is not None:
        if a.loop_skip_pairs < 1:
            print("bench_infinitime: --loop-skip-pairs must be >= 1")
            return 2
        path = image()
        print(f"bench_infinitime: {path}, 1-min load average {os.getloadavg()[0]:.2f} at start")
        loop_skip_pairs(path, a.loop_skip_pairs)
        return 0
    if a.runs < 1 or a.idle <= 0 or a.infiniemu_seconds <= 0:
        print("bench_infinitime: --runs must be >= 1, --idle and --infiniemu-seconds > 0")
        return 2
    path = image()
    print(f"bench_infinitime: {path}, 1-min load average {os.getloadavg()[0]:.2f} at start")
    results = []
    for i in range(a.runs):
        r, _m, _p = one_run(path, a.idle)
        results.append(r)
        face = (f"face at {r['face'][0]:.2f} emulated s, {r['face'][1]:.2f} s wall"
                if r["face"][0] is not None else "face not seen")
        off = f"screen off at {r['off_at']:.1f} s" if r["off_at"] is not None else "screen never off"
        print(f"  run {i + 1}: machine {r['build']:.2f} s; first second {r['first']:.2f} s wall "
              f"(CPU {r['first_cpu']:.2f} s); {face}; idle screen on {r['idle_on']:.1f}x; "
              f"{off}; idle screen off {r['idle_off']:.1f}x; cycles {r['cycles'][0]} at "
              f"{FIRST_S:g} s, {r['cycles'][1]} at the end")
    med = {k: statistics.median(r[k] for r in results)
           for k in ("first", "first_cpu", "idle_on", "idle_off")}
    print(f"median first second: {med['first']:.2f} s wall (CPU {med['first_cpu']:.2f} s)   "
          f"target {TARGETS['first']}")
    print(f"median idle, screen on: {med['idle_on']:.1f}x real time   target {TARGETS['idle']}")
    print(f"median idle, screen off: {med['idle_off']:.1f}x real time")
    if not all(r["on_at_end"] for r in results):
        print("  (the screen went off during the screen-on idle part: that figure is mixed)")
    from limit import share_line
    r0 = results[0]
    print(share_line("first second", r0["busy_first"], FIRST_S / med["first"]))
    print(share_line("idle, screen on", r0["busy_on"], med["idle_on"]))
    print(share_line("idle, screen off", r0["busy_off"], med["idle_off"]))
    r, m, p = one_run(path, 2.0, probe=True)
    breakdown(m, p, r["first"])
    if a.profile:
        from emu import Machine
        from idle_profile import profile_idle
        pm = Machine(path, flash_file=None)
        pm.run(seconds=IDLE_FROM_S)
        profile_idle(pm, a.idle, f"idle with the screen on (from {IDLE_FROM_S:g} emulated s)")
    if a.infiniemu:
        from emu import Machine
        theirs = other_emulator(a.infiniemu, path)
        t0 = time.perf_counter()
        Machine(path, flash_file=None).run(seconds=a.infiniemu_seconds)
        ours = time.perf_counter() - t0
        print(f"\nother emulator: {theirs:.2f} s wall for {a.infiniemu_seconds:g} emulated s "
              f"(its whole process); ours {ours:.2f} s (machine and run); "
              f"ratio theirs/ours {theirs / ours:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
