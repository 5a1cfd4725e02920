"""Polling loops counted instead of run up to the next clock event
(emu/cpu/_blockhook.c, loop_step; CortexM.loop_skip).

firmware/tests/cpu_poll_loops.c polls TIMER events in one and in three
blocks (with a timeout on the DWT's stopped CYCCNT), RTC COUNTER (a value
time alone changes: counted ahead only up to its next tick, the loop's
horizon) and counts iterations while polling; it passes natively with and
without skipping and in pure Python, in the same cycles, accesses, console
and registers.  The companion trusts every read (COUNTER too, without its
horizon) and sees the COUNTER loop skipped past its value.
firmware/tests/cpu_poll_loop_boundary.c polls an event that fires a few
cycles after another clock event (the slice between them one or two
iterations long), in the same three ways; its companion keeps the loop's
last iteration across the slice boundary and sees polls end late.  On real
firmware, when the images are present, skipping changes nothing but the
time it takes (InfiniTime's resources upload: tests/firmware/test_resources.py)."""
import os

import pytest

from conftest import assert_firmware_passed, cached_image, run_fw
from emu import Machine
from emu.clock import LFCLK_TICKS

FW = "cpu_poll_loops"
BOUNDARY = "cpu_poll_loop_boundary"


def _run(fw, mode, name=FW, ms=50, setup=None):
    """``name`` with loops skipped, run, or in pure Python (``mode``: skip,
    noskip, python), ``setup(machine)`` first when given."""
    def loop_skip(m):
        m.cpu.loop_skip = mode == "skip"
        if setup is not None:
            setup(m)
    return run_fw(fw(name), ms, pure_python=mode == "python", setup=loop_skip)


def _state(m):
    return {"cycles": m.cpu.cycles, "now": m.clock.now, "console": m.console_text(),
            "regs": m.cpu.core_registers(), "accesses": m.soc.bus.accesses,
            "stats": m.soc.bus.access_stats()}


@pytest.mark.parametrize("name,passes,skipped", [(FW, 6, 10_000), (BOUNDARY, 3, 5_000)])
def test_poll_loops_pass_and_agree(fw, name, passes, skipped):
    runs = {}
    for mode in ("skip", "noskip", "python"):
        m, r = _run(fw, mode, name)
        assert_firmware_passed(m, r, min_passes=passes)
        runs[mode] = _state(m)
        if mode == "skip":
            skips, iters, cycles = m.cpu.loops_skipped
            assert skips >= 2 and iters > skipped and cycles > iters
        else:
            assert m.cpu.loops_skipped[1] == 0
    stats = {k: v.pop("stats") for k, v in runs.items()}
    assert runs["skip"] == runs["noskip"] == runs["python"]
    assert stats["skip"] == stats["noskip"]      # (the pure path counts bails otherwise)


def test_trusting_a_changing_read_is_seen(fw, fault_build):
    """Companion: with every MMIO read taken as stable (COUNTER without its
    horizon, the next tick), the COUNTER loop is counted ahead to the end of
    the run: it never sees its value."""
    m = Machine(fw(FW), board="nrf52832")
    m.cpu.loop_skip = True
    m.cpu.cs.loop_trust_all = 1
    r = m.run(ms=50)
    ok, _ = _run(fw, "noskip")
    assert r.reason != "exit" or r.exit_code != 0
    assert m.cpu.cycles != ok.cpu.cycles


def test_an_iteration_from_the_last_slice_is_not_trusted(fw):
    """Companion of cpu_poll_loop_boundary: with the loop's last iteration
    kept across the slice boundary (CortexM._rebase not forgetting it), the
    iteration that read COMPARE[0] = 0 before the event stands for the ones
    after it, and polls end late."""
    m = Machine(fw(BOUNDARY), board="nrf52832")
    m.cpu.loop_skip = True
    cpu, rebase = m.cpu, m.cpu._rebase

    def keep_last_iteration():
        have = cpu.cs.lp_have
        rebase()
        cpu.cs.lp_have = have
    cpu._rebase = keep_last_iteration
    r = m.run(ms=50)
    assert r.reason == "exit" and r.exit_code != 0
    assert "FAIL no poll ended late" in m.console_text()
    ok, _ = _run(fw, "noskip", BOUNDARY)
    assert m.cpu.cycles != ok.cpu.cycles


