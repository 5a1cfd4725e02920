"""COMP / LPCOMP (shared slot 0x40013000, IRQ 19), nRF52832 PS v1.4 sections
38 and 39: register storage; START -> READY after the comparator start-up
time (10 us), STOP has no event, SAMPLE updates RESULT (+0x400) to 0 (input
below threshold: no analogue inputs are modelled).  ENABLE selects COMP (2)
or LPCOMP (1); both decode the same addresses here.

Not modelled: comparison, hysteresis, UP/DOWN/CROSS events, wake-up from
System OFF on LPCOMP; logged once.
"""
from __future__ import annotations

from emu.peripherals.taskevent import TaskEventBlock

US = 512


class CompLpcomp(TaskEventBlock):
    NAME = "COMP"
    TASKS = {0x000: "START", 0x004: "STOP", 0x008: "SAMPLE"}
    EVENTS = {0x100: "READY", 0x104: "DOWN", 0x108: "UP", 0x10C: "CROSS"}
    SHORTS = {0: (0x100, 0x008), 1: (0x100, 0x004), 2: (0x104, 0x004), 3: (0x108, 0x004),
              4: (0x10C, 0x004)}
    TASK_EVENTS = {0x000: [(0x100, 10 * US)], 0x004: [], 0x008: []}

    def on_task(self, offset: int) -> None:
        if offset == 0x004:
            self._due = []
        elif offset == 0x008:
            self.extra[0x400] = 0
