"""EGU: event generator unit (EGU0-5, sharing IDs with SWI0-5).

nRF52832 Product Specification v1.4, section 38 "EGU - Event generator unit".
Instances at 0x40014000..0x40019000, IRQ 20-25.  TASKS_TRIGGER[n] (0x000 +
4n) sets EVENTS_TRIGGERED[n] (0x100 + 4n) for n = 0..15; INTEN/INTENSET/
INTENCLR route them to the interrupt, and PPI sees every event.

Not modelled: nothing beyond the PS register set (the SWI alias is the same
slot and interrupt).
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral

NUM_CH = 16


class Egu(NrfPeripheral):
    NAME = "EGU"
    TASKS = {4 * n: f"TRIGGER[{n}]" for n in range(NUM_CH)}
    EVENTS = {0x100 + 4 * n: f"TRIGGERED[{n}]" for n in range(NUM_CH)}

    def task_TRIGGER(self, n: int) -> None:
        self.fire(0x100 + 4 * n)
