"""Real wasp-os in the tests: the upstream image
(``$PINETIME_EMU_WASP_IMAGE`` or ``~/.cache/pinetime-emu/wasp-os/upstream/
micropython.elf``, built by hand: docs/firmware.md, 'Real wasp-os'); the
test is skipped without it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

CACHE = Path.home() / ".cache" / "pinetime-emu" / "wasp-os"


def wasp_image() -> str:
    p = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(CACHE / "upstream" / "micropython.elf")
    if not Path(p).exists():
        pytest.skip("no wasp-os image: set PINETIME_EMU_WASP_IMAGE or build one into "
                    f"{CACHE / 'upstream'} (docs/firmware.md, 'Real wasp-os')")
    return p
