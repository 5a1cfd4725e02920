"""Declarative registers and the nRF peripheral conventions.

Every nRF5x peripheral follows the same layout (nRF52832 Product
Specification v1.4, section 15 "Peripheral interface"):

* tasks at 0x000-0x07C: writing 1 triggers the task;
* events at 0x100-0x17C: set by hardware, cleared by writing 0;
* SHORTS at 0x200: bit n connects an event to a task inside the peripheral;
* INTEN/INTENSET/INTENCLR at 0x300/0x304/0x308: bit n enables the interrupt
  of the event at 0x100 + 4n;
* the interrupt number is bits [19:12] of the base address.

A subclass declares its tasks, events, shorts and registers as data and
writes task handlers (``task_START``) and register callbacks.  The
interrupt output is a level, ``any(event & inten)``, recomputed whenever an
event or INTEN changes: enabling INTEN after an event is already set, or
clearing an event, behaves as on silicon.  Firing an event also feeds PPI
(the ``event_listeners``) and applies SHORTS.

Unknown offsets are stored and logged once per (peripheral, offset).
"""
from __future__ import annotations

import logging
import operator
from dataclasses import dataclass
from typing import Any, Callable, Optional

from emu.soc.ops import (MODE_RW, MODE_W1C, MODE_W1S, Op, R_ATTR, R_CALL, R_CONST, R_EVENT,
                         R_VALUE, W_BITS, W_EVENT, W_INTEN, W_INTENCLR, W_INTENSET, W_VALUE, new_cells,
                         is_native_clock, unreplaced)

RW, RO, WO = "rw", "ro", "wo"
W1S, W1C = "w1s", "w1c"
_WRITE_MODES = {RW: MODE_RW, WO: MODE_RW, W1S: MODE_W1S, W1C: MODE_W1C}


@dataclass
class Reg:
    """One declared register.

    ``read``: name of a method returning the value (computed read).
    ``write``: name of a method ``fn(value, old)`` called after the value
    is stored (``RO`` registers ignore writes, logged once).
    ``mask``: writable bits; ``count``/``stride`` declare register arrays
    (``NAME[n]``).  ``timed``: the computed read depends on the current time
    (a counter), so the bus brings the clock up to the access first; False
    for values computed from model state alone (GPIO IN), which skip that.
    ``target``: the register a write's bits go to when not this one (GPIO
    OUTSET/OUTCLR set and clear bits of OUT; this one's value stays).
    ``changes_only``: ``write`` acts on the bits that changed and does
    nothing when none did, so a bus op stands for a write that changes
    nothing and hands the others to the model (GPIO OUT, OUTSET, OUTCLR).
    """
    offset: int
    name: str
    reset: int = 0
    access: str = RW
    read: Optional[str] = None
    write: Optional[str] = None
    mask: int = 0xFFFFFFFF
    count: int = 1
    stride: int = 4
    timed: bool = True
    target: Optional[int] = None
    changes_only: bool = False


