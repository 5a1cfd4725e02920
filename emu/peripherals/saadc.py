"""SAADC (0x40007000, IRQ 7), nRF52832 PS v1.4 section 37 "SAADC".

Analogue inputs come from the board: ``set_input(ain, volts)`` for AIN0-7
(``"VDD"`` or 8 for the supply, 3.3 V unless set).  Each SAMPLE converts
every enabled channel (CH[n].PSELP != NC) in order; one conversion takes
TACQ + 2 us (tCONV), times 2^OVERSAMPLE when oversampling.  The result is

    RESULT = (V(P) - V(N)) * GAIN / REFERENCE * 2^(RESOLUTION - m)

with GAIN from CH[n].CONFIG.GAIN (1/6 .. 4), REFERENCE 0.6 V (internal) or
VDD/4, m = 0 single-ended, 1 differential, clamped to the signed 16-bit
value range of the resolution; results are stored as int16 through EasyDMA
at RESULT.PTR (Data RAM only), DONE/RESULTDONE per conversion, END when
RESULT.MAXCNT samples are stored.  CH[n].LIMIT (LOW in [15:0], HIGH in
[31:16], signed) fires CH[n].LIMITH / LIMITL.  SAMPLERATE.MODE=Timers
samples every CC 16 MHz cycles after one SAMPLE task, until END/STOP.
STOP fires STOPPED (AMOUNT keeps what was stored, no END).
CALIBRATEOFFSET fires CALIBRATEDONE after 100 us (offset error is 0 here).

Not modelled: input impedance and acquisition-time errors, noise, burst
mode (BURST is treated like oversampling), the STATUS busy bit beyond
"conversion in progress", RESP/RESN resistor ladders (logged once).
"""
from __future__ import annotations

import struct

from emu.peripherals.base import NrfPeripheral, Reg, RO
from emu.peripherals.spim import in_ram

T_START, T_SAMPLE, T_STOP, T_CALIBRATE = 0x000, 0x004, 0x008, 0x00C
E_STARTED, E_END, E_DONE, E_RESULTDONE, E_CALDONE, E_STOPPED = (
    0x100, 0x104, 0x108, 0x10C, 0x110, 0x114)
US = 512
GAINS = [1 / 6, 1 / 5, 1 / 4, 1 / 3, 1 / 2, 1.0, 2.0, 4.0]
TACQ_US = [3, 5, 10, 15, 20, 40, 40, 40]