def test_mmio_trace_sees_every_read(fw, tmp_path):
    """An MMIO trace must see each access: no loop is skipped while it runs."""
    m = Machine(fw(FW), board="nrf52832")
    t = m.trace_mmio(str(tmp_path / "mmio.txt"))
    r = m.run(ms=50)
    t.close()
    assert_firmware_passed(m, r, min_passes=6)
    assert m.cpu.loops_skipped[1] == 0


@pytest.mark.parametrize("which", ["infinitime", "wasp-os"])
def test_skipping_changes_nothing_on_real_firmware(which):
    """InfiniTime's first 1.5 emulated s (LFCLKSTAT and its TWI driver's
    polls; its advertising heard by a scanner) and wasp-os's first boot
    for 2 s: the same cycles, accesses per register, screen, NOR, air and
    RAM with and without skipping."""
    from emu.phone.scanner import Scanner
    path = (cached_image("PINETIME_EMU_INFINITIME_IMAGE", "infinitime/pinetime-app-*.out")
            if which == "infinitime" else
            cached_image("PINETIME_EMU_WASP_IMAGE", "wasp-os/upstream/micropython.elf"))
    runs = []
    for skip in (True, False):
        m = Machine(path, flash_file=None)
        m.cpu.loop_skip = skip
        Scanner(m.air)
        m.run(seconds=1.5 if which == "infinitime" else 2.0)
        st = _state(m)
        st.update(screen=m.board.screen().tobytes(), nor=bytes(m.board.flash.data),
                  air=[tuple(p) for p in m.air.log], ram=m.cpu.read_mem(0x20000000, 0x10000))
        runs.append((st, m.cpu.loops_skipped))
    (on, skipped), (off, _) = runs
    if which == "infinitime":
        assert skipped[1] > 1_000_000        # LFCLKSTAT alone: 3.2 M reads
    for k in on:
        assert on[k] == off[k], f"{k} differs with loops skipped"


@pytest.mark.timeout(1200)
@pytest.mark.skipif(not os.environ.get("PINETIME_EMU_SLOW_TESTS"),
                    reason="about 2.5 minutes: set PINETIME_EMU_SLOW_TESTS=1")
def test_skipping_changes_nothing_in_a_resources_upload(tmp_path):
    """InfiniTime's resources upload over Bluetooth and Infineat chosen
    (tests/firmware/test_resources.py's steps, 60 emulated s): the run where an
    iteration from before a slice boundary once let SpiMaster::Read's poll
    of SPIM EVENTS_END miss its event.  The same cycles, accesses per
    register, screen, NOR, RAM and registers with and without skipping."""
    from helpers.infinitime import (INFINEAT, choose_face, enable_ota, image_and_resources,
                                    infineat_drawn, press, settle)
    fw, res = image_and_resources()
    runs = []
    for skip in (True, False):
        m = Machine(fw, flash_file=str(tmp_path / f"nor{int(skip)}.bin"))
        m.cpu.loop_skip = skip
        try:
            m.run(seconds=3)
            choose_face(m, INFINEAT)
            enable_ota(m)
            press(m)
            press(m)
            settle(m, 2)
            m.phone.gatt.upload_resources(res)
            choose_face(m, INFINEAT)
            st = _state(m)
            st.update(screen=m.board.screen().tobytes(), nor=bytes(m.board.flash.data),
                      ram=m.cpu.read_mem(0x20000000, 0x10000), drawn=infineat_drawn(
                          m.board.screen()))
            runs.append((st, m.cpu.loops_skipped))
        finally:
            m.close()
    (on, skipped), (off, _) = runs
    assert skipped[1] > 10_000_000 and on["drawn"]
    for k in on:
        assert on[k] == off[k], f"{k} differs with loops skipped"


