"""The energy model: current integrated over emulated time, part by part.

    meter = machine.power()                  # starts measuring now
    machine.run(seconds=10)
    r = meter.report()                       # PowerReport
    print(r.average_uA, r.battery_hours, [(p.name, p.share) for p in r.parts])

Each part of the chip and of the board is in one state at a time, and each
state draws one current from emu/currents.py (the one table of figures,
with their sources).  A part's state is re-read only when something tells
the meter it may have changed, at the emulated tick it changed
(``cpu.time_now()``: inside a slice, the time of the cycles executed so
far, as an MMIO access sees it):

* the CPU: ``cpu.on_sleep`` (WFI/WFE sleep and wake-up, from the run loop's
  own sleep accounting); System OFF through CLOCK/POWER's listeners;
* DCDCEN (DC/DC or LDO), HFXO, LFCLK and its source, System OFF: CLOCK/POWER's
  ``power_listeners``; ICACHECNF: the NVMC's;
* every nRF peripheral: ``power_watch`` after each task and event (the base
  class), the RADIO at each STATE change, GPIOTE after a CONFIG write;
* the PineTime's parts: the ST7789's, the NOR's and the I2C parts' power
  listeners, the backlight's and the motor's listeners, the touch RST pin;
* a reset of the chip or the machine: every part again.

Between two changes nothing runs: the charge of a part is its current times
the ticks it spent in that state, added when the state ends (integers: nA x
ticks, so the integral is exact).  The host's clock is never read.

The CPU's figures (PS "CPU running", Clock = HFXO) include the HF clock, so
``hfclk`` counts HFXO, or HFINT kept for a peripheral, only while the CPU
sleeps.  ``chip`` is the System ON base (or System OFF) current.

The record (``record=True``) is one row per ``interval`` of emulated time
(default 1 s; boundaries at whole multiples of it): each part's charge over
the row, in nA x ticks, so a row's average is exact and the rows add up to
:meth:`charge_nA_ticks` to the unit.  A row closes at the first change
after its boundary (nothing runs in between), goes to ``row_listeners`` as
it closes (``run --power x.csv`` streams them to the file) and is kept for
:meth:`rows`/:meth:`series`, at most ``max_rows`` of them: when full, pairs
are merged (the kept interval doubles), so memory stays bounded however long
the run.  ``interval=0`` closes a row at every change of a current instead
(the model's step function itself; rows still merge past ``max_rows``,
``max_rows=None`` keeps them all).

Not modelled: code running from RAM (the flash figures apply), the CPU's
current varying with the instructions, DC/DC efficiency changing with the
load, supply voltage (the PS's 3 V figures apply to the PineTime's 3.7-4.2 V
cell), RAM sections powered off in System ON, the legacy SPI/TWI blocks'
per-byte activity (the CPU, awake polling them, dominates), COMP/LPCOMP,
QDEC, PDM, I2S, NFCT, TEMP, RNG, ECB/CCM/AAR and the WDT (nA to tens of
uA), start-up currents of the oscillators, the touch controller's own
auto-standby, the battery's discharge curve and self-discharge.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Optional

from emu import checks
from emu.clock import NEVER, TICKS_PER_SECOND
from emu.currents import BATTERY_MAH, BATTERY_SOURCE, BY_KEY, CURRENT, TXPOWER_DBM

log = logging.getLogger("emu.power")

# RADIO STATE values (nRF52832 PS v1.4, RADIO STATE)
_RX_STATES, _TX_STATES = (3,), (11,)
_RX_RAMP, _TX_RAMP = (1, 4), (9, 12)  # RxRu, RxDisable; TxRu, TxDisable
_RX_IDLE, _TX_IDLE = 2, 10

DEFAULT_INTERVAL_S = 1.0      # the record's row (run --power-interval)
DEFAULT_MAX_ROWS = 8192       # rows kept in memory before pairs merge


@dataclass
class PartReport:
    name: str
    charge_uC: float          # microcoulombs
    average_uA: float
    share: float              # of the total charge, 0..1
    present_uA: float         # the current drawn now
    state: str                # the figure's key now ("" when it draws nothing)


@dataclass
class PowerReport:
    """What :meth:`PowerMeter.report` returns."""
    start_tick: int
    end_tick: int
    charge_uC: float
    average_uA: float
    present_uA: float
    parts: list = field(default_factory=list)          # [PartReport], largest share first
    battery_mAh: int = BATTERY_MAH
    battery_source: str = BATTERY_SOURCE

    @property
    def seconds(self) -> float:
        return (self.end_tick - self.start_tick) / TICKS_PER_SECOND

    @property
    def battery_hours(self) -> Optional[float]:
        """Hours a full battery lasts at this average current (None if 0)."""
        if self.average_uA <= 0:
            return None
        return self.battery_mAh * 1000.0 / self.average_uA

    def as_dict(self) -> dict:
        return {"start_s": self.start_tick / TICKS_PER_SECOND,
                "end_s": self.end_tick / TICKS_PER_SECOND, "seconds": self.seconds,
                "charge_uC": self.charge_uC, "average_uA": self.average_uA,
                "present_uA": self.present_uA, "battery_mAh": self.battery_mAh,
                "battery_source": self.battery_source, "battery_hours": self.battery_hours,
                "parts": [vars(p) for p in self.parts]}


class _Part:
    __slots__ = ("name", "index", "state", "key", "nA", "since", "charge", "hf")

    def __init__(self, name: str, index: int, state: Callable[[], Optional[str]], now: int):
        self.name = name
        self.index = index
        self.state = state        # () -> a key of emu.currents.CURRENT, or None
        self.key: Optional[str] = None
        self.nA = 0
        self.since = now
        self.charge = 0           # nA x ticks, up to ``since``
        self.hf = False           # its working state keeps HFCLK up while the CPU sleeps


class PowerMeter:
    """Integrates the machine's current from the moment it is made.
    ``record``: keep a record of the current (rows of ``interval`` emulated
    seconds, 0: one at every change; at most ``max_rows`` kept in memory,
    pairs merged beyond; see the module's doc).  Use :meth:`Machine.power`
    rather than building one."""

    def __init__(self, machine, record: bool = True, interval: float = DEFAULT_INTERVAL_S,
                 max_rows: Optional[int] = DEFAULT_MAX_ROWS):
        self.machine = machine
        self.cpu = machine.cpu
        self.soc = machine.soc
        self.record = bool(record)
        self.interval = interval_ticks(interval)     # ticks; 0: a row at every change
        if max_rows is not None:
            max_rows = checks.integer("max_rows", max_rows, 2)
        self.max_rows = max_rows
        self.start = self.cpu.time_now()
        self.total_nA = 0
        self.changes = 0                  # changes of a part's current seen
        self.row_listeners: list = []     # fn(start tick, end tick, [charge per part])
        self.parts: list = []
        self._by_name: dict = {}
        self._hf_active = 0               # HF-clock users drawing current now
        self._unknown: set = set()
        self._attached: list = []         # (list, fn) to detach
        self._build()
        # the open row: from _row_start, each part's charge then; closes at _row_end
        self._row_start = self.start
        self._row_base = [0] * len(self.parts)
        if not self.record:
            self._row_end = NEVER
        elif self.interval:
            self._row_end = (self.start // self.interval + 1) * self.interval
        else:
            self._row_end = self.start + 1
        self._kept: list = []             # (start tick, (charge per part)), oldest first
        self._keep_every = 1              # rows merged into each kept one
        self._pend: Optional[list] = None  # closed rows not yet kept: their sum
        self._pend_start = self.start
        self._pend_n = 0
        self.refresh()

    def now_uA(self) -> float:
        """The current drawn now, in microamperes."""
        return self.total_nA / 1000.0

    def charge_nA_ticks(self, until: Optional[int] = None) -> dict:
        """Exact charge per part since the start, in nA x ticks (a tick is
        1/512 000 000 s), up to ``until`` (default: now)."""
        t = self.cpu.time_now() if until is None else until
        return {p.name: p.charge + p.nA * (t - p.since) for p in self.parts}

    def charge_uC(self, until: Optional[int] = None) -> Fraction:
        """Exact total charge in microcoulombs."""
        total = sum(self.charge_nA_ticks(until).values())
        return Fraction(total, TICKS_PER_SECOND * 1000)

    def report(self, until: Optional[int] = None) -> PowerReport:
        t = self.cpu.time_now() if until is None else until
        charges = self.charge_nA_ticks(t)
        span = max(1, t - self.start)
        total = sum(charges.values())
        parts = []
        for p in self.parts:
            c = charges[p.name]
            parts.append(PartReport(p.name, c / TICKS_PER_SECOND / 1000.0,
                                    c / span / 1000.0, c / total if total else 0.0,
                                    p.nA / 1000.0, p.key or ""))
        parts.sort(key=lambda r: (-r.charge_uC, r.name))
        return PowerReport(self.start, t, total / TICKS_PER_SECOND / 1000.0,
                           total / span / 1000.0, self.total_nA / 1000.0, parts)

    # ------------------------------------------------------------- the record
    def rows(self) -> list:
        """The record, exact: [(start tick, end tick, [charge per part in nA x
        ticks, ``parts`` order])], oldest first, up to now (the last row is
        the one still open).  The kept rows, then those closed since, then
        the open one: they add up to :meth:`charge_nA_ticks`.  Empty
        without ``record``."""
        if not self.record:
            return []
        t = self.cpu.time_now()
        self._roll(t)                     # the intervals that ended since the last change
        out = []
        kept = self._kept
        tail = self._pend_start if self._pend_n else self._row_start
        for i, (s, charges) in enumerate(kept):
            e = kept[i + 1][0] if i + 1 < len(kept) else tail
            out.append((s, e, list(charges)))
        if self._pend_n:
            out.append((self._pend_start, self._row_start, list(self._pend)))
        row = self.open_row(t)
        if row is not None:
            out.append(row)
        return out

    def open_row(self, t: Optional[int] = None):
        """The row still open, up to now, as in :meth:`rows`; None if it is
        empty or there is no record."""
        t = self.cpu.time_now() if t is None else t
        if not self.record or t <= self._row_start:
            return None
        return (self._row_start, t, [p.charge + p.nA * (t - p.since) - b
                                     for p, b in zip(self.parts, self._row_base)])

    @property
    def kept_rows(self) -> int:
        """Rows held in memory (at most ``max_rows``, and one being summed)."""
        return len(self._kept) + (1 if self._pend_n else 0)

    @property
    def kept_interval_s(self) -> float:
        """The length of a kept row, in seconds (0: one per change)."""
        return self.interval * self._keep_every / TICKS_PER_SECOND

    def series(self) -> list:
        """[(tick, average total nA from this tick to the next)] (needs ``record``;
        the last row ends now)."""
        return [(s, sum(c) / (e - s)) for s, e, c in self.rows() if e > s]

    def part_series(self) -> list:
        """[(tick, [average nA of each part in ``parts`` order])], as :meth:`series`."""
        return [(s, [x / (e - s) for x in c]) for s, e, c in self.rows() if e > s]

    def flush(self) -> None:
        """Close every row that ended by now, sending it to ``row_listeners``
        (with ``interval=0``: the one open up to now)."""
        if self.record:
            self._roll(self.cpu.time_now())

    def _roll(self, t: int) -> None:
        iv = self.interval
        if not iv:
            if t > self._row_start:
                self._close(t)
            self._row_end = t + 1
            return
        b = self._row_end
        while b <= t:
            self._close(b)
            b += iv
        self._row_end = b

    def _close(self, b: int) -> None:
        now = [p.charge + p.nA * (b - p.since) for p in self.parts]
        row = [x - y for x, y in zip(now, self._row_base)]
        start, self._row_start, self._row_base = self._row_start, b, now
        for fn in self.row_listeners:
            fn(start, b, row)
        if self._pend_n:
            self._pend = [x + y for x, y in zip(self._pend, row)]
        else:
            self._pend, self._pend_start = row, start
        self._pend_n += 1
        if self._pend_n >= self._keep_every:
            self._kept.append((self._pend_start, tuple(self._pend)))
            self._pend, self._pend_n = None, 0
            if self.max_rows is not None and len(self._kept) >= self.max_rows:
                k = self._kept
                self._kept = [(k[i][0], tuple(x + y for x, y in zip(k[i][1], k[i + 1][1])))
                              if i + 1 < len(k) else k[i] for i in range(0, len(k), 2)]
                self._keep_every *= 2

    def close(self) -> None:
        """Stop listening (the integral stops at the last change)."""
        for lst, fn in self._attached:
            try:
                lst.remove(fn)
            except ValueError:
                pass
        self._attached = []
        for p in self._watched:
            p.power_watch = None
        self._watched = []
        if self.machine.power_meter is self:
            self.machine.power_meter = None

    def refresh(self) -> None:
        """Re-read every part (after a reset, a snapshot load)."""
        for p in self.parts:
            self._update(p)

    # ------------------------------------------------------------- building
    def _listen(self, lst: list, fn) -> None:
        lst.append(fn)
        self._attached.append((lst, fn))

    def _add(self, name: str, state: Callable[[], Optional[str]], hf_user: bool = False):
        part = _Part(name, len(self.parts), state, self.start)
        self.parts.append(part)
        self._by_name[name] = part
        part.hf = hf_user
        return part

    def _build(self) -> None:
        soc, cpu = self.soc, self.cpu
        periph = soc.peripherals
        cp = periph.get("clock_power")
        nvmc = periph.get("nvmc")
        self._cp, self._nvmc = cp, nvmc
        chip = self._add("chip", self._chip_state)
        cpu_part = self._add("cpu", self._cpu_state)
        hf = self._add("hfclk", self._hf_state)
        lf = self._add("lfclk", self._lf_state) if cp is not None else None
        self._hf = hf

        def on_sleep(_asleep: bool) -> None:
            self._update(cpu_part)
            self._update(hf)
        self._listen(cpu.on_sleep, on_sleep)
        regulated = [cpu_part]
        if cp is not None:
            def clocks() -> None:
                self._update(chip)
                for p in regulated:
                    self._update(p)
                self._update(hf)
                if lf is not None:
                    self._update(lf)
            self._listen(cp.power_listeners, clocks)
        if nvmc is not None and hasattr(nvmc, "power_listeners"):
            self._listen(nvmc.power_listeners, lambda: self._update(cpu_part))
        self._listen(self.machine.reset_listeners, self.refresh)
        # the nRF peripherals, one part each (a shared-ID slot's variants share it)
        self._watched = []
        for name, p in periph.items():
            variants = getattr(p, "variants", None)
            blocks = list(variants.values()) if variants else [p]
            fns = [f for f in (_PERIPHERAL_STATES.get(type(b).__name__) for b in blocks)
                   if f is not None]
            if not fns:
                continue
            if name == "radio":
                part = self._add(name, lambda p=p: _radio_state(p, self._regulator()))
                regulated.append(part)
            else:
                def state(blocks=blocks):
                    for b in blocks:
                        f = _PERIPHERAL_STATES.get(type(b).__name__)
                        k = f(b) if f is not None else None
                        if k is not None:
                            return k
                    return None
                part = self._add(name, state, hf_user=any(
                    type(b).__name__ in _HF_USERS for b in blocks))
            for b in blocks:
                if type(b).__name__ in _PERIPHERAL_STATES:
                    b.power_watch = self._watcher(part)
                    self._watched.append(b)
        self._build_board()

    def _watcher(self, part):
        hf = self._hf

        update = self._update

        def watch(_p) -> None:
            if update(part) and part.hf:
                update(hf)
        return watch

    def _build_board(self) -> None:
        b = self.machine.board
        for name, attr, fn in _BOARD_PARTS:
            dev = getattr(b, attr, None)
            if dev is None:
                continue
            part = self._add(name, lambda dev=dev, fn=fn: fn(dev))
            upd = lambda *_a, part=part: self._update(part)   # noqa: E731
            if isinstance(getattr(dev, "power_listeners", None), list):
                self._listen(dev.power_listeners, upd)
            elif hasattr(type(dev), "power_listeners"):      # the I2C mixin's class default
                dev.power_listeners = [upd]
                self._attached.append((dev.power_listeners, upd))
            if isinstance(getattr(dev, "listeners", None), list):
                self._listen(dev.listeners, upd)
            rst = getattr(dev, "rst_pin", None)
            if rst is not None and attr == "touch":
                self._listen(rst._listeners, upd)

    # -------------------------------------------------------------- states
    def _regulator(self) -> str:
        cp = self._cp
        return "dcdc" if cp is not None and getattr(cp, "dcdc", False) else "ldo"

    def _chip_state(self) -> str:
        if self.cpu.powered_off:
            cp = self._cp
            retained = cp is not None and any(
                cp.values.get(0x900 + 16 * n, 0) & 0x00030000 for n in range(8))
            return "off.ramon" if retained else "off.ramoff"
        return "sleep.on"

    def _cpu_state(self) -> Optional[str]:
        cpu = self.cpu
        if cpu.powered_off or cpu.sleeping:
            return None
        nvmc = self._nvmc
        cache = "cache" if nvmc is None or getattr(nvmc, "cache_enabled", True) else "nocache"
        return f"cpu.flash.{cache}.{self._regulator()}"

    def _hf_state(self) -> Optional[str]:
        cpu = self.cpu
        if cpu.powered_off or not cpu.sleeping:
            return None                     # awake: the CPU figure includes its clock
        cp = self._cp
        if cp is not None and cp.hfxo_running:
            return "hfxo"
        if self._hf_active:
            return "hfint"
        return None

    def _lf_state(self) -> Optional[str]:
        if self.cpu.powered_off:
            return None
        src = self._cp.lfclk_source()
        return None if src is None else f"lfclk.{src}"

    # ------------------------------------------------------------ changes
    def _update(self, part: _Part) -> bool:
        """Re-read ``part``'s state; True if its current changed."""
        key = part.state()
        if key == part.key:
            return False
        nA = CURRENT.get(key, 0) if key is not None else 0
        if key is not None and key not in CURRENT and key not in self._unknown:
            self._unknown.add(key)
            log.warning("no current figure for %r (counted as 0)", key)
        t = self.cpu.time_now()
        if t < part.since:
            t = part.since           # an event taken late, after a change made since
        if t >= self._row_end and (self.interval or nA != part.nA):
            self._roll(t)            # rows up to t close with the currents before
        part.charge += part.nA * (t - part.since)
        part.since = t
        part.key = key
        if nA == part.nA:
            return False
        if part.hf and (nA == 0) != (part.nA == 0):
            self._hf_active += 1 if nA else -1
        self.total_nA += nA - part.nA
        part.nA = nA
        self.changes += 1
        return True


# --------------------------------------------------------------------------
# what each block's state is: the figure's key, or None (draws nothing)
# --------------------------------------------------------------------------
def _radio_state(r, regulator: str) -> Optional[str]:
    s = r.state
    if s in _TX_STATES or s == _TX_IDLE:
        dbm = TXPOWER_DBM.get(r.values.get(0x50C, 0) & 0xFF, 0)
        name = f"+{dbm}" if dbm > 0 else str(dbm)
        return f"radio.tx.{name}dbm.{regulator}"
    if s in _RX_STATES or s == _RX_IDLE:
        rate = "2m" if r.values.get(0x510, 0) in (4,) else "1m"
        return f"radio.rx.{rate}.{regulator}"
    if s in _TX_RAMP:
        return f"radio.rampup.tx.{regulator}"
    if s in _RX_RAMP:
        return f"radio.rampup.rx.{regulator}"
    return None


def _timer(t) -> Optional[str]:
    if not t.running:
        return None
    return "timer.16m" if (t.values.get(0x510, 4) & 0xF) < 4 else "timer.1m"


def _enabled(p) -> bool:
    mux = getattr(p, "mux", None)
    return mux is None or mux.active is p


def _gpiote(g) -> Optional[str]:
    return "gpiote.in" if any(a is not None and a[0] == 1 for a in g.active) else None


_PERIPHERAL_STATES: dict = {
    "Rtc": lambda r: "rtc" if r.running else None,
    "Timer": _timer,
    "Spim": lambda s: "spi" if _enabled(s) and s.busy else None,
    "Twim": lambda t: "twi" if _enabled(t) and t._pending is not None else None,
    "Uarte": lambda u: "uart" if _enabled(u) and (u.rx_on or u.tx_on) else None,
    "Uart": lambda u: "uart" if _enabled(u) and (u.rx_on or u.tx_on) else None,
    "Uart0": lambda u: "uart" if (u.rx_on or u.tx_on) else None,
    "Saadc": lambda s: "saadc" if s._started or s._conv.pending else None,
    "Pwm": lambda p: "pwm" if p._running else None,
    "Gpiote": _gpiote,
}
_PERIPHERAL_STATES["Radio"] = lambda r: None      # marks the RADIO as watched (_radio_state)
# blocks that keep HFCLK (HFINT) running while they work and the CPU sleeps
_HF_USERS = frozenset(("Timer", "Spim", "Twim", "Uarte", "Uart", "Uart0", "Saadc", "Pwm",
                       "Gpiote"))


def _display(d) -> str:
    if d.in_reset or d.sleeping:
        return "display.sleep"
    return "display.on" if d.display_on else "display.idle"


def _nor(f) -> str:
    if f.wip:
        return "nor.write"
    if f.deep_power_down:
        return "nor.dpd"
    return "nor.read" if f.selected else "nor.standby"


def _touch(t) -> str:
    return "touch.sleep" if t.in_reset or t.asleep else "touch.active"


_BOARD_PARTS = (
    ("display", "display", _display),
    ("backlight", "backlight", lambda b: f"backlight.{b.level}" if b.level else None),
    ("motor", "motor", lambda m: "motor" if m._on else None),
    ("nor", "flash", _nor),
    ("touch", "touch", _touch),
    ("accel", "accel", lambda a: "accel.on" if a.regs[0x7D] & 0x04 else "accel.off"),
    ("hrs", "heart_rate", lambda h: "hrs.on" if h.enabled else "hrs.off"),
)


def interval_ticks(seconds) -> int:
    """A record interval in seconds as ticks (0: a row at every change);
    TypeError/ValueError for what is not a finite number >= 0, or is below
    one tick (1/512 000 000 s)."""
    s = checks.number("interval", seconds, 0, NEVER // TICKS_PER_SECOND)
    ticks = round(s * TICKS_PER_SECOND)
    if s > 0 and ticks < 1:
        raise ValueError(f"interval must be 0 (every change) or at least one tick "
                         f"(1/{TICKS_PER_SECOND} s), not {seconds!r}")
    return ticks


def figure_of(key: str):
    """The :class:`emu.currents.Figure` behind a state key."""
    return BY_KEY.get(key)
