"""A serial terminal on the chip's pins: the board's UART console.

The terminal is a device on two pins, not a hook on a UART instance: it
reads the frames the chip sends on its ``tx`` pin (the chip's TXD) and
sends what it is given on its ``rx`` pin (the chip's RXD).  Whichever UART
selects those pins (PSELTXD/PSELRXD, PSEL.TXD/PSEL.RXD) talks to it; a
firmware that puts its UART on other pins is not heard, as on silicon.
Bytes move as whole 8N1 frames (emu/signals.py ``Pin.serial``): the UART
times them at its baud rate; the terminal never checks the rate (a
mismatch would give garbage on silicon: not modelled).

``tx=None`` / ``rx=None`` with ``pins`` given: a probe on every pin, the
console of a bare chip that follows whatever pins its UART selects.

Host side: ``output`` (every byte received, also given to the
``listeners``, fn(byte)) and :meth:`send` (bytes typed: they wait in
``pending`` until a receiver on the ``rx`` pin takes them, one per byte
time while it is started, as a terminal with a deep buffer would).

Not modelled: the line levels (idle high), break conditions, RTS/CTS flow
control (a firmware that falls behind loses bytes with OVERRUN, as the
UART model says).
"""
from __future__ import annotations

from typing import Callable, Optional

ANY = None


class SerialTerminal:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("name", "output", "pending")
    STRUCTURE = ("_rx_pins", "listeners", "rx", "tx")
    def __init__(self, tx=ANY, rx=ANY, *, pins=None, name: str = "console"):
        """``tx``/``rx``: the chip's pins the terminal listens and sends on
        (:class:`emu.signals.Pin`), or None for any of ``pins``."""
        self.name = name
        self.tx = tx
        self.rx = rx
        self.output = bytearray()
        self.pending = bytearray()
        self.listeners: list = []
        everywhere = list(pins or ())
        self._rx_pins = [rx] if rx is not None else everywhere
        for pin in ([tx] if tx is not None else everywhere) + self._rx_pins:
            if pin.serial not in (None, self):
                raise ValueError(f"{pin.name}: two serial devices ({pin.serial.name}, {name})")
            pin.serial = self

    # -- host side ---------------------------------------------------------
    def send(self, data: bytes) -> None:
        """Bytes typed on the terminal, for the chip's receiver on ``rx``."""
        if not data:
            return
        self.pending.extend(data)
        for pin in self._rx_pins:
            pin.serial_data()

    def on_output(self, fn: Callable[[int], None]) -> None:
        self.listeners.append(fn)

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    # -- the chip's side (emu/peripherals/uart.py) -------------------------
    def frame(self, pin: int, byte: int) -> None:
        """The chip sent ``byte`` on pin number ``pin``."""
        if self.tx is not None and pin != self.tx.number:
            return                          # the chip drives our output line: not heard
        self.output.append(byte)
        for fn in self.listeners:
            fn(byte)

    def _sends_on(self, pin: int) -> bool:
        return self.rx is None or pin == self.rx.number

    def has_data(self, pin: int) -> bool:
        return bool(self.pending) and self._sends_on(pin)

    def take(self, pin: int) -> Optional[int]:
        """The next byte on the line at ``pin`` (a receiver there takes it)."""
        if not self.pending or not self._sends_on(pin):
            return None
        return self.pending.pop(0)

    def reset(self) -> None:
        """The terminal keeps its transcript and buffer across chip resets."""