def _steady_reads(m):
    """(name, model, offset) of every read a polling loop may take as
    unchanged (Op.steady), over every model mapped (and every variant of a
    shared-ID slot: the one enabled answers the bus)."""
    out = []
    bus = m.soc.bus
    for base, per in sorted(bus.slots.items()):
        models = list(getattr(per, "variants", {}).values()) or [per]
        for model in models:
            for off in range(0, 0x1000, 4):
                try:
                    op = model.read_op(off)
                except (KeyError, AttributeError, ValueError):
                    continue
                if op is not None and op.steady:
                    out.append((f"{base:#x}:{type(model).__name__}+{off:#x}", model, off))
    return out


def _changed_with_time_alone(m, reads) -> list:
    """The reads whose model value differs after a tick, a cycle's worth,
    10 ms or 5 s pass with no event run (the clock put back after)."""
    clock = m.clock
    now = clock.now
    before = {name: model.read(off, 4) for name, model, off in reads}
    changed = set()
    try:
        for dt in (1, 8 * 64, 512 * 1000 * 10, 512 * 1000 * 1000 * 5):
            clock.now = now + dt
            changed |= {name for name, model, off in reads if model.read(off, 4) != before[name]}
    finally:
        clock.now = now
    return sorted(changed)


@pytest.mark.parametrize("which", ["firmware", "infinitime"])
def test_time_alone_changes_no_steady_read(fw, which):
    """The audit behind loop_step, as a test: every read the bus takes as
    steady (stored state: events, plain registers, constants, INTEN, model
    cells) reads the same from the model when only time passes, on every
    model of the PineTime board, after a firmware has set them going
    (cpu_poll_loops: TIMER0 and RTC1 running; InfiniTime's first second:
    SPIM, TWIM, RADIO, RTC, clocks...).  A register whose value follows the
    time without a clock event (NVMC READY, RTC COUNTER, RADIO STATE) must be
    declared a computed read in its table, and so is never steady."""
    if which == "firmware":
        m = Machine(fw(FW), board="pinetime", flash_file=None)
        m.run(ms=5)
    else:
        m = Machine(cached_image("PINETIME_EMU_INFINITIME_IMAGE", "infinitime/pinetime-app-*.out"),
                    flash_file=None)
        m.run(seconds=1)
    reads = _steady_reads(m)
    assert len(reads) > 300
    changed = _changed_with_time_alone(m, reads)
    assert not changed, f"steady reads changed with time alone: {changed}"
    # and the declared time-dependent ones are not steady
    soc = m.soc
    nvmc = next(p for p in soc.bus.slots.values() if p.name == "nvmc")
    rtc1 = next(p for p in soc.bus.slots.values() if p.name == "rtc1")
    radio = next(p for p in soc.bus.slots.values() if p.name == "radio")
    for model, off in ((nvmc, 0x400), (nvmc, 0x408), (rtc1, 0x504), (radio, 0x550)):
        op = model.read_op(off)
        assert op is not None and not op.steady, (model.name, hex(off))


def test_a_time_dependent_register_declared_plain_is_seen(fw, monkeypatch):
    """Companion: NVMC READY declared a plain register (its table without
    the computed read) while the NVMC is busy: the audit sees its value
    change with time alone."""
    from emu.peripherals.nvmc import Nvmc
    from emu.soc.ops import Op, R_VALUE
    m = Machine(fw(FW), board="pinetime", flash_file=None)
    m.run(ms=5)
    base_read_op = Nvmc.read_op
    monkeypatch.setattr(Nvmc, "read_op", lambda self, off: Op(R_VALUE, self) if off in (
        0x400, 0x408) else base_read_op(self, off))
    nvmc = next(p for p in m.soc.bus.slots.values() if p.name == "nvmc")
    nvmc.busy_until = m.clock.now + 512 * 1000          # an erase running for 1 ms more
    changed = _changed_with_time_alone(m, _steady_reads(m))
    assert any(name.endswith("Nvmc+0x400") for name in changed), changed


