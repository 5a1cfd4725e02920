"""TianYiHeXin HRS3300 PPG heart-rate sensor (PineTime), I2C 0x44.

Registers (HRS3300 datasheet): ID 0x00 (0x21), ENABLE 0x01 (HEN bit 7,
HWT wait time bits 6:4: 800/400/200/100/75/50/12.5/0 ms, PDRIVE[1] bit 3),
C1DATAM 0x08, C0DATAM 0x09, C0DATAH 0x0A, PDRIVER 0x0C, C1DATAH 0x0D,
C1DATAL 0x0E, C0DATAL 0x0F, RES 0x16, HGAIN 0x17.  Channel 0 is the HRS
(PPG) channel, 18 bits: C0DATAM = bits 15:8, C0DATAH[3:0] = bits 7:4,
C0DATAL[3:0] = bits 3:0, C0DATAL[5:4] = bits 17:16.  Channel 1 is ambient
light (ALS), 17 bits: C1DATAM = bits 10:3, C1DATAH[5:0] = bits 16:11,
C1DATAL[2:0] = bits 2:0.

While enabled, conversions complete every HWT period (plus a conversion
time) at exact emulated times; the data registers hold the latest sample.
The PPG sample is a pulse waveform at bpm/60 Hz with deterministic noise
from a seeded PRNG (splitmix64 of the sample index), so the same run
always reads the same values and a peak-counting app computes the bpm.

Not modelled: RES/HGAIN scaling of the signal (stored only), LED drive
current effects, the real sensor's AGC behaviour, motion artefacts.
"""
from __future__ import annotations

import logging
import math

from emu import checks
from emu.buses import I2cRegisterDevice
from emu.clock import TICKS_PER_MS, TICKS_PER_SECOND

log = logging.getLogger("emu.dev.hrs3300")

ADDRESS = 0x44
HWT_MS = (800, 400, 200, 100, 75, 50, 12.5, 0)
CONVERSION_TICKS = 25 * TICKS_PER_MS // 10          # ~2.5 ms integration at 16-bit RES
MAX_BPM = 1000                                      # beats per minute
DEFAULT_REGS = {0x00: 0x21, 0x01: 0x68, 0x0C: 0x2E, 0x16: 0x66, 0x17: 0x10}


def _splitmix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


class Hrs3300(I2cRegisterDevice):
    """``bpm`` (the wearer's heart rate, 0 for none, up to MAX_BPM) is checked
    whenever it is set: TypeError if it is not a number, ValueError if it is
    negative, above MAX_BPM or not finite."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev", "_gain_logged", "ambient", "amplitude", "baseline", "bpm", "name",
                "noise", "samples", "seed", "worn")
    STRUCTURE = ("clock",)
    _gain_logged = False    # the gain registers' note logged once

    def __init__(self, clock, bpm: float = 70.0, seed: int = 1, name: str = "hrs"):
        self.clock = clock
        self.name = name
        self.bpm = bpm
        self.seed = seed
        self.worn = True
        self.ambient = 2000                     # ALS counts
        self.baseline = 60000
        self.amplitude = 4000
        self.noise = 300
        self.samples = 0
        self._ev = clock.event(f"{name}.sample", self._sample)
        self.reset()

    def reset(self) -> None:
        self.regs = bytearray(256)
        for k, v in DEFAULT_REGS.items():
            self.regs[k] = v
        self.ptr = 0
        self._first = False
        self._ev.cancel()

    def __setattr__(self, name: str, value) -> None:
        if name == "bpm":      # heart rate (0: no pulse); checked where it is set
            value = checks.number("heart rate (bpm)", value, 0, MAX_BPM)
        super().__setattr__(name, value)

    @property
    def enabled(self) -> bool:
        return bool(self.regs[0x01] & 0x80)

    def ppg_value(self, t: int, k: int) -> int:
        """The PPG (channel 0) sample at time t, sample index k."""
        n = _splitmix(self.seed * 0x10001 + k)
        noise = ((n & 0xFFFF) / 65535.0 - 0.5) * 2 * self.noise
        if not self.worn or self.bpm <= 0:
            return max(0, min(0x3FFFF, int(self.ambient + noise)))
        phase = (t * self.bpm / (60 * TICKS_PER_SECOND)) % 1.0
        pulse = math.exp(-((phase - 0.2) / 0.07) ** 2) + 0.35 * math.exp(-((phase - 0.55) / 0.1) ** 2)
        return max(0, min(0x3FFFF, int(self.baseline + self.amplitude * pulse + noise)))

    # --------------------------------------------------------- I2C contract
    def _write_reg(self, reg: int, byte: int) -> None:
        if reg in (0x00, 0x08, 0x09, 0x0A, 0x0D, 0x0E, 0x0F):
            return                             # ID and data registers are read-only
        was = self.enabled
        self.regs[reg] = byte
        if reg in (0x0C, 0x16, 0x17) and not self._gain_logged:
            self._gain_logged = True
            log.info("%s: PDRIVER/RES/HGAIN stored; their effect on the signal is not "
                     "modelled", self.name)
        if reg == 0x01 and self.enabled != was:
            if self.enabled:
                self._ev.schedule_in(self._period())
            else:
                self._ev.cancel()

    # ------------------------------------------------------------- private
    def _period(self) -> int:
        return int(HWT_MS[(self.regs[0x01] >> 4) & 7] * TICKS_PER_MS) + CONVERSION_TICKS

    def _sample(self) -> None:
        t = self.clock.now
        self.samples += 1
        v = self.ppg_value(t, self.samples)
        a = max(0, min(0x1FFFF, self.ambient))
        r = self.regs
        r[0x09] = (v >> 8) & 0xFF
        r[0x0A] = (v >> 4) & 0x0F
        r[0x0F] = (v & 0x0F) | (((v >> 16) & 3) << 4)
        r[0x08] = (a >> 3) & 0xFF
        r[0x0D] = (a >> 11) & 0x3F
        r[0x0E] = a & 0x07
        if self.enabled:
            self._ev.schedule_in(self._period())

    def save_state(self) -> dict:
        return {"regs": bytes(self.regs), "ptr": self.ptr, "samples": self.samples,
                "bpm": self.bpm, "next": self._ev.when}

    def load_state(self, st: dict) -> None:
        self.regs = bytearray(st["regs"])
        self.ptr, self.samples, self.bpm = st["ptr"], st["samples"], st["bpm"]
        self._ev.cancel()
        if st.get("next") is not None:
            self._ev.schedule_at(st["next"])
