"""Bosch BMA421 accelerometer with step counter (PineTime), I2C 0x18.

Register map per the BMA423/BMA421 datasheet: CHIP_ID 0x00 (0x11), ERR_REG
0x02, STATUS 0x03 (drdy_acc bit 7, cmd_rdy bit 4), ACC_X_LSB..ACC_Z_MSB
0x12..0x17 (12-bit two's complement, left-aligned in 16 bits), SENSORTIME
0x18..0x1A, STEP_COUNTER_0..3 0x1E..0x21, TEMPERATURE 0x22, INTERNAL_STATUS
0x2A (0 not_init, 1 init_ok, 2 init_err), ACC_CONF 0x40, ACC_RANGE 0x41,
INIT_CTRL 0x59, RESERVED/config address 0x5B/0x5C, FEATURES_IN 0x5E (the
config-file / feature-config port: bursts do not advance the register
pointer), PWR_CONF 0x7C, PWR_CTRL 0x7D (acc_en bit 2), CMD 0x7E (0xB6
soft reset).

The config file is loaded by INIT_CTRL=0, a burst to 0x5E (about 6 KiB,
at the word address in 0x5B/0x5C), then INIT_CTRL=1: INTERNAL_STATUS reads
init_ok if at least MIN_CONFIG bytes were loaded, else init_err.  Steps
given with walk()/steps_per_minute count only while initialised and acc_en.

Not modelled: the feature engine itself (step detector, activity,
tap/wrist gestures, interrupts on INT1/INT2), FIFO, self-test, NVM, the
config-load latency (init_ok is immediate), data shadowing of MSB reads.
"""
from __future__ import annotations

import logging
import math

from emu.buses import I2cRegisterDevice
from emu.clock import TICKS_PER_SECOND

log = logging.getLogger("emu.dev.bma421")

ADDRESS = 0x18
CHIP_ID = 0x11
STEP_CNT0, INTERNAL_STATUS, ACC_X_LSB = 0x1E, 0x2A, 0x12
ACC_CONF, ACC_RANGE, INIT_CTRL, CFG_LSB, CFG_MSB, FEATURES_IN = 0x40, 0x41, 0x59, 0x5B, 0x5C, 0x5E
PWR_CONF, PWR_CTRL, CMD = 0x7C, 0x7D, 0x7E
MIN_CONFIG = 1024
CONFIG_SIZE = 8192


