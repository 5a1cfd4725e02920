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

import numpy as np
import pytest

from emu import Machine
from helpers.zephyr import ZEPHYR


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


def test_hello_world_greets_with_no_board_given():
    p = ZEPHYR / "pinetime_devkit0" / "hello_world" / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p} (shared ZEPHYR-BUILD.md) or set PINETIME_EMU_ZEPHYR_DIR")
    m = Machine(str(p), flash_file=None)            # the board from the image itself
    assert m.board_name == "pinetime"
    assert m.run_until(lambda: "Hello World! pinetime_devkit0" in uart(m), timeout_ms=1000)


def test_blinky_blinks_the_backlight_in_a_recording(tmp_path):
    """samples/basic/blinky: led0 is the backlight's low enable (P0.14,
    active low), toggled every second; the panel is never initialised, so
    what a recording shows is the backlight's glow coming and going."""
    from PIL import Image

    from emu.devices.st7789 import BACKLIGHT_GLOW
    from frontends.record import Recorder
    m = boot("blinky")
    rec = Recorder(m, str(tmp_path / "blinky.gif"))
    m.run(seconds=4.1)
    path = rec.close()
    levels = [lvl for (_t, lvl) in
              [(t, int(img[120, 120, 0])) for t, img in rec.frames]]
    # configured on (active) and toggled off at once (0.8 us: one merged,
    # dropped frame), then on and off every second
    assert levels == [0, BACKLIGHT_GLOW, 0, BACKLIGHT_GLOW], levels
    times = [t for t, _img in rec.frames]
    from emu.clock import TICKS_PER_MS
    gaps = {round((b - a) / TICKS_PER_MS) for a, b in zip(times[1:], times[2:])}
    assert gaps == {1000}, gaps
    with Image.open(path) as im:
        assert im.n_frames == len(rec.frames)


def test_kscan_touch_prints_taps_and_swipes():
    """samples/drivers/kscan_touch: Zephyr's CST816S driver (TWIM0, INT on
    P0.28 configured without a pull: the board's pull-up holds it) prints
    each press with its position; a swipe is reported where it ends."""
    m = boot("kscan_touch")
    m.run(ms=500)
    m.board.touch.tap(100, 50)
    m.run(ms=100)
    m.board.touch.swipe("left")
    m.run(ms=100)
    out = uart(m)
    assert "row = 50 col = 100" in out and "row = 120 col = 40" in out, out
    assert out.count("row = ") == 2, out           # the lifts are not presses


def test_kscan_touch_from_a_scenario(tmp_path):
    """The same through a scenario's tap step (pinetime-emu test)."""
    p = ZEPHYR / "pinetime_devkit0" / "kscan_touch" / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p} (shared ZEPHYR-BUILD.md) or set PINETIME_EMU_ZEPHYR_DIR")
    import subprocess
    import sys
    sc = tmp_path / "touch.yaml"
    sc.write_text("name: kscan touch\nboard: pinetime\nsteps:\n"
                  "  - wait_text: {text: 'Kscan touch panel sample application', timeout_ms: 1000}\n"
                  "  - run: {ms: 200}\n"
                  "  - tap: {x: 60, y: 70}\n"
                  "  - wait_text: {text: 'row = 70 col = 60', timeout_ms: 500}\n")
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "test", str(sc), "--firmware", str(p)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
