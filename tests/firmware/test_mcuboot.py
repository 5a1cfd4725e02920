"""MCUBoot images (InfiniTime as users have it) as firmware files.

firmware/build/mcuboot/cpu_exceptions.bin is a harness program linked like
InfiniTime's pinetime-mcuboot-app (vector table at 0x8020).  The tests put an
imgtool-style header in front of it (magic, ih_hdr_size, ih_img_size,
version) and a TLV area behind it (the SHA-256 of header and image), and
check that the loader places the file at 0x8000 and boots it as the
PineTime bootloader does: vectors copied to 0x7F00, VTOR there, MSP and PC
from them.  Damaged images are refused with one line and exit status 2.

The real InfiniTime test needs images built by hand (never committed; see
the shared INFINITIME-BUILD.md): ``$PINETIME_EMU_INFINITIME_IMAGE`` or
``~/.cache/pinetime-emu/infinitime/pinetime-app-*.out`` (the plain app, vector
table at 0), and ``$PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE`` or
``pinetime-mcuboot-app-image-*.bin`` beside it.  It is skipped when they are
absent.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from emu import Machine
from emu.loader import FirmwareError, load_firmware
from helpers.images import MAGIC, make_package, mcuboot_image
from helpers.paths import BUILD


@pytest.fixture
def app(firmware_dir) -> bytes:
    return (firmware_dir / "mcuboot" / "cpu_exceptions.bin").read_bytes()


@pytest.fixture
def image(tmp_path, app) -> str:
    p = tmp_path / "app-image.bin"
    p.write_bytes(mcuboot_image(app))
    return str(p)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "frontends.cli", *args], capture_output=True,
                          text=True, timeout=120)


# ------------------------------------------------------------------ synthetic
def test_image_is_placed_in_its_slot_and_vectors_copied_for_vtor(image, app):
    img = load_firmware(image)
    data = Path(image).read_bytes()
    assert img.format == "mcuboot"
    assert (0x8000, data) in img.segments          # the file's bytes, header first
    assert img.vector_table == 0x7F00              # as the PineTime bootloader sets VTOR
    assert img.word_at(0x7F00) == img.word_at(0x8020) == struct.unpack_from("<I", app)[0]
    assert img.word_at(0x7F04) == struct.unpack_from("<I", app, 4)[0]
    mcu = img.mcuboot
    assert (mcu.slot, mcu.hdr_size, mcu.img_size, mcu.version, mcu.sha256) == (
        0x8000, 32, len(app), "1.2.3+4", True)
    assert mcu.entry_table == 0x8020 and mcu.tlv_size == 40


def test_image_boots_and_passes(image):
    from conftest import assert_firmware_passed
    m = Machine(image, board="nrf52832")
    r = m.run(ms=100)
    assert_firmware_passed(m, r, min_passes=5)
    assert m.cpu.vtor == 0x7F00 and m.cpu.reset_pc == (m.image.word_at(0x8024) & ~1)


def test_intel_hex_of_the_image_boots_the_same(tmp_path, image):
    from intelhex import IntelHex
    from conftest import assert_firmware_passed
    ih = IntelHex()
    ih.frombytes(Path(image).read_bytes(), offset=0x8000)
    p = tmp_path / "app-image.hex"
    ih.write_hex_file(str(p))
    img = load_firmware(str(p))
    assert img.format == "hex" and img.mcuboot is not None and img.vector_table == 0x7F00
    assert sorted(img.segments) == sorted(load_firmware(image).segments)
    m = Machine(img, board="nrf52832")
    assert_firmware_passed(m, m.run(ms=100), min_passes=5)


def test_dfu_package_carrying_the_image_boots(tmp_path, image):
    from conftest import assert_firmware_passed
    pkg = make_package(tmp_path / "dfu.zip", Path(image).read_bytes())
    img = load_firmware(pkg)
    assert img.format == "dfu" and img.mcuboot is not None
    assert sorted(img.segments) == sorted(load_firmware(image).segments)
    assert any("CRC16" in n for n in img.notes)
    m = Machine(pkg, board="nrf52832")
    assert_firmware_passed(m, m.run(ms=100), min_passes=5)


def test_cli_info_describes_header_and_boot(image, app):
    r = run_cli("info", image)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "format:        mcuboot" in out
    assert (f"MCUBoot:       header at 0x00008000, version 1.2.3+4, header 32 bytes, image "
            f"{len(app)} bytes, TLVs 40 bytes, SHA-256 matches") in out
    assert "boots:         vector table at 0x00008020" in out
    assert "vector table:  0x00007f00 (initial SP 0x20010000" in out


def test_cli_runs_the_image(image):
    r = run_cli("run", image, "--board", "nrf52832", "--headless", "--seconds", "0.05")
    assert r.returncode == 0, r.stderr
    assert "PASS" in r.stdout and "FAIL" not in r.stdout


def _bad_images(app: bytes) -> dict:
    good = mcuboot_image(app)
    flipped = bytearray(good)
    flipped[32 + 100] ^= 0xFF                             # one byte of the image
    plain = (BUILD / "cpu_exceptions.bin").read_bytes()   # linked for 0, not the slot
    return {
        "short-header": (good[:20], ["truncated", "20 bytes", "header alone is 32"]),
        "cut-in-image": (good[:32 + len(app) // 2], ["truncated", f"32 + {len(app)}"]),
        "no-tlvs": (good[:32 + len(app)], ["truncated", "no TLV area"]),
        "bad-hash": (bytes(flipped), ["corrupt", "SHA-256"]),
        "garbage-header": (struct.pack("<I", MAGIC) + bytes(range(4, 64)) + app,
                           ["corrupt header"]),
        "header-size-2": (mcuboot_image(app)[:8] + struct.pack("<H", 2) + good[10:],
                          ["corrupt header", "ih_hdr_size", "2"]),
        "encrypted": (mcuboot_image(app, flags=0x4), ["encrypted"]),
        "linked-for-0": (mcuboot_image(plain), ["reset vector", "linked for another address"]),
    }


@pytest.mark.parametrize("case", ["short-header", "cut-in-image", "no-tlvs", "bad-hash",
                                  "garbage-header", "header-size-2", "encrypted",
                                  "linked-for-0"])
@pytest.mark.parametrize("command", ["run", "info"])
def test_bad_image_is_one_line_and_exit_2(tmp_path, app, case, command):
    data, words = _bad_images(app)[case]
    p = tmp_path / f"{case}.bin"
    p.write_bytes(data)
    with pytest.raises(FirmwareError):
        load_firmware(str(p))
    extra = ["--headless", "--seconds", "0.01", "--board", "nrf52832"] if command == "run" else []
    r = run_cli(command, str(p), *extra)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(p) in err[0] and "MCUBoot" in err[0], err[0]
    for w in words:
        assert w in err[0], (w, err[0])


def test_dfu_package_with_a_damaged_image_is_refused(tmp_path, app):
    good = mcuboot_image(app)
    pkg = make_package(tmp_path / "dfu.zip", good[:32 + len(app)])      # TLVs lost
    r = run_cli("run", pkg, "--headless", "--seconds", "0.01", "--board", "nrf52832")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "no TLV area" in r.stderr


# ------------------------------------------------------------ real InfiniTime
CACHE = Path.home() / ".cache" / "pinetime-emu" / "infinitime"


def _newest(folder: Path, pattern: str):
    found = sorted(folder.glob(pattern))
    return str(found[-1]) if found else None


def _infinitime_images() -> tuple:
    plain = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE") or \
        _newest(CACHE, "pinetime-app-*.out")
    if not plain or not Path(plain).exists():
        pytest.skip("no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or build "
                    f"pinetime-app into {CACHE} (shared INFINITIME-BUILD.md)")
    mcuboot = os.environ.get("PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE") or \
        _newest(Path(plain).parent, "pinetime-mcuboot-app-image-*.bin") or \
        _newest(CACHE, "pinetime-mcuboot-app-image-*.bin")
    if not mcuboot or not Path(mcuboot).exists():
        pytest.skip("no InfiniTime MCUBoot image: set PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE "
                    f"or put pinetime-mcuboot-app-image-*.bin beside {plain}")
    return plain, mcuboot


def test_infinitime_plain_and_mcuboot_images_reach_the_same_point():
    """The standalone app (vectors at 0) and its MCUBoot image (vectors at
    0x8020) run the same code: after 0.2 emulated s both sit at the same
    instruction of the program (same offset from their vector tables, same
    code bytes there) with the same pins driven."""
    plain, mcuboot = _infinitime_images()
    state = []
    for path in (plain, mcuboot):
        m = Machine(path, flash_file=None)
        r = m.run(seconds=0.2)
        assert r.ok, f"{path}: {r} {r.info.get('message', '')}"
        assert m.resets == 0
        start = m.image.mcuboot.entry_table if m.image.mcuboot else m.vector_table
        pc = m.cpu.pc
        gpio = m.soc.peripherals["gpio"]
        state.append({"offset": pc - start, "code": m.cpu.read_mem(pc, 16),
                      "out": gpio.read(0x504), "dir": gpio.read(0x514),
                      "where": f"{pc:#x} {m.describe_address(pc)}"})
        if m.image.mcuboot:
            assert m.cpu.vtor == 0x7F00
    a, b = state
    where = a.pop("where"), b.pop("where")
    assert a == b, f"plain stopped at {where[0]}, MCUBoot image at {where[1]}"


def test_infinitime_dfu_package_holds_the_mcuboot_image():
    plain, mcuboot = _infinitime_images()
    # the package of the image's own version (a cache may hold an update's too)
    version = Path(mcuboot).stem.rpartition("-")[2]
    pkg = Path(mcuboot).parent / f"pinetime-mcuboot-app-dfu-{version}.zip"
    if not pkg.exists():
        pkg = _newest(Path(mcuboot).parent, "pinetime-mcuboot-app-dfu-*.zip")
    if pkg is None:
        pytest.skip(f"no pinetime-mcuboot-app-dfu-*.zip beside {mcuboot}")
    img, ref = load_firmware(pkg), load_firmware(mcuboot)
    assert img.mcuboot is not None
    assert sorted(img.segments) == sorted(ref.segments)
