"""PWM0/1/2 (0x4001C000 IRQ 28, 0x40021000 IRQ 33, 0x40022000 IRQ 34),
nRF52832 PS v1.4 section 45 "PWM".

The PWM clock is 16 MHz / 2^PRESCALER; a period is COUNTERTOP clocks (Up)
or 2*COUNTERTOP (UpAndDown).  SEQSTART[n] reads SEQ[n].CNT 16-bit values
from RAM (EasyDMA; Data RAM only) and plays them: DECODER.LOAD decides how
many values make one step (Common 1, Grouped 2, Individual 4, WaveForm 4
with the 4th value replacing COUNTERTOP); each step lasts SEQ[n].REFRESH+1
periods, then SEQ[n].ENDDELAY periods, then SEQEND[n].  With LOOP > 0 the
sequences alternate 0,1 and LOOPSDONE fires after LOOP rounds; SHORTS
(SEQEND0_STOP, SEQEND1_STOP, LOOPSDONE_SEQSTART0/1, LOOPSDONE_STOP) apply.
DECODER.MODE=NextStep advances one step per NEXTSTEP task.  STOP takes
effect at the end of the current period: STOPPED, pins released to GPIO.

Compare value: bits [14:0], bit 15 POLARITY.  Here the output is high for
the first COMP clocks of a period when POLARITY=1 (FallingEdge) and low for
them when POLARITY=0 (RisingEdge), so duty(high) = COMP/TOP or 1 - COMP/TOP.

Outputs: ``timeline`` records (tick, pin, duty) for every duty change
(duty None = released to GPIO); a sequence's step changes are entered when
it starts (truncated by STOP).  The pin is driven at the majority level of
the current step (0 < duty < 1 is not a level; boards read the timeline).
No event is scheduled per period: one per sequence end (and STOP).

Pins (PS 45 "Pin configuration": PSEL.OUT[n] is used while the PWM is
enabled and generating): from SEQSTART until STOP (or ENABLE=0) the PWM
selects its OUT pins in GPIO (``Gpio.select``): GPIO OUT no longer drives
them, the PWM's level does, while GPIO DIR[n] is output (the PS asks the
firmware for an output there); after STOP GPIO OUT applies again.

Not modelled: PWMPERIODEND (never generated, logged once when enabled in
INTEN or SHORTS), intermediate steps on the pin level within a sequence
(the timeline has them), glitches when COUNTERTOP changes mid-period.
"""
from __future__ import annotations

import struct

from emu.peripherals.base import NrfPeripheral, Reg
from emu.peripherals.spim import in_ram

T_STOP, T_SEQSTART0, T_SEQSTART1, T_NEXTSTEP = 0x004, 0x008, 0x00C, 0x010
E_STOPPED, E_SEQSTARTED0, E_SEQSTARTED1, E_SEQEND0, E_SEQEND1, E_PERIODEND, E_LOOPSDONE = (
    0x104, 0x108, 0x10C, 0x110, 0x114, 0x118, 0x11C)
PER_STEP = (1, 2, 4, 4)


