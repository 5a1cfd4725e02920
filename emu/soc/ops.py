"""Register access operations: what one guest access to one offset does.

A model's register table (``NrfPeripheral.REGISTERS``, its ``EVENTS`` and
the nRF conventions in ``emu.peripherals.base``) is the one declaration of
its registers.  From it a model derives, per offset, an :class:`Op`: a small
description of the access that the bus can carry out without running the
model's Python code.  ``read_op(offset)`` / ``write_op(offset)`` on the
model return one, or None for "call the model's ``read``/``write``".

Two interpreters carry ops out, with the same semantics:

* ``emu.soc._mmio`` (emu/soc/_ops.c, the native MMIO callbacks), which reads and writes
  the model's own state: its :class:`Cells` (events, INTEN, the interrupt
  line and the cells a model names in ``NATIVE_CELLS``, in C memory, used
  without the GIL) or, for everything else, its Python attributes and
  dictionaries through the C API; the state stays the model's
  (inspectable from Python, snapshotted by its save_state);
* :func:`py_reader` / :func:`py_writer` below, for the pure-Python path
  (``PINETIME_EMU_PURE_PYTHON=1``).

Kinds.  Reads: ``CALL`` (``fn(offset)``, a model method), ``VALUE``
(``obj.values[offset]``), ``EVENT`` (``obj.events[offset]``), ``ATTR``
(``getattr(obj, name)``), ``CONST`` and ``COUNTER`` (a counter computed from
the time, ``base_value + (now - base_time) // period`` masked, 0 increments
before the first period and while not running: the RTC), ``CYCLES`` (the
CPU's cycle counter less a base: the DWT's CYCCNT).  Writes: ``EVENT``
(clear/set an event register), ``INTENSET``/``INTENCLR``/``INTEN``,
``VALUE`` (store a plain register through its mask, RW/W1S/W1C) and ``BITS``
(set or clear bits of an integer attribute: the NVIC's enable bits) and
``CALL`` (``fn(offset, value)``, a model callable: the RTC's CC writes,
carried out by emu.peripherals._cores.RtcCore in C) and ``FEED`` (a
watchdog's reload request RR[n], on the model's cells: nothing for a value
other than the reload, a watchdog not running or RR[n] not enabled; the
reload itself when RR[0] is the only one enabled and the count is not
paused: ``deadline = now + period``; anything else the model.  A polling
loop that feeds the dog may be counted instead of run: the skip moves the
deadline to the last iteration counted's feed, _slot.c's slot_replay).

A write op never raises an interrupt line itself: when the access would
change ``obj``'s line (or a bit of ``slow_bits``, bits whose change the
model must see, e.g. the RTC's TICK), the op *bails*: it leaves everything
untouched and the access goes to the model's ``write`` as if there were no
op.  Lowering is the exception where the model declares the line's sink:
EVENT, INTENCLR and INTEN ops with ``args`` ``(cpu, irq, listeners)``
(NrfPeripheral._line_sink) lower the line in C as the model's write would
(the CPU's ``irq_level`` bit cleared; bailing while the SoC has listeners);
the pure-Python interpreter hands such a write to the model.  A ``guard`` (``(busy_attr, due_attr)``) makes any op bail while
``getattr(obj, busy_attr) is not None and clock.now >= getattr(obj,
due_attr)``: a lazily completed transfer is due and the model must finish
it first (the legacy SPI's byte completion).

``stream``: an access of the legacy SPI that the native bus carries out in
C while the model has put the SPI in streaming mode (bytes to the display
queued in the Cells and handed over before any Python runs; _streams.c,
"Streams"); otherwise the op is its plain kind (``W_TXD``: the model).

``timed``: the bus brings the clock up to the access before the op (or the
model) runs; untimed ops skip that.  Writes that bail always sync.
"""
from __future__ import annotations

from operator import attrgetter as _attrgetter, is_ as _is
from typing import Any, Callable, Optional

from emu import native

