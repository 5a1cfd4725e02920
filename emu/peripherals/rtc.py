"""RTC: 24-bit real-time counter on the 32.768 kHz LFCLK.

nRF52832 Product Specification v1.4, section 24 "RTC - Real-time counter".
Instances: RTC0 0x4000B000 (IRQ 11, 3 CC), RTC1 0x40011000 (IRQ 17, 4 CC),
RTC2 0x40024000 (IRQ 36, 4 CC).

The counter is never ticked: it is ``base_value`` plus the number of
prescaled LFCLK edges since ``base_time`` (edges fall on multiples of 15 625
ticks of absolute time).  One clock event is armed for the next compare,
overflow or TICK; TICK is only scheduled while it is enabled in INTEN or
EVTEN, so an idle RTC costs one event per compare/overflow.

Event routing (24.5): INTENSET/INTENCLR route events to the interrupt, and
EVTEN/EVTENSET/EVTENCLR route them to PPI; ``event_listeners`` (PPI) are only
told about events whose EVTEN bit is set.  EVENTS_* registers are set
whenever the event occurs (except TICK, see below).

Compare (24.7): a COMPARE event fires when COUNTER becomes equal to CC[n].
If COUNTER is N, writing N to CC[n] never triggers; writing N+1 "may not"
trigger, because the CC write reaches the 32.768 kHz domain only after up to
two LFCLK cycles (the PS's t_COMPARE window).  This model takes the worst case
inside that window: N+1 is missed when the counter's next increment falls on
one of the next two LFCLK edges after the write (always the case with
PRESCALER=0), and fires otherwise (e.g. with PRESCALER=4095 the increment is
125 ms away; a periodic tick that sets CC=COUNTER+1 in its handler relies on
it).  N+2 or more always fires.  PRESCALER writes are ignored while the RTC
runs.  TRIGOVRFLW sets COUNTER to 0xFFFFF0.

Not modelled: the START/STOP/CLEAR task delay (up to ~46 us, t_START) and the
dependency on LFCLK running (the RTC counts even if LFCLK was never started,
logged once); EVENTS_TICK is not set while TICK is disabled in both INTEN and
EVTEN (polling EVENTS_TICK with both off reads 0).
"""
from __future__ import annotations

from emu.clock import LFCLK_TICKS
from emu.peripherals.base import NrfPeripheral, Reg, RO, RW
from emu.soc.ops import MODE_W1C, MODE_W1S, R_COUNTER, W_BITS, W_CALL, Op, cell_property

WRAP = 1 << 24
MASK = WRAP - 1
EV_TICK, EV_OVRFLW, EV_COMPARE0 = 0x100, 0x104, 0x140
# EVTEN/INTEN bit numbers
BIT_TICK, BIT_OVRFLW = 0, 1


