"""Differential drivers for the twins whose behaviour firmware alone does
not reach: the Python API's own uses of the C side (a clock advanced by
hand, Cells deleted, a batch of register writes, a run stopped by a
predicate, a loop skip logged, a model whose read raises).  Each runs the
C side and its Python twin on the same input and asserts that they agree;
emu/twins.py names the driver of each twin, the parity test calls it, and
the coverage test runs it on the coverage build."""
from __future__ import annotations

import heapq
import random
import struct

from helpers.paths import BUILD


def drive_clock(clock, seed, steps=3000):
    """A random schedule on ``clock``; the log of everything observable:
    events scheduled, moved, cancelled and re-armed from their own
    callbacks, runs of run_due and advance_to, heaps compacted, the heap read
    and assigned as a snapshot restores it."""
    rnd = random.Random(seed)
    log = []
    events = []

    def fire(i):
        def fn():
            log.append(("fire", i, clock.now, clock.firing))
            r = rnd.random()
            if r < 0.3:                      # re-arm itself or another, from the callback
                events[rnd.randrange(len(events))].schedule_in(rnd.choice((0, 1, 7, 100)))
            elif r < 0.4:
                events[rnd.randrange(len(events))].cancel()
        return fn

    for i in range(24):
        events.append(clock.event(f"ev{i}", fire(i)))
    earlier = []
    clock.on_earlier_deadline = lambda: earlier.append(clock.next_deadline)
    for step in range(steps):
        r = rnd.random()
        ev = events[rnd.randrange(len(events))]
        if r < 0.31:
            ev.schedule_at(clock.now + rnd.choice((0, 1, 2, 5, 50, 1000, -3)))
        elif r < 0.35:                       # before the tick's other events, by key
            key = rnd.choice((step, 3 * step + 1, rnd.randrange(1 << 61), -1, 1 << 61))
            try:
                ev.schedule_first(clock.now + rnd.choice((0, 1, 5, 50, -3)), key)
            except ValueError:
                log.append(("bad key", key))
        elif r < 0.5:
            ev.schedule_in(rnd.randrange(0, 300))
        elif r < 0.6:
            ev.cancel()
        elif r < 0.75:
            clock.now += rnd.randrange(0, 120)
            log.append(("run_due", clock.run_due()))
        elif r < 0.85:
            clock.advance_to(clock.now + rnd.randrange(0, 400))
        elif r < 0.9:
            log.append(("next", clock.next_event_time()))
        elif r < 0.93:                       # a snapshot's restore: the live entries
            live = [(w, s, e) for (w, s, e) in clock._heap if e._seq == s and e.when == w]
            heapq.heapify(live)
            clock._heap = live
            clock._clean()
        elif r < 0.95:
            for _ in range(300):             # many moves: the heap compacts
                ev.schedule_at(clock.now + rnd.randrange(1, 10_000))
        else:
            log.append(("pending", clock.pending_events()))
        log.append((step, clock.now, clock.next_deadline, clock._seq, clock._compact_at,
                    tuple((e.when, e._seq, e.pending) for e in events)))
    log.append(("earlier", tuple(earlier)))
    log.append(("live", sorted((w, s, e.name) for (w, s, e) in clock._heap
                               if e._seq == s and e.when == w)))
    return log


def clock() -> None:
    """The C clock and emu.clock.Clock on six random schedules."""
    from emu import native
    from emu.clock import Clock
    mod = native.load("emu._clock")
    for seed in range(6):
        assert drive_clock(mod.Clock(), seed) == drive_clock(Clock(), seed), seed


def drive_cells(cells, seed, steps=2000) -> list:
    rnd = random.Random(seed)
    log = []
    for _ in range(steps):
        off = 0x100 + 4 * rnd.randrange(32)
        r = rnd.random()
        if r < 0.4:
            cells[off] = rnd.choice((0, 1, 5, True, False))
        elif r < 0.55:
            try:
                del cells[off]
                log.append(("del", off))
            except KeyError:
                log.append(("del-missing", off))
        elif r < 0.65:
            cells.replace({0x100 + 4 * rnd.randrange(32): rnd.randrange(2)
                           for _ in range(rnd.randrange(6))})
        elif r < 0.8:
            cells.inten = rnd.getrandbits(32)
        elif r < 0.82:
            bad = rnd.choice((0x50, 0x180, 0x101, "x"))
            try:
                del cells[bad]
            except KeyError:
                log.append(("del-bad", bad))
        else:
            log.append(("get", off, cells.get(off, "none"), off in cells))
        log.append((sorted(cells.items()), cells.level(), len(cells)))
    return log


