"""QDEC (0x40012000, IRQ 18), nRF52832 PS v1.4 section 40: register storage;
START gives no samples, STOP -> STOPPED, READCLRACC/RDCLRACC/RDCLRDBL clear
ACC/ACCDBL (always 0 here; no quadrature inputs are modelled).

Not modelled: sampling, reports, the LED output, debounce; logged once.
"""
from __future__ import annotations

from emu.peripherals.taskevent import TaskEventBlock


class Qdec(TaskEventBlock):
    HAS_INTEN = False   # only INTENSET/INTENCLR
    NAME = "QDEC"
    TASKS = {0x000: "START", 0x004: "STOP", 0x008: "READCLRACC", 0x00C: "RDCLRACC",
             0x010: "RDCLRDBL"}
    EVENTS = {0x100: "SAMPLERDY", 0x104: "REPORTRDY", 0x108: "ACCOF", 0x10C: "DBLRDY",
              0x110: "STOPPED"}
    SHORTS = {0: (0x104, 0x008), 1: (0x100, 0x004), 2: (0x104, 0x00C), 3: (0x104, 0x004),
              4: (0x10C, 0x010), 5: (0x10C, 0x004), 6: (0x100, 0x000)}
    TASK_EVENTS = {0x000: [], 0x004: [(0x110, 0)], 0x008: [], 0x00C: [], 0x010: []}
