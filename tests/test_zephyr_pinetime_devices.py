"""Zephyr 3.1.0's own PineTime board (pinetime_devkit0) reaches the watch's devices.

Zephyr drives the display and the NOR through legacy SPI1 and the sensors
through TWIM0, on the same pins wasp-os and InfiniTime use through SPI0 and
TWI1: the emulated devices hang on pins (emu/buses.py), so any instance
reaches them.  The images are built by hand (shared ZEPHYR-BUILD.md) into
``$PINETIME_EMU_ZEPHYR_DIR/pinetime_devkit0/<sample>/zephyr.elf`` (default
``~/.cache/pinetime-emu/zephyr``); each test skips with a message naming the
file it needs when the image is absent.  Console output is UART0's (TX
P0.11), read from the model's host side.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from emu import Machine

ZEPHYR = Path(os.environ.get("PINETIME_EMU_ZEPHYR_DIR")
              or Path.home() / ".cache" / "pinetime-emu" / "zephyr")


def boot(sample: str) -> Machine:
    p = ZEPHYR / "pinetime_devkit0" / sample / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p}: build samples/drivers/{sample} for "
                    "pinetime_devkit0 (shared ZEPHYR-BUILD.md) or set PINETIME_EMU_ZEPHYR_DIR")
    return Machine(str(p), board="pinetime", flash_file=None)


def uart(m: Machine) -> str:
    return bytes(m.soc.uart0.host_output).decode("ascii", "replace")


def test_spi_flash_sample_finds_the_nor_and_passes():
    """samples/drivers/spi_flash: JEDEC ID 0B 40 16 through SPI1, then a
    sector erase, a 4-byte write and the read-back at 0xFF000."""
    m = boot("spi_flash")
    ends = ("Good!!", "was not found!", "failed", "does not match")
    assert m.run_until(lambda: any(e in uart(m) for e in ends), timeout_ms=3000), uart(m)
    m.run(ms=10)
    out = uart(m)
    assert "SPI flash driver XT25FB32 was not found" not in out, out
    assert "Flash erase succeeded!" in out, out
    assert "Data read matches data written. Good!!" in out, out
    assert m.board.flash.read(0xFF000, 4) == bytes([0x55, 0xAA, 0x66, 0x99])
    assert m.soc.buses.routes.get("serial1.spi") is m.board.spi    # legacy SPI1 drove it


def test_display_sample_draws_its_corners():
    """samples/drivers/display: white background, red top-left, green
    top-right, blue bottom-right rectangles, a grey one bottom-left that gets
    lighter every 100 ms.  The sample leaves the backlight (LEDs on P0.14/22/
    23) off, so the test lights it to look at the panel."""
    m = boot("display")
    for n in (14, 22, 23):
        m.soc.pins[n].drive("test", False)
    m.run(ms=1000)
    d = m.board.display
    assert 0x2C in d.commands and d.display_on and not d.sleeping, [hex(c) for c in d.commands[:30]]
    s = m.board.screen()
    red, green, blue = (np.all(s == c, axis=2) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255)))
    ys, xs = np.nonzero(red)
    h, w = ys.max() + 1, xs.max() + 1
    assert (ys.min(), xs.min()) == (0, 0) and red.sum() == w * h and w > 8 and h > 8
    assert green[:h, 240 - w:].all() and green.sum() == w * h
    assert blue[240 - h:, 240 - w:].all() and blue.sum() == w * h
    assert (s[h:240 - h, w:240 - w] == 255).all()                    # white background
    grey = s[239, 0].astype(int)
    assert grey[0] == grey[2] and abs(grey[0] - grey[1]) <= 8 and 0 < grey[0] < 255
    m.run(ms=500)
    assert m.board.screen()[239, 0][0] > grey[0]                     # it keeps drawing