def cells() -> None:
    """emu.soc._mmio.Cells and PyCells under random writes, deletions,
    replacements and INTEN changes."""
    from emu import native
    from emu.soc.ops import PyCells
    mmio = native.load("emu.soc._mmio")
    for seed in range(4):
        assert drive_cells(mmio.Cells(), seed) == drive_cells(PyCells(), seed), seed


def regs() -> None:
    """Regs (C) and fastregs' Python access on two engines: single and
    batched reads and writes, of the fast 32-bit registers and of others
    (handed to the binding)."""
    from unicorn import UC_ARCH_ARM, UC_MODE_MCLASS, UC_MODE_THUMB, Uc
    from unicorn import arm_const as A

    from emu.cpu import fastregs
    engines = []
    for native in (True, False):
        uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
        fastregs.install(uc, native=native)
        engines.append(uc)
    assert hasattr(engines[0], "_fastregs") and not hasattr(engines[1], "_fastregs")
    fast = [A.UC_ARM_REG_R0 + i for i in range(8)] + [A.UC_ARM_REG_LR, A.UC_ARM_REG_S3]
    other = [A.UC_ARM_REG_D1]
    results = []
    for uc in engines:
        out = []
        for i, r in enumerate(fast):
            uc.reg_write(r, 0x1000 + i)
        uc.reg_write_batch([(r, 0xA0 + i) for i, r in enumerate(fast[:4])])
        uc.reg_write_batch([(fast[0], 7), (other[0], 0x1234)])      # one slow id: the binding
        out.append(uc.reg_read_batch(fast))
        out.append(uc.reg_read_batch(fast + other))
        uc.reg_write(other[0], 0x55)
        out.append([uc.reg_read(r) for r in fast + other])
        results.append(out)
    assert results[0] == results[1]


def _machine(name, **kw):
    from emu import Machine
    return Machine(str(BUILD / f"{name}.elf"), board="nrf52832", **kw)


def _state(m) -> tuple:
    cpu = m.cpu
    return (cpu.cycles, m.clock.now, m.console_text(), tuple(sorted(cpu.core_registers().items())),
            cpu.read_mem(m.soc.RAM_BASE, m.soc.RAM_SIZE))


def run_until() -> None:
    """A run stopped by a predicate (run_until) in the C loop and in the
    Python loop: the same cycle, the same machine."""
    from emu.cpu import cortexm
    out = []
    for native_loop in (True, False):
        saved = cortexm.CortexM.native_loop
        cortexm.CortexM.native_loop = native_loop
        try:
            m = _machine("cpu_systick")
            calls = [0]

            def pred():
                calls[0] += 1
                return m.cpu.cycles > 200_000
            m.run_until(pred, timeout_ms=200)
            out.append(_state(m) + (calls[0],))
            m.close()
        finally:
            cortexm.CortexM.native_loop = saved
    assert out[0] == out[1]


def loop_log() -> None:
    """Polling loops skipped with a skip log (CortexM.log_loop_skips) leave
    the machine as they do unlogged; the log names the loops' registers."""
    out = []
    logged = []
    for log in (True, False):
        m = _machine("cpu_poll_loops")
        if log:
            m.cpu.log_loop_skips(lambda head, n, c, after, reads: logged.append(
                (head, n, [m.soc.bus.slot_register(s, off) for s, off in reads])))
        m.run(ms=300)
        out.append(_state(m))
        m.close()
    assert logged and out[0] == out[1]