class Steps(dict):
    """A table of steps for :func:`unreplaced` (name -> the function as its
    module defined it) made once at import: its names and their getter are
    built once, not at every ask (the run loop asks three tables at every
    Machine.run)."""

    def __init__(self, steps: dict):
        super().__init__(steps)
        self.names = tuple(self)
        self.functions = tuple(self.values())
        self.getter = _attrgetter(*self.names) if self.names else None


def unreplaced(obj, steps: dict) -> bool:
    """Each of ``steps`` (name -> the function as its module defined it) is
    still that function on ``obj``'s class (not a subclass's, not a test's
    monkeypatch of the class) and not replaced on the instance: only then
    may C code stand for those steps (the peripherals' cores, the CPU's run
    loop and pends in C).  ``steps`` may be a :class:`Steps`."""
    # (in C-level iterations: the run loop asks at every Machine.run, and a
    # run in small steps - a scenario, a debugger, a bench polling a
    # console - paid 11 us a call in the generator this replaces)
    if type(steps) is Steps:
        names, getter, functions = steps.names, steps.getter, steps.functions
        if getter is None:
            return True
    else:
        names = tuple(steps)
        if not names:
            return True
        getter, functions = _attrgetter(*names), steps.values()
    got = getter(type(obj))
    if len(names) == 1:
        got = (got,)
    return all(map(_is, got, functions)) and vars(obj).keys().isdisjoint(names)


# ----------------------------------------------------------------------
# where the hot state lives
# ----------------------------------------------------------------------
class PyCells(dict):
    """The pure-Python twin of ``emu.soc._mmio.Cells``: a peripheral's event
    registers (a dict offset -> 0/1, offsets 0x100-0x17C), ``inten``, ``line``
    and the model cells ``cell0``..``cell7``."""
    __slots__ = ("inten", "line") + tuple(f"cell{i}" for i in range(8))

    def __init__(self):
        super().__init__()
        self.inten = self.line = 0
        for i in range(8):
            setattr(self, f"cell{i}", 0)

    @staticmethod
    def _check(off) -> None:
        if not (isinstance(off, int) and 0x100 <= off <= 0x17C and not off & 3):
            raise KeyError(f"{off!r} is not an event register offset")

    def __setitem__(self, off, v) -> None:
        self._check(off)
        super().__setitem__(off, 1 if v else 0)

    def replace(self, mapping) -> None:
        items = [(k, 1 if v else 0) for k, v in dict(mapping).items()]
        for k, _v in items:
            self._check(k)
        self.clear()
        for k, v in sorted(items):
            super().__setitem__(k, v)

    def level(self) -> bool:
        inten = self.inten
        return any(v and inten >> ((off - 0x100) >> 2) & 1 for off, v in self.items())

    def copy(self) -> dict:
        return dict(self)


def new_cells(pure: bool = False):
    """A peripheral's Cells: in C memory (the MMIO callbacks use them without
    the GIL) unless ``pure`` or PINETIME_EMU_PURE_PYTHON, or not built."""
    mmio = native.load("emu.soc._mmio", pure)
    return mmio.Cells() if mmio is not None else PyCells()


def new_clock(pure: bool = False):
    """A machine's clock: ``emu._clock.Clock`` (emu.clock.Clock's API in C,
    emu/_clock.h) unless ``pure`` or PINETIME_EMU_PURE_PYTHON, or the
    native helpers are not built; else emu.clock.Clock, the reference."""
    from emu.clock import Clock
    mod = native.load("emu._clock", pure)
    return mod.Clock() if mod is not None else Clock()


def is_native_clock(clock) -> bool:
    """The C clock (emu._clock.Clock): only it is driven from C (the run
    loop, the peripherals' cores); a machine on emu.clock.Clock runs the
    Python steps throughout."""
    t = type(clock)
    return t.__module__ == "emu._clock" and t.__name__ == "Clock"


def opt_cell_property(index: int, doc: str = ""):
    """A model attribute that is a non-negative integer or None, kept in its
    Cells' ``cell<index>`` (-1 stands for None): the SPI's bytes in flight,
    the watchdog's deadline."""
    name = f"cell{index}"

    def fget(s):
        v = getattr(s._cells, name)
        return None if v < 0 else v

    def fset(s, v):
        setattr(s._cells, name, -1 if v is None else int(v))
    return property(fget, fset, doc=doc)


