"""A bare nRF52832 with nothing connected to its pins (for CPU and SoC tests).

Its console (``console``, emu/devices/terminal.py) is a probe on every pin:
it hears whatever pins UART0/UARTE0 select (PSELTXD, PSEL.TXD) and sends on
whatever pin PSELRXD (PSEL.RXD) selects, so any nRF52832 firmware's UART
console is seen.  Its bytes also go to ``machine.console``.  A board built
on this one (PineTime, nRF52 DK) wires its terminal to its own pins
(``CONSOLE_PINS``).
"""
from __future__ import annotations

from emu.board.base import Board
from emu.devices.terminal import SerialTerminal
from emu.soc.nrf52832 import Nrf52832


class BareNrf52832(Board):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("console", "power_on_reset", "soc", "system_reset")
    name = "nrf52832"
    #: (TX, RX) pins of the UART console, the chip's view; None = any pin
    CONSOLE_PINS: tuple = (None, None)

    def __init__(self, machine, pure_python: bool = False, **options):
        super().__init__(machine, **options)
        self.soc = Nrf52832(machine.clock, force_python_counter=pure_python)
        self.soc.reset_request_handler = self.request_reset
        self.console = self._console(machine)

    def _console(self, machine) -> SerialTerminal:
        pins = self.soc.pins
        tx, rx = self.CONSOLE_PINS
        term = SerialTerminal(None if tx is None else pins[tx], None if rx is None else pins[rx],
                              pins=pins)
        term.on_output(lambda b: machine._emit(bytes([b])))
        return term

    # ------------------------------------------------------------------ API
    def uart_send(self, data: bytes) -> None:
        """Bytes typed on the UART console (the chip's RXD line)."""
        self.console.send(bytes(data))

    def uart_output(self) -> bytes:
        """Every byte the firmware sent to the UART console."""
        return bytes(self.console.output)

    def console_pins(self) -> tuple:
        """(TX, RX) pin numbers the console listens and sends on (None: any)."""
        return self.CONSOLE_PINS
