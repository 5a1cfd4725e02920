"""WDT: watchdog timer.

nRF52832 Product Specification v1.4, section 25 "WDT - Watchdog timer".
Slot 0x40010000, IRQ 16.

TASKS_START loads the down-counter with CRV and starts it on the 32.768 kHz
clock; it times out after (CRV + 1) LFCLK periods unless every reload
request register enabled in RREN has been written with 0x6E524635
(``RR[n]``), which reloads the counter.  On timeout EVENTS_TIMEOUT is set
and, two 32.768 kHz cycles later, the chip resets (``soc.request_reset
('dog')``).  Once started the watchdog cannot be stopped, and CRV, RREN and
CONFIG are read-only (writes logged and ignored) until a reset.  RUNSTATUS
reads 1 while running; REQSTATUS bit n is 1 while RR[n] is enabled and not
yet written since the last reload.

The counter is lazy: one clock event at the timeout.  A reload only moves
the deadline; the event, when it comes at the old one, moves itself to the
new one.  (Firmware feeds the dog in busy loops: wasp-os's Bluetooth console
writes RR[0] on every turn of the loop that waits for a notification to be
sent, millions of times per emulated second, and re-scheduling the event on
each made the emulator run at a tenth of real time while the REPL talked.)  Pausing (25.3
"Temporarily pausing the watchdog"): with CONFIG.SLEEP=0 the counter stops
while the CPU sleeps (WFI, WFE, SLEEPONEXIT; the CPU's ``on_sleep`` hook
reports the exact tick it falls asleep and wakes), with CONFIG.HALT=0 while
:attr:`debug_halted` is true (``set_debug_halted``, for a debugger front end;
the GDB stub freezes emulated time while it halts, so there both settings
behave alike).  Paused, the remaining ticks are kept and the timeout event
cancelled; resuming re-arms it with what was left.  The watchdog is not
reset by a soft reset (SYSRESETREQ) or CPU lockup (PS "Reset behavior");
every other reset stops it, and so does entering System OFF.

The state the feeds touch lives in the Cells (NATIVE_CELLS: ``running``,
``deadline``, ``paused_left``, ``reloaded``, and RREN and the reload period
latched at START, ``feed_mask`` and ``feed_period``; CRV and RREN cannot
change while the dog runs).  With native Cells an RR write is a FEED bus op
(emu/soc/ops.py) carried out in C without the GIL (emu/soc/_ops.c,
``feed_write``: the same steps as ``write`` and ``_handle_rr`` take for the
common reload - RR[0], only RR[0] enabled, running, not paused, a deadline
set - and for the writes that reload nothing - a value other than the
reload, RR[n] not enabled, the dog not running); every other RR write goes
to ``write``.  RUNSTATUS is read from the ``running`` cell.  So a polling
loop that feeds the dog is a loop the CPU's loop watch may count instead
of run, the reload moved to the last iteration's feed (_slot.c,
slot_replay).  The Adafruit bootloader wasp-os ships feeds all eight RR
registers after reading RUNSTATUS, in the loop that waits in DFU mode
(``sd_app_evt_wait`` is commented out there): 1.4 million feeds an
emulated second, each a Python call before round three, a C call with the
GIL until round four.  The pure-Python path runs this file's code
(tests/peripherals/test_periph_wdt.py compares both).

Not modelled: pausing and resuming take effect at the exact tick rather than
on the next 32.768 kHz edge (the count loses or gains less than one LFCLK
period per pause).
"""
from __future__ import annotations

from emu.clock import LFCLK_TICKS
from emu.peripherals.base import NrfPeripheral, Reg, RO, RW, WO
from emu.soc.ops import R_ATTR, W_FEED, Op, cell_property, opt_cell_property, unreplaced

RELOAD = 0x6E524635
KEEP_RUNNING = {"sysresetreq", "lockup"}


