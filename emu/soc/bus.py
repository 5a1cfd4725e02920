"""Peripheral bus: maps peripheral models into the CPU's address space.

Each peripheral occupies one 4 KiB slot mapped with Unicorn's ``mmio_map``.
The callbacks bring the clock up to date, dispatch to the model, and never
let a Python exception escape into Unicorn (it would be printed and lost):
a model error is logged with the guest PC and symbol and the access reads 0.

Writes with side effects run exactly once per guest access: nothing here
stops the emulation from inside a callback (see UNICORN-NOTES.md); a model
that needs the run loop's attention calls ``cpu.request_stop()``.
"""
from __future__ import annotations

import logging

log = logging.getLogger("emu.bus")


class PeripheralBus:
    def __init__(self, cpu, symbolize=None):
        self.cpu = cpu
        self.symbolize = symbolize or (lambda a: "")
        self.slots: dict = {}      # base -> peripheral
        self._counters: list = []  # per slot: fn() -> accesses so far (see accesses)
        self._accesses_base = 0

    def attach(self, base: int, periph, size: int = 0x1000) -> None:
        if base in self.slots:
            raise ValueError(f"peripheral slot {base:#010x} already holds "
                             f"{self.slots[base].name}, cannot add {periph.name}")
        self.slots[base] = periph
        rd, wr = self._callbacks(periph)
        self.cpu.map_mmio(base, size, periph.name.upper(), rd, wr, raw=True)

    def _callbacks(self, p):
        """The slot's raw uc_mmio_map read and write callbacks.

        Reads: an aligned word read of an offset the model offers a
        ``read_handler`` for is a dict lookup and one call, syncing the clock
        only when the value depends on time; the handler is asked for once
        per offset (cached here, in the closure: not model state).  Every
        other access syncs the clock and goes through ``read``/``write``.
        The clock sync is :meth:`CortexM.sync_time` written out in place
        (this is the hottest path of MMIO-polling firmware).
        """
        bus = self
        cpu = self.cpu
        cs = cpu.cs                   # the native block hook's counters (never rebound)
        ct = cpu.cycle_ticks
        clock = cpu.clock
        count = 0
        untimed: dict = {}    # offset -> fn(offset): value independent of time
        timed: dict = {}      # offset -> fn(offset): sync the clock first
        generic: set = set()  # offsets with no handler: read() every time

        def rd(_h, offset, size, _ud):
            nonlocal count
            count += 1
            if size == 4:
                fn = untimed.get(offset)
                if fn is not None:
                    try:
                        return fn(offset) & 0xFFFFFFFF
                    except Exception:
                        return bus._model_error(p, "read", offset)
                fn = timed.get(offset)
                if fn is not None:
                    now = cpu._cycle_base_ticks + (cs.cycles - cpu._cycle_base) * ct
                    if now > clock.now:
                        clock.now = now
                    try:
                        return fn(offset) & 0xFFFFFFFF
                    except Exception:
                        return bus._model_error(p, "read", offset)
            now = cpu._cycle_base_ticks + (cs.cycles - cpu._cycle_base) * ct
            if now > clock.now:
                clock.now = now
            try:
                if size == 4 and not offset & 3:
                    if offset not in generic:
                        h = p.read_handler(offset)
                        if h is None:
                            generic.add(offset)
                        else:
                            (timed if h[1] else untimed)[offset] = h[0]
                    return p.read(offset, 4) & 0xFFFFFFFF
                word = p.read(offset & ~3, size)
                return (word >> ((offset & 3) * 8)) & ((1 << (size * 8)) - 1)
            except Exception:
                return bus._model_error(p, "read", offset)

        def wr(_h, offset, size, value, _ud):
            nonlocal count
            count += 1
            now = cpu._cycle_base_ticks + (cs.cycles - cpu._cycle_base) * ct
            if now > clock.now:
                clock.now = now
            try:
                if size == 4 and not offset & 3:
                    p.write(offset, value, 4)
                else:
                    shift = (offset & 3) * 8
                    p.write(offset & ~3, (value & ((1 << (size * 8)) - 1)) << shift, size)
            except Exception:
                bus._model_error(p, "write", offset)

        self._counters.append(lambda: count)
        return rd, wr

    @property
    def accesses(self) -> int:
        """Guest accesses (reads and writes) to every slot so far."""
        return self._accesses_base + sum(c() for c in self._counters)

    @accesses.setter
    def accesses(self, value: int) -> None:
        self._accesses_base = value - sum(c() for c in self._counters)

    def _model_error(self, p, what: str, offset: int) -> int:
        try:
            pc = self.cpu.pc
        except Exception:
            pc = 0
        sym = self.symbolize(pc)
        log.exception("internal error in %s model on %s of +%#x (guest pc=%#010x%s)", p.name,
                      what, offset, pc, f" {sym}" if sym else "")
        return 0
