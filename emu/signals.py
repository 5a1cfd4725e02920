"""Lines and pins: the wires between the SoC and the devices on a board.

A :class:`Line` is a two-level signal (an interrupt line, a chip select seen
from a device) that notifies its listeners only when its level changes.

A :class:`Pin` is a tri-state package pin: any number of owners may *claim*
it, each either driving it high, low, or not driving it (``None``).  The
resolved level is the single driver's level, else the pull resistor, else
low (a floating input reads 0 here; silicon is undefined).  Two drivers with
different levels are contention (two devices, or a device against a pin the
firmware drives): it is logged once and the last writer wins.  GPIO and the
peripherals that select a pin are not two drivers: the GPIO model hands the
pin over (``Gpio.select``) with :meth:`drive_many`, in one step.
A pin may also carry a serial line (``Pin.serial``): whole UART frames
stand in for its waveform.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

log = logging.getLogger("emu.signals")


class Line:
    __slots__ = ("name", "level", "_listeners")

    def __init__(self, name: str, level: bool = False):
        self.name = name
        self.level = level
        self._listeners: list = []

    def connect(self, fn: Callable[[bool], None]) -> None:
        self._listeners.append(fn)

    def set(self, level: bool) -> None:
        level = bool(level)
        if level != self.level:
            self.level = level
            for fn in self._listeners:
                fn(level)


class Pin:
    """One GPIO pad with tri-state drivers and a pull resistor."""

    __slots__ = ("name", "number", "drivers", "pull", "board_pull", "level", "_listeners",
                 "_contention_logged",
                 "_was_driven", "serial", "serial_listeners")
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_contention_logged", "_was_driven", "board_pull", "drivers", "level", "name",
                "number", "pull", "serial")
    STRUCTURE = ("_listeners", "serial_listeners")

    def __init__(self, name: str, number: int = -1):
        self.name = name
        self.number = number
        self.drivers: dict = {}        # owner -> bool
        self.pull: Optional[bool] = None  # the chip's pull: True = up, False = down
        # a resistor on the board (the PineTime's touch INT pull-up): applies
        # while nothing drives the pin and the chip's own pull is off
        self.board_pull: Optional[bool] = None
        self.level = False
        self._listeners: list = []
        self._contention_logged = False
        self._was_driven = False
        # UART frames stand in for the waveform on a serial line: ``serial`` is
        # the device wired to this pin that speaks UART (a terminal, see
        # emu/devices/terminal.py); the chip's UART hands it the bytes it sends
        # on the pin (``serial.frame(pin, byte)``) and takes the bytes it has for
        # the chip here (``has_data(pin)``, ``take(pin)``).  The device calls
        # :meth:`serial_data` when it has new bytes, which tells the receivers
        # in ``serial_listeners`` (fn(pin number)).
        self.serial = None
        self.serial_listeners: list = []

    def on_change(self, fn: Callable[[bool], None]) -> None:
        self._listeners.append(fn)

    def drive(self, owner: str, level: Optional[bool]) -> None:
        """``owner`` drives the pin to ``level``, or releases it with None."""
        if level is None:
            self.drivers.pop(owner, None)
        else:
            self.drivers[owner] = bool(level)
        self._resolve(last=owner)

    def drive_many(self, levels: dict) -> None:
        """Several owners change at once ({owner: level or None}); the pin
        resolves and notifies once (a hand-over from GPIO to a peripheral is
        neither a glitch nor contention)."""
        drv = self.drivers
        for owner, level in levels.items():
            if level is None:
                drv.pop(owner, None)
            else:
                drv[owner] = bool(level)
        self._resolve()

    def set_pull(self, pull: Optional[bool]) -> None:
        """The chip's pull resistor (GPIO PIN_CNF.PULL)."""
        self.pull = pull
        self._resolve()

    def set_board_pull(self, pull: Optional[bool]) -> None:
        """A resistor on the board, kept whatever the firmware configures."""
        self.board_pull = pull
        self._resolve()

    def driven_by(self) -> list:
        return list(self.drivers)

    def _resolve(self, last: Optional[str] = None) -> None:
        drv = self.drivers
        if len(drv) == 1:                     # one driver (the common case)
            (new,) = drv.values()
        elif drv:
            levels = set(drv.values())
            if len(levels) > 1:
                if not self._contention_logged:
                    self._contention_logged = True
                    log.warning("pin %s: contention between %s", self.name, sorted(drv))
                new = drv[last] if last in drv else next(iter(drv.values()))
            else:
                new = levels.pop()
        elif self.pull is not None:
            new = self.pull
        elif self.board_pull is not None:
            new = self.board_pull
        else:
            new = False
        was_driven = self._was_driven
        self._was_driven = bool(drv)
        if new != self.level or was_driven != self._was_driven:
            self.level = new
            for fn in self._listeners:
                fn(new)

    def serial_data(self) -> None:
        """The serial device on this pin has new bytes for the chip."""
        for fn in self.serial_listeners:
            fn(self.number)

    @property
    def driven(self) -> bool:
        """True while at least one owner drives the pin."""
        return bool(self.drivers)

    def driven_low(self) -> bool:
        """Driven, and low (how a chip select or reset counts as asserted)."""
        return bool(self.drivers) and not self.level
