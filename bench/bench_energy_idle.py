"""wasp-os and InfiniTime idle on the emulated PineTime: average current and
the battery life it implies, with the screen on and with it off.

    python3 bench/bench_energy_idle.py [--seconds S]

Each image present (InfiniTime from ``$PINETIME_EMU_INFINITIME_IMAGE`` or
``~/.cache/pinetime-emu/infinitime/``, wasp-os from ``$PINETIME_EMU_WASP_IMAGE``
or ``~/.cache/pinetime-emu/wasp-os/upstream/``) boots with an erased NOR
flash; then

* screen on: ``--seconds`` emulated seconds (default 5) measured at once
  after the boot, while the watch face is up;
* screen off: the firmware's own screen timeout is waited for (the backlight
  at level 0, at most 120 emulated s), then ``--seconds`` x 4 measured.

Printed per image and case: the average current, the largest parts and the
battery life on the PineTime's 170 mAh cell (emu/currents.py), and the
measured run's share of its execution limit (bench/limit.py).  The figures
are the model's (docs/energy.md says which are datasheet figures and which
are estimates), not a measurement of a watch.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import Machine  # noqa: E402



def images() -> list:
    """The real images bench_power.py measures (not its demo firmware)."""
    from bench_power import images as measured
    return [im for im in measured() if not im[0].startswith("demo")]


def measure(m, seconds: float) -> str:
    if m.power_meter is not None:
        m.power_meter.close()
    meter = m.power(record=False)
    t, c = time.perf_counter(), m.cpu.cycles
    m.run(seconds=seconds)
    wall = time.perf_counter() - t
    r = meter.report()
    meter.close()
    parts = ", ".join(f"{p.name} {p.share * 100:.0f}%" for p in r.parts[:4] if p.share >= 0.01)
    life = r.battery_hours
    from limit import share_line        # the speed of the measured run, the meter on
    return (f"{r.average_uA / 1000:7.3f} mA  battery {life:8.1f} h ({life / 24:5.1f} days)  "
            f"[{parts}]\n    " + share_line("its speed", (m.cpu.cycles - c) / seconds,
                                              seconds / wall))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    a = ap.parse_args()
    from emu import native as _native
    _native.bench_guard("bench_energy_idle")      # never slow figures unsaid
    found = images()
    if not found:
        print("no InfiniTime or wasp-os image: see docs/firmware.md")
        return 0
    for name, path, boot in found:
        m = Machine(path, flash_file=None)
        m.run(seconds=boot)
        print(f"{name:10s} screen on  (backlight {m.board.backlight.level}): "
              f"{measure(m, a.seconds)}")
        ok = m.run_until(lambda: m.board.backlight.level == 0, timeout_ms=120_000,
                         poll_ms=100)
        if not ok:
            print(f"{name:10s} the screen did not time out in 120 s")
            continue
        m.run(seconds=1.0)                         # past the blanking itself
        print(f"{name:10s} screen off (t={m.time:.0f} s):   {measure(m, a.seconds * 4)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