class Wdt(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev_reset", "_ev_timeout", "cpu_sleeping", "deadline", "debug_halted",
                "paused_left", "reloaded", "running")
    # (feed_mask and feed_period: latched from CRV and RREN again by
    # load_model_state, so snapshots from before them load)
    STRUCTURE = ("_core", "feed_mask", "feed_period")
    NATIVE_CELLS = ("running", "deadline", "paused_left", "reloaded", "feed_mask",
                    "feed_period")
    running = cell_property(0, "TASKS_START was triggered (RUNSTATUS)")
    deadline = opt_cell_property(1, "absolute tick of the timeout, or None")
    paused_left = opt_cell_property(2, "ticks left while paused (CPU asleep, debug halt), or None")
    reloaded = cell_property(3, "RR[n] written since the last reload (bit n)")
    feed_mask = cell_property(4, "RREN as it was at START")
    feed_period = cell_property(5, "the reload's ticks, (max(CRV, 15) + 1) LFCLK periods, at START")
    NAME = "WDT"
    HAS_INTEN = False
    TASKS = {0x000: "START"}
    EVENTS = {0x100: "TIMEOUT"}
    REGISTERS = [
        Reg(0x400, "RUNSTATUS", 0, RO, read="_rd_runstatus"),
        Reg(0x404, "REQSTATUS", 1, RO, read="_rd_reqstatus"),
        Reg(0x504, "CRV", 0xFFFFFFFF, RW, write="_wr_locked"),
        Reg(0x508, "RREN", 1, RW, mask=0xFF, write="_wr_locked"),
        Reg(0x50C, "CONFIG", 1, RW, mask=0x9, write="_wr_locked"),
        Reg(0x600, "RR", 0, WO, write="_wr_rr", count=8),
    ]

    def __init__(self, soc, base: int, name=None, irq=None):
        self._ev_timeout = soc.clock.event("wdt.timeout", self._on_timeout)
        self._ev_reset = soc.clock.event("wdt.reset", self._on_reset)
        self.debug_halted = False
        self.cpu_sleeping = False
        super().__init__(soc, base, name, irq)
        self._core = None
        if self._core_allowed({}):
            from emu import native
            self._core = native.load("emu.peripherals._cores").WdtCore(self)
        # the CPU's sleep and wake-up (~1 400 an emulated second under
        # InfiniTime's idle): the core's cpu_sleep (the same steps; the
        # model's _update_pause only when the count pauses or resumes)
        # unless those steps are replaced
        if self._core is not None and self._core_allowed(_SLEEP_STEPS):
            soc.cpu.on_sleep.append(self._core.cpu_sleep)
        else:
            soc.cpu.on_sleep.append(self._cpu_sleep)

    #: the common reload carried out in C (the FEED op, emu/soc/_ops.c)
    #: when the Cells are native; False: every RR write through write()
    #: (for tests)
    native_core = True

    def write_op(self, offset: int):
        # RR[n]: the FEED op, the reload and the writes that reload nothing
        # (it hands anything else to write()); none while write() is
        # replaced (a subclass, an instance, a test)
        if 0x600 <= offset < 0x620 and self._core is not None \
                and self._core_allowed(_CORE_STEPS):
            # (the cells in the order of the op's roles, emu/soc/ops.py's W_FEED)
            return Op(W_FEED, self, (RELOAD, 0x600, "running", "deadline", "paused_left",
                                     "reloaded", "feed_mask", "feed_period"), timed=True)
        return super().write_op(offset)

    def read_op(self, offset: int):
        # RUNSTATUS is ``running``, read as an attribute (the Adafruit
        # bootloader reads it before each feed, millions of times a second)
        if offset == 0x400 and self._own("read", NrfPeripheral) \
                and unreplaced(self, {"_rd_runstatus": Wdt._rd_runstatus}):
            return Op(R_ATTR, self, ("running",), mask=1)
        return super().read_op(offset)

    def reset(self) -> None:
        super().reset()
        self.running = False
        self.reloaded = 0
        self.deadline = None
        self.paused_left = None
        self.feed_mask = self.feed_period = 0
        self._ev_timeout.cancel()
        self._ev_reset.cancel()

    # -- public --------------------------------------------------------
    def system_reset(self, reason: str) -> None:
        if self.running and reason in KEEP_RUNNING:
            return                   # PS: soft reset and lockup do not reset the WDT
        self.reset()

    def set_debug_halted(self, halted: bool) -> None:
        """The debugger halted/resumed the CPU; CONFIG.HALT=0 pauses the WDT."""
        self.debug_halted = bool(halted)
        self._update_pause()

    @property
    def paused(self) -> bool:
        return self.paused_left is not None

    @property
    def counter(self) -> int:
        """The down-counter value now (LFCLK periods left)."""
        if not self.running:
            return self.values[0x504]
        left = self.paused_left if self.paused_left is not None else \
            max(0, self.deadline - self.clock.now)
        return -(-left // LFCLK_TICKS) - 1 if left else 0

    # -- tasks ---------------------------------------------------------
    def task_START(self) -> None:
        if self.running:
            return
        self.running = True
        self.reloaded = 0
        self.feed_mask = self.values[0x508] & 0xFF      # locked from now on
        self.feed_period = self._period()
        self._reload()
        self._update_pause()            # started by PPI while the CPU sleeps

    # -- registers -----------------------------------------------------
    def _rd_runstatus(self, _off) -> int:
        return int(self.running)

    def _rd_reqstatus(self, _off) -> int:
        return self.values[0x508] & ~self.reloaded & 0xFF

    def _wr_locked(self, new, old) -> None:
        pass        # writes while running are refused in write()

    def write(self, offset: int, value: int, size: int = 4) -> None:
        if self.running and offset in (0x504, 0x508, 0x50C):
            self.log_once(("locked", offset), "write to %s while the WDT runs ignored",
                          self._regs[offset].name)
            return
        if 0x600 <= offset < 0x620:
            if offset == 0x600 and value == RELOAD and self.running and \
                    self.feed_mask == 1 and self.paused_left is None:
                # the common case, as _handle_rr + _reload would do it
                self.reloaded = 0
                self.deadline = self.clock.now + self.feed_period
                if self._ev_timeout.when is None:
                    self._ev_timeout.schedule_at(self.deadline)
                return
            self._handle_rr((offset - 0x600) >> 2, value)
            return
        super().write(offset, value, size)

    def _wr_rr(self, new, old) -> None:
        pass

    def _handle_rr(self, n: int, value: int) -> None:
        if value != RELOAD or not self.running:
            return
        rren = self.values[0x508] & 0xFF
        if not (rren >> n) & 1:
            return
        self.reloaded |= 1 << n
        if self.reloaded & rren == rren:
            self.reloaded = 0
            self._reload()

    # -- internals -----------------------------------------------------
    def _cpu_sleep(self, asleep: bool) -> None:
        self.cpu_sleeping = asleep
        self._update_pause()

    def _update_pause(self) -> None:
        """Pause or resume the count as CONFIG, CPU sleep and debug halt say."""
        config = self.values[0x50C]
        pause = self.running and (self.cpu_sleeping and not config & 0x1
                                  or self.debug_halted and not config & 0x8)
        if pause and self.paused_left is None and self.deadline is not None:
            self.paused_left = max(0, self.deadline - self.clock.now)
            self._ev_timeout.cancel()
        elif not pause and self.paused_left is not None:
            left, self.paused_left = self.paused_left, None
            self._arm(left)

    def _period(self) -> int:
        """The ticks from a reload to the timeout: (max(CRV, 15) + 1) LFCLK periods."""
        return (max(self.values[0x504], 0xF) + 1) * LFCLK_TICKS

    def _reload(self) -> None:
        period = self._period()
        if self.paused_left is not None:
            self.paused_left = period
            return
        self._arm(period)

    def _arm(self, ticks: int) -> None:
        self.deadline = self.clock.now + ticks
        when = self._ev_timeout.when
        if when is None or when > self.deadline:
            self._ev_timeout.schedule_at(self.deadline)

    def _on_timeout(self) -> None:
        if self.deadline is not None and self.deadline > self.clock.now:
            self._ev_timeout.schedule_at(self.deadline)    # reloaded since it was armed
            return
        self.deadline = None
        self.fire(0x100)
        self._ev_reset.schedule_in(2 * LFCLK_TICKS)

    def _on_reset(self) -> None:
        self.log.info("watchdog timeout: chip reset")
        self.soc.request_reset("dog")

    def save_model_state(self) -> dict:
        return {"running": self.running, "reloaded": self.reloaded, "deadline": self.deadline,
                "paused_left": self.paused_left, "debug_halted": self.debug_halted,
                "cpu_sleeping": self.cpu_sleeping,
                "reset_at": self._ev_reset.when}

    def load_model_state(self, s: dict) -> None:
        for k in ("running", "reloaded", "deadline", "paused_left", "debug_halted"):
            setattr(self, k, s[k])
        self.feed_mask = self.values[0x508] & 0xFF if self.running else 0
        self.feed_period = self._period() if self.running else 0
        self.cpu_sleeping = s.get("cpu_sleeping", False)
        if self.deadline is not None and self.paused_left is None:
            self._ev_timeout.schedule_at(self.deadline)
        if s.get("reset_at") is not None:
            self._ev_reset.schedule_at(s["reset_at"])


#: the write() whose reload branch the FEED op (emu/soc/_ops.c) writes again
_CORE_STEPS = {"write": Wdt.write}
#: what WdtCore.cpu_sleep stands for
_SLEEP_STEPS = {"_cpu_sleep": Wdt._cpu_sleep, "_update_pause": Wdt._update_pause}
