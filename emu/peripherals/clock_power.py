"""CLOCK and POWER: one slot (0x40000000), one interrupt (IRQ 0 POWER_CLOCK).

nRF52832 Product Specification v1.4, section 17 "POWER - Power supply" and
section 18 "CLOCK - Clock control"; reset behaviour from section 17.8
("Reset behavior") and RESETREAS (17.9.x).

CLOCK: TASKS_HFCLKSTART/STOP, LFCLKSTART/STOP, CAL, CTSTART/CTSTOP.  Starting
a clock sets its *RUN register at once and, after the start-up time of the
selected source (``STARTUP``: HFXO 360 us, LFRC 600 us, LFXO 250 ms, LFSYNT
100 us; PS typical figures), its STAT register and EVENTS_*STARTED.
LFCLKSRCCOPY latches LFCLKSRC when LFCLKSTART is triggered.  CAL ends with
EVENTS_DONE after ``T_CAL``; CTSTART ends with EVENTS_CTTO after CTIV x 0.25 s.
A board may shorten ``startup`` (an instance copy of STARTUP).

POWER: TASKS_CONSTLAT/LOWPWR (stored mode), EVENTS_POFWARN (the power-fail
comparator, below), SLEEPENTER/SLEEPEXIT (registers; not generated), RESETREAS (W1C, cumulative, cleared
only by power-on reset; bits set by :meth:`system_reset`: RESETPIN 'pin',
DOG 'dog', SREQ 'sysresetreq', LOCKUP 'lockup', OFF 'off' (wake from System
OFF by GPIO DETECT)), SYSTEMOFF, POFCON, GPREGRET/GPREGRET2, RAMSTATUS,
RAMON/RAMONB, RAM[n].POWER/POWERSET/POWERCLR, DCDCEN.

Reset (PS "Reset behavior" table): GPREGRET/GPREGRET2 survive soft reset
(SYSRESETREQ), CPU lockup and wake from System OFF; watchdog, pin and
power-on resets clear them.  RESETREAS survives every reset but power-on.

System OFF (17.1.2): writing 1 to SYSTEMOFF sets :attr:`system_off` and
powers the core off (``cpu.power_off()``: no instruction after the store
runs, no exception is taken; the run loop lets time pass from event to event
without spinning, and ``Machine.run`` reports it).
Every peripheral but GPIO (whose PIN_CNF, outputs and SENSE stay in force)
and this block is reset: their clocks are gone, so RTCs, TIMERs and the WDT
(which cannot run in System OFF) stop and their scheduled events are dropped.  The chip wakes with a system reset (RESETREAS.OFF,
GPREGRET kept) when GPIO DETECT rises (:meth:`wake_from_off`, called by
GPIO), at once if DETECT is already high when SYSTEMOFF is written; a pin
reset or a debugger reset (``Machine.system_reset``) also ends it.  On the
wake-up reset the RAM sections whose RAM[n].POWER SxRETENTION bit is 0 lose
their contents, modelled as cleared to zero (silicon leaves them undefined);
retained sections keep them.

Power-fail comparator (17.4): the supply VDD is :attr:`supply_v` (volts;
3.0 V on a bare chip, the PineTime's board sets it from its battery through
its 3.3 V regulator, emu/board/pinetime.py).  With POFCON.POF set and a
THRESHOLD of 4..15 (1.7 V to 2.8 V in 0.1 V steps), EVENTS_POFWARN fires
when :meth:`set_supply` takes VDD from at or above the threshold to below
it, and when POF is enabled (or the threshold raised) while VDD is already
below (the comparator's output changes then too).  Reserved THRESHOLD
values compare with nothing (logged once).  Below the brown-out level the
chip is off: that is a power cut (emu/powercut.py), not modelled here.

Not modelled: SLEEPENTER/
SLEEPEXIT events, Emulated System OFF (in debug interface mode), LPCOMP
ANADETECT and NFC field wake-up sources, RAM sections powered off in System
ON (SxPOWER=0 keeps the contents), DC/DC converter effects, CLOCK
TRACECONFIG, HFCLK/LFCLK gating of the peripherals that need them (RTC,
TIMER, ... count regardless).
"""
from __future__ import annotations

from emu.clock import ms, us, seconds
from emu.peripherals.base import NrfPeripheral, Reg, RO, RW, WO, W1C
from emu.soc.ops import Op, R_ATTR, cell_property

# event offsets
EV_HFCLKSTARTED, EV_LFCLKSTARTED, EV_POFWARN = 0x100, 0x104, 0x108
EV_DONE, EV_CTTO, EV_SLEEPENTER, EV_SLEEPEXIT = 0x10C, 0x110, 0x114, 0x118