class Saadc(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_cal", "_conv", "_queue", "_started", "inputs", "vdd")
    NAME = "SAADC"
    TASKS = {T_START: "START", T_SAMPLE: "SAMPLE", T_STOP: "STOP",
             T_CALIBRATE: "CALIBRATEOFFSET"}
    EVENTS = {E_STARTED: "STARTED", E_END: "END", E_DONE: "DONE", E_RESULTDONE: "RESULTDONE",
              E_CALDONE: "CALIBRATEDONE", E_STOPPED: "STOPPED"}
    for _n in range(8):
        EVENTS[0x118 + 8 * _n] = f"CH[{_n}].LIMITH"
        EVENTS[0x11C + 8 * _n] = f"CH[{_n}].LIMITL"
    REGISTERS = [
        Reg(0x400, "STATUS", access=RO, read="_read_status"),
        Reg(0x500, "ENABLE", mask=1),
        Reg(0x510, "CH_PSELP", count=8, stride=16, mask=0x1F),
        Reg(0x514, "CH_PSELN", count=8, stride=16, mask=0x1F),
        Reg(0x518, "CH_CONFIG", 0x00020000, count=8, stride=16, mask=0x01171733),
        Reg(0x51C, "CH_LIMIT", 0x7FFF8000, count=8, stride=16),
        Reg(0x5F0, "RESOLUTION", 1, mask=7),
        Reg(0x5F4, "OVERSAMPLE", 0, mask=0xF),
        Reg(0x5F8, "SAMPLERATE", 0, mask=0x17FF),
        Reg(0x62C, "RESULT_PTR"),
        Reg(0x630, "RESULT_MAXCNT", mask=0x7FFF),
        Reg(0x634, "RESULT_AMOUNT", access=RO),
    ]

    def __init__(self, soc, base, name=None, irq=None):
        self._conv = soc.clock.event(f"{name or 'saadc'}.conv", self._conversion_done)
        self._cal = soc.clock.event(f"{name or 'saadc'}.cal", lambda: self.fire(E_CALDONE))
        self.inputs = [0.0] * 8
        self.vdd = 3.3
        super().__init__(soc, base, name, irq)

    # -- board API -----------------------------------------------------------
    def set_input(self, ain, volts: float) -> None:
        """Voltage on AIN0-7, or the supply with ain="VDD" / 8."""
        if ain in ("VDD", 8):
            self.vdd = float(volts)
        else:
            self.inputs[int(ain)] = float(volts)

    def reset(self) -> None:
        super().reset()
        self._conv.cancel()
        self._cal.cancel()
        self._started = False
        self._queue: list = []      # channels still to convert in this SAMPLE

    def convert(self, ch: int) -> int:
        """The value the SAADC would produce now for channel ``ch`` (PS 37.7)."""
        v = self.values
        cfg = v[0x518 + 16 * ch]
        diff = (cfg >> 20) & 1
        vp = self._pin_volts(v[0x510 + 16 * ch])
        vn = self._pin_volts(v[0x514 + 16 * ch]) if diff else 0.0
        gain = GAINS[(cfg >> 8) & 7]
        ref = self.vdd / 4 if (cfg >> 12) & 1 else 0.6
        res = (8, 10, 12, 14)[min(v[0x5F0], 3)]
        bits = res - diff
        raw = int(round((vp - vn) * gain / ref * (1 << bits)))
        lo = -(1 << bits) if diff else -(1 << (res - 1))
        hi = (1 << bits) - 1
        if (cfg & 0x33):
            self.log_once("res", "RESP/RESN resistor ladders not modelled")
        return max(lo, min(hi, raw))

    # -- tasks ---------------------------------------------------------------
    def task_START(self) -> None:
        if not self.values[0x500]:
            self.log_once("dis", "START while ENABLE=0 ignored")
            return
        self._started = True
        self.values[0x634] = 0
        self.fire(E_STARTED)

    def task_SAMPLE(self) -> None:
        if not self._started:
            self.log_once("nostart", "SAMPLE before START: no buffer, ignored")
            return
        if self._conv.pending:
            return
        self._queue = [n for n in range(8) if self.values[0x510 + 16 * n]]
        if self._queue:
            self._conv.schedule_in(self._conv_ticks(self._queue[0]))

    def task_STOP(self) -> None:
        self._conv.cancel()
        self._queue = []
        self._started = False
        self.fire(E_STOPPED)

    def task_CALIBRATEOFFSET(self) -> None:
        self._cal.schedule_in(100 * US)

    # ------------------------------------------------------------------
    def _pin_volts(self, psel: int) -> float:
        if 1 <= psel <= 8:
            return self.inputs[psel - 1]
        if psel == 9:
            return self.vdd
        return 0.0

    def _conv_ticks(self, ch: int) -> int:
        cfg = self.values[0x518 + 16 * ch]
        t = (TACQ_US[(cfg >> 16) & 7] + 2) * US
        return t << self.values[0x5F4] if self.values[0x5F4] <= 8 else t

    def _read_status(self, off) -> int:
        return 1 if self._conv.pending else 0

    def _conversion_done(self) -> None:
        ch = self._queue.pop(0)
        val = self.convert(ch)
        v = self.values
        lim = v[0x51C + 16 * ch]
        low, high = _s16(lim & 0xFFFF), _s16(lim >> 16)
        n = v[0x634]
        if n < v[0x630]:
            addr = v[0x62C] + 2 * n
            if in_ram(addr, 2):
                self.soc.cpu.write_mem(addr, struct.pack("<h", val))
            else:
                self.log_once("flash", "RESULT.PTR %#x not in Data RAM: not stored", addr)
            v[0x634] = n + 1
        self.fire(E_DONE)
        self.fire(E_RESULTDONE)
        if val > high:
            self.fire(0x118 + 8 * ch)
        if val < low:
            self.fire(0x11C + 8 * ch)
        if v[0x634] >= v[0x630]:
            self._queue = []
            self._started = False
            self.fire(E_END)
            return
        if self._queue:
            self._conv.schedule_in(self._conv_ticks(self._queue[0]))
        elif v[0x5F8] & 0x1000:            # MODE = Timers: next sample after CC cycles
            cc = v[0x5F8] & 0x7FF
            self._queue = [n for n in range(8) if v[0x510 + 16 * n]]
            if self._queue and cc >= 80:
                conv = self._conv_ticks(self._queue[0])
                self._conv.schedule_in(max(conv, cc * 32))

    def save_model_state(self) -> dict:
        return {"inputs": list(self.inputs), "vdd": self.vdd, "started": self._started,
                "queue": list(self._queue), "conv_at": self._conv.when, "cal_at": self._cal.when}

    def load_model_state(self, st: dict) -> None:
        self.inputs, self.vdd = list(st["inputs"]), st["vdd"]
        self._started, self._queue = st["started"], list(st["queue"])
        for ev, k in ((self._conv, "conv_at"), (self._cal, "cal_at")):
            ev.cancel()
            if st.get(k) is not None:
                ev.schedule_at(st[k])


def _s16(x: int) -> int:
    return x - 0x10000 if x & 0x8000 else x