class Peripheral:
    """A block mapped in one 4 KiB slot; base of every memory-mapped model."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_logged", "base", "name")
    STRUCTURE = ("clock", "log", "on_ops_changed", "on_ops_select", "soc", "write")

    NAME = "PERIPHERAL"

    def __init__(self, soc, base: int, name: Optional[str] = None):
        self.soc = soc
        self.base = base
        self.name = name or self.NAME.lower()
        self.log = logging.getLogger(f"emu.periph.{self.name}")
        self._logged: set = set()
        # the SoC's clock, as an attribute: models read clock.now on hot paths
        self.clock = getattr(soc, "clock", None)
        self.on_ops_changed = None   # set by the bus that maps this model (ops_changed)
        self.on_ops_select = None    # and this (ops_select)

    def log_once(self, key, msg: str, *args, level=logging.INFO) -> None:
        if key not in self._logged:
            self._logged.add(key)
            self.log.log(level, msg, *args)

    # bus interface
    def read(self, offset: int, size: int = 4) -> int:
        raise NotImplementedError

    def read_op(self, offset: int):
        """What a word read of ``offset`` does, as an :class:`emu.soc.ops.Op`
        the bus can carry out without calling :meth:`read`, or None (the bus
        calls :meth:`read`).  An op must give the same value and side effects
        as ``read(offset, 4)`` at any later time (see emu/soc/ops.py)."""
        return None

    def write_op(self, offset: int):
        """The same for a word write: an Op equivalent to ``write(offset, v, 4)``
        (or bailing to it), or None."""
        return None

    def _own(self, name: str, cls) -> bool:
        """``self.read``/``self.write`` is ``cls``'s, not replaced by a subclass
        or on the instance (the SoftDevice's write guards): only then may the
        ops derived for ``cls`` stand for it."""
        return getattr(getattr(self, name), "__func__", None) is getattr(cls, name)

    def ops_changed(self) -> None:
        """Tell the bus that ``read_op``/``write_op`` answer differently now."""
        if self.on_ops_changed is not None:
            self.on_ops_changed()     # pylint: disable=not-callable

    def ops_select(self, key: int) -> None:
        """Tell the bus that ``read_op``/``write_op`` now answer as they did the
        last time ``key`` (0..15) was selected, if they depend on nothing
        else: the bus keeps an op table per key (the shared-ID multiplexer's
        ENABLE; NimBLE switches CCM/AAR between AAR and off ~170 times an
        emulated second).  Anything else that changes the answers still
        calls ``ops_changed()``, which forgets every table."""
        if self.on_ops_select is not None:
            self.on_ops_select(key)     # pylint: disable=not-callable
        else:
            self.ops_changed()

    def write(self, offset: int, value: int, size: int = 4) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        pass

    def save_state(self) -> dict:
        return {}

    def load_state(self, state: dict) -> None:
        pass


class NrfPeripheral(Peripheral):
    """The nRF task/event/short/interrupt conventions, once."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_shorts_of", "extra", "irq", "shorts", "values")
    STRUCTURE = ("EVENTS", "REGISTERS", "SHORTS", "TASKS", "_cells", "_readers", "_regs",
                 "_task_handlers", "event_listeners")

    TASKS: dict = {}      # offset -> name ("START"; arrays as "OUT[0]")
    EVENTS: dict = {}     # offset -> name
    SHORTS: dict = {}     # bit -> (event offset, task offset)
    REGISTERS: list = []  # [Reg]
    HAS_INTEN = True      # INTEN at 0x300 (some blocks only have SET/CLR)

    #: names of model attributes kept in the Cells (``cell_property``), in cell order
    NATIVE_CELLS: tuple = ()

    #: fn(peripheral), told after every task and event (the energy model,
    #: emu/power.py, re-reads the block's state); None: nobody listens
    power_watch = None

    #: a model with steps written again in C (emu.peripherals._cores'
    #: RtcCore, TimerCore, WdtCore) uses them when this is true (False: every
    #: step in Python, the slow path, for tests)
    native_core = True

    def _core_allowed(self, steps: dict) -> bool:
        """Whether a core in C may stand for this model: the class switch on,
        native Cells, the C clock, the cores built, and each of ``steps``
        (name -> the function the core writes again, as the model's module
        defined it) still that function, on the class (not a subclass's, not
        a test's replacement) and not replaced on the instance."""
        if (not self.native_core or type(self._cells).__module__ != "emu.soc._mmio"
                or not is_native_clock(self.clock)):
            return False
        from emu import native
        if native.load("emu.peripherals._cores") is None:
            return False
        return unreplaced(self, steps)

    def __init__(self, soc, base: int, name: Optional[str] = None, irq: Optional[int] = None):
        # events, INTEN, the line and NATIVE_CELLS live in C memory (emu.soc._mmio.Cells)
        self._cells = new_cells(pure=getattr(soc, "pure_python", False))
        super().__init__(soc, base, name)
        self.irq = ((base >> 12) & 0xFF) if irq is None else irq
        self._regs: dict = {}         # offset -> Reg
        for r in self.REGISTERS:
            for i in range(r.count):
                off = r.offset + i * r.stride
                self._regs[off] = r
        # offset -> bound computed-read method: a single dict lookup on the hot path
        self._readers: dict = {off: getattr(self, r.read) for off, r in self._regs.items()
                               if r.read is not None}
        self._task_handlers: dict = {}
        for off, tname in self.TASKS.items():
            meth = getattr(self, "task_" + tname.replace("[", "_").replace("]", ""), None)
            if meth is None:
                base_name = tname.split("[")[0]
                meth = getattr(self, "task_" + base_name, None)
                if meth is not None:
                    idx = int(tname.split("[")[1].rstrip("]")) if "[" in tname else 0
                    meth = _bind_index(meth, idx)
            self._task_handlers[off] = meth
        self.event_listeners: list = []   # fn(peripheral, event_offset) (PPI)
        # SHORTS by event: fire() visits only the event's own shortcuts, in SHORTS order
        self._shorts_of: dict = {}        # event offset -> [(bit mask, task offset)]
        for bit, (ev, task) in self.SHORTS.items():
            self._shorts_of.setdefault(ev, []).append((1 << bit, task))
        self.irq_line_level = False
        self.reset()

    # ------------------------------------------------------------------
    def reset(self) -> None:
        self.values: dict = {}
        for off, r in self._regs.items():
            self.values[off] = r.reset
        self.events = {off: 0 for off in self.EVENTS}
        self.inten = 0
        self.shorts = 0
        self.extra: dict = {}
        self._set_irq(False)

    # -- state in the Cells (getters are C attrgetters: no Python frame) --
    def _set_events(self, mapping) -> None:
        self._cells.replace(mapping)

    def _set_inten(self, value: int) -> None:
        self._cells.inten = value & 0xFFFFFFFF

    def _set_line(self, level) -> None:
        self._cells.line = 1 if level else 0

    events = property(operator.attrgetter("_cells"), _set_events,
                      doc="The event registers: a mapping offset -> 0/1 (assigning one "
                          "replaces them).")
    inten = property(operator.attrgetter("_cells.inten"), _set_inten, doc="INTEN")
    irq_line_level = property(operator.attrgetter("_cells.line"), _set_line,
                              doc="The interrupt line's level (0/1).")

    # -- events / tasks -----------------------------------------------------
    def fire(self, offset: int) -> None:
        """Hardware sets the event at ``offset``: PPI, SHORTS, interrupt."""
        self.events[offset] = 1
        for fn in self.event_listeners:
            fn(self, offset)
        if self.shorts:
            for bit, task in self._shorts_of.get(offset, ()):
                if self.shorts & bit:
                    self.trigger(task)
        self.update_irq()
        if self.power_watch is not None:
            self.power_watch(self)

    def trigger(self, offset: int) -> None:
        """Trigger the task at ``offset`` (CPU write of 1, PPI, or SHORTS)."""
        h = self._task_handlers.get(offset)
        if h is None:
            self.log_once(("task", offset), "task at +%#x (%s) not modelled", offset,
                          self.TASKS.get(offset, "?"))
            return
        h()
        if self.power_watch is not None:
            self.power_watch(self)

    def event_name(self, offset: int) -> str:
        return self.EVENTS.get(offset, f"+{offset:#x}")

    def update_irq(self) -> None:
        self._set_irq(self._cells.level())

    def _set_irq(self, level: bool) -> None:
        if level != self.irq_line_level:
            self.irq_line_level = level
            if self.irq is not None and self.soc is not None:
                self.soc.set_irq(self.irq, level)

    # -- bus -----------------------------------------------------------
    def read_op(self, offset: int):
        # Only when read() is this class's own: a subclass that overrides it
        # decides per offset itself (calling _base_read_op where it may).
        if not self._own("read", NrfPeripheral):
            return None
        return self._base_read_op(offset)

    def write_op(self, offset: int):
        if not self._own("write", NrfPeripheral):
            return None
        return self._base_write_op(offset)

    def _base_read_op(self, offset: int):
        """read(offset, 4) below, as an op (the same order of decoding).  The
        ops look the dictionaries up at each access: reset(), load_state()
        and snapshots rebind them."""
        fn = self._readers.get(offset)
        if fn is not None:                      # computed reads (COUNTER, IN, ...)
            r = self._regs.get(offset)
            return Op(R_CALL, self, (fn,), timed=r is None or r.timed)
        if offset in self.events:
            return Op(R_EVENT, self)
        r = self._regs.get(offset)
        if r is not None:
            return Op(R_CONST, self, (0,)) if r.access == WO else Op(R_VALUE, self)
        if offset in self.TASKS:
            return Op(R_CONST, self, (0,))
        if offset == 0x200:
            return Op(R_ATTR, self, ("shorts",))
        if offset in (0x304, 0x308) or (offset == 0x300 and self.HAS_INTEN):
            return Op(R_ATTR, self, ("inten",))
        return None

    def _base_write_op(self, offset: int, slow_bits: int = 0):
        """write(offset, v, 4) below, as an op.  ``slow_bits``: INTEN bits whose
        change the subclass must see (the op then bails to write())."""
        if offset in self.TASKS:
            return None
        if offset in self.events:
            return Op(W_EVENT, self, self._line_sink())
        r = self._regs.get(offset)
        if r is not None:
            if r.access not in _WRITE_MODES or (r.write is not None and not r.changes_only):
                return None
            args = (_WRITE_MODES[r.access],) + (() if r.target is None else (r.target,))
            # a write callback that acts on changes only: the op bails on any
            return Op(W_VALUE, self, args, mask=r.mask,
                      slow_bits=0xFFFFFFFF if r.write is not None else 0)
        if offset == 0x200:                     # SHORTS: the attribute fire() reads
            return Op(W_BITS, self, ("shorts", MODE_RW, 0, None, 0))
        if offset == 0x300 and self.HAS_INTEN:
            return Op(W_INTEN, self, self._line_sink(), slow_bits=slow_bits)
        if offset == 0x304:
            return Op(W_INTENSET, self, slow_bits=slow_bits)
        if offset == 0x308:
            return Op(W_INTENCLR, self, self._line_sink(), slow_bits=slow_bits)
        return None

    def _line_sink(self) -> tuple:
        """Where this block's line goes when a write lowers it, for the
        EVENT/INTEN ops (emu/soc/ops.py): ``(cpu, irq, listeners)`` when
        lowering is this class's _set_irq handing the level to the SoC's
        ``set_irq``, which clears the CPU's ``irq_level`` bit and tells its
        listeners (the SoC's ``line_sink``); () otherwise (the model lowers it)."""
        soc = self.soc
        sink = getattr(soc, "line_sink", None)
        if (self.irq is None or sink is None or type(self)._set_irq is not NrfPeripheral._set_irq
                or type(self).update_irq is not NrfPeripheral.update_irq
                or "_set_irq" in self.__dict__ or "update_irq" in self.__dict__):
            return ()
        s = sink()
        return (s[0], self.irq, s[1]) if s else ()

    def read(self, offset: int, size: int = 4) -> int:
        fn = self._readers.get(offset)
        if fn is not None:                      # computed reads (COUNTER, IN, ...)
            return fn(offset) & 0xFFFFFFFF
        if offset in self.events:
            return self.events[offset]
        r = self._regs.get(offset)
        if r is not None:
            if r.access == WO:
                return 0
            return self.values[offset]
        if offset in self.TASKS:
            return 0
        if offset == 0x200:
            return self.shorts
        if offset in (0x300, 0x304, 0x308) and (offset != 0x300 or self.HAS_INTEN):
            return self.inten
        return self.read_other(offset)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        value &= 0xFFFFFFFF
        if offset in self.TASKS:
            if value & 1:
                self.trigger(offset)
            return
        if offset in self.events:
            self.events[offset] = value & 1
            self.update_irq()
            return
        r = self._regs.get(offset)
        if r is not None:
            if r.access == RO:
                self.log_once(("ro", offset), "write %#x to read-only %s ignored", value, r.name)
                return
            at = offset if r.target is None else r.target
            old = self.values[at]
            if r.access == W1S:
                new = old | (value & r.mask)
            elif r.access == W1C:
                new = old & ~(value & r.mask)
            else:
                new = (old & ~r.mask) | (value & r.mask)
            self.values[at] = new
            if r.write is not None:
                getattr(self, r.write)(new, old)
            return
        if offset == 0x200:
            self.shorts = value
            return
        if offset == 0x300 and self.HAS_INTEN:
            self.inten = value
            self.update_irq()
            return
        if offset == 0x304:
            self._intenset(value)
            return
        if offset == 0x308:
            self._intenclr(value)
            return
        self.write_other(offset, value)

    def _intenset(self, value: int) -> None:
        """INTENSET: it can only raise the line, through the bits it sets.
        Drivers toggle INTENSET/INTENCLR around critical reads (MicroPython's
        ticks_us: ~10^6 per emulated s)."""
        old = self.inten
        self.inten = old | value
        if not self.irq_line_level and self.inten != old:
            events = self.events
            for off in events:
                if events[off] and value & (1 << ((off - 0x100) >> 2)):
                    self._set_irq(True)
                    break

    def _intenclr(self, value: int) -> None:
        """INTENCLR: it can only lower the line."""
        old = self.inten
        self.inten = old & ~value
        if self.irq_line_level and self.inten != old:
            self.update_irq()

    def read_other(self, offset: int) -> int:
        self.log_once(("r", offset), "read of unmodelled register +%#05x", offset)
        return self.extra.get(offset, 0)

    def write_other(self, offset: int, value: int) -> None:
        self.log_once(("w", offset), "write %#x to unmodelled register +%#05x (stored)", value,
                      offset)
        self.extra[offset] = value

    # -- helpers for subclasses ----------------------------------------
    def reg(self, name: str, index: int = 0) -> int:
        return self.values[self.offset_of(name, index)]

    def set_reg(self, name: str, value: int, index: int = 0) -> None:
        self.values[self.offset_of(name, index)] = value & 0xFFFFFFFF

    def offset_of(self, name: str, index: int = 0) -> int:
        for r in self.REGISTERS:
            if r.name == name:
                return r.offset + index * r.stride
        raise KeyError(name)

    # -- state ---------------------------------------------------------
    def save_state(self) -> dict:
        return {"values": dict(self.values), "events": dict(self.events), "inten": self.inten,
                "shorts": self.shorts, "extra": dict(self.extra),
                "model": self.save_model_state()}

    def load_state(self, state: dict) -> None:
        self.values = dict(state["values"])
        self.events = dict(state["events"])
        self.inten = state["inten"]
        self.shorts = state["shorts"]
        self.extra = dict(state["extra"])
        self.load_model_state(state.get("model", {}))
        self.irq_line_level = False
        self.update_irq()

    def save_model_state(self) -> dict:
        """Internal state beyond registers (subclasses)."""
        return {}

    def load_model_state(self, state: dict) -> None:
        pass


def _bind_index(meth: Callable, idx: int) -> Callable[[], Any]:
    return lambda: meth(idx)
