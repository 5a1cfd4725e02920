"""What every board provides to the Machine.

A board builds its SoC, wires devices to pins and buses, and knows how
resets affect its parts.  Frontends reach devices through the board's own
small API (for the PineTime: screen, touch, button, motor, battery, ...).
"""
from __future__ import annotations

from typing import Optional

from emu.loader import MemoryLayout


class Board:
    name = "board"

    def __init__(self, machine, **options):
        self.machine = machine
        self.reset_pending: Optional[str] = None   # set by e.g. a watchdog: reason
        self.options = options

    def memory_layout(self) -> MemoryLayout:
        soc = self.soc
        return MemoryLayout(flash_base=0, flash_size=soc.FLASH_SIZE, ram_base=soc.RAM_BASE,
                            ram_size=soc.RAM_SIZE)

    def firmware_loaded(self, image) -> None:
        """Called after the image is programmed (before the first reset)."""

    def power_on_reset(self) -> None:
        for p in self.soc.peripherals.values():
            reset = getattr(p, "power_on_reset", None)
            (reset or p.reset)()

    def system_reset(self, reason: str) -> None:
        for p in self.soc.peripherals.values():
            sr = getattr(p, "system_reset", None)
            if sr is not None:
                sr(reason)
            else:
                p.reset()

    def request_reset(self, reason: str) -> None:
        """A device (watchdog, reset pin) asks for a system reset."""
        self.reset_pending = reason
        self.soc.cpu.request_stop()
