"""wasp-os's own bootloader and an update over the air (issue 26, the wasp-os part).

wasp-os's bootloader (the Adafruit nRF52 bootloader fork, ``make
bootloader``) runs on Nordic's real S132 (``--softdevice-hex``): the MBR
starts it from UICR.NRFFW[0], and with no application it stays in DFU mode
advertising "PineDFU", as a new watch does.  The emulated phone sends
wasp-os's DFU package with the legacy Nordic DFU (emu/phone/dfu.py, as
wasptool's pynus dfu.py does); the bootloader takes it and writes it at
0x26000.  (It does not start it yet: see the last test.)

Needs files never committed: ``$PINETIME_EMU_WASP_BOOTLOADER`` or
``~/.cache/pinetime-emu/wasp-os/bootloader/*-nosd.hex`` (built as that
folder's MANIFEST.md says), ``$PINETIME_EMU_S132_HEX`` or
``~/.cache/pinetime-emu/s132/s132_nrf52_6.1.1_softdevice.hex``, and
``$PINETIME_EMU_WASP_DFU`` or ``~/.cache/pinetime-emu/wasp-os/upstream/micropython-dfu.zip``.
Very slow (the real SoftDevice's radio timing in Python: the transfer's 155
emulated seconds take about 20 minutes): also needs PINETIME_EMU_SLOW_TESTS=1.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from emu import Machine
from emu.loader import load_firmware
from emu.phone.dfu import read_package
from emu.phone.gattphone import GattPhone
from emu.phone.scanner import Scanner

CACHE = Path.home() / ".cache" / "pinetime-emu"


def _files() -> tuple:
    bl = os.environ.get("PINETIME_EMU_WASP_BOOTLOADER")
    if not bl:
        found = sorted((CACHE / "wasp-os" / "bootloader").glob("*-nosd.hex"))
        bl = str(found[-1]) if found else ""
    sd = os.environ.get("PINETIME_EMU_S132_HEX") or \
        str(CACHE / "s132" / "s132_nrf52_6.1.1_softdevice.hex")
    dfu = os.environ.get("PINETIME_EMU_WASP_DFU") or \
        str(CACHE / "wasp-os" / "upstream" / "micropython-dfu.zip")
    if not bl or not all(Path(p).exists() for p in (bl, sd, dfu)):
        pytest.skip("no wasp-os bootloader, S132 or wasp-os DFU package (see "
                    "tests/firmware/test_wasp_ota.py's docstring)")
    return bl, sd, dfu


def test_bootloader_found_through_uicr():
    bl, _sd, _dfu = _files()
    img = load_firmware(bl)
    assert img.vector_table == 0x78000 == img.word_at(0x10001014)


def test_bootloader_advertises_dfu_mode():
    bl, sd, _dfu = _files()
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=None)
    sc = Scanner(m.air)
    m.run(seconds=3)
    assert "PineDFU" in {d.name for d in sc.devices.values()}
    assert 0x78000 <= m.cpu.pc < 0x80000 or m.cpu.pc < 0x26000   # bootloader or SoftDevice


@pytest.mark.skipif(not os.environ.get("PINETIME_EMU_SLOW_TESTS"),
                    reason="about 25 minutes: set PINETIME_EMU_SLOW_TESTS=1")
@pytest.mark.timeout(3600)
def test_update_wasp_os_over_the_air():
    bl, sd, dfu = _files()
    m = Machine(bl, board="pinetime", softdevice_hex=sd, flash_file=None)
    m.run(seconds=3)
    phone = GattPhone(m, name="PineDFU")
    pkg = read_package(dfu)
    d = phone.dfu(pkg)
    assert d.step == "done" and d.sent == len(pkg.image)
    m.run(seconds=30)
    assert m.cpu.read_mem(0x26000, 4096) == pkg.image[:4096]     # written where it runs
    # Not yet: the bootloader should then start wasp-os; measured here it
    # stays in the bootloader for at least 38 s after the transfer (PC in
    # 0x79000-0x7C000; not investigated: its settings page, a DFU-mode
    # timeout, or a model gap).
