"""Firmware files and flash images the tests build around our firmware: a
Nordic DFU package (adafruit-nrfutil's ``genpkg`` layout, with its legacy
init packet), an MCUBoot image (imgtool's header and SHA-256 TLV area) and
a NOR flash holding a boot logo of our own."""
from __future__ import annotations

import hashlib
import json
import struct
import zipfile
from pathlib import Path

import numpy as np

from emu.loader import crc16_ccitt
from emu.norfs import LOGO_SIZE, NOR_SIZE, boot_logo


# -- Nordic DFU packages ------------------------------------------------------

def init_packet(image: bytes, crc: int = None) -> bytes:
    """Legacy DFU init packet: device type 0x52, revision, app version,
    one SoftDevice requirement (0xFFFE: any), CRC16 of the image."""
    crc = crc16_ccitt(image) if crc is None else crc
    return struct.pack("<HHIHHH", 0x0052, 0xFFFF, 0xFFFFFFFF, 1, 0xFFFE, crc)


def package_bytes(image: bytes, dat: bytes = None, manifest: dict = None) -> bytes:
    """A DFU .zip of ``image`` (genpkg's layout; ``dat``: its init packet,
    the right one by default), as bytes."""
    import io
    manifest = manifest or {"manifest": {"application": {"bin_file": "app.bin",
                                                         "dat_file": "app.dat"},
                                         "dfu_version": 0.5}}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.writestr("app.bin", image)
        z.writestr("app.dat", init_packet(image) if dat is None else dat)
    return buf.getvalue()


def make_package(path, image: bytes, dat: bytes = None, manifest: dict = None) -> str:
    Path(path).write_bytes(package_bytes(image, dat, manifest))
    return str(path)


# -- MCUBoot images -----------------------------------------------------------

MAGIC = 0x96F3B83D


def tlv_area(signed: bytes, sha256: bytes = None) -> bytes:
    """imgtool's unprotected TLV area: info header, then the SHA-256 TLV."""
    digest = hashlib.sha256(signed).digest() if sha256 is None else sha256
    tlv = struct.pack("<HH", 0x10, 32) + digest
    return struct.pack("<HH", 0x6907, 4 + len(tlv)) + tlv


def mcuboot_image(app: bytes, version=(1, 2, 3, 4), hdr_size: int = 32, flags: int = 0,
                  img_size: int = None) -> bytes:
    """header (struct image_header) + padding to ih_hdr_size + app + TLVs."""
    major, minor, rev, build = version
    header = struct.pack("<IIHHIIBBHII", MAGIC, 0, hdr_size, 0,
                         len(app) if img_size is None else img_size, flags,
                         major, minor, rev, build, 0)
    signed = header.ljust(hdr_size, b"\0") + app
    return signed + tlv_area(signed)


# -- the NOR flash with the bootloader's logo ---------------------------------

def our_logo() -> np.ndarray:
    """A logo of our own (no third-party artwork): rings on black."""
    y, x = np.mgrid[0:240, 0:240]
    r = np.hypot(x - 120, y - 100)
    img = np.zeros((240, 240, 3), np.uint8)
    img[(r // 14) % 2 == 0] = (40, 200, 120)
    img[r > 84] = 0
    img[190:206, 60:180] = (230, 230, 230)        # a bar under the rings: shows "up"
    return img


def nor_with_logo(path: Path) -> Path:
    nor = bytearray(b"\xff" * NOR_SIZE)
    nor[:LOGO_SIZE] = boot_logo(our_logo())
    path.write_bytes(nor)
    return path
