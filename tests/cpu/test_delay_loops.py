"""Countdown (delay) loops counted instead of run (emu/cpu/_blockhook.c,
countdown_step; CortexM.delay_skip; emu/cpu/cycles.py, countdown_flags).

firmware/tests/cpu_delay_loops.c runs nrfx's NRFX_DELAY_US machine code
from flash and from RAM, MicroPython's delay shape and a ``subs.w`` loop,
with counts from 0 to 640 000, while SysTick interrupts every 10 007 cycles
and folds the interrupted R0, PC, xPSR and CYCCNT into a checksum: the
same cycles, console (every delay's cycles, the checksum) and registers
with loops counted, run, and in pure Python.  The companion counts one
iteration too many and is seen.  On the wasp-os bootloader, when the image
is present, counting changes nothing but the time it takes."""
import pytest

from conftest import assert_firmware_passed, run_fw
from emu import Machine
from emu.cpu.cycles import (BLOCK_COUNTDOWN, BLOCK_PURE, COUNT_HI, COUNT_NE, CostModel,
                            countdown_flags)

FW = "cpu_delay_loops"


def _run(fw, mode, ms=200):
    def setup(m):
        m.cpu.delay_skip = mode == "skip"
    return run_fw(fw(FW), ms, pure_python=mode == "python", setup=setup)


def _state(m):
    return {"cycles": m.cpu.cycles, "now": m.clock.now, "console": m.console_text(),
            "regs": m.cpu.core_registers()}


def test_delay_loops_pass_and_agree(fw):
    runs = {}
    for mode in ("skip", "noskip", "python"):
        m, r = _run(fw, mode)
        assert_firmware_passed(m, r, min_passes=4)
        runs[mode] = _state(m)
        skips, iters, cycles = m.cpu.delays_skipped
        if mode == "skip":
            # every long delay counted (the last iteration of each runs)
            assert skips >= 20 and iters > 600_000 and cycles >= 3 * iters
        else:
            assert iters == 0
    assert runs["skip"] == runs["noskip"] == runs["python"]
    assert "interrupts " in runs["skip"]["console"]


def test_counting_one_too_many_is_seen(fw, fault_build):
    """Companion: one iteration more than the loop would run is counted
    (``loop_trust_all`` bit 4): the delays' cycles and the checksum differ."""
    m = Machine(fw(FW), board="nrf52832")
    m.cpu.cs.loop_trust_all = 16
    m.run(ms=200)
    ok, _ = _run(fw, "noskip")
    assert m.cpu.cycles != ok.cpu.cycles or m.console_text() != ok.console_text()


def test_a_debugger_hook_stops_the_counting(fw):
    """As for polling loops: with a code hook of someone else's (a
    debugger's breakpoint, a trace) every iteration runs."""
    m = Machine(fw(FW), board="nrf52832")
    seen = []
    m.cpu.uc.hook_add(__import__("unicorn").UC_HOOK_CODE, lambda *a: seen.append(1),
                      begin=0, end=0)
    r = m.run(ms=200)
    assert_firmware_passed(m, r, min_passes=4)
    assert m.cpu.delays_skipped == (0, 0, 0)


@pytest.mark.parametrize("code,address,want", [
    # nrfx: subs r0, #3; bhi .-2
    (bytes.fromhex("0338fdd8"), 0x7D500, BLOCK_COUNTDOWN | COUNT_HI << 12 | 3 << 16),
    # subs r0, #1; nop; nop; bne .-6
    (bytes.fromhex("013800bf00bffbd1"), 0x1000, BLOCK_COUNTDOWN | COUNT_NE << 12 | 1 << 16),
    # subs.w r9, r9, #200; bhi .-4
    (bytes.fromhex("b9f1c809fcd8"), 0x318, BLOCK_COUNTDOWN | 9 << 8 | 200 << 16),
])
def test_cost_model_finds_countdowns(code, address, want):
    flags = CostModel().block_cost_pure(code, address)[1]
    assert flags & BLOCK_PURE and flags & ~0xF == want


@pytest.mark.parametrize("insns", [
    [("subs", "r0, #3"), ("bhi", "#0x2000")],            # not back to itself
    [("subs", "r0, #3"), ("bls", "#0x1000")],            # another condition
    [("adds", "r0, #3"), ("bhi", "#0x1000")],            # counts up
    [("subs", "r0, r1"), ("bne", "#0x1000")],            # not an immediate
    [("subs", "r0, r1, #3"), ("bne", "#0x1000")],        # another register
    [("subs", "r0, #3"), ("adds", "r1, #1"), ("bhi", "#0x1000")],   # does more
    [("subs", "sp, #3"), ("bhi", "#0x1000")],            # SP
    [("bhi", "#0x1000")],
])
def test_not_countdowns(insns):
    assert countdown_flags(insns, 0x1000) == 0


def test_counting_changes_nothing_on_the_wasp_os_bootloader():
    """The wasp-os bootloader on the real S132 for its first 3 emulated s
    (its splash waits in nrfx delays: most of those cycles are counted, not
    run): the same cycles, screen, RAM and air with and without counting."""
    import os
    from pathlib import Path

    from emu.phone.scanner import Scanner
    cache = Path.home() / ".cache" / "pinetime-emu"
    bl = os.environ.get("PINETIME_EMU_WASP_BOOTLOADER") or next(
        iter(sorted((cache / "wasp-os" / "bootloader").glob("*-nosd.hex"))), None)
    sd = os.environ.get("PINETIME_EMU_S132_HEX") or \
        str(cache / "s132" / "s132_nrf52_6.1.1_softdevice.hex")
    if not bl or not Path(sd).exists():
        pytest.skip("no wasp-os bootloader or S132 (see tests/firmware/test_wasp_ota.py)")
    runs = []
    for skip in (True, False):
        m = Machine(str(bl), board="pinetime", softdevice_hex=sd, flash_file=None)
        m.cpu.delay_skip = skip
        sc = Scanner(m.air)
        m.run(seconds=3)
        runs.append((m.cpu.cycles, m.board.screen().tobytes(), m.cpu.uc.mem_read(0x20000000, 0x10000),
                     sorted((d.name, str(d.address)) for d in sc.devices.values()),
                     m.cpu.core_registers()))
        if skip:
            assert m.cpu.delays_skipped[2] > 100_000_000      # of 192 M cycles
    assert any(name == "PineDFU" for name, _a in runs[0][3])
    assert runs[0] == runs[1]