def test_loop_skips_can_be_logged(fw):
    """CortexM.log_loop_skips: each skip's loop head, iterations and reads
    (named through the bus), as the diagnosis of 0c7b431 used them."""
    m = Machine(fw(FW), board="nrf52832")
    seen = []
    assert m.cpu.log_loop_skips(lambda head, n, c, cycles, reads: seen.append(
        (head, n, c, cycles, [m.soc.bus.slot_register(s, off) for s, off in reads])))
    m.run(ms=50)
    assert len(seen) == m.cpu.loops_skipped[0] >= 2
    assert sum(n for _h, n, _c, _cy, _r in seen) == m.cpu.loops_skipped[1]
    assert any("EVENTS_COMPARE[0]" in r for *_x, reads in seen for r in reads), seen
    m.cpu.log_loop_skips(None)


SPIN = "cpu_idle_spin"


def _agree_three_ways(run, passes, skipped):
    """run(mode, heads) -> (machine, result) skipping, running and in pure
    Python: each passes, the skipping run counts more than ``skipped``
    iterations ahead, and all three end in the same state (the accesses per
    register: skipping and running); the skips' logged heads."""
    runs, heads = {}, []
    for mode in ("skip", "noskip", "python"):
        m, r = run(mode, heads if mode == "skip" else None)
        assert_firmware_passed(m, r, min_passes=passes)
        runs[mode] = _state(m)
        if mode == "skip":
            assert m.cpu.loops_skipped[1] > skipped
    stats = {k: v.pop("stats") for k, v in runs.items()}
    assert runs["skip"] == runs["noskip"] == runs["python"]
    assert stats["skip"] == stats["noskip"]
    return heads


def _spin_run(fw, mode, heads=None):
    def log(m):
        if heads is not None:
            from unicorn import arm_const as A
            m.cpu.log_loop_skips(lambda head, n, c, after, reads: heads.append(
                (head, m.cpu.uc.reg_read(A.UC_ARM_REG_IPSR), reads)))
    return _run(fw, mode, SPIN, ms=100, setup=log)


def test_loops_calling_a_leaf_are_counted_and_agree(fw):
    """FreeRTOS's idle spin (a BL to a leaf that reads RAM, its BX LR, a
    compare; no MMIO read): counted ahead to each SysTick in Thread mode,
    run in Handler mode, and a loop whose leaf stores always runs; the
    same cycles, console and registers skipping, running and in pure
    Python."""
    heads = _agree_three_ways(lambda mode, heads: _spin_run(fw, mode, heads), 4, 20_000)
    assert heads and all(ipsr == 0 and reads == () for _h, ipsr, reads in heads)


def test_a_leaf_that_stores_taken_as_pure_is_seen(fw, monkeypatch):
    """Companion: with stores taken as pure, the loop whose leaf bumps a
    RAM counter is counted ahead too: the count it prints differs."""
    from emu.cpu import cycles
    orig = cycles._insn_pure
    monkeypatch.setattr(cycles.CostModel, "native_cost", False)    # the reference costs
    monkeypatch.setattr(cycles, "_insn_pure",
                        lambda mn, ops: orig(mn, ops) or cycles._strip(mn).startswith("str"))
    bad, _ = _spin_run(fw, "skip")
    monkeypatch.setattr(cycles, "_insn_pure", orig)
    good, _ = _spin_run(fw, "noskip")
    assert bad.console_text() != good.console_text()


def test_infinitime_idle_spin_skipped_changes_nothing():
    """InfiniTime's first 3 emulated s, to its watch face and into the idle
    task's spin (prvIdleTask calling prvGetExpectedIdleTime while the next
    wake-up is too near to sleep): the same cycles, accesses, screen, air
    and RAM with and without skipping, and loops without an MMIO read were
    counted."""
    from emu.phone.scanner import Scanner
    path = cached_image("PINETIME_EMU_INFINITIME_IMAGE", "infinitime/pinetime-app-*.out")
    runs, heads = [], []
    for skip in (True, False):
        m = Machine(path, flash_file=None)
        m.cpu.loop_skip = skip
        if skip:
            m.cpu.log_loop_skips(lambda head, n, c, after, reads: heads.append(reads))
        Scanner(m.air)
        m.run(seconds=3.0)
        st = _state(m)
        st.update(screen=m.board.screen().tobytes(), air=[tuple(p) for p in m.air.log],
                  ram=m.cpu.read_mem(0x20000000, 0x10000))
        runs.append(st)
    assert sum(1 for reads in heads if reads == ()) > 100
    on, off = runs
    for k in on:
        assert on[k] == off[k], f"{k} differs with loops skipped"


