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
on RTC COUNTER, a tick that masks its interrupt around every counter read)
spends its time here.  Each model derives from its register table, per
offset, an :class:`emu.soc.ops.Op` (``read_op``/``write_op``): plain and
event registers, INTEN*, the RTC's COUNTER, an event clear.  The bus carries
the op out instead of calling the model's ``read``/``write``; an op that
would change an interrupt line (or whose guard says a lazy completion is
due) bails to the model.  Everything else (no op, sub-word and unaligned
accesses) brings the clock up to the access and calls ``read``/``write``;
a model with ``SUBWORD_WRITES = "lanes"`` gets sub-word writes as
``write_lanes(offset, value, lanes)`` instead (the SCS page: a byte written
to NVIC IPR leaves the other three alone).

The ops run in C when the ``emu.soc._mmio`` extension is built
(``_mmio.c``; Unicorn calls it directly, and it works on the models' own
attributes without running Python code), else in Python callbacks
registered through ctypes (``emu.soc.ops.py_reader``/``py_writer``); both
carry out the same ops on the same state, so the behaviour is the same.
PINETIME_EMU_PURE_PYTHON=1 (or ``PeripheralBus(native=False)``) selects the
Python callbacks.  Ops are resolved once per offset; a model whose op table
changes (the shared-ID multiplexer at ENABLE) calls ``ops_changed()``.
"""
from __future__ import annotations

import logging

from emu.soc import ops

log = logging.getLogger("emu.bus")



PPB_NAMES = ((0xE000E000, "SCS"), (0xE0000000, "ITM"), (0xE0001000, "DWT"),
             (0xE0002000, "FPB"))


def reg_name(per, off: int) -> str:
    """A register's name from a model's tables (a shared-ID slot: its
    variants', prefixed with the variant), ``+0xNNN`` when none names it."""
    variants = getattr(per, "variants", {})
    active = getattr(per, "active", None)
    for target in [per] + ([active] if active is not None else []) + \
            [v for _k, v in sorted(variants.items()) if v is not active]:
        r = getattr(target, "_regs", {}).get(off)
        if r is not None:
            name = r.name if r.count == 1 else f"{r.name}[{(off - r.offset) // r.stride}]"
        else:
            name = next((f"{t}_{getattr(target, t)[off]}" for t in ("EVENTS", "TASKS")
                         if off in getattr(target, t, {})), None)
            name = name or getattr(target, "REG_NAMES", {}).get(off)
        if name:
            return name if target is per else f"{target.NAME} {name}"
    return {0x200: "SHORTS", 0x300: "INTEN", 0x304: "INTENSET",
            0x308: "INTENCLR"}.get(off, f"+{off:#05x}")


class PeripheralBus:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_accesses_base", "native", "slots")
    STRUCTURE = ("_counters", "_stats", "cpu", "streams", "symbolize")
    def __init__(self, cpu, symbolize=None, native: bool | None = None):
        self.cpu = cpu
        self.symbolize = symbolize or (lambda a: "")
        self.slots: dict = {}      # base -> peripheral
        self._counters: list = []  # per slot: fn() -> accesses so far (see accesses)
        self._stats: dict = {}     # slot base -> fn() -> {offset: counts} (access_stats)
        self._accesses_base = 0
        from emu import native as _nat
        _native = _nat.load("emu.soc._mmio")    # None: the ctypes callbacks
        if native is None:
            native = _native is not None
        if native and _native is None:
            raise RuntimeError("emu.soc._mmio is not available (pip install -e . builds it)")
        self.native = native
        # streaming serial masters (the legacy SPI to the display, emu/soc/_streams.c):
        # their bytes completed in C reach the devices before any Python runs
        self.streams = _native.StreamSet() if native else None
        if native:
            cpu.slice_end = self.streams.off

    def attach(self, base: int, periph, size: int = 0x1000) -> None:
        if base in self.slots:
            raise ValueError(f"peripheral slot {base:#010x} already holds "
                             f"{self.slots[base].name}, cannot add {periph.name}")
        self.slots[base] = periph
        resolve, read, write, error = self._handlers(periph)
        name = periph.name.upper()
        if self.native:
            cpu = self.cpu
            kw = {}
            from emu import native as _nat
            _native = _nat.load("emu.soc._mmio")
            if getattr(cpu.counter, "native", False):   # C reads the cycle counter itself
                counter = cpu.counter
                kw = dict(cpu=cpu, cycle_ticks=cpu.cycle_ticks,
                          cycles_addr=counter.field_addr("cycles"),
                          cells_addr=counter.field_addr("sync"),
                          loop_addr=counter.field_addr("loop"))
                cpu.enable_loop_watch(_native.replay_address())
            slot = _native.Slot(resolve, cpu.sync_time, read, write, error, clock=cpu.clock,
                                streams=self.streams, **kw)
            self._counters.append(lambda: slot.count)
            self._stats[base] = slot.stats
            periph.on_ops_changed = slot.flush
            periph.on_ops_select = slot.select
            self.cpu.map_mmio_native(base, size, name, slot)
        else:
            rd, wr, stats, flush, select = self._ctypes_callbacks(resolve, read, write, error)
            self._stats[base] = stats
            periph.on_ops_changed = flush
            periph.on_ops_select = select
            self.cpu.map_mmio(base, size, name, rd, wr, raw=True)

    @property
    def accesses(self) -> int:
        """Guest accesses (reads and writes) to every slot so far."""
        return self._accesses_base + sum(c() for c in self._counters)

    @accesses.setter
    def accesses(self, value: int) -> None:
        self._accesses_base = value - sum(c() for c in self._counters)

    def slot_register(self, slot_id: int, offset: int) -> str:
        """'serial0.EVENTS_END' for a native slot's id (``id()`` of the
        ``_mmio.Slot``, as CortexM.log_loop_skips gives it) and an offset."""
        # bit 31: a write (a loop that stores); bit 30: a timed one (a watchdog's reload)
        write, timed, offset = offset >> 31 & 1, offset >> 30 & 1, offset & 0xFFF
        for base, stats in self._stats.items():
            if id(getattr(stats, "__self__", None)) == slot_id:
                return self.register_name(base + offset) + (
                    " (timed write)" if timed else " (write)" if write else "")
        return f"slot {slot_id:#x}+{offset:#x}"

    def register_name(self, addr: int) -> str:
        """'rtc1.COUNTER' for a peripheral register's address (from the
        register tables), 'SCS+0xd04' on the private peripheral bus."""
        base, off = addr & ~0xFFF, addr & 0xFFC
        per = self.slots.get(base)
        if per is not None:
            return f"{per.name}.{reg_name(per, off)}"
        for b, name in PPB_NAMES:
            if b <= addr < b + 0x1000:
                return f"{name}+{addr - b:#x}"
        return f"{addr:#010x}"

    def access_stats(self) -> dict:
        """Aligned word accesses so far, per slot and register:
        ``{(slot base, offset): (op reads, model reads, op writes, model writes)}``.
        "op" accesses were carried out by the bus from the register table (in
        C on the native path) without calling the model; a CALL op (a model
        method such as GPIO IN) counts as a model read.  The native path
        counts an op that bailed to the model as a model access, the
        pure-Python path as an op access (statistics only)."""
        out = {}
        for base, stats in self._stats.items():
            for off, st in stats().items():
                out[(base, off)] = st
        return out

    # ------------------------------------------------------------------
    def _handlers(self, p):
        """One slot's op resolver and slow-path functions.

        ``resolve(offset, is_write)``: the model's Op for that offset, or None.
        ``read(offset, size)``: reads through ``p.read``.
        ``write(offset, size, value)``: ``p.write``.
        The caller (_mmio.c or the ctypes callbacks) syncs the clock first.
        ``error(offset, exc)``: logs a model error raised by a handler.
        """
        bus = self

        def resolve(offset, is_write):
            return p.write_op(offset) if is_write else p.read_op(offset)

        def read(offset, size):
            try:
                if size == 4 and not offset & 3:
                    return p.read(offset, 4) & 0xFFFFFFFF
                word = p.read(offset & ~3, size)
                return (word >> ((offset & 3) * 8)) & ((1 << (size * 8)) - 1)
            except Exception:
                return bus._model_error(p, "read", offset)

        lanes_write = getattr(p, "write_lanes", None) \
            if getattr(p, "SUBWORD_WRITES", None) == "lanes" else None

        def write(offset, size, value):
            try:
                if size == 4 and not offset & 3:
                    p.write(offset, value, 4)
                else:
                    shift = (offset & 3) * 8
                    mask = (1 << (size * 8)) - 1
                    if lanes_write is not None:     # the model keeps the other bytes
                        lanes_write(offset & ~3, (value & mask) << shift, mask << shift)
                    else:
                        p.write(offset & ~3, (value & mask) << shift, size)
            except Exception:
                bus._model_error(p, "write", offset)

        def error(offset, exc):
            bus._model_error(p, "access", offset if offset is not None else -1, exc)

        return resolve, read, write, error

    def _ctypes_callbacks(self, resolve, read, write, error):
        """The same ops as _mmio.c, as raw uc_mmio_map callbacks for ctypes."""
        cpu = self.cpu
        clock = cpu.clock
        count = 0
        rops: dict = {}     # offset -> (fn(offset), timed) or None (the model)
        wops: dict = {}     # offset -> (fn(offset, value), timed) or None
        stat: dict = {}     # offset -> [op reads, model reads, op writes, model writes]

        def generic_read(off):            # an op bailed: the model, as with no op
            cpu.sync_time()
            return read(off, 4)

        def generic_write(off, value):
            cpu.sync_time()
            write(off, 4, value)

        def lookup(table, offset, is_write):
            try:
                return table[offset]
            except KeyError:
                pass
            try:
                op = resolve(offset, is_write)
            except Exception as exc:
                error(offset, exc)
                op = None
            if op is not None:
                op = ((ops.py_writer(op, clock, generic_write) if is_write
                       else ops.py_reader(op, clock, generic_read)),
                      op.timed or op.guard is not None, op.kind == ops.R_CALL)
            table[offset] = op
            return op

        def rd(_h, offset, size, _ud):
            nonlocal count
            count += 1
            if size == 4 and not offset & 3:
                st = stat.get(offset) or stat.setdefault(offset, [0, 0, 0, 0])
                op = lookup(rops, offset, False)
                if op is not None:
                    if op[1]:
                        cpu.sync_time()
                    st[op[2]] += 1
                    try:
                        return op[0](offset) & 0xFFFFFFFF
                    except Exception as exc:
                        error(offset, exc)
                        return 0
                st[1] += 1
            cpu.sync_time()
            return read(offset, size)

        def wr(_h, offset, size, value, _ud):
            nonlocal count
            count += 1
            if size == 4 and not offset & 3:
                st = stat.get(offset) or stat.setdefault(offset, [0, 0, 0, 0])
                op = lookup(wops, offset, True)
                if op is not None:
                    if op[1]:
                        cpu.sync_time()
                    st[2] += 1
                    try:
                        op[0](offset, value)
                    except Exception as exc:
                        error(offset, exc)
                    return
                st[3] += 1
            cpu.sync_time()
            write(offset, size, value)

        def stats():
            return {off: tuple(v) for off, v in stat.items()}

        tables: dict = {}   # key -> (rops, wops) parked by select (as Slot.select)
        current = 0

        def flush():
            rops.clear()
            wops.clear()
            for r, w in tables.values():
                r.clear()
                w.clear()

        def select(key):
            nonlocal rops, wops, current
            if not 0 <= key < 16:
                raise ValueError(f"op table {key}: 0..15")
            if key != current:
                tables[current] = (rops, wops)
                rops, wops = tables.pop(key, None) or ({}, {})
                current = key

        self._counters.append(lambda: count)
        return rd, wr, stats, flush, select

    def _model_error(self, p, what: str, offset: int, exc=None) -> int:
        try:
            pc = self.cpu.pc
        except Exception:
            pc = 0
        sym = self.symbolize(pc)
        log.error("internal error in %s model on %s of +%#x (guest pc=%#010x%s)", p.name,
                  what, offset, pc, f" {sym}" if sym else "", exc_info=exc or True)
        return 0
