"""An LED on a GPIO pin, and a push button to ground: the parts of a
development board (emu/board/nrf52dk.py).

- :class:`Led`: lit while its pin is driven to its active level (the nRF52
  DK's LEDs are wired from VDD through a resistor to the pin: on when the
  pin is driven low).  ``timeline`` records (tick, on) at every change, so a
  blink's period is read in emulated time.
- :class:`GroundButton`: a button between the pin and ground with no
  external pull-up: pressed, it drives the pin low; released, it leaves it
  alone and the firmware's pull-up (PIN_CNF PULL) makes it read high.

Not modelled: LED brightness (PWM dimming shows as fast on/off changes in
the timeline), button bounce.
"""
from __future__ import annotations

from typing import Optional

from emu.devices.simple import PushButton


class Led:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_on", "active_low", "name", "timeline")
    STRUCTURE = ("clock", "pin")
    def __init__(self, clock, pin, name: str = "led", active_low: bool = True):
        self.clock = clock
        self.pin = pin
        self.name = name
        self.active_low = active_low
        self.timeline: list = []          # [(tick, on)]
        self._on = self._level_on()
        pin.on_change(self._changed)

    @property
    def on(self) -> bool:
        return self._on

    def _level_on(self) -> bool:
        p = self.pin
        return p.driven and p.level != self.active_low

    def _changed(self, _level: bool) -> None:
        on = self._level_on()
        if on != self._on:
            self._on = on
            self.timeline.append((self.clock.now, on))

    def toggles(self, since: int = 0, until: Optional[int] = None) -> list:
        """Ticks of the changes in [since, until)."""
        until = self.clock.now if until is None else until
        return [t for t, _on in self.timeline if since <= t < until]

    def save_state(self) -> dict:
        return {"on": self._on, "timeline": list(self.timeline)}

    def load_state(self, st: dict) -> None:
        self._on = bool(st["on"])
        self.timeline = [tuple(e) for e in st["timeline"]]


class GroundButton(PushButton):
    """A push button to ground; the pull-up is the chip's."""

    def _update(self) -> None:
        self.pin.drive(self.name, False if self._pressed else None)
