"""Firmware updates over the air: InfiniTime 1.16.1 to 1.16.2 through its
bootloader, the legacy Nordic DFU from the emulated phone (emu/phone/dfu.py).

As a user does it: InfiniTime 1.16.1 boots through the real bootloader
(bootloader-5.0.4.bin at 0); "Firmware & files" over the air is enabled in
Settings by touch; the phone sends the 1.16.2 DFU package; InfiniTime writes
it into the NOR's secondary slot, validates its CRC and resets; MCUBoot swaps
the images and 1.16.2 runs (the firmware-version characteristic, 0x2A26,
says so).  Not validated, a reset brings 1.16.1 back; validated in Settings >
Firmware, 1.16.2 stays.  A transfer whose CRC does not match is refused and
the firmware keeps running (InfiniTime drops it without a word: the phone
gives up after 30 s of silence).  (A second update right after a refused one
fails in InfiniTime itself: its 10 s DFU timeout fires during the slot's
erase, which took 15.8 s then, and resets the expected size to 0.)

Needs files never committed (skipped with a message without them), in
``~/.cache/pinetime-emu/infinitime/`` or named by environment variables:
``PINETIME_EMU_BOOTLOADER`` (bootloader-5.0.4.bin from InfiniTime's tree),
``PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE`` (pinetime-mcuboot-app-image-1.16.1.bin)
and ``PINETIME_EMU_INFINITIME_DFU_UPDATE`` (a DFU package of another version,
pinetime-mcuboot-app-dfu-1.16.2.zip: the same sources with only the version
changed; that folder's MANIFEST.md says how it was built).  Slow: several
emulated minutes, about ten on the wall clock.
"""
from __future__ import annotations

import io
import json
import os
import time
import zipfile
from pathlib import Path

import pytest

from emu import Machine
from emu.loader import MCUBOOT_VECTOR_COPY, crc16_ccitt
from emu.norfs import NOR_SIZE
from emu.phone.dfu import package_from_bytes, read_package
from emu.phone.gatt import GattError
from helpers.images import init_packet, nor_with_logo
from helpers.infinitime import enable_ota, press, resources_zip, settings_page, settle
from helpers.paths import DOCS, ROOT

CACHE = Path.home() / ".cache" / "pinetime-emu" / "infinitime"


def _files() -> tuple:
    bl = os.environ.get("PINETIME_EMU_BOOTLOADER") or str(CACHE / "bootloader-5.0.4.bin")
    img = os.environ.get("PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE") or \
        str(CACHE / "pinetime-mcuboot-app-image-1.16.1.bin")
    upd = os.environ.get("PINETIME_EMU_INFINITIME_DFU_UPDATE") or \
        str(CACHE / "pinetime-mcuboot-app-dfu-1.16.2.zip")
    missing = [p for p in (bl, img, upd) if not Path(p).exists()]
    if missing:
        pytest.skip(f"missing {', '.join(missing)}: the bootloader (InfiniTime's "
                    "bootloader/bootloader-5.0.4.bin), InfiniTime 1.16.1's MCUBoot image and a "
                    "DFU package of another version (see tests/firmware/test_ota.py's docstring)")
    return bl, img, upd


def validate(m):
    """Settings > Firmware (page 2, fourth entry) > Validate."""
    settings_page(m, 2)
    m.board.touch.tap(120, 212)
    settle(m, 1.5)
    if os.environ.get("PINETIME_EMU_UPDATE_DOCS"):
        m.board.screenshot(str(DOCS / "ota-firmware-screen.png"))
    m.board.touch.tap(57, 215)                       # "Validate", bottom left
    settle(m, 1.5)
    press(m)
    press(m)


def booted(m, resets_before: int, timeout_s: float = 240):
    """Run until the bootloader (after a reset) has started InfiniTime again
    and its Bluetooth is up."""
    ok = m.run_until(lambda: m.resets > resets_before and m.cpu.vtor == MCUBOOT_VECTOR_COPY,
                     timeout_ms=timeout_s * 1000, poll_ms=200)
    assert ok, f"InfiniTime did not start again within {timeout_s} s (t={m.time:.1f})"
    settle(m, 3)


def version(m) -> str:
    g = m.phone.gatt
    g.connect(timeout_ms=20_000)
    return g.firmware_version()


def small_package(n: int = 4000) -> bytes:
    """A DFU package of our own (not a firmware): n bytes and a legacy init
    packet whose CRC16 matches them."""
    image = bytes((i * 7 + 3) & 0xFF for i in range(n))
    dat = init_packet(image)
    manifest = {"manifest": {"application": {"bin_file": "app.bin", "dat_file": "app.dat"}}}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.writestr("app.bin", image)
        z.writestr("app.dat", dat)
    return buf.getvalue()


def test_package_reading_and_crc():
    p = package_from_bytes("small.zip", small_package())
    assert p.crc == crc16_ccitt(p.image) and len(p.image) == 4000


