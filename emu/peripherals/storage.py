"""Register storage for blocks that are mapped but not behaviourally modelled.

Reads return what was written (reset value 0); tasks do nothing.  Every
offset is logged once, so a firmware that relies on one of these blocks says
so in the log.  Used for NFCT, MWU, FPU and any block not yet given
a model of its own.

Not modelled: everything the block does.
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral


class StoragePeripheral(NrfPeripheral):
    NAME = "STORAGE"

    def __init__(self, soc, base, name=None, irq=None):
        super().__init__(soc, base, name, irq)
        self.log_once("unmodelled", "%s at %#010x is register storage only (not modelled)",
                      self.name.upper(), base)

    def read(self, offset: int, size: int = 4) -> int:
        if 0x100 <= offset < 0x180:
            return self.events.get(offset, 0)
        return super().read(offset, size)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        if offset < 0x80:
            self.log_once(("task", offset), "task +%#x of an unmodelled block ignored", offset)
            return
        if 0x100 <= offset < 0x180:
            self.events[offset] = value & 1
            self.update_irq()
            return
        super().write(offset, value, size)