STORES = "cpu_loop_stores"


def _watched_run(fw, name, ms, mode, trust=0, heads=None):
    """_run with the loop watch's checks ``trust`` taken as passed (a fault
    build's loop_trust_all) and each skip's accesses logged into ``heads``
    (register names) when given."""
    def trust_and_log(m):
        if trust:
            m.cpu.cs.loop_trust_all = trust
        if heads is not None:
            m.cpu.log_loop_skips(lambda head, n, c, after, reads: heads.append(
                [m.soc.bus.slot_register(s, off) for s, off in reads]))
    return _run(fw, mode, name, ms=ms, setup=trust_and_log)


def _stores_run(fw, mode, trust=0, heads=None):
    return _watched_run(fw, STORES, 100, mode, trust, heads)


def test_loops_that_store_are_counted_and_agree(fw):
    """MicroPython's delay loop (a BL to mp_hal_ticks_us, which pushes,
    writes RTC INTENCLR, reads COUNTER and EVENTS_OVRFLW, writes INTENSET
    and pops PC): counted ahead up to each COUNTER tick; the same loop with
    a TASKS_COUNT write, with a RAM store, and a loop whose count lives on
    the stack always run; the same cycles, console, registers and accesses
    per register skipping, running and in pure Python."""
    heads = _agree_three_ways(lambda mode, heads: _stores_run(fw, mode, heads=heads),
                              10, 10_000)
    assert any("rtc1.INTENCLR (write)" in r and "rtc1.INTENSET (write)" in r
               and "rtc1.COUNTER" in r for r in heads), heads[:3]


@pytest.mark.parametrize("trust,line", [
    (2, "TASKS_COUNT writes:"),          # every MMIO write taken as repeatable
    (8, "RAM bumps:"),                   # stores not counted against the MMIO writes
    (4, "stack-counted iterations:"),    # the SP allowed above the head's
])
def test_a_loop_that_stores_taken_as_repeating_is_seen(fw, trust, line, fault_build):
    """Companions: with one of loop_step's checks on stores off
    (_blockhook.c, loop_trust_all), the loop it guards is counted ahead
    and the count it prints differs from the run's."""
    bad, _ = _stores_run(fw, "skip", trust)
    good, _ = _stores_run(fw, "noskip")

    def value(m):
        text = m.console_text()
        return text[text.index(line):].splitlines()[0] if line in text else None
    assert value(good) is not None
    assert value(bad) != value(good)