@pytest.mark.timeout(3600)
def test_update_revert_and_validate(tmp_path):
    bl, img, upd = _files()
    new = read_package(upd)
    nor = nor_with_logo(tmp_path / "nor.bin")        # the logo shows while it swaps
    m = Machine(img, bootloader=bl, flash_file=str(nor))
    m.run(seconds=11)
    enable_ota(m)
    assert version(m) == "1.16.1"
    report = {}

    # the update
    resets = m.resets
    seen = []
    t0, w0 = m.time, time.monotonic()
    d = m.phone.gatt.dfu(new, on_progress=lambda a, t: seen.append(a))
    assert d.step == "done" and d.sent == d.total == len(new.image)
    assert seen[-1] == d.total and seen == sorted(seen) and len(seen) > 100
    report["transfer"] = (m.time - t0, time.monotonic() - w0)
    t1, w1 = m.time, time.monotonic()
    m.run(seconds=10)                                # the bootloader swaps the images
    assert m.resets > resets and m.cpu.vtor != MCUBOOT_VECTOR_COPY
    if os.environ.get("PINETIME_EMU_UPDATE_DOCS"):
        m.board.screenshot(str(DOCS / "bootloader-swap.png"))
    booted(m, resets)
    assert version(m) == "1.16.2"
    report["swap and boot"] = (m.time - t1, time.monotonic() - w1)
    report["whole update"] = (m.time - t0, time.monotonic() - w0)
    snap = tmp_path / "updated.snap"
    m.save_snapshot(str(snap))

    # not validated: the next reset goes back to 1.16.1
    resets = m.resets
    t2, w2 = m.time, time.monotonic()
    m.system_reset("sysresetreq")
    booted(m, resets)
    assert version(m) == "1.16.1"
    report["revert"] = (m.time - t2, time.monotonic() - w2)
    m.close()

    # validated in Settings > Firmware: it stays after a reset
    m = Machine(img, bootloader=bl, flash_file=None)
    m.load_snapshot(str(snap))
    settle(m, 1)
    validate(m)
    resets = m.resets
    m.system_reset("sysresetreq")
    booted(m, resets)
    assert version(m) == "1.16.2"

    # a transfer whose CRC does not match: refused, the firmware runs on
    resets = m.resets
    small = package_from_bytes("small.zip", small_package())
    with pytest.raises(GattError, match="DFU validate: .*CRC error"):
        m.phone.gatt.dfu(small, crc=small.crc ^ 0x5A5A)
    settle(m, 3)
    assert m.resets == resets
    assert version(m) == "1.16.2"
    for what, (emulated, wall) in report.items():
        print(f"OTA {what}: {emulated:.1f} s emulated, {wall:.1f} s wall")


def _plain_infinitime() -> str:
    found = sorted(CACHE.glob("pinetime-app-*.out"))
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE") or (str(found[-1]) if found else "")
    if not p or not Path(p).exists():
        pytest.skip("no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or build "
                    f"pinetime-app into {CACHE} (shared INFINITIME-BUILD.md)")
    return p


@pytest.mark.timeout(900)
def test_cli_phone_dfu_against_a_bridge(tmp_path):
    """``pinetime-emu phone --resources`` then ``--dfu`` against ``run
    --bridge``: a resources package of our own lands in the watch's files
    (read back with ``fs`` afterwards); the DFU package goes
    over the bridge, the watch takes it (a package of our own: 4000 bytes
    with a matching CRC), validates it and resets; a package that is not one
    is one line and exit 2 before anything is sent."""
    import subprocess
    import sys
    from conftest import free_port, served_run
    fw = _plain_infinitime()
    nor = tmp_path / "nor.bin"
    m = Machine(fw, flash_file=str(nor))              # OTA enabled, saved in the NOR
    m.run(seconds=3)
    enable_ota(m)
    press(m)                                          # back on the face: settings saved
    settle(m, 2)
    m.close()
    from emu.norfs import NorFs
    assert NorFs(nor.read_bytes()).exists("/settings.dat")
    pkg = tmp_path / "small.zip"
    pkg.write_bytes(small_package())
    res = tmp_path / "res.zip"
    res.write_bytes(resources_zip({"/fonts/x.bin": b"x" * 1000, "/y.bin": b"y" * 300}))
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    port = free_port()
    with served_run(fw, "--flash-file", nor, "--bridge", port):
        deadline = time.monotonic() + 60
        while True:                                  # the bridge is up and the phone on
            r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port",
                                str(port), "--firmware-version"], capture_output=True,
                               text=True, env=env, timeout=120)
            if r.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert r.stdout.strip() == "1.16.1", r.stderr
        r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port", str(port),
                            "--wait", "5", "--dfu", str(bad)], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "bad.zip" in r.stderr
        r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port", str(port),
                            "--resources", str(res)], capture_output=True, text=True,
                           env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        assert "sent 1300 bytes of resources" in r.stdout
        r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port", str(port),
                            "--wait", "5", "--dfu", str(pkg)], capture_output=True, text=True,
                           env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        assert "sent 4000 bytes" in r.stdout
    fs = NorFs(nor.read_bytes())
    assert fs.read("/fonts/x.bin") == b"x" * 1000 and fs.read("/y.bin") == b"y" * 300
