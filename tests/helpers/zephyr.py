"""Zephyr 3.1.0's own images, built by hand (shared ZEPHYR-BUILD.md) into
``$PINETIME_EMU_ZEPHYR_DIR/<board>/<sample>/zephyr.elf`` (default
``~/.cache/pinetime-emu/zephyr``): where they are, and a machine booting one
(the test is skipped, naming the file, when it is absent)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from emu import Machine

ZEPHYR = Path(os.environ.get("PINETIME_EMU_ZEPHYR_DIR")
              or Path.home() / ".cache" / "pinetime-emu" / "zephyr")


def image(board: str, sample: str) -> str:
    p = ZEPHYR / board / sample / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p}: build samples/{sample} for {board} "
                    "(shared ZEPHYR-BUILD.md) or set PINETIME_EMU_ZEPHYR_DIR")
    return str(p)


def boot(board: str, sample: str, emu_board: str, **kw) -> Machine:
    opts = {"flash_file": None} if emu_board == "pinetime" else {}
    opts.update(kw)
    return Machine(image(board, sample), board=emu_board, **opts)
