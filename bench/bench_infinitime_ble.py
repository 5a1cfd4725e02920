"""Real InfiniTime idle with the emulated phone connected, against the same
watch advertising, in the same process.

    python3 bench/bench_infinitime_ble.py [--runs N] [--idle SECONDS]

Each run boots InfiniTime (image from ``$PINETIME_EMU_INFINITIME_IMAGE`` or
the newest ``pinetime-app-*.out`` in ``~/.cache/pinetime-emu/infinitime/``)
to 4 emulated s, times ``--idle`` emulated seconds (default 3) of the face
with the screen on while NimBLE advertises, then connects the phone
(emu/phone/gattphone.py: CONNECT_IND, MTU, discovery), lets 1 s pass and times
the same idle again with the link up (a connection event every 30 ms).
Printed: each run, the medians (``--runs``, default 3) and the ratio of
connected to advertising speed, which is what the link costs; how many
link-layer packets the phone exchanged; and each part's share of its
execution limit (bench/limit.py).

Not a test: wall times depend on the host (the load average is printed).
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
sys.path.insert(0, str(ROOT / "bench"))

from bench_infinitime import IDLE_FROM_S, image  # noqa: E402  (the same image lookup)


def one_run(path: str, idle_s: float) -> tuple:
    from emu import Machine
    m = Machine(path, flash_file=None)
    m.run(seconds=IDLE_FROM_S)
    t, c = time.perf_counter(), m.cpu.cycles
    m.run(seconds=idle_s)
    advertising = idle_s / (time.perf_counter() - t)
    busy_adv = (m.cpu.cycles - c) / idle_s
    m.phone.connect()
    m.run(seconds=1.0)
    n = m.phone.gatt.link.packet_count
    t, c = time.perf_counter(), m.cpu.cycles
    m.run(seconds=idle_s)
    connected = idle_s / (time.perf_counter() - t)
    busy_con = (m.cpu.cycles - c) / idle_s
    return advertising, connected, m.phone.gatt.link.packet_count - n, busy_adv, busy_con


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle", type=float, default=3.0)
    a = ap.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_infinitime_ble")      # never slow figures unsaid
    path = image()
    print(f"bench_infinitime_ble: {path}, 1-min load average {os.getloadavg()[0]:.2f} at start")
    adv, con = [], []
    for i in range(a.runs):
        x, y, packets, busy_adv, busy_con = one_run(path, a.idle)
        adv.append(x)
        con.append(y)
        print(f"  run {i + 1}: idle screen on advertising {x:.1f}x, connected {y:.1f}x "
              f"({packets} link-layer packets in {a.idle:g} emulated s)")
    ma, mc = statistics.median(adv), statistics.median(con)
    print(f"median idle, screen on: advertising {ma:.1f}x, connected {mc:.1f}x real time; "
          f"connected / advertising {mc / ma:.2f}   target >= 100x both (issue 46)")
    from limit import share_line
    print(share_line("advertising", busy_adv, ma))
    print(share_line("connected", busy_con, mc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
