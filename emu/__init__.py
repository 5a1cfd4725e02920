"""pinetime-emu: a cycle-timed emulator of the nRF52832 and the PineTime.

``Machine``, ``RunResult``, ``FirmwareError``, ``load_firmware``, ``World``
(several devices on one air) and ``AirModel`` are
imported when first used (PEP 562), so ``import emu.outputs`` and the other
plain modules do not load Unicorn: ``twister-flash`` runs under a Python
without the emulator's dependencies.
"""
import os
from typing import TYPE_CHECKING

# numpy's OpenBLAS starts a thread per core at import, and they spin for a
# while: 0.06 s of CPU on the other core of a 2-core host, which the
# emulator pays at every start (InfiniTime's first second: 0.30 s of CPU
# against 0.26 s with one thread).  The emulator's numpy is elementwise
# (screen and image conversions), never BLAS: one thread, unless the user
# chose otherwise or imported numpy first.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__all__ = ["Machine", "RunResult", "FirmwareError", "load_firmware", "World", "AirModel"]

_LAZY = {"Machine": "emu.machine", "RunResult": "emu.machine",
         "FirmwareError": "emu.loader", "load_firmware": "emu.loader",
         "World": "emu.world", "AirModel": "emu.airspace"}

if TYPE_CHECKING:                                   # pragma: no cover
    from emu.loader import FirmwareError, load_firmware
    from emu.machine import Machine, RunResult
    from emu.world import World
    from emu.airspace import AirModel


def __getattr__(name: str):
    if name == "__version__":                       # pyproject.toml's, or the build's
        from emu.version import version
        return version()
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'emu' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value