def test_store_blocks_are_classified():
    """The cycle model's flags for the stores a loop may hold: pushes and
    pops (the SP's change and rise in words), stores through a register
    other than SP (counted); stores through SP, pairs and SP writebacks of
    a load are not pure."""
    from emu.cpu.cycles import (BLOCK_CALL, BLOCK_PURE, BLOCK_STORE, CostModel)
    cm = CostModel()

    def flags(hexcode):
        return cm.block_cost_pure(bytes.fromhex(hexcode), 0x1000)[1]

    def fig(f):
        return (f >> 8 & 0xFF, (f >> 16 & 0xFF) - (256 if f >> 23 & 1 else 0), f >> 24)
    f = flags("10b5")                                   # push {r4, lr}
    assert f & (BLOCK_PURE | BLOCK_STORE | BLOCK_CALL) == BLOCK_PURE | BLOCK_STORE
    assert fig(f) == (0, -2, 0)
    f = flags("10bd")                                   # pop {r4, pc}: a return
    assert f & BLOCK_CALL and fig(f) == (0, 2, 2)
    f = flags("10b5" "8870" "10bd")                    # push; strb r0, [r1, #2]; pop
    assert f & BLOCK_STORE and fig(f) == (1, 0, 0)
    assert flags("5df8044b")                            # ldr r4, [sp], #4: a pop of one
    assert fig(flags("5df8044b")) == (0, 1, 1)
    assert fig(flags("4df8044d")) == (0, -1, 0)        # str r4, [sp, #-4]!: a push of one
    assert fig(flags("2de9f04f")) == (0, -9, 0)        # push.w {r4-r11, lr}
    for impure in ("0190",          # str r0, [sp, #4]
                   "c2e90001",      # strd r0, r1, [r2]
                   "5df8080b"):     # ldr r0, [sp], #8 (an SP writeback, not a pop)
        assert not flags(impure) & BLOCK_PURE, impure
    assert cm.block_pure(bytes.fromhex("0868"), 0)      # ldr r0, [r1]: pure, no store
    assert not cm.block_pure(bytes.fromhex("10b5"), 0)


# -- a loop that feeds the watchdog (the Adafruit bootloader's DFU mode) -------

WDT_POLL = "periph_wdt_poll"


def _wdt_poll_run(fw, mode, heads=None):
    return _watched_run(fw, WDT_POLL, 300, mode, heads=heads)


def test_a_loop_feeding_the_watchdog_is_counted_and_agrees(fw):
    """firmware/tests/periph_wdt_poll.c, the bootloader's wait_for_events
    (RUNSTATUS, eight RR writes, a call that empties a queue an RTC
    interrupt fills every 15 ms): counted ahead with the watchdog's deadline
    moved to the last iteration's feed (a 10 ms watchdog fed through 180 ms
    of skips does not bite, and bites 10 ms after the loop ends); the same
    cycles, console, registers and accesses per register skipping, running
    and in pure Python."""
    heads = _agree_three_ways(lambda mode, heads: _wdt_poll_run(fw, mode, heads=heads),
                              5, 100_000)
    assert any("wdt.RUNSTATUS" in r and "wdt.RR[0] (timed write)" in r
               and "wdt.RR[7] (write)" in r and len(r) == 9
               for r in heads), heads[:3]


def _feeds_after_skips(fw, trust=0) -> list:
    """For each skip of periph_wdt_poll's loop: the watchdog's deadline
    less the time the skip ended, in CPU cycles (read in the skip log's
    callback, inside the slice: the time from the slice's base)."""
    out = []

    def setup(m):
        if trust:
            m.cpu.cs.loop_trust_all = trust
        cs = m.cpu.cs

        def logged(head, n, c, after, reads):
            now = cs.base_ticks + (after - cs.base_cycles) * m.cpu.cycle_ticks
            out.append(((m.soc.wdt.deadline - now) / m.cpu.cycle_ticks, c,
                        m.soc.wdt.feed_period / m.cpu.cycle_ticks))
        m.cpu.log_loop_skips(logged)
    _run(fw, "skip", WDT_POLL, ms=200, setup=setup)
    return out


def test_a_skip_feeds_the_dog_in_its_last_iteration(fw):
    """After each skip the watchdog's deadline is the reload period (10 ms,
    640 000 cycles) from a feed inside the last iteration counted: less
    than one iteration before the skip's end."""
    seen = _feeds_after_skips(fw)
    assert len(seen) > 10
    for left, c, period in seen:
        assert period == 328 * LFCLK_TICKS / 8
        assert period - c < left <= period, (left, c, period)


def test_a_feed_left_where_the_skip_began_is_seen(fw, fault_build):
    """Companion: a skip that leaves the watchdog's deadline at the
    iteration it watched (_slot.c, slot_replay; loop_trust_all 32): the
    deadline is whole iterations early.  (The guest does not see it: the
    lazy timeout event ends a skip at the old deadline, and the loop's next
    iterations feed for real.)"""
    seen = _feeds_after_skips(fw, trust=32)
    assert any(left <= period - c for left, c, period in seen)
