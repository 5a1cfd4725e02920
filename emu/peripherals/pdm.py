"""PDM (0x4001D000, IRQ 29), nRF52832 PS v1.4 section 44: register storage;
START -> STARTED, STOP -> STOPPED (and END).

Not modelled: microphone samples, buffer filling; logged once.
"""
from __future__ import annotations

from emu.peripherals.taskevent import TaskEventBlock

US = 512


class Pdm(TaskEventBlock):
    NAME = "PDM"
    TASKS = {0x000: "START", 0x004: "STOP"}
    EVENTS = {0x100: "STARTED", 0x104: "STOPPED", 0x108: "END"}
    TASK_EVENTS = {0x000: [(0x100, 1 * US)], 0x004: [(0x108, 1 * US), (0x104, 2 * US)]}
