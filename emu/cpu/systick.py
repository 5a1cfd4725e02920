"""SysTick: the Cortex-M's 24-bit system timer, counted from the clock
(never ticked): its value computed when read, one event at its next wrap."""
from __future__ import annotations

import logging


from emu.cpu.armv7m import SYSTICK

log = logging.getLogger("emu.cpu")


class SysTick:
    """SysTick timer, counted lazily from the CPU clock (64 MHz; CLKSOURCE=1).

    The nRF52832 has no external SysTick reference (CALIB.NOREF = 1): with
    CLKSOURCE = 0 the counter is modelled on the CPU clock too and that is
    logged once.
    """
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_t0", "_v0", "countflag", "csr", "event", "rvr")
    STRUCTURE = ("cpu",)

    def __init__(self, cpu):
        self.cpu = cpu
        self.event = cpu.clock.event("systick", self._underflow)
        self.reset()

    def reset(self) -> None:
        self.csr = 0
        self.rvr = 0
        self.countflag = 0
        self._v0 = 0          # value at _t0
        self._t0 = 0
        if hasattr(self, "event"):
            self.event.cancel()

    @property
    def enabled(self) -> bool:
        return bool(self.csr & 1)

    def _elapsed(self) -> int:
        return (self.cpu.clock.now - self._t0) // self.cpu.cycle_ticks

    def value(self) -> int:
        if not self.enabled:
            return self._v0
        e = self._elapsed()
        if e <= self._v0:
            return self._v0 - e
        if self.rvr == 0:
            return 0
        return self.rvr - ((e - self._v0 - 1) % (self.rvr + 1))

    def _fold(self) -> None:
        self._v0 = self.value()
        self._t0 = self.cpu.clock.now

    def _arm(self) -> None:
        self.event.cancel()
        if not self.enabled:
            return
        if self._v0 > 0:
            delta = self._v0
        elif self.rvr > 0:
            delta = self.rvr + 1
        else:
            return
        # schedule at the exact tick the counter reaches 0
        self.event.schedule_at(self._t0 + delta * self.cpu.cycle_ticks)

    def _underflow(self) -> None:
        self._v0 = 0
        self._t0 = self.cpu.clock.now
        self.countflag = 1
        if self.csr & 2:
            self.cpu.set_pending(SYSTICK)
        self._arm()

    def write_csr(self, v: int) -> None:
        self._fold()
        self.csr = v & 0x7
        self._arm()

    def read_csr(self) -> int:
        v = self.csr | (self.countflag << 16)
        self.countflag = 0
        return v

    def write_rvr(self, v: int) -> None:
        self.rvr = v & 0xFFFFFF
        self._fold()
        self._arm()

    def write_cvr(self, _v: int) -> None:
        self._v0 = 0
        self._t0 = self.cpu.clock.now
        self.countflag = 0
        self._arm()