class Bma421(I2cRegisterDevice):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_half", "_logged", "_spm", "_spm_frac", "_spm_since", "_steps", "config",
                "config_loaded", "name", "vector")
    STRUCTURE = ("clock",)
    def __init__(self, clock, name: str = "accel"):
        self.clock = clock
        self.name = name
        self.vector = (0.0, 0.0, 1.0)        # g, face up on a table
        self._steps = 0
        self._spm = 0.0                      # steps per minute
        self._spm_since = 0
        self._spm_frac = 0.0
        self._logged: set = set()
        self.reset()

    # ------------------------------------------------------------------ API
    def set_orientation(self, x: float, y: float, z: float) -> None:
        """Acceleration vector in g (gravity plus motion)."""
        self.vector = (float(x), float(y), float(z))

    def walk(self, steps: int) -> None:
        self._settle()
        if self.counting:
            self._steps += int(steps)

    def set_steps_per_minute(self, spm: float) -> None:
        self._settle()
        self._spm = float(spm)

    @property
    def steps(self) -> int:
        self._settle()
        return self._steps

    @property
    def counting(self) -> bool:
        return self.regs[INTERNAL_STATUS] == 0x01 and bool(self.regs[PWR_CTRL] & 0x04)

    def reset(self) -> None:
        self.regs = bytearray(128)
        r = self.regs
        r[0x00] = CHIP_ID
        r[0x03] = 0x10
        r[ACC_CONF] = 0xA8
        r[ACC_RANGE] = 0x01
        r[PWR_CONF] = 0x03
        r[0x7B] = 0x00
        self.config = bytearray(CONFIG_SIZE)
        self.config_loaded = 0
        self.ptr = 0
        self._half = 0
        self._first = False
        self._steps = 0
        self._spm_frac = 0.0
        self._spm_since = self.clock.now

    # ------------------------------------------------------------- state
    _STATE = ("vector", "ptr", "config_loaded", "_half", "_first", "_steps", "_spm",
              "_spm_since", "_spm_frac")

    def save_state(self) -> dict:
        return {k: getattr(self, k) for k in self._STATE} | {
            "regs": bytes(self.regs), "config": bytes(self.config)}

    def load_state(self, st: dict) -> None:
        for k in self._STATE:
            setattr(self, k, st[k])
        self.vector = tuple(self.vector)
        self.regs = bytearray(st["regs"])
        self.config = bytearray(st["config"])

    # --------------------------------------------------------- I2C contract
    PTR_MASK = 0x7F

    # FEATURES_IN is a window onto the feature engine's config: bytes stream
    # through it and the pointer stays put (the port does not advance it)
    def _next_write_ptr(self, reg: int) -> int:
        return reg if reg == FEATURES_IN else (reg + 1) & 0x7F

    _next_read_ptr = _next_write_ptr

    # ------------------------------------------------------------- private
    def _cfg_addr(self) -> int:
        return ((self.regs[CFG_MSB] << 4) | (self.regs[CFG_LSB] & 0x0F)) * 2 + self._half

    def _advance_cfg(self) -> None:
        # the byte address advances; the word address in 0x5B/0x5C follows every 2 bytes
        self._half ^= 1
        if self._half == 0:
            w = ((self.regs[CFG_MSB] << 4) | (self.regs[CFG_LSB] & 0x0F)) + 1
            self.regs[CFG_LSB] = w & 0x0F
            self.regs[CFG_MSB] = (w >> 4) & 0xFF

    def _write_reg(self, reg: int, v: int) -> None:
        if reg == FEATURES_IN:
            addr = self._cfg_addr()
            if addr < CONFIG_SIZE:
                self.config[addr] = v
                self.config_loaded = max(self.config_loaded, addr + 1)
            self._advance_cfg()
            return
        if reg == CMD:
            if v == 0xB6:
                self.reset()
            elif ("cmd", v) not in self._logged:
                self._logged.add(("cmd", v))
                log.info("%s: CMD %#04x not modelled", self.name, v)
            return
        if reg in (0x00, 0x02, 0x03) or 0x12 <= reg <= 0x2A:
            return                                   # read-only
        if reg in (CFG_LSB, CFG_MSB):
            self._half = 0
        if reg == PWR_CTRL:
            self._settle()
        self.regs[reg] = v
        if reg == INIT_CTRL:
            if v == 0x00:
                self.regs[INTERNAL_STATUS] = 0x00
            elif v == 0x01:
                self._settle()
                self.regs[INTERNAL_STATUS] = 0x01 if self.config_loaded >= MIN_CONFIG else 0x02
                if "features" not in self._logged:
                    self._logged.add("features")
                    log.info("%s: config loaded (%d bytes); the feature engine is not modelled: "
                             "steps come from walk()/steps per minute", self.name,
                             self.config_loaded)
                self._spm_since = self.clock.now

    def _read_reg(self, reg: int) -> int:
        if reg == FEATURES_IN:
            addr = self._cfg_addr()
            v = self.config[addr] if addr < CONFIG_SIZE else 0
            self._advance_cfg()
            return v
        if 0x12 <= reg <= 0x17:
            if not self.regs[PWR_CTRL] & 0x04:
                return 0
            axis = (reg - 0x12) // 2
            rng = 2 << (self.regs[ACC_RANGE] & 3)          # 2, 4, 8, 16 g
            raw = int(round(self.vector[axis] * 2048 / rng))
            raw = max(-2048, min(2047, raw)) & 0xFFF
            raw16 = raw << 4
            return raw16 & 0xFF if reg % 2 == 0 else raw16 >> 8
        if STEP_CNT0 <= reg <= STEP_CNT0 + 3:
            return (self.steps >> (8 * (reg - STEP_CNT0))) & 0xFF
        if 0x18 <= reg <= 0x1A:                              # SENSORTIME, 39.0625 us LSB
            t = self.clock.now * 25600 // TICKS_PER_SECOND
            return (t >> (8 * (reg - 0x18))) & 0xFF
        if reg == 0x03:
            return 0x10 | (0x80 if self.regs[PWR_CTRL] & 0x04 else 0)
        if reg == 0x22:
            return 0                                         # 23 degC
        return self.regs[reg]

    def _settle(self) -> None:
        """Fold steps from the steps-per-minute rate into the counter."""
        now = self.clock.now
        if self._spm and self.counting:
            self._spm_frac += (now - self._spm_since) * self._spm / (60 * TICKS_PER_SECOND)
            whole = math.floor(self._spm_frac)
            self._steps += whole
            self._spm_frac -= whole
        self._spm_since = now