def cell_property(index: int, doc: str = ""):
    """A model attribute kept in its Cells' ``cell<index>`` (NATIVE_CELLS): an
    integer (a flag reads 0/1).  The getter is a C attrgetter, no Python frame."""
    import operator
    name = f"cell{index}"

    def fset(s, v):
        setattr(s._cells, name, int(v))
    return property(operator.attrgetter(f"_cells.{name}"), fset, doc=doc)


# kinds: declared here; emu/soc/_fabric.h's OP_KINDS has the same numbers,
# and emu/native.py refuses an emu.soc._mmio whose numbers differ
K_UNKNOWN, K_GENERIC = 0, 1      # (C only: an offset not resolved yet; the model's own)
R_CALL, R_VALUE, R_EVENT, R_ATTR, R_CONST, R_COUNTER, R_CYCLES = 2, 3, 4, 5, 6, 7, 8
W_EVENT, W_INTENSET, W_INTENCLR, W_INTEN, W_VALUE, W_TXD, W_BITS, W_CALL, W_FEED = \
    20, 21, 22, 23, 24, 25, 26, 27, 28
# W_VALUE access modes
MODE_RW, MODE_W1S, MODE_W1C = 0, 1, 2



def op_kinds() -> dict:
    """{name: number} of every kind and write mode, as C's OP_KINDS lists them."""
    names = ("K_UNKNOWN K_GENERIC R_CALL R_VALUE R_EVENT R_ATTR R_CONST R_COUNTER R_CYCLES "
             "W_EVENT W_INTENSET W_INTENCLR W_INTEN W_VALUE W_TXD W_BITS W_CALL W_FEED "
             "MODE_RW MODE_W1S MODE_W1C").split()
    return {n: globals()[n] for n in names}


def _check_native_kinds(mod) -> None:
    if getattr(mod, "OP_KINDS", None) != op_kinds():
        raise ValueError(f"emu.soc._mmio was built with other op kinds than emu/soc/ops.py "
                         f"declares ({getattr(mod, 'OP_KINDS', None)} != {op_kinds()})")


native.declare_check("emu.soc._mmio", _check_native_kinds)


READ_KINDS = {R_CALL: "call", R_VALUE: "value", R_EVENT: "event", R_ATTR: "attr",
              R_CONST: "const", R_COUNTER: "counter", R_CYCLES: "cycles"}
WRITE_KINDS = {W_EVENT: "event", W_INTENSET: "intenset", W_INTENCLR: "intenclr",
               W_INTEN: "inten", W_VALUE: "value", W_TXD: "txd", W_BITS: "bits", W_CALL: "call",
               W_FEED: "feed"}


