"""pinetime-emu: a cycle-timed emulator of the nRF52832 and the PineTime."""
from emu.loader import FirmwareError, load_firmware
from emu.machine import Machine, RunResult

__all__ = ["Machine", "RunResult", "FirmwareError", "load_firmware"]
__version__ = "0.1.0"