RESETREAS_BITS = {"pin": 1 << 0, "dog": 1 << 1, "sysresetreq": 1 << 2, "lockup": 1 << 3,
                  "off": 1 << 16, "lpcomp": 1 << 17, "dif": 1 << 18, "nfc": 1 << 19}
KEEP_GPREGRET = {"sysresetreq", "lockup", "off"}

STARTUP = {"hfxo": us(360), "lfrc": us(600), "lfxo": ms(250), "lfsynt": us(100)}
T_CAL = ms(16)
SUPPLY_V = 3.0                 # VDD of a bare chip (a board sets its own)


def pof_threshold(pofcon: int):
    """POFCON's threshold in volts (PS v1.4 17.4: V17 = 4 ... V28 = 15), or
    None when POF is off or THRESHOLD is reserved."""
    t = (pofcon >> 1) & 0xF
    if not pofcon & 1 or t < 4:
        return None
    return round(1.7 + 0.1 * (t - 4), 1)
LFSRC = {0: "lfrc", 1: "lfxo", 2: "lfsynt"}


class ClockPower(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev_cal", "_ev_ct", "_ev_hf", "_ev_lf", "_keep", "low_power_mode", "startup",
                "supply_v", "system_off")
    STRUCTURE = ("power_listeners",)
    _keep = None          # set by a TASKS_HFCLKSTART while the crystal starts
    NAME = "CLOCK_POWER"
    HAS_INTEN = False
    TASKS = {0x000: "HFCLKSTART", 0x004: "HFCLKSTOP", 0x008: "LFCLKSTART", 0x00C: "LFCLKSTOP",
             0x010: "CAL", 0x014: "CTSTART", 0x018: "CTSTOP", 0x078: "CONSTLAT", 0x07C: "LOWPWR"}
    EVENTS = {EV_HFCLKSTARTED: "HFCLKSTARTED", EV_LFCLKSTARTED: "LFCLKSTARTED",
              EV_POFWARN: "POFWARN", EV_DONE: "DONE", EV_CTTO: "CTTO",
              EV_SLEEPENTER: "SLEEPENTER", EV_SLEEPEXIT: "SLEEPEXIT"}
    REGISTERS = [
        # CLOCK
        Reg(0x408, "HFCLKRUN", 0, RO),
        Reg(0x40C, "HFCLKSTAT", 0, RO),
        Reg(0x414, "LFCLKRUN", 0, RO),
        Reg(0x418, "LFCLKSTAT", 0, RO),
        Reg(0x41C, "LFCLKSRCCOPY", 0, RO),
        Reg(0x518, "LFCLKSRC", 0, RW, mask=0x00030003),
        Reg(0x538, "CTIV", 0, RW, mask=0x7F),
        # POWER
        Reg(0x400, "RESETREAS", 0, W1C, mask=0x000F000F),
        Reg(0x428, "RAMSTATUS", 0, RO, read="_rd_ramstatus"),
        Reg(0x500, "SYSTEMOFF", 0, WO, write="_wr_systemoff"),
        Reg(0x510, "POFCON", 0, RW, mask=0x1F, write="_wr_pofcon"),   # POF, THRESHOLD (4:1)
        Reg(0x51C, "GPREGRET", 0, RW, mask=0xFF),
        Reg(0x520, "GPREGRET2", 0, RW, mask=0xFF),
        Reg(0x524, "RAMON", 3, RW, mask=0x00030003),
        Reg(0x554, "RAMONB", 3, RW, mask=0x00030003),
        Reg(0x578, "DCDCEN", 0, RW, mask=0x1, write="_wr_dcdcen"),
        Reg(0x900, "RAM_POWER", 0xFFFF, RW, mask=0x00030003, count=8, stride=16),
        Reg(0x904, "RAM_POWERSET", 0xFFFF, WO, write="_wr_ram_powerset", count=8, stride=16),
        Reg(0x908, "RAM_POWERCLR", 0xFFFF, WO, write="_wr_ram_powerclr", count=8, stride=16),
    ]

    # LFCLKSTAT mirrored in a C cell: InfiniTime polls it 3.2 M times in its
    # first second, and a bus op reads the cell without taking the GIL (the
    # register itself stays in ``values``; _set_lfclkstat writes both)
    NATIVE_CELLS = ("lfclkstat",)
    lfclkstat = cell_property(0, "LFCLKSTAT, as in values[0x418]")

    def __init__(self, soc, base: int, name=None, irq=None):
        clk = soc.clock
        self._ev_hf = clk.event("clock.hfclkstarted", self._on_hf_started)
        self._ev_lf = clk.event("clock.lfclkstarted", self._on_lf_started)
        self._ev_cal = clk.event("clock.done", self._on_cal_done)
        self._ev_ct = clk.event("clock.ctto", self._on_ctto)
        self.startup = dict(STARTUP)
        self.system_off = False
        # fn() after DCDCEN, a clock or System OFF changes (emu/power.py)
        self.power_listeners: list = []
        self.low_power_mode = "LOWPWR"
        self.supply_v = SUPPLY_V       # VDD, volts (set_supply); kept across resets
        super().__init__(soc, base, name, irq=0 if irq is None else irq)

    def reset(self) -> None:
        keep = self._keep
        super().reset()
        for ev in (self._ev_hf, self._ev_lf, self._ev_cal, self._ev_ct):
            ev.cancel()
        self.system_off = False
        self.low_power_mode = "LOWPWR"
        if keep:
            self.values.update(keep)
        self.lfclkstat = self.values[0x418]

    # -- public --------------------------------------------------------
    def power_on_reset(self) -> None:
        self._keep = None
        self.reset()

    def system_reset(self, reason: str) -> None:
        """Chip reset: keep RESETREAS (plus this cause) and, if the PS says so, GPREGRET."""
        if self.system_off:
            self._lose_unretained_ram()
        keep = {0x400: self.values[0x400] | RESETREAS_BITS.get(reason, 0)}
        if reason not in RESETREAS_BITS:
            self.log_once(("reason", reason), "reset reason %r has no RESETREAS bit", reason)
        if reason in KEEP_GPREGRET:
            for off in (0x51C, 0x520):        # GPREGRET, GPREGRET2 (absent on the nRF51)
                if off in self.values:
                    keep[off] = self.values[off]
        self._keep = keep
        self.reset()
        self._keep = None

    def wake_from_off(self) -> None:
        """DETECT rose while in System OFF: the chip resets (RESETREAS.OFF)."""
        if self.system_off:
            self.soc.request_reset("off")

    @property
    def hfxo_running(self) -> bool:
        return bool(self.values[0x40C] & (1 << 16))

    @property
    def lfclk_running(self) -> bool:
        return bool(self.values[0x418] & (1 << 16))

    # -- CLOCK tasks ---------------------------------------------------
    def task_HFCLKSTART(self) -> None:
        self.values[0x408] = 1
        if not self.hfxo_running and not self._ev_hf.pending:
            self._ev_hf.schedule_in(self.startup["hfxo"])

    def task_HFCLKSTOP(self) -> None:
        self.values[0x408] = 0
        self._ev_hf.cancel()
        self.values[0x40C] = 0          # back on HFINT, which is not reported as running
        self._power_changed()

    def task_LFCLKSTART(self) -> None:
        self.values[0x414] = 1
        src = self.values[0x518] & 3
        self.values[0x41C] = self.values[0x518]
        if src not in LFSRC:
            self.log_once("lfsrc", "LFCLKSRC.SRC=%d is reserved; using LFRC", src)
            src = 0
        if not self._ev_lf.pending:
            self._ev_lf.schedule_in(self.startup[LFSRC[src]])

    def task_LFCLKSTOP(self) -> None:
        self.values[0x414] = 0
        self._ev_lf.cancel()
        self._set_lfclkstat(0)

    def task_CAL(self) -> None:
        if not self._ev_cal.pending:
            self._ev_cal.schedule_in(T_CAL)

    def task_CTSTART(self) -> None:
        self._ev_ct.schedule_in(seconds(0.25) * (self.values[0x538] & 0x7F))

    def task_CTSTOP(self) -> None:
        self._ev_ct.cancel()

    # -- POWER tasks ---------------------------------------------------
    def task_CONSTLAT(self) -> None:
        self.low_power_mode = "CONSTLAT"

    def task_LOWPWR(self) -> None:
        self.low_power_mode = "LOWPWR"

    # -- the power-fail comparator -----------------------------------------
    def set_supply(self, volts: float) -> None:
        """VDD becomes ``volts``: POFWARN when it falls below POFCON's threshold."""
        old, self.supply_v = self.supply_v, float(volts)
        thr = self._threshold()
        if thr is not None and old >= thr > self.supply_v:
            self.fire(EV_POFWARN)

    def _threshold(self):
        pofcon = self.values[0x510]
        thr = pof_threshold(pofcon)
        if thr is None and pofcon & 1:
            self.log_once("pofcon", "POFCON THRESHOLD %d is reserved: no POFWARN",
                          (pofcon >> 1) & 0xF)
        return thr

    def _wr_pofcon(self, new, old) -> None:
        was, now = pof_threshold(old), self._threshold()
        if now is not None and self.supply_v < now and (was is None or self.supply_v >= was):
            self.fire(EV_POFWARN)

    # -- completions ---------------------------------------------------
    def _on_hf_started(self) -> None:
        self.values[0x40C] = 1 | (1 << 16)     # SRC=Xtal, STATE=Running
        self._power_changed()
        self.fire(EV_HFCLKSTARTED)

    def _on_lf_started(self) -> None:
        src = self.values[0x41C] & 3
        self._set_lfclkstat((src if src in LFSRC else 0) | (1 << 16))
        self.fire(EV_LFCLKSTARTED)

    def _set_lfclkstat(self, v: int) -> None:
        self.values[0x418] = v
        self.lfclkstat = v
        self._power_changed()

    def _on_cal_done(self) -> None:
        self.fire(EV_DONE)

    def _on_ctto(self) -> None:
        self.fire(EV_CTTO)

    # -- registers -----------------------------------------------------
    def _rd_ramstatus(self, _off) -> int:
        ramon, ramonb = self.values[0x524], self.values[0x554]
        return (ramon & 3) | ((ramonb & 3) << 2)

    def _wr_systemoff(self, new, old) -> None:
        if new & 1 and not self.system_off:
            self._enter_system_off()

    def _enter_system_off(self) -> None:
        soc = self.soc
        self.system_off = True
        self.log.info("SYSTEMOFF: System OFF at t=%d", self.clock.now)
        for ev in (self._ev_hf, self._ev_lf, self._ev_cal, self._ev_ct):
            ev.cancel()
        gpio = soc.peripherals.get("gpio")
        for p in soc.peripherals.values():
            if p is not self and p is not gpio:
                p.reset()
        soc.cpu.power_off()
        self._power_changed()
        if getattr(gpio, "detect", False):
            self.wake_from_off()        # DETECT already high: wakes at once

    def _lose_unretained_ram(self) -> None:
        """Wake from System OFF: RAM sections without SxRETENTION are cleared."""
        if 0x900 not in self._regs:     # no RAM[n] block (nRF51 variant)
            return
        soc = self.soc
        ram_base, ram_end = soc.RAM_BASE, soc.RAM_BASE + soc.RAM_SIZE
        for n in range(8):
            power = self.values[0x900 + 16 * n]
            for sect in range(2):
                start = ram_base + n * 0x2000 + sect * 0x1000
                if start < ram_end and not power >> (16 + sect) & 1:
                    soc.cpu.write_mem(start, bytes(min(0x1000, ram_end - start)))

    def _wr_ram_powerset(self, new, old) -> None:
        pass

    def _wr_dcdcen(self, new, old) -> None:
        if new != old:
            self._power_changed()

    def _power_changed(self) -> None:
        for fn in self.power_listeners:
            fn()

    @property
    def dcdc(self) -> bool:
        """DCDCEN: the DC/DC converter is selected (else the LDO)."""
        return bool(self.values[0x578] & 1)

    def lfclk_source(self):
        """'lfrc', 'lfxo' or 'lfsynt' while LFCLK runs (its STAT), else None."""
        stat = self.values[0x418]
        return LFSRC.get(stat & 3, "lfrc") if stat & (1 << 16) else None

    def write(self, offset: int, value: int, size: int = 4) -> None:
        if 0x900 <= offset < 0x980 and (offset & 0xF) in (4, 8):
            p = offset & ~0xF
            if offset & 0xF == 4:
                self.values[p] |= value & 0x00030003
            else:
                self.values[p] &= ~(value & 0x00030003)
            return
        super().write(offset, value, size)

    # bus ops: the base's, except RAM[n].POWERSET/POWERCLR (read/write below)
    def read_op(self, offset: int):
        if (0x900 <= offset < 0x980 and (offset & 0xF) in (4, 8)
                or not self._own("read", ClockPower)):
            return None
        if offset == 0x418:
            return Op(R_ATTR, self, ("lfclkstat",))
        return self._base_read_op(offset)

    def write_op(self, offset: int):
        if (0x900 <= offset < 0x980 and (offset & 0xF) in (4, 8)
                or not self._own("write", ClockPower)):
            return None
        return self._base_write_op(offset)

    def read(self, offset: int, size: int = 4) -> int:
        if 0x900 <= offset < 0x980 and (offset & 0xF) in (4, 8):
            return self.values[offset & ~0xF]
        return super().read(offset, size)

    def _wr_ram_powerclr(self, new, old) -> None:
        pass

    def save_model_state(self) -> dict:
        return {"system_off": self.system_off, "mode": self.low_power_mode,
                "ev": [e.when for e in (self._ev_hf, self._ev_lf, self._ev_cal, self._ev_ct)]}

    def load_model_state(self, s: dict) -> None:
        self.lfclkstat = self.values[0x418]
        self.system_off, self.low_power_mode = s["system_off"], s["mode"]
        for e, w in zip((self._ev_hf, self._ev_lf, self._ev_cal, self._ev_ct), s["ev"]):
            if w is not None:
                e.schedule_at(w)