class Op:
    """One offset's access, as data (see the module docstring).

    ``args`` by kind: CALL ``(fn,)``; ATTR ``(name[, shift])`` (``(getattr(obj,
    name) >> shift) & mask``: the NVIC's ISPR words from ``pending``); CONST ``(value,)``;
    COUNTER ``(running, base_time, period, base_value)`` attribute names;
    CYCLES ``(base,)``: the CPU's cycle count less ``base``, 32 bits (``obj``
    has ``cpu``; the DWT's CYCCNT while it counts);
    W_EVENT/W_INTENCLR/W_INTEN ``()`` or ``(cpu, irq, listeners)`` (the
    line's sink, for lowering it in C); W_CALL ``(fn,)``; W_FEED ``(reload
    value, RR[0]'s offset, running, deadline, paused_left, reloaded, mask,
    period)``: the names of the model's cells (NATIVE_CELLS; deadline and
    paused_left are ``opt_cell_property``: -1 for None; mask is RREN and
    period the reload's ticks, both as they were latched at START);
    W_VALUE ``(mode[, offset])`` (``offset``: the register the bits go to,
    when not the one accessed: the PPI's CHENSET/CHENCLR set and clear bits of
    CHEN; ``slow_bits`` then: bits whose change goes to the model, the op
    bailing, as for GPIO OUT/OUTSET/OUTCLR, whose pin changes the model
    drives); W_BITS ``(name, mode, shift, bail, bail_shift)``: set (W1S),
    clear (W1C) or write (RW: the field ``mask << shift`` becomes them) the
    bits ``(value & mask) << shift`` of ``obj``'s integer attribute ``name``
    (SHORTS: ``shorts``); the op bails when one of them is set in
    ``getattr(obj, bail) >> bail_shift`` (a negative shift shifts left;
    ``bail`` None: never; the NVIC's ISER/ICER on ``irq_enabled``, ISER
    bailing when a pending interrupt is enabled: the model asks for the run
    loop; ICPR clearing bits of ``pending``, bailing when a line to clear is
    still asserted: it pends again; the RTC's EVTENSET/EVTENCLR on
    ``evten``, bailing on TICK).  ``mask``: COUNTER's wrap mask, W_VALUE's writable
    bits.  ``slow_bits``: INTEN* bits whose change goes to the model, or to
    ``slow(offset, value)`` when given (the RTC's TICK: emu.peripherals._cores.RtcCore).
    """
    __slots__ = ("kind", "obj", "args", "timed", "mask", "slow_bits", "guard", "stream", "slow")

    def __init__(self, kind: int, obj: Any, args: tuple = (), *, timed: bool = False,
                 mask: int = 0xFFFFFFFF, slow_bits: int = 0,
                 guard: Optional[tuple] = None, stream: bool = False,
                 slow: Optional[Callable[[int, int], None]] = None):
        self.kind = kind
        self.obj = obj
        self.args = tuple(args)
        self.timed = timed
        self.mask = mask
        self.slow_bits = slow_bits
        self.guard = guard
        self.stream = stream
        self.slow = slow

    @property
    def steady(self) -> bool:
        """A read whose value changes only in a clock event, in a model's
        handling of a bus access, or from Python between runs, never with
        time alone: stored state (an event, a plain register, a constant,
        INTEN or a model cell), read without syncing the clock, unguarded,
        not streamed.  Inside a slice a polling loop may take it as
        unchanged from one iteration to the next (_blockhook.c, loop_step;
        _ops.c reads this once per op).  A register whose value depends on
        the time says so in its table (a computed read, ``Reg(read=...)``,
        ``timed`` when the time matters) or is a COUNTER or CYCLES op: never
        steady, and neither is any other computed read (the model's Python)."""
        if self.timed or self.guard is not None or self.stream:
            return False
        if self.kind in (R_EVENT, R_VALUE, R_CONST):
            return True
        if self.kind == R_ATTR and self.args:
            name = self.args[0]
            return name == "inten" or name in getattr(self.obj, "NATIVE_CELLS", ())
        return False

    def with_guard(self, guard: tuple, stream: bool = False) -> "Op":
        """This op, timed, bailing to the model while ``guard`` holds:
        ``(busy, due[, busy_cell, due_cell])`` - the attribute ``busy`` is
        not None and the access is at or after the tick ``due``; with the
        cell numbers both are cells of ``obj._cells`` (busy an ``_opt_cell``:
        -1 stands for None), which the native bus reads directly."""
        return Op(self.kind, self.obj, self.args, timed=True, mask=self.mask,
                  slow_bits=self.slow_bits, guard=guard, stream=stream, slow=self.slow)

    def describe(self) -> str:
        name = READ_KINDS.get(self.kind) if self.kind < W_EVENT else WRITE_KINDS.get(self.kind)
        return name or str(self.kind)

    def __repr__(self) -> str:
        return (f"Op({self.describe()}, {getattr(self.obj, 'name', self.obj)!s}, "
                f"timed={self.timed}, guard={self.guard})")


# ----------------------------------------------------------------------
# the pure-Python interpreter (the same semantics as emu/soc/_ops.c)
# ----------------------------------------------------------------------
def _level(events: dict, inten: int) -> bool:
    for off, v in events.items():
        if v and inten & (1 << ((off - 0x100) >> 2)):
            return True
    return False


def _guard_hit(op: Op, clock) -> bool:
    g = op.guard
    if g is None:
        return False
    return getattr(op.obj, g[0]) is not None and clock.now >= getattr(op.obj, g[1])


