"""What every board provides to the Machine.

A board builds its SoC, wires devices to pins and buses, and knows how
resets affect its parts.  Frontends reach devices through the board's own
small API (for the PineTime: screen, touch, button, motor, battery, ...).
"""
from __future__ import annotations

from typing import Optional

from emu.loader import MemoryLayout


class Board:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("reset_pending",)
    STRUCTURE = ("machine", "options")
    name = "board"

    def __init__(self, machine, **options):
        if "flash_file" in options and options["flash_file"] is None:
            del options["flash_file"]      # no file for a flash this board lacks: nothing to do
        if options:
            raise TypeError(f"unknown option{'s' if len(options) > 1 else ''} "
                            f"{', '.join(sorted(options))} for board {self.name} (its options: "
                            f"{', '.join(self.option_names()) or 'none'})")
        self.machine = machine
        self.reset_pending: Optional[str] = None   # set by e.g. a watchdog: reason
        self.options = options

    @classmethod
    def option_names(cls) -> list:
        """The keyword options the board's constructor takes."""
        import inspect
        names = []
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            for p in inspect.signature(init).parameters.values():
                if p.kind == p.KEYWORD_ONLY or (p.kind == p.POSITIONAL_OR_KEYWORD
                                                and p.name not in ("self", "machine")):
                    if p.name not in names and p.name != "pure_python":
                        names.append(p.name)
        return names

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
