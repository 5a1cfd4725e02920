"""Real wasp-os in the tests: the upstream image
(``$PINETIME_EMU_WASP_IMAGE`` or ``~/.cache/pinetime-emu/wasp-os/upstream/
micropython.elf``, built by hand: docs/firmware.md, 'Real wasp-os') and
Nordic's S132 v6.1.1 (``$PINETIME_EMU_S132_HEX`` or
``~/.cache/pinetime-emu/s132/s132_nrf52_6.1.1_softdevice.hex``); the test
is skipped without them."""
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


def s132_hex() -> str:
    sd = os.environ.get("PINETIME_EMU_S132_HEX") or str(
        CACHE.parent / "s132" / "s132_nrf52_6.1.1_softdevice.hex")
    if not Path(sd).exists():
        pytest.skip(f"no S132 v6.1.1 SoftDevice: set PINETIME_EMU_S132_HEX or copy "
                    f"s132_nrf52_6.1.1_softdevice.hex into {CACHE.parent / 's132'} "
                    "(docs/firmware.md, 'Real wasp-os')")
    return sd
