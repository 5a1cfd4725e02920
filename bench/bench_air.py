"""Several machines on one air (emu/world.py): how fast, and where the time goes.

    python3 bench/bench_air.py [--nodes 1,2,4,8] [--seconds S] [--runs N]
                               [--kind infinitime|zephyr|both] [--no-processes]
                               [--no-connection] [--profile]

Workloads (each node 2 m from the next on a line):

* N advertising nodes, N = 1, 2, 4, 8: InfiniTime watches (``--kind
  infinitime``: NimBLE advertising, the watch face on) and Zephyr
  ``peripheral_hr`` on nRF52 DKs (``--kind zephyr``: its own link layer
  advertising, the CPU asleep between events).  Each world boots for 4
  emulated seconds (not timed), then runs ``--seconds`` (default 5) timed.
* one connection: Zephyr ``central_hr`` and ``peripheral_hr`` connected,
  heart-rate notifications every second (booted for 3 s, then timed);
* two busy nodes that never meet on the air: Zephyr's
  ``fpu_sharing_generic_short`` kernel test (CPU-bound, no radio) on two
  DKs: each runs to the end of a run in one round, so processes pay.

Each is run in one process and with ``--processes`` (each machine in a
worker process), alternating, ``--runs`` times (default 3), and printed as
medians: times real time, rounds per emulated second, packets on the air
per emulated second, and the share of the *execution limit*: the CPU-bound
rate of this host's core (measured first: firmware/build/bench_cpu.elf,
cycles per wall second) divided by the cycles the nodes execute in an
emulated second (summed over the nodes: one process runs them all).  The
processes' limit is the same divided over the host's cores.

``--profile`` adds cProfile of one-process runs of two nodes: the time in
the machines' run loops (native and the Python they call) against the
timeline's own Python (bounds, routing, rounds).

Images: ``$PINETIME_EMU_INFINITIME_IMAGE`` or the newest
``~/.cache/pinetime-emu/infinitime/pinetime-app-*.out``;
``$PINETIME_EMU_ZEPHYR_DIR`` (default ``~/.cache/pinetime-emu/zephyr``)
``/nrf52dk_nrf52832/<sample>/zephyr.elf``.  A workload whose image is
absent is skipped with a line.  Not a test: wall times depend on the host;
the load average is printed.
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

CACHE = Path.home() / ".cache" / "pinetime-emu"


def infinitime_image():
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if p:
        return p if Path(p).exists() else None
    found = sorted((CACHE / "infinitime").glob("pinetime-app-*.out"))
    return str(found[-1]) if found else None


def zephyr_image(name):
    root = Path(os.environ.get("PINETIME_EMU_ZEPHYR_DIR") or CACHE / "zephyr")
    p = root / "nrf52dk_nrf52832" / name / "zephyr.elf"
    return str(p) if p.exists() else None


from limit import cpu_rate  # noqa: E402  (the one measure of the CPU-bound rate)


def cycles(w) -> int:
    total = 0
    for n in w.nodes.values():
        if hasattr(n.side, "machine"):
            total += n.machine.cpu.cycles
        elif hasattr(n.side, "call"):
            total += n.side.call("cycles")
    return total


def world(kind: str, n: int, processes: bool):
    from emu.world import World
    w = World(seed=1, processes=processes)
    if kind == "connection":
        w.add(zephyr_image("central_hr"), name="central", position=(0, 0))
        w.add(zephyr_image("peripheral_hr"), name="sensor", position=(2, 0))
        return w, 3.0
    if kind == "busy":
        for i in range(n):
            w.add(zephyr_image("fpu_sharing_generic_short"), name=f"busy{i}",
                  position=(2 * i, 0))
        return w, 0.5
    for i in range(n):
        if kind == "infinitime":
            w.add(infinitime_image(), name=f"watch{i}", position=(2 * i, 0), flash_file=None)
        else:
            w.add(zephyr_image("peripheral_hr"), name=f"dk{i}", position=(2 * i, 0))
    return w, 4.0


def measure(kind: str, n: int, processes: bool, seconds: float) -> dict:
    w, boot = world(kind, n, processes)
    try:
        w.run(seconds=boot)
        c0, r0, p0 = cycles(w), w.timeline.rounds, len(w.log)
        t = time.perf_counter()
        w.run(seconds=seconds)
        wall = time.perf_counter() - t
        busy = (cycles(w) - c0) / seconds
        return {"x": seconds / wall, "rounds": (w.timeline.rounds - r0) / seconds,
                "packets": (len(w.log) - p0) / seconds, "busy": busy}
    finally:
        w.close()


def profile(kind: str) -> None:
    import cProfile
    import pstats
    w, boot = world(kind, 2, False)
    w.run(seconds=boot)
    pr = cProfile.Profile()
    pr.enable()
    w.run(seconds=2)
    pr.disable()
    w.close()
    st = pstats.Stats(pr)
    total = sum(v[2] for v in st.stats.values())
    buckets = {"machines (run loops, the Python they call)": 0.0,
               "timeline (bounds, rounds, routing)": 0.0, "air (routing, arrivals)": 0.0}
    for (fname, _line, func), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
        if "timeline.py" in fname or "world.py" in fname:
            buckets["timeline (bounds, rounds, routing)"] += tt
        elif "airspace.py" in fname or fname.endswith("air.py"):
            buckets["air (routing, arrivals)"] += tt
        else:
            buckets["machines (run loops, the Python they call)"] += tt
    print(f"  profile of two {kind} nodes, 2 emulated s ({total:.3f} s of profiled time):")
    for k, v in buckets.items():
        print(f"    {k:45s} {v:7.3f} s  {100 * v / max(total, 1e-9):5.1f} %")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="1,2,4,8")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kind", choices=["infinitime", "zephyr", "both"], default="both")
    ap.add_argument("--no-processes", action="store_true")
    ap.add_argument("--no-connection", action="store_true")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args(argv)
    from emu import native
    native.bench_guard("bench_air")       # never slow figures unsaid
    rate = cpu_rate()
    cores = os.cpu_count() or 1
    print(f"host: {cores} cores, load {os.getloadavg()[0]:.2f}; CPU-bound rate "
          f"{rate / 1e9:.3f} G cycles/s")
    kinds = ["infinitime", "zephyr"] if a.kind == "both" else [a.kind]
    jobs = []
    for kind in kinds:
        img = infinitime_image() if kind == "infinitime" else zephyr_image("peripheral_hr")
        if img is None:
            print(f"skipped {kind}: no image (see the module docstring)")
            continue
        for n in (int(x) for x in a.nodes.split(",")):
            jobs.append((kind, n))
    if not a.no_connection:
        if zephyr_image("central_hr") and zephyr_image("peripheral_hr"):
            jobs.append(("connection", 2))
        else:
            print("skipped connection: no Zephyr central_hr/peripheral_hr images")
        if zephyr_image("fpu_sharing_generic_short"):
            jobs.append(("busy", 2))
    print(f"{'workload':28s} {'mode':10s} {'x real':>8s} {'rounds/s':>9s} {'pkts/s':>7s} "
          f"{'busy Mc/s':>9s} {'limit':>7s} {'share':>6s}")
    for kind, n in jobs:
        modes = [False] if a.no_processes or n == 1 else [False, True]
        res = {m: [] for m in modes}
        for _ in range(a.runs):
            for m in modes:
                res[m].append(measure(kind, n, m, a.seconds))
        for m in modes:
            r = {k: statistics.median(x[k] for x in res[m]) for k in res[m][0]}
            limit = rate / max(r["busy"], 1.0) * (min(cores, n) if m else 1)
            name = {"connection": "1 connection (Zephyr hr)",
                    "busy": f"{n} busy, no radio (Zephyr)"}.get(kind, f"{n} x {kind}")
            spread = ", ".join(f"{x['x']:.1f}" for x in res[m])
            print(f"{name:28s} {'processes' if m else 'one':10s} {r['x']:8.1f} "
                  f"{r['rounds']:9.0f} {r['packets']:7.0f} {r['busy'] / 1e6:9.2f} "
                  f"{limit:7.0f} {100 * r['x'] / limit:5.1f}%   ({spread})")
    if a.profile:
        for kind in kinds:
            if (infinitime_image() if kind == "infinitime" else zephyr_image("peripheral_hr")):
                profile(kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())
