"""BBC micro:bit v1: an nRF51822 wired to its LED matrix, buttons and sensors."""
from __future__ import annotations

from emu.board.base import Board
from emu.soc.nrf51822 import Nrf51822


class Microbit(Board):
    name = "microbit"

    def __init__(self, machine, pure_python: bool = False, **options):
        super().__init__(machine, **options)
        self.soc = Nrf51822(machine.clock, force_python_counter=pure_python)
        self.soc.reset_request_handler = self.request_reset
        self.uart = self.soc.peripherals["uart0"]
        self.uart.on_tx(lambda b: machine._emit(bytes([b])))