def bus_probe() -> None:
    """A made-up peripheral whose reads pop, tell the time, or raise, and an
    event and a task, driven by Thumb code through the native callbacks and
    through the ctypes ones: the same values and the same model calls."""
    import logging
    import os

    from emu.clock import CPU_TICKS
    from emu.peripherals.base import RW, NrfPeripheral, Reg
    from emu.soc.nrf52832 import Nrf52832
    from unicorn import arm_const as A

    class Probe(NrfPeripheral):
        NAME = "PROBE"
        TASKS = {0x000: "KICK"}
        EVENTS = {0x100: "DONE"}
        REGISTERS = [Reg(0x400, "FIFO", 0, RW, read="_rd_fifo", timed=False),
                     Reg(0x404, "NOW", 0, RW, read="_rd_now"),
                     Reg(0x408, "PLAIN", 0x11223344, RW),
                     Reg(0x40C, "BROKEN", 0, RW, read="_rd_broken", timed=False)]

        def __init__(self, soc, base):
            self.pops = self.kicks = 0
            super().__init__(soc, base, None, irq=None)

        def _rd_fifo(self, _off):
            self.pops += 1
            return 100 + self.pops

        def _rd_now(self, _off):
            return self.clock.now & 0xFFFFFFFF

        def _rd_broken(self, _off):
            raise RuntimeError("a model's bug, on purpose")

        def task_KICK(self):
            self.kicks += 1
            self._busy, self._due = 1, 0      # a completion due: the guard sends reads here

        _busy, _due = None, 0

        def read_op(self, offset):
            op = super().read_op(offset)
            if offset == 0x408 and op is not None:    # PLAIN, guarded by attributes
                return op.with_guard(("_busy", "_due"))
            return op

    base, code_at = 0x40030000, 0x20001000
    # ldr r1,[r0,#off]; str r1,[r7,#4i] for FIFO, NOW, BROKEN, EVENT; a KICK;
    # a byte load; then b .
    hw = []
    for i, off in enumerate((0x400, 0x404, 0x40C, 0x100, 0x400)):
        hw += [0xF8D0, 0x1000 | off, 0xF8C7, 0x1000 | (4 * i)]
    hw += [0xF8D0, 0x1408, 0xF8C7, 0x1018]               # PLAIN (not busy) -> [r7,#24]
    hw += [0x2101, 0x6001, 0x7801, 0x6179]               # KICK; ldrb r1,[r0]; -> [r7,#20]
    hw += [0xF8D0, 0x1408, 0xF8C7, 0x101C, 0xE7FE]       # PLAIN (busy, due) -> [r7,#28]
    results = []
    logging.getLogger("emu.bus").setLevel(logging.CRITICAL)
    for pure in (False, True):
        if pure:
            os.environ["PINETIME_EMU_PURE_PYTHON"] = "1"
        try:
            soc = Nrf52832()
            probe = Probe(soc, base)
            soc.bus.attach(base, probe)
            cpu = soc.cpu
            cpu.write_mem(code_at, struct.pack(f"<{len(hw)}H", *hw))
            cpu.set_reg(A.UC_ARM_REG_SP, 0x20008000)
            cpu.set_reg(A.UC_ARM_REG_R0, base)
            cpu.set_reg(A.UC_ARM_REG_R7, 0x20002000)
            cpu.pc = code_at
            cpu.run(soc.clock.now + 2000 * CPU_TICKS)
            results.append(([cpu.read32(0x20002000 + 4 * i) for i in range(8)],
                            probe.pops, probe.kicks, soc.bus.accesses))
        finally:
            os.environ.pop("PINETIME_EMU_PURE_PYTHON", None)
    assert results[0] == results[1], results


def outside_slice() -> None:
    """Registers read from Python between runs (a debugger's memory read,
    a test's): the RTC's COUNTER, the TIMER's CC, timed reads that sync the
    clock outside a slice; native and pure-Python machines give the same."""
    out = []
    for pure in (False, True):
        m = _machine("periph_rtc_core", pure_python=pure)
        m.run(ms=7)
        vals = [int.from_bytes(m.cpu.read_mem(a, 4), "little")
                for a in (0x40011504, 0x4000B504, 0x40008540, 0x40011100, 0x40011340)]
        m.run(ms=1)
        vals += [int.from_bytes(m.cpu.read_mem(0x40011504, 4), "little"),   # twice, no time
                 int.from_bytes(m.cpu.read_mem(0x40011504, 4), "little"), m.cpu.cycles]
        out.append(vals + [_state(m)])
        m.close()
    assert out[0] == out[1]


def sleep_forever() -> None:
    """A run with no deadline on firmware that sleeps with nothing scheduled
    ends with the reason "sleep" (the C loop and the Python loop)."""
    from emu.clock import NEVER
    from emu.cpu import cortexm
    out = []
    for native_loop in (True, False):
        saved = cortexm.CortexM.native_loop
        cortexm.CortexM.native_loop = native_loop
        try:
            m = _machine("cpu_sleep_forever")
            r = m.run(until_tick=NEVER)
            out.append((r.reason,) + _state(m))
            m.close()
        finally:
            cortexm.CortexM.native_loop = saved
    assert out[0] == out[1] and out[0][0] == "sleep", out[0][:2]


def stop_request() -> None:
    """A clock event that asks the CPU to stop (as a debugger's halt does)
    stops the run loop at the same cycle in C and in Python."""
    from emu.cpu import cortexm
    out = []
    for native_loop in (True, False):
        saved = cortexm.CortexM.native_loop
        cortexm.CortexM.native_loop = native_loop
        try:
            m = _machine("cpu_systick")
            ev = m.clock.event("driver.stop", lambda: m.cpu.halt("break", "a driver's stop"))
            ev.schedule_at(m.clock.now + 3_000_000)
            r = m.run(ms=50)
            out.append((r.reason,) + _state(m))
            m.close()
        finally:
            cortexm.CortexM.native_loop = saved
    assert out[0] == out[1], (out[0][:3], out[1][:3])