def py_reader(op: Op, clock, generic: Callable[[int], int]) -> Callable[[int], int]:
    """fn(offset) -> value, carrying out a read op (``generic`` when it bails)."""
    p, kind = op.obj, op.kind
    if kind == R_CALL:
        inner = op.args[0]
    elif kind == R_VALUE:
        def inner(off):
            return p.values[off]
    elif kind == R_EVENT:
        def inner(off):
            return p.events[off]
    elif kind == R_ATTR:
        name = op.args[0]
        shift = op.args[1] if len(op.args) > 1 else 0
        mask = op.mask

        def inner(off):
            return (getattr(p, name) >> shift) & mask
    elif kind == R_CONST:
        value = op.args[0]

        def inner(off):
            return value
    elif kind == R_COUNTER:
        running, base_time, period, base_value = op.args
        mask = op.mask

        def inner(off):
            t = clock.now
            bt, per = getattr(p, base_time), getattr(p, period)
            if not getattr(p, running) or t < bt + per:
                return getattr(p, base_value)
            return (getattr(p, base_value) + (t - bt) // per) & mask
    elif kind == R_CYCLES:
        base, cs = op.args[0], p.cpu.cs

        def inner(off):
            return (cs.cycles - base) & 0xFFFFFFFF
    else:
        raise ValueError(f"not a read op: {op!r}")
    if op.guard is None:
        return inner

    def guarded(off):
        if _guard_hit(op, clock):
            return generic(off)
        return inner(off)
    return guarded


def py_writer(op: Op, clock, generic: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """fn(offset, value) carrying out a write op (``generic(offset, value)`` when it bails)."""
    p, kind, slow = op.obj, op.kind, op.slow_bits
    if kind == W_EVENT:
        def inner(off, value):
            events = p.events
            v = value & 1
            old = events[off]
            events[off] = v
            level = _level(events, p.inten)
            if level != p.irq_line_level:
                events[off] = old
                return generic(off, value)
    elif kind in (W_INTENSET, W_INTENCLR, W_INTEN):
        def inner(off, value):
            old = p.inten
            new = (old | value if kind == W_INTENSET else
                   old & ~value if kind == W_INTENCLR else value)
            if (old ^ new) & slow and op.slow is not None:
                return op.slow(off, value)
            if (old ^ new) & slow or _level(p.events, new) != p.irq_line_level:
                return generic(off, value)
            p.inten = new
    elif kind == W_BITS:
        name, mode, shift, bail, bail_shift = op.args
        mask = op.mask

        def inner(off, value):
            bits = (value & mask) << shift
            if bail is not None:
                b = getattr(p, bail)
                if bits & (b >> bail_shift if bail_shift >= 0 else b << -bail_shift):
                    return generic(off, value)
            if mode == MODE_W1S:
                setattr(p, name, getattr(p, name) | bits)
            elif mode == MODE_W1C:
                setattr(p, name, getattr(p, name) & ~bits)
            else:
                setattr(p, name, (getattr(p, name) & ~(mask << shift)) | bits)
    elif kind == W_TXD:
        def inner(off, value):       # only the native bus streams: here, the model
            return generic(off, value)
    elif kind == W_CALL:
        inner = op.args[0]
    elif kind == W_FEED:
        def inner(off, value):       # only the native bus feeds on the cells: here, the
            return generic(off, value)       # model (Wdt.write, the same steps)
    elif kind == W_VALUE:
        mode, mask = op.args[0], op.mask
        target = op.args[1] if len(op.args) > 1 else None

        def inner(off, value):
            values = p.values
            off0 = off
            if target is not None:
                off = target
            old = values[off]
            if mode == MODE_W1S:
                new = old | (value & mask)
            elif mode == MODE_W1C:
                new = old & ~(value & mask)
            else:
                new = (old & ~mask) | (value & mask)
            if (old ^ new) & slow:
                return generic(off0, value)
            values[off] = new
    else:
        raise ValueError(f"not a write op: {op!r}")
    if op.guard is None:
        return inner

    def guarded(off, value):
        if _guard_hit(op, clock):
            return generic(off, value)
        return inner(off, value)
    return guarded