class Rtc(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev", "num_cc", "suppress_k")
    STRUCTURE = ("_core",)
    NAME = "RTC"
    HAS_INTEN = False     # RTC has INTENSET/INTENCLR only
    NUM_CC = 4

    TASKS = {0x000: "START", 0x004: "STOP", 0x008: "CLEAR", 0x00C: "TRIGOVRFLW"}
    # the counter's base, in the Cells: the bus computes COUNTER from them in C
    NATIVE_CELLS = ("running", "base_time", "period", "base_value", "evten")
    running = cell_property(0, "the counter runs (0/1)")
    base_time = cell_property(1, doc="tick of the LFCLK edge the count is based on")
    period = cell_property(2, doc="ticks per increment (prescaled LFCLK)")
    base_value = cell_property(3, doc="COUNTER at base_time")
    evten = cell_property(4, doc="EVTEN: the events routed to PPI")
    _tick_bit = 1 << BIT_TICK     # EVTENSET/EVTENCLR touching TICK go to the model
    #: the clock event, _rearm and CPU writes of CC carried out in C
    #: (emu.soc._mmio.RtcCore: the same steps) when the Cells are native
    native_core = True
    _core = None
    REGISTERS = [
        Reg(0x340, "EVTEN", 0, RW, read="_rd_evten", write="_wr_evten"),
        Reg(0x344, "EVTENSET", 0, RW, read="_rd_evten", write="_wr_evtenset"),
        Reg(0x348, "EVTENCLR", 0, RW, read="_rd_evten", write="_wr_evtenclr"),
        Reg(0x504, "COUNTER", 0, RO, read="_rd_counter"),
        Reg(0x508, "PRESCALER", 0, RW, mask=0xFFF, write="_wr_prescaler"),
        Reg(0x540, "CC", 0, RW, mask=MASK, write="_wr_cc", count=4),
    ]

    def __init__(self, soc, base: int, name=None, irq=None, num_cc=None):
        if num_cc is None:
            num_cc = 3 if base == 0x4000B000 else 4
        self.num_cc = num_cc
        self.EVENTS = {EV_TICK: "TICK", EV_OVRFLW: "OVRFLW"}
        for n in range(num_cc):
            self.EVENTS[EV_COMPARE0 + 4 * n] = f"COMPARE[{n}]"
        self._ev = soc.clock.event(f"{name or 'rtc'}.next", self._on_event)
        super().__init__(soc, base, name, irq)
        if num_cc < 4:   # RTC0: CC[3] does not exist
            self._regs.pop(0x540 + 12, None)
            self.values.pop(0x540 + 12, None)
        self._core = self._native_core()
        if self._core is not None:
            self._ev.fn = self._core.fire

    def _native_core(self):
        """emu.soc._mmio.RtcCore over this RTC, or None (pure Python, the
        class switch off, or a subclass or instance that changes the steps
        it writes again)."""
        if not self._core_allowed(_CORE_STEPS):
            return None
        from emu import native
        cells = tuple(self.NATIVE_CELLS.index(n) for n in
                      ("running", "base_time", "period", "base_value", "evten"))
        return native.load("emu.peripherals._cores").RtcCore(self, self._ev, self.clock, self._cells, self.num_cc, cells,
                             MASK, LFCLK_TICKS)

    def reset(self) -> None:
        super().reset()
        self.evten = 0
        self.running = False
        self.base_value = 0
        self.base_time = 0
        self.period = LFCLK_TICKS
        self.suppress_k = [None] * self.num_cc
        self._ev.cancel()

    # -- public --------------------------------------------------------
    @property
    def counter(self) -> int:
        return self._count_at(self.clock.now)[1]

    # -- tasks ---------------------------------------------------------
    def task_START(self) -> None:
        if self.running:
            return
        now = self.clock.now
        self.running = True
        # the counter advances on the next LFCLK edges
        self.base_time = -(-now // LFCLK_TICKS) * LFCLK_TICKS
        self.period = LFCLK_TICKS * ((self.values[0x508] & 0xFFF) + 1)
        self._rearm()

    def task_STOP(self) -> None:
        if not self.running:
            return
        self.base_value = self.counter
        self.running = False
        self._ev.cancel()

    def task_CLEAR(self) -> None:
        self._set_counter(0)

    def task_TRIGOVRFLW(self) -> None:
        self._set_counter(0xFFFFF0)

    # -- register callbacks --------------------------------------------
    def _rd_counter(self, _off) -> int:
        # busy-wait delay loops poll COUNTER: _count_at(now)[1], written out
        t = self.clock.now
        if not self.running or t < self.base_time + self.period:
            return self.base_value
        return (self.base_value + (t - self.base_time) // self.period) & MASK

    def _rd_evten(self, _off) -> int:
        return self.evten

    # EVTEN only changes the schedule through TICK (a COMPARE or OVRFLW event
    # is planned whatever its routing): re-plan only when TICK's routing
    # changes.  Tick handlers toggle EVTEN.COMPARE ~2000 times a second.
    def _wr_evten(self, new, old) -> None:
        self._set_evten(new & self._evmask())

    def _wr_evtenset(self, new, old) -> None:
        self._set_evten(self.evten | (new & self._evmask()))

    def _wr_evtenclr(self, new, old) -> None:
        self._set_evten(self.evten & ~new)

    def _set_evten(self, evten: int) -> None:
        tick = (self.inten | self.evten) & 1
        self.evten = evten
        if (self.inten | evten) & 1 != tick:
            self._rearm()

    def _wr_prescaler(self, new, old) -> None:
        if self.running:
            self.log_once("presc", "PRESCALER written while running: ignored (PS 24.3)")
            self.values[0x508] = old

    def _wr_cc(self, new, old) -> None:
        # the same value leaves the next edge where it is (FreeRTOS's
        # tickless idle rewrites CC[0] unchanged ~240 times an emulated second)
        if new != old:
            self._rearm()

    # -- bus ops (emu/soc/ops.py) ----------------------------------------
    def read_op(self, offset: int):
        if offset == 0x504 and self._own("read", NrfPeripheral):   # as _rd_counter
            return Op(R_COUNTER, self, self.NATIVE_CELLS[:4], timed=True, mask=MASK)
        return super().read_op(offset)

    def write_op(self, offset: int):
        # write() below adds to the base only for INTENSET/INTENCLR (a change
        # of TICK re-plans: slow_bits) and CC (no op: it has a write callback);
        # none while write() is replaced on the instance (the SoftDevice's guard)
        if not self._own("write", Rtc):
            return None
        if offset in (0x304, 0x308):
            op = self._base_write_op(offset, slow_bits=1 << BIT_TICK)
            if self._core is not None:       # a change of TICK: its steps in C too
                op.slow = self._core.write_inten
            return op
        if self._core is not None and 0x540 <= offset < 0x540 + 4 * self.num_cc:
            return Op(W_CALL, self, (self._core.write_cc,), timed=True)   # in C
        if offset in self.events:
            return self._base_write_op(offset)
        # EVTENSET/EVTENCLR (tick handlers switch COMPARE's routing around every
        # CC write: wasp-os ~3000 times an emulated second): bits of evten in
        # place; a write touching TICK re-plans the schedule (the model)
        if offset == 0x344:
            return Op(W_BITS, self, ("evten", MODE_W1S, 0, "_tick_bit", 0),
                      mask=self._evmask())
        if offset == 0x348:
            return Op(W_BITS, self, ("evten", MODE_W1C, 0, "_tick_bit", 0))
        return None

    def write(self, offset: int, value: int, size: int = 4) -> None:
        # FreeRTOS's tickless idle writes INTENCLR, CC[0] and INTENSET around
        # every sleep (~900 an emulated second on InfiniTime): these go to
        # the base class's steps for them directly, the rest through its decoding
        if offset == 0x304 or offset == 0x308:
            # the schedule changes only when INTENSET/INTENCLR switch TICK
            tick = (self.inten | self.evten) & 1
            if offset == 0x304:
                self._intenset(value & 0xFFFFFFFF)
            else:
                self._intenclr(value & 0xFFFFFFFF)
            if (self.inten | self.evten) & 1 != tick:
                self._rearm()
            return
        if 0x540 <= offset < 0x540 + 4 * self.num_cc:
            mask = self._regs[offset].mask      # CC[n] in REGISTERS: RW, _wr_cc
            values = self.values
            old = values[offset]
            values[offset] = new = (old & ~mask) | (value & mask)
            self._wr_cc(new, old)
        else:
            super().write(offset, value, size)
            return
        if self.running:
            n = (offset - 0x540) >> 2
            now = self.clock.now
            k_now, cur = self._count_at(now)
            # COUNTER is N and CC written N+1: missed when the increment to
            # N+1 comes within the write's two-LFCLK-cycle synchronisation
            next_inc = self.base_time + (k_now + 1) * self.period
            sync_done = (now // LFCLK_TICKS + 2) * LFCLK_TICKS
            self.suppress_k[n] = k_now + 1 if ((self.values[offset] - cur) & MASK == 1
                                               and next_inc <= sync_done) else None

    # -- events --------------------------------------------------------
    def fire(self, offset: int) -> None:
        """Set the event; tell PPI only if its EVTEN bit is set."""
        self.events[offset] = 1
        if self.evten & (1 << ((offset - 0x100) >> 2)):
            for fn in self.event_listeners:
                fn(self, offset)
        self.update_irq()

    def _on_event(self) -> None:
        now = self.clock.now
        k, cur = self._count_at(now)
        if (self.inten | self.evten) & 1:
            self.fire(EV_TICK)
        if cur == 0:
            self.fire(EV_OVRFLW)
        for n in range(self.num_cc):
            if self.values[0x540 + 4 * n] == cur:
                if self.suppress_k[n] == k:
                    self.suppress_k[n] = None
                    continue
                self.fire(EV_COMPARE0 + 4 * n)
        self._rearm()

    # -- helpers -------------------------------------------------------
    def _evmask(self) -> int:
        return 0x3 | (((1 << self.num_cc) - 1) << 16)

    def _count_at(self, t: int):
        """(increments since base, COUNTER) at time t."""
        if not self.running or t < self.base_time + self.period:
            return 0, self.base_value
        k = (t - self.base_time) // self.period
        return k, (self.base_value + k) & MASK

    def _set_counter(self, value: int) -> None:
        now = self.clock.now
        self.base_value = value
        if self.running:
            # keep counting on the same LFCLK edge grid
            self.base_time = self._last_edge(now)
        self.suppress_k = [None] * self.num_cc
        self._ev.cancel()            # the counter jumped: no stale edge to process
        self._rearm()

    def _last_edge(self, now: int) -> int:
        return (now // LFCLK_TICKS) * LFCLK_TICKS

    def _rearm(self) -> None:
        if self._core is not None:
            self._core.rearm()
            return
        if not self.running:
            self._ev.cancel()
            return
        ev = self._ev
        now = self.clock.now
        when = ev.when
        if when is not None and when <= now:
            # An edge is due but not processed yet (an MMIO access inside a
            # CPU slice sees time up to one block ahead of the scheduler).
            # Leave it: _on_event handles that edge and re-arms afterwards;
            # rescheduling from "now" would skip a COMPARE on exactly that edge.
            return
        k_now, cur = self._count_at(now)
        if (self.inten | self.evten) & 1:
            dk = 1
        else:
            dk = WRAP - cur if cur else WRAP       # overflow
            for n in range(self.num_cc):
                d = (self.values[0x540 + 4 * n] - cur) & MASK or WRAP
                if d < dk:
                    dk = d
        ev.schedule_at(self.base_time + (k_now + dk) * self.period)

    def save_model_state(self) -> dict:
        return {"evten": self.evten, "running": self.running, "base_value": self.base_value,
                "base_time": self.base_time, "period": self.period,
                "suppress_k": list(self.suppress_k)}

    def load_model_state(self, s: dict) -> None:
        for k, v in s.items():
            setattr(self, k, list(v) if isinstance(v, list) else v)
        self._rearm()


#: the methods whose steps RtcCore writes again, as this file defines them:
#: a subclass, an instance or a test replacing one runs the model's Python
_CORE_STEPS = {name: getattr(Rtc, name) for name in (
    "fire", "_on_event", "_rearm", "write", "_wr_cc", "_count_at", "update_irq", "_set_irq")}
