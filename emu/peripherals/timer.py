"""TIMER: 8/16/24/32-bit timer/counter with capture/compare.

nRF52832 Product Specification v1.4, section 23 "TIMER - Timer/counter".
TIMER0-2 (0x40008000/9000/A000, IRQ 8-10) have 4 CC registers, TIMER3-4
(0x4001A000/B000, IRQ 26-27) have 6.

Timer mode counts at f_TIMER = 16 MHz / 2^PRESCALER (32 << PRESCALER ticks
per count).  The counter is never ticked: ``base_value`` plus whole periods
since ``base_time``; one clock event is armed for the next CC match.  A
COMPARE[n] event fires when the counter becomes equal to CC[n] (compared on
BITMODE bits); SHORTS COMPARE[n]_CLEAR / COMPARE[n]_STOP act immediately
(the period with COMPARE_CLEAR is exactly CC counts).  Counter and low-power
counter modes count TASKS_COUNT and compare at once.  CAPTURE[n] copies the
counter into CC[n].  SHUTDOWN stops and clears the counter.

With native Cells the compare event, CPU writes of CC and the CAPTURE
tasks run in C (emu.soc._mmio.TimerCore: the same steps as _on_compare,
_rearm, the CC write and task_CAPTURE), calling this model's fire() for a
compare whenever a shortcut, PPI or the energy model is involved; the
pure-Python path runs this file's code (the reference;
tests/peripherals/test_timer_core.py).

Not modelled: the HFCLK source dependency (TIMER counts whether or not
HFCLK was started) and the 1 MHz/PCLK16M selection difference in power; the
counter value is not readable except through CAPTURE (as on silicon).
"""
from __future__ import annotations

from emu.clock import HF16_TICKS
from emu.peripherals.base import NrfPeripheral, Reg, RW
from emu.soc.ops import W_CALL, Op, cell_property

BITMODE_MASK = {0: 0xFFFF, 1: 0xFF, 2: 0xFFFFFF, 3: 0xFFFFFFFF}


