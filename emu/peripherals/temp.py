"""TEMP: die temperature sensor.

nRF52832 Product Specification v1.4, section 27 "TEMP - Temperature
sensor".  Slot 0x4000C000, IRQ 12.

TASKS_START measures: after t_TEMP (36 us) TEMP holds the die temperature in
0.25 degC steps (two's complement) and EVENTS_DATARDY is set.  The
temperature is :attr:`temperature_c` (default 25 degC), settable by tests and
frontends with ``set_temperature``.  TASKS_STOP abandons a measurement.  The
linearisation registers A0-A5, B0-B5 and T0-T4 hold their PS reset values
and are writable storage (the model does not use them).

Not modelled: the piecewise-linear conversion through A/B/T (the reported
value is the set temperature rounded to 0.25 degC), sensor noise.
"""
from __future__ import annotations

from emu.clock import us
from emu.peripherals.base import NrfPeripheral, Reg, RO, RW

T_TEMP = us(36)

_A = [0x326, 0x348, 0x3AA, 0x40E, 0x4BD, 0x5A3]
_B = [0x3FEF, 0x3FBE, 0x3FBE, 0x12, 0x124, 0x27C]
_T = [0xE2, 0x00, 0x14, 0x19, 0x50]


class Temp(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev", "temperature_c")
    NAME = "TEMP"
    HAS_INTEN = False
    TASKS = {0x000: "START", 0x004: "STOP"}
    EVENTS = {0x100: "DATARDY"}
    REGISTERS = ([Reg(0x508, "TEMP", 0, RO)]
                 + [Reg(0x520 + 4 * i, f"A{i}", v, RW, mask=0xFFF) for i, v in enumerate(_A)]
                 + [Reg(0x540 + 4 * i, f"B{i}", v, RW, mask=0x3FFF) for i, v in enumerate(_B)]
                 + [Reg(0x560 + 4 * i, f"T{i}", v, RW, mask=0xFF) for i, v in enumerate(_T)])

    def __init__(self, soc, base: int, name=None, irq=None):
        self.temperature_c = 25.0
        self._ev = soc.clock.event(f"{name or 'temp'}.datardy", self._on_done)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._ev.cancel()

    def set_temperature(self, celsius: float) -> None:
        self.temperature_c = float(celsius)

    def task_START(self) -> None:
        if not self._ev.pending:
            self._ev.schedule_in(T_TEMP)

    def task_STOP(self) -> None:
        self._ev.cancel()

    def _on_done(self) -> None:
        self.values[0x508] = int(round(self.temperature_c * 4)) & 0xFFFFFFFF
        self.fire(0x100)

    def save_model_state(self) -> dict:
        return {"t": self.temperature_c, "when": self._ev.when}

    def load_model_state(self, s: dict) -> None:
        self.temperature_c = s["t"]
        if s.get("when") is not None:
            self._ev.schedule_at(s["when"])
