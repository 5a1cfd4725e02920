"""I2S (0x40025000, IRQ 37), nRF52832 PS v1.4 section 43: register storage;
START -> TXPTRUPD/RXPTRUPD (when TX/RX enabled in CONFIG), STOP -> STOPPED.

Not modelled: audio data, MCK/LRCK timing, the buffer double-buffering
after the first pointer update; logged once.
"""
from __future__ import annotations

from emu.peripherals.taskevent import TaskEventBlock

US = 512


class I2s(TaskEventBlock):
    NAME = "I2S"
    TASKS = {0x000: "START", 0x004: "STOP"}
    EVENTS = {0x104: "RXPTRUPD", 0x108: "STOPPED", 0x114: "TXPTRUPD"}
    TASK_EVENTS = {0x000: [], 0x004: [(0x108, 1 * US)]}

    def on_task(self, offset: int) -> None:
        if offset == 0x000:
            now = self.clock.now
            if self.extra.get(0x504, 0) & 1:      # CONFIG.RXEN
                self._due.append((now + 1 * US, 0x104))
            if self.extra.get(0x508, 1) & 1:      # CONFIG.TXEN (reset 1)
                self._due.append((now + 1 * US, 0x114))
