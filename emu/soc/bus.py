"""Peripheral bus: maps peripheral models into the CPU's address space.

Each peripheral occupies one 4 KiB slot mapped with Unicorn's ``mmio_map``.
The callbacks bring the clock up to date, dispatch to the model, and never
let a Python exception escape into Unicorn (it would be printed and lost):
a model error is logged with the guest PC and symbol and the access reads 0.

Writes with side effects run exactly once per guest access: nothing here
stops the emulation from inside a callback (see UNICORN-NOTES.md); a model
that needs the run loop's attention calls ``cpu.request_stop()``.
"""
from __future__ import annotations

import logging

log = logging.getLogger("emu.bus")


class PeripheralBus:
    def __init__(self, cpu, symbolize=None):
        self.cpu = cpu
        self.symbolize = symbolize or (lambda a: "")
        self.slots: dict = {}      # base -> peripheral
        self.accesses = 0

    def attach(self, base: int, periph, size: int = 0x1000) -> None:
        if base in self.slots:
            raise ValueError(f"peripheral slot {base:#010x} already holds "
                             f"{self.slots[base].name}, cannot add {periph.name}")
        self.slots[base] = periph
        cpu = self.cpu
        sync = cpu.sync_time

        def rd(uc, offset, size, _ud, p=periph):
            self.accesses += 1
            sync()
            try:
                if size == 4 and not offset & 3:
                    return p.read(offset, 4)
                word = p.read(offset & ~3, size)
                return (word >> ((offset & 3) * 8)) & ((1 << (size * 8)) - 1)
            except Exception:
                self._model_error(p, "read", offset)
                return 0

        def wr(uc, offset, size, value, _ud, p=periph):
            self.accesses += 1
            sync()
            try:
                if size == 4 and not offset & 3:
                    p.write(offset, value, 4)
                else:
                    shift = (offset & 3) * 8
                    p.write(offset & ~3, (value & ((1 << (size * 8)) - 1)) << shift, size)
            except Exception:
                self._model_error(p, "write", offset)

        cpu.map_mmio(base, size, periph.name.upper(), rd, wr)

    def _model_error(self, p, what: str, offset: int) -> None:
        try:
            pc = self.cpu.pc
        except Exception:
            pc = 0
        sym = self.symbolize(pc)
        log.exception("internal error in %s model on %s of +%#x (guest pc=%#010x%s)", p.name,
                      what, offset, pc, f" {sym}" if sym else "")
