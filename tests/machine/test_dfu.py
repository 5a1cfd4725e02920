"""Nordic DFU packages (the .zip wasp-os releases ship) as firmware files.

firmware/build/s132/sd_nus.bin is firmware/tests/sd_nus.c linked like a
wasp-os application (flash from 0x26000, RAM from 0x200039C0); packaged here
the way adafruit-nrfutil's ``genpkg`` does (manifest.json + .bin + legacy
init packet), it must run on the PineTime with the emulated SoftDevice and
echo what the phone sends.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from emu import Machine
from emu.loader import FirmwareError, crc16_ccitt, load_firmware
from helpers.images import init_packet, make_package
from helpers.paths import BUILD


@pytest.fixture
def app_bin():
    p = BUILD / "s132" / "sd_nus.bin"
    if not p.exists():
        pytest.fail(f"{p} missing: run make -C firmware")
    return p.read_bytes()


def test_crc16_is_ccitt_false():
    assert crc16_ccitt(b"123456789") == 0x29B1


def test_package_loads_at_0x26000(tmp_path, app_bin):
    img = load_firmware(make_package(tmp_path / "app.zip", app_bin))
    assert img.format == "dfu"
    assert img.segments == [(0x26000, app_bin)]
    assert img.vector_table == 0x26000
    assert any("CRC16" in n and "matches" in n for n in img.notes)


def test_package_runs_with_the_emulated_softdevice(tmp_path, app_bin):
    m = Machine(make_package(tmp_path / "app.zip", app_bin), flash_file=None)
    assert m.run_until(lambda: m.softdevice.advertising, timeout_ms=200)
    m.phone.connect()
    m.phone.send(b"hello from dfu")
    assert m.phone.wait_for(b"hello from dfu", timeout_ms=500)


def test_crc_mismatch_is_a_one_line_error(tmp_path, app_bin):
    bad = make_package(tmp_path / "bad.zip", app_bin, dat=init_packet(app_bin, crc=0x1234))
    with pytest.raises(FirmwareError, match=r"CRC16 0x[0-9a-f]{4}, its init packet says 0x1234"):
        load_firmware(bad)


@pytest.mark.parametrize("case", ["no-manifest", "softdevice", "no-application", "truncated",
                                  "missing-bin"])
def test_bad_packages_exit_2_with_one_line(tmp_path, app_bin, case):
    p = tmp_path / f"{case}.zip"
    if case == "no-manifest":
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("app.bin", app_bin)
        want = "without manifest.json"
    elif case == "softdevice":
        make_package(p, app_bin, manifest={"manifest": {
            "softdevice": {"bin_file": "app.bin", "dat_file": "app.dat"}}})
        want = "with softdevice"
    elif case == "no-application":
        make_package(p, app_bin, manifest={"manifest": {"dfu_version": 0.5}})
        want = "has no application"
    elif case == "truncated":
        good = make_package(tmp_path / "good.zip", app_bin)
        p.write_bytes(open(good, "rb").read()[:200])
        want = "corrupt DFU package"
    else:
        make_package(p, app_bin, manifest={"manifest": {"application": {
            "bin_file": "nope.bin", "dat_file": "app.dat"}}})
        want = "corrupt DFU package"
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", str(p), "--headless",
                        "--seconds", "0.01"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(p) in lines[0] and want in lines[0], lines[0]
