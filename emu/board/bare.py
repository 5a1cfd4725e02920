"""A bare nRF52832 with nothing connected to its pins (for CPU and SoC tests)."""
from __future__ import annotations

from emu.board.base import Board
from emu.soc.nrf52832 import Nrf52832


class BareNrf52832(Board):
    name = "nrf52832"

    def __init__(self, machine, pure_python: bool = False, **options):
        super().__init__(machine, **options)
        self.soc = Nrf52832(machine.clock, force_python_counter=pure_python)
        self.soc.reset_request_handler = self.request_reset
