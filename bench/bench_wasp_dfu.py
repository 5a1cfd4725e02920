"""wasp-os's bootloader and an update over the air: emulated and wall time.

    python3 bench/bench_wasp_dfu.py [--runs N] [--full] [--profile]

The bootloader (the Adafruit fork wasp-os builds) on Nordic's real S132,
from an erased application area: its first 3 emulated seconds (the splash,
then DFU mode advertising PineDFU), then the emulated phone's legacy DFU of
our 396-byte application (firmware/build/s132/cli_exit3.bin) until that
application runs.  ``--full`` adds one transfer of the whole wasp-os
package and the clock face after it (about half a minute of wall time;
20 minutes before round four).  Images as
tests/firmware/test_wasp_ota.py finds them ($PINETIME_EMU_WASP_BOOTLOADER,
$PINETIME_EMU_S132_HEX, $PINETIME_EMU_WASP_DFU or the user cache).

It prints medians of ``--runs`` (default 3) of the small update, the cycles
(the same on every run), the share of the cycles that the delay loops
and the polling loops counted instead of run, and the update's share of
its execution limit (bench/limit.py); ``--profile`` adds cProfile's
top entries of one more small update (Python's share; the rest is the
engine).  There is no peer: no other emulator runs this bootloader.

Not a test: wall times depend on the host; the load average is printed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CACHE = Path.home() / ".cache" / "pinetime-emu"


def files():
    bl = os.environ.get("PINETIME_EMU_WASP_BOOTLOADER") or next(
        iter(sorted((CACHE / "wasp-os" / "bootloader").glob("*-nosd.hex"))), "")
    sd = os.environ.get("PINETIME_EMU_S132_HEX") or \
        str(CACHE / "s132" / "s132_nrf52_6.1.1_softdevice.hex")
    dfu = os.environ.get("PINETIME_EMU_WASP_DFU") or \
        str(CACHE / "wasp-os" / "upstream" / "micropython-dfu.zip")
    return str(bl), sd, dfu


def small_package() -> tuple:
    from emu.phone.dfu import package_from_bytes
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.images import package_bytes
    image = (ROOT / "firmware" / "build" / "s132" / "cli_exit3.bin").read_bytes()
    return image, package_from_bytes("cli_exit3.zip", package_bytes(image))


def one_small(bl: str, sd: str, pkg) -> dict:
    from emu import Machine
    from emu.phone.gattphone import GattPhone
    t = time.perf_counter()
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=None)
    m.run(seconds=3)
    boot = time.perf_counter() - t
    t0, t, k0 = m.time, time.perf_counter(), m.cpu.cycles
    d = GattPhone(m, name="PineDFU").dfu(pkg)
    assert d.step == "done"
    assert m.run_until(lambda: m.exit_code is not None, timeout_ms=3000) and m.exit_code == 3
    wall = time.perf_counter() - t
    return {"boot": boot, "wall": wall, "emulated": m.time - t0, "cycles": m.cpu.cycles,
            "cycles_update": m.cpu.cycles - k0,
            "delays": m.cpu.delays_skipped[2], "loops": m.cpu.loops_skipped[2]}


def full(bl: str, sd: str, dfu: str) -> None:
    from emu import Machine
    from emu.phone.dfu import read_package
    from emu.phone.gattphone import GattPhone
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.wasp import wasp_image
    import tempfile
    f = Machine(wasp_image(), softdevice_hex=sd, flash_file=None)   # wasp-os formats the NOR
    f.run(seconds=4)
    with tempfile.TemporaryDirectory() as d:
        nor = Path(d) / "nor.bin"
        nor.write_bytes(bytes(f.board.flash.data))
        m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=str(nor))
        m.run(seconds=3)
        pkg = read_package(dfu)
        t0, w0 = m.time, time.perf_counter()
        res = GattPhone(m, name="PineDFU").dfu(pkg)
        assert res.step == "done" and res.sent == len(pkg.image)
        tr_e, tr_w = m.time - t0, time.perf_counter() - w0
        assert m.run_until(lambda: 0x26000 <= m.cpu.pc < 0x78000, timeout_ms=2000)
        m.run(seconds=6)
        digits = int((m.board.screen()[60:160].max(axis=2) > 64).sum())
        print(f"whole wasp-os ({len(pkg.image)} bytes): transfer {tr_e:.1f} s emulated, "
              f"{tr_w:.0f} s wall; to the clock face {m.time - t0:.1f} s emulated, "
              f"{time.perf_counter() - w0:.0f} s wall; face drawn: {digits > 2000} "
              f"({digits} lit pixels in the digits' rows)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    bl, sd, dfu = files()
    missing = [p for p in (bl, sd) + ((dfu,) if a.full else ()) if not p or not Path(p).exists()]
    if missing:
        print(f"bench_wasp_dfu: missing {', '.join(missing) or 'the bootloader'} (see "
              "tests/firmware/test_wasp_ota.py's docstring)", file=sys.stderr)
        return 2
    if a.runs < 1:
        print("bench_wasp_dfu: --runs must be >= 1", file=sys.stderr)
        return 2
    from emu import native
    native.bench_guard("bench_wasp_dfu")
    import logging
    logging.getLogger("emu").setLevel(logging.ERROR)
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s", "-j2"], check=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    image, pkg = small_package()
    runs = [one_small(bl, sd, pkg) for _ in range(a.runs)]
    assert len({r["cycles"] for r in runs}) == 1, "runs differ in cycles"
    r0 = runs[0]
    med = lambda k: statistics.median(r[k] for r in runs)     # noqa: E731
    print(f"bootloader to DFU mode (3 emulated s): {med('boot'):.2f} s wall")
    print(f"update of {len(image)} bytes until it runs: {r0['emulated']:.2f} s emulated, "
          f"{med('wall'):.2f} s wall ({r0['emulated'] / med('wall'):.2f}x real time); "
          f"{r0['cycles']} cycles, {100 * r0['delays'] / r0['cycles']:.0f} % counted in delay "
          f"loops, {100 * r0['loops'] / r0['cycles']:.0f} % in polling loops")
    from limit import share_line
    print(share_line("the update", r0["cycles_update"] / r0["emulated"],
                     r0["emulated"] / med("wall")))
    if a.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        one_small(bl, sd, pkg)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(10)
    if a.full:
        full(bl, sd, dfu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