class Pwm(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_driven", "_end", "_loops", "_period", "_running", "_seq", "_seq_start",
                "_step_i", "_steps", "_stop", "timeline")
    NAME = "PWM"
    TASKS = {T_STOP: "STOP", T_SEQSTART0: "SEQSTART[0]", T_SEQSTART1: "SEQSTART[1]",
             T_NEXTSTEP: "NEXTSTEP"}
    EVENTS = {E_STOPPED: "STOPPED", E_SEQSTARTED0: "SEQSTARTED[0]",
              E_SEQSTARTED1: "SEQSTARTED[1]", E_SEQEND0: "SEQEND[0]", E_SEQEND1: "SEQEND[1]",
              E_PERIODEND: "PWMPERIODEND", E_LOOPSDONE: "LOOPSDONE"}
    SHORTS = {0: (E_SEQEND0, T_STOP), 1: (E_SEQEND1, T_STOP),
              2: (E_LOOPSDONE, T_SEQSTART0), 3: (E_LOOPSDONE, T_SEQSTART1),
              4: (E_LOOPSDONE, T_STOP)}
    REGISTERS = [
        Reg(0x500, "ENABLE", mask=1, write="_write_enable"),
        Reg(0x504, "MODE", mask=1),
        Reg(0x508, "COUNTERTOP", 0x3FF, mask=0x7FFF),
        Reg(0x50C, "PRESCALER", mask=7),
        Reg(0x510, "DECODER", mask=0x103),
        Reg(0x514, "LOOP", mask=0xFFFF),
        Reg(0x520, "SEQ_PTR", count=2, stride=0x20),
        Reg(0x524, "SEQ_CNT", count=2, stride=0x20, mask=0x7FFF),
        Reg(0x528, "SEQ_REFRESH", 1, count=2, stride=0x20, mask=0xFFFFFF),
        Reg(0x52C, "SEQ_ENDDELAY", count=2, stride=0x20, mask=0xFFFFFF),
        Reg(0x560, "PSEL_OUT", 0xFFFFFFFF, count=4),
    ]

    def __init__(self, soc, base, name=None, irq=None):
        self._end = soc.clock.event(f"{name or 'pwm'}.seqend", self._seq_end)
        self._stop = soc.clock.event(f"{name or 'pwm'}.stop", self._stopped)
        self.timeline: list = []     # (tick, pin, duty or None)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._end.cancel()
        self._stop.cancel()
        self._running = False
        self._seq = 0
        self._loops = 0
        self._steps: list = []       # [(start tick, [duty per channel], period ticks)]
        self._step_i = 0
        self._period = 0
        self._seq_start = 0
        if getattr(self, "_driven", None):
            self._release_pins()
        self._driven: dict = {}      # pin -> duty currently recorded

    # -- public ------------------------------------------------------------
    def duty(self, channel: int):
        """Duty (fraction high) of OUT[channel] now, or None when not running."""
        if not self._running or not self._steps:
            return None
        i = self._current_step()
        return self._steps[i][1][channel]

    # -- registers ---------------------------------------------------------
    def _write_enable(self, new: int, old: int) -> None:
        if not new and self._running:
            self.log_once("disable", "ENABLE=0 while generating: stopped, pins released")
            self._end.cancel()
            self._stop.cancel()
            self._running = False
            self._steps = []
            self._release_pins()

    # -- tasks -------------------------------------------------------------
    def task_SEQSTART(self, n: int) -> None:
        if not self.values[0x500]:
            self.log_once("dis", "SEQSTART while ENABLE=0 ignored")
            return
        if self.inten & (1 << 6):
            self.log_once("pe", "PWMPERIODEND is not generated (not modelled)")
        self._stop.cancel()
        self._loops = 0
        self._play(n)

    def task_NEXTSTEP(self) -> None:
        if not self._running or not (self.values[0x510] & 0x100):
            return
        self._step_i += 1
        if self._step_i >= len(self._steps):
            self._seq_end()
        else:
            self._apply_step(self._step_i, self.clock.now)

    def task_STOP(self) -> None:
        if not self._running:
            self.fire(E_STOPPED)
            return
        now = self.clock.now
        per = max(1, self._period)
        end = now + (per - (now - self._seq_start) % per) % per
        self._end.cancel()
        self.timeline = [e for e in self.timeline if e[0] <= now]
        self._stop.schedule_at(end)

    # ------------------------------------------------------------------
    def _clock_ticks(self) -> int:
        return 32 << self.values[0x50C]

    def _play(self, n: int) -> None:
        v = self.values
        self._seq = n
        ptr, cnt = v[0x520 + 0x20 * n], v[0x524 + 0x20 * n]
        refresh, enddelay = v[0x528 + 0x20 * n], v[0x52C + 0x20 * n]
        load = v[0x510] & 3
        per_step = PER_STEP[load]
        if cnt and not in_ram(ptr, 2 * cnt):
            self.log_once("flash", "SEQ[%d].PTR %#x not in Data RAM: no values", n, ptr)
            cnt = 0
        raw = struct.unpack(f"<{cnt}H", self.soc.cpu.read_mem(ptr, 2 * cnt)) if cnt else ()
        clk = self._clock_ticks()
        updown = v[0x504] & 1
        now = self.clock.now
        self._seq_start = now
        self._steps = []
        t = now
        for s in range(cnt // per_step):
            vals = raw[s * per_step:(s + 1) * per_step]
            top = v[0x508]
            if load == 3:
                top = vals[3] & 0x7FFF
                vals = vals[:3] + (0,)
            duties = self._duties(load, vals, top)
            period = (2 * top if updown else top) * clk
            self._steps.append((t, duties, period))
            t += (refresh + 1) * period
        self._period = (2 * v[0x508] if updown else v[0x508]) * clk
        self._running = True
        self.fire(E_SEQSTARTED0 + 4 * n)
        for i, st in enumerate(self._steps):
            self._record(st[0], st[1])
        if self._steps:
            self._step_i = 0
            self._apply_step(0, now)
        if v[0x510] & 0x100:            # NextStep: ends on NEXTSTEP tasks
            return
        self._end.schedule_at(t + enddelay * self._period)

    def _duties(self, load: int, vals, top: int) -> list:
        def d(x):
            comp = min(x & 0x7FFF, top)
            frac = comp / top if top else 0.0
            return frac if x & 0x8000 else 1.0 - frac
        if load == 0:
            return [d(vals[0])] * 4
        if load == 1:
            return [d(vals[0]), d(vals[0]), d(vals[1]), d(vals[1])]
        return [d(x) for x in vals[:4]]

    def _current_step(self) -> int:
        now = self.clock.now
        i = 0
        for k, st in enumerate(self._steps):
            if st[0] <= now:
                i = k
        return max(i, self._step_i if self.values[0x510] & 0x100 else 0)

    def _record(self, tick: int, duties: list) -> None:
        for ch in range(4):
            psel = self.values[0x560 + 4 * ch]
            if psel & 0x80000000:
                continue
            pin = psel & 0x1F
            if self._driven.get(pin) != duties[ch]:
                self._driven[pin] = duties[ch]
                self.timeline.append((tick, pin, duties[ch]))

    def _apply_step(self, i: int, tick: int) -> None:
        duties = self._steps[i][1]
        if self.values[0x510] & 0x100:
            self._record(tick, duties)
        for ch in range(4):
            psel = self.values[0x560 + 4 * ch]
            if not psel & 0x80000000:
                self.soc.gpio.select(psel & 0x1F, self.name, duties[ch] >= 0.5)

    def _release_pins(self) -> None:
        gpio = self.soc.peripherals.get("gpio")
        for pin in list(self._driven):
            if gpio is not None:
                gpio.deselect(pin, self.name)
            else:
                self.soc.pins[pin].drive(self.name, None)
            self.timeline.append((self.clock.now, pin, None))
        self._driven = {}

    def _seq_end(self) -> None:
        n = self._seq
        if self._steps:
            self._step_i = len(self._steps) - 1
            self._apply_step(self._step_i, self.clock.now)
        self.fire(E_SEQEND0 + 4 * n)
        if self._stop.pending or not self._running or self._end.pending:
            return      # a short stopped or restarted us
        loop = self.values[0x514]
        if loop == 0:
            return      # the last value keeps playing
        if n == 0:
            self._play(1)
            return
        self._loops += 1
        if self._loops >= loop:
            self.fire(E_LOOPSDONE)
        else:
            self._play(0)

    def _stopped(self) -> None:
        self._running = False
        self._steps = []
        self._release_pins()
        self.fire(E_STOPPED)

    def save_model_state(self) -> dict:
        return {"running": self._running, "seq": self._seq, "loops": self._loops,
                "steps": self._steps, "step_i": self._step_i, "period": self._period,
                "seq_start": self._seq_start, "driven": dict(self._driven),
                "timeline": list(self.timeline), "end_at": self._end.when,
                "stop_at": self._stop.when}

    def load_model_state(self, st: dict) -> None:
        self._running, self._seq, self._loops = st["running"], st["seq"], st["loops"]
        self._steps, self._step_i = [tuple(s) for s in st["steps"]], st["step_i"]
        self._period, self._seq_start = st["period"], st["seq_start"]
        self._driven = {int(k): v for k, v in st["driven"].items()}
        self.timeline = [tuple(e) for e in st["timeline"]]
        for ev, k in ((self._end, "end_at"), (self._stop, "stop_at")):
            ev.cancel()
            if st.get(k) is not None:
                ev.schedule_at(st[k])