class Timer(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_due", "_ev", "max_mask", "num_cc")
    STRUCTURE = ("_core",)
    NAME = "TIMER"
    HAS_INTEN = False
    # the counter's base, in the Cells: TimerCore reads and folds it in C
    NATIVE_CELLS = ("running", "base_time", "base_value")
    running = cell_property(0, "the counter runs (0/1)")
    base_time = cell_property(1, doc="tick the count is based on")
    base_value = cell_property(2, doc="the count at base_time")
    #: the compare event, CC writes and CAPTURE tasks carried out in C
    #: (emu.soc._mmio.TimerCore: the same steps) when the Cells are native
    native_core = True
    _core = None

    def __init__(self, soc, base: int, name=None, irq=None, num_cc=None):
        if num_cc is None:
            num_cc = 6 if base in (0x4001A000, 0x4001B000) else 4
        self.num_cc = num_cc
        self.TASKS = {0x000: "START", 0x004: "STOP", 0x008: "COUNT", 0x00C: "CLEAR",
                      0x010: "SHUTDOWN"}
        self.EVENTS = {}
        self.SHORTS = {}
        for n in range(num_cc):
            self.TASKS[0x040 + 4 * n] = f"CAPTURE[{n}]"
            self.EVENTS[0x140 + 4 * n] = f"COMPARE[{n}]"
            self.SHORTS[n] = (0x140 + 4 * n, 0x00C)          # COMPARE[n]_CLEAR
            self.SHORTS[8 + n] = (0x140 + 4 * n, 0x004)      # COMPARE[n]_STOP
        self.REGISTERS = [
            Reg(0x504, "MODE", 0, RW, mask=0x3, write="_wr_cfg"),
            Reg(0x508, "BITMODE", 0, RW, mask=0x3, write="_wr_cfg"),
            Reg(0x510, "PRESCALER", 4, RW, mask=0xF, write="_wr_cfg"),
            Reg(0x540, "CC", 0, RW, write="_wr_cc", count=num_cc),
        ]
        self._ev = soc.clock.event(f"{name or 'timer'}.compare", self._on_compare)
        super().__init__(soc, base, name, irq)
        self._core = self._native_core()
        if self._core is not None:
            self._ev.fn = self._core.fire

    def _native_core(self):
        """emu.soc._mmio.TimerCore over this TIMER, or None (pure Python, the
        class switch off, or a subclass or instance that changes the steps
        it writes again)."""
        if not self._core_allowed(_CORE_STEPS) or self._regs[0x540].mask != 0xFFFFFFFF:
            return None
        from emu.peripherals.ppi import Ppi
        from emu import native
        cells = tuple(self.NATIVE_CELLS.index(n) for n in ("running", "base_time", "base_value"))
        # the PPI listens to every block: a compare it has no task for is
        # not routed (its _map, read in C), anything else is the model's
        return native.load("emu.peripherals._cores").TimerCore(self, self._ev, self.clock, self._cells, self.num_cc, cells,
                               HF16_TICKS, self.max_mask, Ppi._on_event)

    def reset(self) -> None:
        super().reset()
        self.running = False
        self.base_value = 0
        self.base_time = 0
        self._ev.cancel()

    # -- public --------------------------------------------------------
    @property
    def counter(self) -> int:
        return self._count_at(self.clock.now)[1]

    # -- tasks ---------------------------------------------------------
    def task_START(self) -> None:
        if self.running:
            return
        self.running = True
        self.base_time = self.clock.now
        self._rearm()

    def task_STOP(self) -> None:
        if self.running:
            self.base_value = self.counter
            self.running = False
        self._ev.cancel()

    def task_SHUTDOWN(self) -> None:
        self.task_STOP()
        self.base_value = 0

    def task_CLEAR(self) -> None:
        self.base_value = 0
        self.base_time = self.clock.now
        self._ev.cancel()            # the counter jumped: no stale edge to process
        self._rearm()

    def task_COUNT(self) -> None:
        if not self.running or (self.values[0x504] & 3) == 0:
            return
        self.base_value = (self.base_value + 1) & self._mask()
        cur = self.base_value
        for n in range(self.num_cc):
            if (self.values[0x540 + 4 * n] & self._mask()) == cur:
                self.fire(0x140 + 4 * n)

    def task_CAPTURE(self, n: int) -> None:
        self.values[0x540 + 4 * n] = self.counter

    # -- registers -----------------------------------------------------
    def write(self, offset: int, value: int, size: int = 4) -> None:
        if self.running and offset in (0x504, 0x508, 0x510):
            # fold the count at the old rate (the partial period is lost)
            self.log_once("cfgrun", "MODE/BITMODE/PRESCALER changed while running")
            self.base_value, self.base_time = self.counter, self.clock.now
        super().write(offset, value, size)

    def write_op(self, offset: int):
        # write() above adds to the base only for MODE/BITMODE/PRESCALER, and
        # CC has a write callback: the events and INTENSET/INTENCLR (NimBLE
        # clears COMPARE[0] and [3] ~260 times an emulated second) are the
        # base's ops, unless write() is replaced on the instance (a guard)
        if not self._own("write", Timer):
            return None
        if offset in self.events or offset in (0x304, 0x308):
            return self._base_write_op(offset)
        core = self._core
        if core is not None:                 # in C: the same steps
            if 0x540 <= offset < 0x540 + 4 * self.num_cc:
                return Op(W_CALL, self, (core.write_cc,), timed=True)
            if 0x040 <= offset < 0x040 + 4 * self.num_cc:
                return Op(W_CALL, self, (core.capture,), timed=True)
        return None

    def _wr_cfg(self, new, old) -> None:
        self._rearm()

    def _wr_cc(self, new, old) -> None:
        self._rearm()

    # -- internals -----------------------------------------------------
    #: the counter's width: BITMODE's wider modes count this many bits
    max_mask = 0xFFFFFFFF

    def _mask(self) -> int:
        return min(BITMODE_MASK[self.values[0x508] & 3], self.max_mask)

    def _tpc(self) -> int:
        presc = self.values[0x510] & 0xF
        return HF16_TICKS << min(presc, 9)

    def _count_at(self, t: int):
        if not self.running or (self.values[0x504] & 3) != 0:
            return 0, self.base_value & self._mask()
        k = (t - self.base_time) // self._tpc()
        return k, (self.base_value + k) & self._mask()

    def _rearm(self, at: int = -1) -> None:
        """Arm the event for the next CC match after the count at ``at``
        (default: now).  With the core, its C (the same steps: the tasks
        and a compare handed to _on_compare re-arm through it)."""
        core = self._core
        if core is not None:
            core.rearm(at)
            return
        if not self.running or (self.values[0x504] & 3) != 0:
            self._ev.cancel()
            return
        ev = self._ev
        now = self.clock.now if at < 0 else at
        when = ev.when
        if when is not None and when <= now:
            # due but not yet processed (MMIO time runs up to a block ahead of
            # the scheduler): _on_event handles it and re-arms afterwards
            return
        k, cur = self._count_at(now)
        mask = self._mask()
        best = mask + 1
        for n in range(self.num_cc):
            d = (self.values[0x540 + 4 * n] - cur) & mask or (mask + 1)
            if d < best:
                best = d
        self._due = due = self.base_time + (k + best) * self._tpc()
        ev.schedule_at(due)

    _due = 0

    def _on_compare(self) -> None:
        # Evaluate at the tick the edge was due: the CPU may have run up to a
        # block past it (at 16 MHz a block can span several 1 MHz counts), and
        # the counter read at ``now`` would already have left CC[n].
        t = min(self._due, self.clock.now)
        _, cur = self._count_at(t)
        mask = self._mask()
        # fold the count into the base so SHORTS CLEAR/STOP act from here
        self.base_value, self.base_time = cur, t
        for n in range(self.num_cc):
            if (self.values[0x540 + 4 * n] & mask) == cur:
                self.fire(0x140 + 4 * n)
        # the next match after the count at t, not at now: a CC one count
        # later would already equal the count at now and be taken as a whole
        # wrap away (periph_timer_adjacent_cc.c); due before now, it fires at
        # once and is evaluated at its own tick
        self._rearm(t)

    def save_model_state(self) -> dict:
        return {"running": self.running, "base_value": self.base_value,
                "base_time": self.base_time}

    def load_model_state(self, s: dict) -> None:
        self.running, self.base_value, self.base_time = (s["running"], s["base_value"],
                                                         s["base_time"])
        self._rearm()


#: the methods whose steps TimerCore writes again, as this file defines them:
#: a subclass, an instance or a test replacing one runs the model's Python
_CORE_STEPS = {name: getattr(Timer, name) for name in (
    "fire", "trigger", "_on_compare", "_rearm", "write", "_wr_cc", "_count_at", "_mask",
    "_tpc", "task_CAPTURE", "update_irq", "_set_irq")}
