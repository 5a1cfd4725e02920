"""The PineTime's boot chain: InfiniTime's bootloader (bootloader-5.0.4.bin,
MCUBoot on Mynewt) at 0, the MCUBoot image at 0x8000, the boot logo in the NOR.

Loader and logo checks run everywhere.  The real-bootloader tests need
files that are never committed: ``$PINETIME_EMU_BOOTLOADER`` or
``~/.cache/pinetime-emu/infinitime/bootloader-5.0.4.bin`` (copied from
InfiniTime's tree, bootloader/), and InfiniTime's MCUBoot image
(``$PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE`` or
``pinetime-mcuboot-app-image-*.bin`` there, built as the shared
INFINITIME-BUILD.md says); they are skipped with that message when absent.
They run it as shipped: the logo drawn from the NOR, the 5 s wait for the
button, the vector table relocated through the NVMC (which needs the CPU
stalled while it erases, tests/peripherals/test_periph_nvmc.py), the
watchdog started, InfiniTime's watch face."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emu import Machine
from emu.loader import (MCUBOOT_SLOT, MCUBOOT_VECTOR_COPY, FirmwareError, FirmwareImage,
                        McubootImage, load_firmware, with_bootloader)
from emu.norfs import LOGO_SIZE, NOR_SIZE, NorFsError, boot_logo
from helpers.images import nor_with_logo, our_logo
from helpers.paths import ROOT

CACHE = Path.home() / ".cache" / "pinetime-emu" / "infinitime"
DOCS = ROOT / "docs"


def shown(stored: bytes) -> np.ndarray:
    """What the ST7789 shows of the stored logo under the bootloader's MADCTL
    0x60 (exchange, then mirror the columns): the stored picture turned a
    quarter clockwise, as RGB888."""
    px = np.frombuffer(stored, ">u2").reshape(240, 240)
    px = np.rot90(px, -1)
    r, g, b = (px >> 11) & 31, (px >> 5) & 63, px & 31
    return np.stack([r << 3 | r >> 2, g << 2 | g >> 4, b << 3 | b >> 2], axis=2).astype(np.uint8)


# -- the logo ------------------------------------------------------------------
def test_logo_is_stored_to_show_upright():
    logo = our_logo()
    stored = boot_logo(logo)
    assert len(stored) == LOGO_SIZE
    assert np.abs(shown(stored).astype(int) - logo).max() <= 8       # RGB565 rounding
    # companion: stored unturned, it would show turned
    plain = boot_logo(np.rot90(logo, -1))
    assert np.abs(shown(plain).astype(int) - logo).max() > 100


def test_logo_smaller_is_centred_and_too_big_refused():
    small = np.full((10, 20, 3), 255, np.uint8)
    s = shown(boot_logo(small))
    assert s[115:125, 110:130].min() == 255 and s[:100].max() == 0
    with pytest.raises(NorFsError, match="at most 240 x 240"):
        boot_logo(np.zeros((241, 10, 3), np.uint8))


def test_cli_logo(tmp_path):
    from emu.png import write_png
    png, nor = tmp_path / "logo.png", tmp_path / "nor.bin"
    write_png(str(png), our_logo())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "fs", "logo", str(nor), str(png)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    data = nor.read_bytes()
    assert len(data) == NOR_SIZE and data[:LOGO_SIZE] == boot_logo(our_logo())
    assert data[LOGO_SIZE:] == b"\xff" * (NOR_SIZE - LOGO_SIZE)
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "fs", "logo", str(nor),
                        str(tmp_path / "nope.png")], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert nor.read_bytes() == data


# -- the loader ------------------------------------------------------------------
def _mcuboot_app() -> FirmwareImage:
    mcu = McubootImage(MCUBOOT_SLOT, 32, 0x100, 0, 0, "1.2.3", True)
    table = struct.pack("<II", 0x20010000, MCUBOOT_SLOT + 0x121) + b"\0" * 248
    img = FirmwareImage("app.bin", "mcuboot", [(MCUBOOT_SLOT, b"\0" * 32 + table)],
                        mcuboot=mcu)
    img.segments.append((MCUBOOT_VECTOR_COPY, table))
    img.notes.append("vector table at 0x8020 copied to 0x7f00 and VTOR set there")
    return img


def _boot(size=0x100) -> FirmwareImage:
    return FirmwareImage("bl.bin", "bin", [(0, struct.pack("<II", 0x20010000, 0x101)
                                            + b"\0" * (size - 8))])


def test_with_bootloader_boots_from_0_without_the_vector_copy():
    img = with_bootloader(_mcuboot_app(), _boot())
    assert img.vector_table == 0
    assert [a for a, _d in img.segments] == [0, MCUBOOT_SLOT]
    assert img.mcuboot is not None
    assert any("bootloader from bl.bin" in n for n in img.notes)


def test_with_bootloader_refusals():
    plain = FirmwareImage("plain.bin", "bin", [(0, b"\0" * 8)])
    with pytest.raises(FirmwareError, match="not an MCUBoot image"):
        with_bootloader(plain, _boot())
    with pytest.raises(FirmwareError, match="a bootloader lies in 0x0-0x6fff"):
        with_bootloader(_mcuboot_app(), _boot(0x7800))


# -- the real bootloader ---------------------------------------------------------
def _files() -> tuple:
    bl = os.environ.get("PINETIME_EMU_BOOTLOADER") or str(CACHE / "bootloader-5.0.4.bin")
    img = os.environ.get("PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE")
    if not img:
        found = sorted(CACHE.glob("pinetime-mcuboot-app-image-*.bin"))
        img = str(found[0]) if found else ""
    if not Path(bl).exists() or not img or not Path(img).exists():
        pytest.skip("no bootloader or InfiniTime MCUBoot image: set PINETIME_EMU_BOOTLOADER "
                    "(InfiniTime's bootloader/bootloader-5.0.4.bin) and "
                    f"PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE, or put them in {CACHE}")
    return bl, img


def _boots_as_shipped(m: Machine, screenshot: Path = None) -> None:
    wdt = m.soc.peripherals["wdt"]
    m.run(seconds=3)                                    # drawn row by row: 2.5 s
    screen = m.board.screen()
    assert np.abs(screen.astype(int) - our_logo()).max() <= 8, "the logo is not on screen"
    if screenshot is not None:
        m.board.screenshot(str(screenshot))
    resets = m.resets           # Mynewt's start resets the chip once (at 0.6 ms)
    assert m.cpu.vtor != MCUBOOT_VECTOR_COPY and not wdt.running   # it waits for the button
    m.run(seconds=6)                                    # it jumps at 7.7 s
    assert m.cpu.vtor == MCUBOOT_VECTOR_COPY, "the bootloader did not relocate the vectors"
    assert wdt.running, "the watchdog is not running"
    assert m.cpu.read_mem(MCUBOOT_VECTOR_COPY, 256) == m.cpu.read_mem(MCUBOOT_SLOT + 32, 256)
    m.run(seconds=3)
    face = m.board.screen()
    assert int((face[85:155].max(axis=2) > 64).sum()) > 2000, "no watch face"
    assert m.resets == resets, "a reset after InfiniTime started (the watchdog?)"


@pytest.mark.parametrize("how", ["pieces", "dump"])
def test_real_bootloader_boots_infinitime(tmp_path, how):
    bl, img = _files()
    nor = nor_with_logo(tmp_path / "nor.bin")
    if how == "pieces":
        m = Machine(img, bootloader=bl, flash_file=str(nor))
    else:
        dump = bytearray(b"\xff" * 0x80000)
        b, i = Path(bl).read_bytes(), Path(img).read_bytes()
        dump[:len(b)] = b
        dump[MCUBOOT_SLOT:MCUBOOT_SLOT + len(i)] = i
        (tmp_path / "flash.bin").write_bytes(dump)
        assert load_firmware(str(tmp_path / "flash.bin")).vector_table == 0
        m = Machine(str(tmp_path / "flash.bin"), flash_file=str(nor))
    try:
        shot = DOCS / "bootloader-logo.png" if os.environ.get("PINETIME_EMU_UPDATE_DOCS") \
            and how == "pieces" else None
        _boots_as_shipped(m, shot)
    finally:
        m.close()


def test_cli_run_with_bootloader(tmp_path):
    bl, img = _files()
    nor = nor_with_logo(tmp_path / "nor.bin")
    shot = tmp_path / "logo.png"
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", img, "--bootloader", bl,
                        "--flash-file", str(nor), "--headless", "--seconds", "3",
                        "--screenshot", str(shot)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    from emu.png import read_png
    assert np.abs(read_png(str(shot)).astype(int) - our_logo()).max() <= 8
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", bl, "--bootloader", bl,
                        "--headless", "--seconds", "1", "--flash-file", "none"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and "not an MCUBoot image" in r.stderr


def test_companion_without_the_nvmc_stall_the_app_never_starts(tmp_path, monkeypatch):
    """The CPU running on during the NVMC's erase (the model before): Mynewt's
    bounded READY loop gives up, the vector table never reaches 0x7F00 and
    InfiniTime locks up at its first SVC."""
    from emu.cpu.cortexm import CortexM
    bl, img = _files()
    monkeypatch.setattr(CortexM, "stall_until", lambda self, until: None)
    m = Machine(img, bootloader=bl, flash_file=str(nor_with_logo(tmp_path / "nor.bin")))
    try:
        r = m.run(seconds=9)
        assert m.cpu.read_mem(MCUBOOT_VECTOR_COPY, 8) != m.cpu.read_mem(MCUBOOT_SLOT + 32, 8)
        assert not r.ok
    finally:
        m.close()
