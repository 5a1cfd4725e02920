"""Peripheral bus: maps peripheral models into the CPU's address space.

Each peripheral occupies one 4 KiB slot mapped with Unicorn's ``mmio_map``.
The callbacks bring the clock up to date, dispatch to the model, and never
let a Python exception escape into Unicorn (it would be printed and lost):
a model error is logged with the guest PC and symbol and the access reads 0.

Writes with side effects run exactly once per guest access: nothing here
stops the emulation from inside a callback (see UNICORN-NOTES.md); a model
that needs the run loop's attention calls ``cpu.request_stop()``.  (The one
exception is System OFF, ``CortexM.power_off``: that core never resumes.)

Hot path.  MMIO-polling firmware (a driver waiting for a flag, a delay loop
on RTC COUNTER) spends its time here, so reads are split:

* an aligned word read of an offset whose model offers a ``read_handler``
  (computed reads such as COUNTER or GPIO IN, EVENTS_*, plain registers) is
  a dict lookup and one call; the clock is synced first only when that value
  depends on time (``Reg.timed``).  The handler is asked for once per offset
  and cached per slot (in the callbacks, not in model state);
* everything else (sub-word and unaligned accesses, writes, registers of
  models that override ``read``) syncs the clock and calls ``read``/``write``.

The split, the counting and (with the native cycle counter) the clock sync
of timed reads run in C when the ``emu.soc._mmio`` extension is built
(``_mmio.c``; Unicorn calls it directly, without libffi and ctypes), else
in Python callbacks registered through ctypes; both call the same Python
handlers, so the behaviour is the same.  PINETIME_EMU_PURE_PYTHON=1
(or ``PeripheralBus(native=False)``) selects the Python callbacks.
"""
from __future__ import annotations

import logging
import os

log = logging.getLogger("emu.bus")

try:
    from emu.soc import _mmio as _native   # type: ignore[attr-defined]
except ImportError:                         # not built: the ctypes callbacks
    _native = None


class PeripheralBus:
    def __init__(self, cpu, symbolize=None, native: bool | None = None):
        self.cpu = cpu
        self.symbolize = symbolize or (lambda a: "")
        self.slots: dict = {}      # base -> peripheral
        self._counters: list = []  # per slot: fn() -> accesses so far (see accesses)
        self._accesses_base = 0
        if native is None:
            native = _native is not None and not os.environ.get("PINETIME_EMU_PURE_PYTHON")
        if native and _native is None:
            raise RuntimeError("emu.soc._mmio is not built (pip install -e . builds it)")
        self.native = native

    def attach(self, base: int, periph, size: int = 0x1000) -> None:
        if base in self.slots:
            raise ValueError(f"peripheral slot {base:#010x} already holds "
                             f"{self.slots[base].name}, cannot add {periph.name}")
        self.slots[base] = periph
        untimed, timed, read, write, error = self._handlers(periph)
        name = periph.name.upper()
        if self.native:
            cpu = self.cpu
            kw = {}
            if getattr(cpu.counter, "native", False):   # C reads the cycle counter itself
                import ctypes
                kw = dict(cpu=cpu, clock=cpu.clock, cycle_ticks=cpu.cycle_ticks,
                          cycles_addr=ctypes.addressof(cpu.cs) + type(cpu.cs).cycles.offset)
            slot = _native.Slot(untimed, timed, cpu.sync_time, read, write, error, **kw)
            self._counters.append(lambda: slot.count)
            self.cpu.map_mmio_native(base, size, name, slot)
        else:
            rd, wr = self._ctypes_callbacks(untimed, timed, read, write, error)
            self.cpu.map_mmio(base, size, name, rd, wr, raw=True)

    @property
    def accesses(self) -> int:
        """Guest accesses (reads and writes) to every slot so far."""
        return self._accesses_base + sum(c() for c in self._counters)

    @accesses.setter
    def accesses(self, value: int) -> None:
        self._accesses_base = value - sum(c() for c in self._counters)

    # ------------------------------------------------------------------
    def _handlers(self, p):
        """One slot's handler tables and slow-path functions.

        ``untimed``/``timed``: offset -> fn(offset), filled on the first
        aligned word read of each offset from ``p.read_handler``.
        ``read(offset, size)``: reads through ``p.read``.
        ``write(offset, size, value)``: ``p.write``.
        The caller (_mmio.c or the ctypes callbacks) syncs the clock first.
        ``error(offset, exc)``: logs a model error raised by a handler.
        """
        bus = self
        untimed: dict = {}    # offset -> fn(offset): value independent of time
        timed: dict = {}      # offset -> fn(offset): sync the clock first
        generic: set = set()  # offsets with no handler: read() every time

        def read(offset, size):
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

        def write(offset, size, value):
            try:
                if size == 4 and not offset & 3:
                    p.write(offset, value, 4)
                else:
                    shift = (offset & 3) * 8
                    p.write(offset & ~3, (value & ((1 << (size * 8)) - 1)) << shift, size)
            except Exception:
                bus._model_error(p, "write", offset)

        def error(offset, exc):
            bus._model_error(p, "read", offset if offset is not None else -1, exc)

        return untimed, timed, read, write, error

    def _ctypes_callbacks(self, untimed, timed, read, write, error):
        """The same split as _mmio.c, as raw uc_mmio_map callbacks for ctypes."""
        cpu = self.cpu
        count = 0

        def rd(_h, offset, size, _ud):
            nonlocal count
            count += 1
            if size == 4:
                fn = untimed.get(offset)
                if fn is None:
                    fn = timed.get(offset)
                    if fn is not None:
                        cpu.sync_time()
                if fn is not None:
                    try:
                        return fn(offset) & 0xFFFFFFFF
                    except Exception as exc:
                        error(offset, exc)
                        return 0
            cpu.sync_time()
            return read(offset, size)

        def wr(_h, offset, size, value, _ud):
            nonlocal count
            count += 1
            cpu.sync_time()
            write(offset, size, value)

        self._counters.append(lambda: count)
        return rd, wr

    def _model_error(self, p, what: str, offset: int, exc=None) -> int:
        try:
            pc = self.cpu.pc
        except Exception:
            pc = 0
        sym = self.symbolize(pc)
        log.error("internal error in %s model on %s of +%#x (guest pc=%#010x%s)", p.name,
                  what, offset, pc, f" {sym}" if sym else "", exc_info=exc or True)
        return 0