def _cost_ref_insn(ref, code: bytes, addr: int):
    """The reference's facts of the instruction at code[0:] (its size
    first), or None where capstone decodes nothing."""
    for _a, size, mnemonic, op_str in ref.md.disasm_lite(code, addr):
        return (size,) + ref._insn_facts(mnemonic, op_str)
    return None


def cost() -> None:
    """Block costing in C (emu/cpu/_cost.c) against the reference
    (CostModel._block_cost_py and _insn_facts, on capstone's text):
    every 16-bit encoding, a sweep of the 32-bit ones (every first
    halfword, seeded second halfwords and the shapes the decoder tells
    apart), random blocks of what C decodes with and without an IT
    block, and windows of our firmware's code.  Wherever C answers, it
    answers what the reference does; and it answers for most of real code."""
    from elftools.elf.elffile import ELFFile

    from emu.cpu import _core
    from emu.cpu.cycles import CostModel
    ref = CostModel(native=False)
    rnd = random.Random(46)
    known = []
    mismatch = []

    def one(code, addr=0x1000):
        got = _core.cost_insn(code, addr)
        if got is None:
            return
        known.append(code)
        want = _cost_ref_insn(ref, code, addr)
        if want is None or tuple(got) != want:
            mismatch.append((code.hex(), got, want))
    for hw in range(0xE800):
        one(struct.pack("<HH", hw, 0xBF00))
    n16 = len(known)
    shapes = (0x0000, 0xFFFF, 0x8000, 0x9000, 0xD000, 0xF000, 0xF010, 0x0F00, 0x8F40, 0x8F50,
              0x8F60, 0xF080, 0xF0A0, 0x0B04, 0x0D04, 0x0E04, 0x0C04, 0x0904, 0x4010, 0x8030,
              0xF0F0, 0x00F0, 0x0010)
    for hw1 in range(0xE800, 0x10000):
        for hw2 in shapes + tuple(rnd.randrange(0x10000) for _ in range(12)):
            one(struct.pack("<HH", hw1, hw2))
    assert not mismatch, mismatch[:5]
    assert n16 > 0xE800 * 0.7, f"C decodes only {n16} of the 16-bit encodings"
    # blocks: sums, the pipelined loads, the loop watch's flags, IT blocks
    blocks = []
    for _ in range(30000):
        parts = []
        for _k in range(rnd.randrange(1, 7)):
            c = known[rnd.randrange(len(known))]
            parts.append(c[:2] if (c[1] >> 3) < 0x1D else c)
        if rnd.random() < 0.4:
            parts.insert(rnd.randrange(len(parts)),
                         struct.pack("<H", 0xBF00 | rnd.randrange(16) << 4 | rnd.randrange(1, 16)))
        blocks.append((b"".join(parts), 0x2000 + 2 * rnd.randrange(64)))
    # windows of our firmware's code (what compilers emit)
    for name in ("cpu_exceptions", "cpu_poll_loops", "cpu_loop_stores", "cpu_fpu"):
        with open(f"{BUILD}/{name}.elf", "rb") as fh:
            text = ELFFile(fh).get_section_by_name(".text")
            code, base = text.data(), text["sh_addr"]
        offs = [a - base for a, _s, _m, _o in ref.md.disasm_lite(code, base)]
        for i in range(0, len(offs) - 1):
            j = min(len(offs) - 1, i + rnd.randrange(1, 9))
            blocks.append((code[offs[i]:offs[j]], base + offs[i]))
    blocks += [(b"", 0x1000), (b"\x00", 0x1000), (b"\x00\xbf\x4f", 0x1000),
               (b"\x00\xbf\x4f\xf0", 0x1000),                 # half of a 32-bit instruction
               (struct.pack("<H", 0xB401) * 130, 0x1000),          # the SP beyond BLOCK_STORE's
               (struct.pack("<H", 0x6008) * 256, 0x1000),          # more stores than it counts
               (struct.pack("<HH", 0x3801, 0xD8FD), 0x1000),      # a countdown: the reference's
               (struct.pack("<HH", 0x3801, 0xD1FD), 0x1000),
               (struct.pack("<HHH", 0xB500, 0x3801, 0xD8FC), 0x1000)]
    answered = 0
    for code, addr in blocks:
        got = _core.cost_block(code, addr)
        if got is None:
            continue
        answered += 1
        want = ref.block_cost_pure(code, addr)
        assert tuple(got) == tuple(want), (code.hex(), hex(addr), got, want)
    assert answered > len(blocks) * 0.6, f"C costed {answered} of {len(blocks)} blocks"
    for bad in ((), (b"\x00\xbf",), (b"\x00\xbf", -1), (b"\x00\xbf", 1 << 32), ("text", 0)):
        try:
            _core.cost_block(*bad)
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"cost_block{bad!r} accepted")
