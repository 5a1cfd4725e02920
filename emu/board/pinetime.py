"""The PineTime: an nRF52832 wired to its display, touch, sensors and flash.

(Devices are added by the board issue; for now the bare SoC.)
"""
from __future__ import annotations

from emu.board.bare import BareNrf52832


class PineTime(BareNrf52832):
    name = "pinetime"
