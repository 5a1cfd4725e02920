"""Real wasp-os benchmark: first boot and the idle clock face, with where time goes.

    python3 bench/bench_wasp.py [--runs N] [--idle SECONDS] [--python] [--perf] [--profile]

The image comes from ``$PINETIME_EMU_WASP_IMAGE`` or the cache path
tests/firmware/test_wasp.py uses (``~/.cache/pinetime-emu/wasp-os/upstream/
micropython.elf``; README, "Real wasp-os").  Each run builds a machine with
an erased NOR flash (``flash_file=None``) and

* boots it for 3 emulated seconds (issue 13's figure: the flash is formatted
  by then), then on in 50 ms steps until the clock face's digits are drawn
  (about 4 emulated s: the figure a person waits for after ``pinetime-emu
  run``);
* runs the idle clock face from 6 emulated seconds on (after the first
  redraws) for ``--idle`` emulated seconds (default 4).

Printed: every run, the median of ``--runs`` (default 3) next to the
targets of issue 13, and a breakdown of one boot: guest accesses per
peripheral register (carried out by the bus's ops, or by the model),
exceptions entered in Python, ``emu_start`` slices, the wall time spent
inside slices (Unicorn, the C MMIO callbacks and the model code they call)
against the run loop's own Python (interrupt entry and return, scheduler,
block costing), from an extra instrumented run (its timers cost a little).  ``--perf`` adds a ``perf record`` of one boot split by
shared object (CPython against Unicorn and the native helpers), when perf
is installed.  ``--profile`` adds, from one more run, the idle clock
face's breakdown per emulated second (clock events, exceptions, register
accesses through Python, slices, profiled Python time by category:
bench/idle_profile.py).  ``--python`` runs the pure-Python path
(``PINETIME_EMU_PURE_PYTHON=1``) for comparison.

Not a test: wall times depend on the host; the load average is printed.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from emu.soc.bus import reg_name  # noqa: E402

CACHE = Path.home() / ".cache" / "pinetime-emu" / "wasp-os" / "upstream" / "micropython.elf"
BOOT_S = 3.0
IDLE_FROM_S = 6.0
TARGETS = {"boot": "<= 3 s wall (issue 13)", "face": "<= 0.5 s wall (issue 46)",
           "idle": ">= 150x real time (issue 46)"}


def image() -> str:
    p = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(CACHE)
    if not Path(p).exists():
        print(f"bench_wasp: no wasp-os image: set PINETIME_EMU_WASP_IMAGE or build one into "
              f"{CACHE.parent} (docs/firmware.md, 'Real wasp-os')")
        sys.exit(2)
    return p


class Probe:
    """Counts slices, time inside them and Python exception entries of one machine."""

    def __init__(self, m):
        self.m = m
        cpu = m.soc.cpu
        self.entries = collections.Counter()
        entry = cpu.exception_entry

        def exception_entry(exc, ret):
            self.entries[cpu.exc_name(exc)] += 1
            return entry(exc, ret)
        cpu.exception_entry = exception_entry

    @property
    def slices(self) -> int:
        return self.m.soc.cpu.slices

    @property
    def in_slice(self) -> float:
        return self.m.soc.cpu.slice_wall

    def figures(self) -> dict:
        """What the machine has done so far (accesses per register, slices,
        exceptions entered in Python), for the breakdown."""
        m = self.m
        cpu = m.soc.cpu
        return dict(accesses=m.soc.bus.accesses, stats=m.soc.bus.access_stats(),
                    slices=self.slices, in_slice=self.in_slice,
                    entries=collections.Counter(self.entries), tail_chains=cpu.tail_chains,
                    flash=cpu.ignored_flash_writes)


def clock_face_drawn(m) -> bool:
    """The big digits of wasp-os's clock face are on the screen (as
    tests/firmware/test_wasp.py checks)."""
    return int((m.board.screen()[60:150, 0:240].max(axis=2) > 64).sum()) > 2000


def one_run(path: str, idle_s: float, probe: bool = False):
    from emu import Machine
    t0 = time.perf_counter()
    m = Machine(path, flash_file=None)
    build = time.perf_counter() - t0
    p = Probe(m) if probe else None
    t0, c0 = time.perf_counter(), time.process_time()
    m.run(seconds=BOOT_S)
    boot = time.perf_counter() - t0
    boot_cpu = time.process_time() - c0
    m.boot_cycles = m.cpu.cycles
    if p is not None:     # the boot's figures, before the idle part adds to them
        p.boot = p.figures()
    while not clock_face_drawn(m) and m.time < IDLE_FROM_S:
        m.run(ms=50)
    face = (m.time, time.perf_counter() - t0) if clock_face_drawn(m) else (None, None)
    m.run(seconds=max(0.0, IDLE_FROM_S - m.time))
    t0, c0, k0 = time.perf_counter(), time.process_time(), m.cpu.cycles
    m.run(seconds=idle_s)
    idle = time.perf_counter() - t0
    idle_cpu = time.process_time() - c0
    m.idle_busy = (m.cpu.cycles - k0) / idle_s
    if p is not None:
        p.face = face
    return build, (boot, face, boot_cpu), (idle, idle_cpu), m, p


def breakdown(m, p, wall: float) -> None:
    b = p.boot
    bus = m.soc.bus
    stats, total = b["stats"], b["accesses"]
    print(f"\nbreakdown of one boot ({BOOT_S:g} emulated s, {wall:.2f} s wall): "
          f"{total} guest peripheral accesses")
    by_reg = sorted(stats.items(), key=lambda kv: -sum(kv[1]))
    op_total = sum(s[0] + s[2] for s in stats.values())
    print(f"  by the bus's ops (no model code): {op_total} ({100 * op_total / max(1, total):.1f} %)"
          f"; by the model: {total - op_total}")
    print("  register                    op reads  model reads   op writes  model writes")
    for (base, off), s in by_reg[:14]:
        per = bus.slots[base]
        print(f"  {per.name + ' ' + reg_name(per, off):26s} {s[0]:10d} {s[1]:12d} {s[2]:11d} "
              f"{s[3]:13d}")
    ent = b["entries"]
    print(f"  exceptions entered in Python: {sum(ent.values())} "
          f"({', '.join(f'{k} {v}' for k, v in ent.most_common(4))}); "
          f"tail chains {b['tail_chains']}")
    print(f"  emu_start slices: {b['slices']}; stores into read-only flash dropped: {b['flash']}"
          f"; polling-loop iterations counted, not run: {m.cpu.loops_skipped[1]}")
    print(f"  wall inside slices (Unicorn + C MMIO + model code called from it): "
          f"{b['in_slice']:.2f} s; run loop outside slices (interrupt entry/return, "
          f"scheduler, block costing, timers): {wall - b['in_slice']:.2f} s")


def perf_split(path: str) -> None:
    if shutil.which("perf") is None:
        print("\nperf: not installed (apt-get install linux-perf); no native/Python split")
        return
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "perf.data")
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from emu import Machine; "
                f"m = Machine({path!r}, flash_file=None); m.run(seconds={BOOT_S})")
        r = subprocess.run(["perf", "record", "-q", "-o", data, sys.executable, "-c", code],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"\nperf: record failed ({r.stderr.strip().splitlines()[-1:]})")
            return
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso",
                              "--stdio", "-q"], capture_output=True, text=True)
    print("\nperf, one boot, samples by shared object:")
    for line in rep.stdout.splitlines()[:8]:
        if line.strip():
            print("  " + line.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle", type=float, default=4.0, help="emulated seconds of idle")
    ap.add_argument("--python", action="store_true", help="the pure-Python path")
    ap.add_argument("--perf", action="store_true", help="perf record one boot")
    ap.add_argument("--profile", action="store_true",
                    help="the idle face's breakdown per emulated second (idle_profile.py)")
    args = ap.parse_args()
    if args.runs < 1 or not 0 < args.idle < 3600:
        ap.error("--runs must be >= 1 and --idle in (0, 3600)")
    if args.python:
        os.environ["PINETIME_EMU_PURE_PYTHON"] = "1"
    from emu import native
    native.bench_guard("bench_wasp")
    path = image()
    print(f"bench_wasp: {path} ({'pure Python' if args.python else 'native helpers'}), "
          f"1-min load average {os.getloadavg()[0]:.2f} at start")
    boots, faces, idles, cpus, busy = [], [], [], [], []
    for i in range(args.runs):
        build, (boot, (face_t, face_wall), boot_cpu), (idle, idle_cpu), _m, _p = \
            one_run(path, args.idle)
        boots.append(boot)
        busy.append((_m.boot_cycles / BOOT_S, _m.idle_busy))
        idles.append(args.idle / idle)
        cpus.append((boot_cpu, args.idle / idle_cpu))
        if face_t is None:
            print(f"bench_wasp: run {i + 1}: no clock face by {IDLE_FROM_S:g} emulated s")
            return 1
        faces.append((face_wall, face_t))
        print(f"  run {i + 1}: machine {build:.2f} s; boot {BOOT_S:g} emulated s in {boot:.2f} s "
              f"wall ({BOOT_S / boot:.2f}x); clock face at {face_t:.2f} emulated s, "
              f"{face_wall:.2f} s wall; idle {args.idle:g} s in {idle:.2f} s "
              f"({args.idle / idle:.1f}x real time); CPU time: boot {boot_cpu:.2f} s, idle "
              f"{args.idle / idle_cpu:.1f}x; cycles {_m.boot_cycles} at {BOOT_S:g} s, "
              f"{_m.cpu.cycles} at the end")
    fw, ft = sorted(faces)[len(faces) // 2]
    print(f"median first boot, {BOOT_S:g} emulated s: {statistics.median(boots):.2f} s wall   "
          f"target {TARGETS['boot']}")
    print(f"median first boot to the clock face: {fw:.2f} s wall ({ft:.2f} emulated s)   "
          f"target {TARGETS['face']}")
    print(f"median idle clock face: {statistics.median(idles):.1f}x real time   "
          f"target {TARGETS['idle']}")
    print(f"in CPU time (less sensitive to a busy host): boot "
          f"{statistics.median(c[0] for c in cpus):.2f} s, idle "
          f"{statistics.median(c[1] for c in cpus):.1f}x real time")
    from limit import share_line
    print(share_line("first boot", busy[0][0], BOOT_S / statistics.median(boots)))
    print(share_line("idle clock face", busy[0][1], statistics.median(idles)))
    _b, (boot, _f, _c), _i, m, p = one_run(path, 0.1, probe=True)   # an extra, instrumented run
    breakdown(m, p, boot)
    if args.perf:
        perf_split(path)
    if args.profile:
        from idle_profile import profile_idle
        profile_idle(m, args.idle, f"the idle clock face (from {m.time:.1f} emulated s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
