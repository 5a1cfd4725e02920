"""Hostile firmware files: DFU packages above all, and the other loaders.

A bounded, seeded fuzz of ``pinetime-emu info`` (run in this process: the
loader, the board detection and the printout): valid images built from the
test firmware are mutated (bit flips, truncations, overwritten fields,
zip header fields, manifest.json values) and each must either load (exit 0)
or be refused with exactly one line naming the file (exit 2), within
CASE_SECONDS.  Then the reproductions of issue 24, one test each: a damaged
deflate stream, compression method 99, the encrypted flag, bin_file and
dat_file that are not names, a deeply nested manifest, and zip bombs (an
app.bin of 256 MiB or 2 GiB, a 1 GiB app.dat, and a member whose header
understates what it inflates to).
"""
from __future__ import annotations

import functools
import os
import json
import random
import struct
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from frontends import cli
from helpers.fuzz_files import (INTERESTING32, byte_mutation, elf_header_mutation,
                                json_mutation, rezip, zip_header_mutation)
from helpers.images import init_packet, mcuboot_image

SEED = int(os.environ.get("PINETIME_EMU_FUZZ_SEED", "24"))
SCALE = int(os.environ.get("PINETIME_EMU_FUZZ_SCALE", "1"))     # more cases, by hand
CASE_SECONDS = 3.0


def info(path, capsys) -> tuple:
    """(exit status, stderr) of ``pinetime-emu info path``, timed."""
    t0 = time.monotonic()
    rc = cli.main(["info", str(path)])
    took = time.monotonic() - t0
    out, err = capsys.readouterr()
    return rc, err, took


def assert_loads_or_one_line(path, capsys, what: str) -> int:
    try:
        rc, err, took = info(path, capsys)
    except BaseException as e:        # noqa: B902 - the case must be named
        raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e
    assert took < CASE_SECONDS, f"{what}: took {took:.1f} s"
    assert rc in (0, 2), (what, rc, err)
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, (what, err)
        assert lines[0].startswith("pinetime-emu: error: ") and str(path) in lines[0], \
            (what, lines[0])
    return rc


MANIFEST = {"manifest": {"application": {"bin_file": "app.bin", "dat_file": "app.dat"},
                         "dfu_version": 0.5}}


@pytest.fixture
def app_bin(firmware_dir) -> bytes:
    return (firmware_dir / "s132" / "sd_nus.bin").read_bytes()


def package(app: bytes, manifest=MANIFEST, method=zipfile.ZIP_DEFLATED, dat=None) -> bytes:
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    return rezip({"manifest.json": text, "app.bin": app,
                  "app.dat": init_packet(app) if dat is None else dat}, method)


def run_cases(tmp_path, capsys, cases, name: str) -> dict:
    """Every (description, bytes) through info; counts of loaded / refused."""
    counts = {0: 0, 2: 0}
    for i, (what, data) in enumerate(cases):
        p = tmp_path / f"{name}-{i}{Path(name).suffix or ''}"
        p.write_bytes(data)
        counts[assert_loads_or_one_line(p, capsys, f"case {i} ({what})")] += 1
        p.unlink()
    return counts


# ---------------------------------------------------------------------- fuzz
def test_fuzz_dfu_packages(tmp_path, capsys, app_bin):
    """1000 mutated DFU packages (deflated and stored): bytes, zip headers and
    manifest.json values."""
    rng = random.Random(SEED)
    bases = [package(app_bin), package(app_bin, method=zipfile.ZIP_STORED)]

    def cases():
        for _ in range(400 * SCALE):
            yield byte_mutation(rng, rng.choice(bases))
        for _ in range(300 * SCALE):
            yield zip_header_mutation(rng, rng.choice(bases))
        for _ in range(300 * SCALE):
            what, text = json_mutation(rng, MANIFEST)
            yield f"manifest.json: {what}", package(app_bin, text)
    counts = run_cases(tmp_path, capsys, cases(), "pkg.zip")
    assert counts[2] > 500 * SCALE, counts         # the mutations do reach the checks


@pytest.mark.parametrize("name,count", [("cli_exit3.elf", 600), ("cli_exit3.hex", 400),
                                        ("cli_exit3.bin", 300),
                                        ("mcuboot/cpu_exceptions.bin", 400)])
def test_fuzz_other_loaders(tmp_path, capsys, firmware_dir, name, count):
    """ELF, Intel HEX, raw binary and MCUBoot images, mutated byte-wise (the
    HEX also line-wise: a record's fields are text)."""
    rng = random.Random(f"{SEED}-{name}")
    app = data = (firmware_dir / name).read_bytes()
    if name.startswith("mcuboot/"):
        data = mcuboot_image(app)
    suffix = Path(name).suffix

    def mcuboot_header_mutation():
        """A header field odd, the SHA-256 TLV made to match (so the checks
        after the hash are reached)."""
        kw = {"hdr_size": 32, "flags": 0, "img_size": None}
        key = rng.choice(sorted(kw))
        odd = INTERESTING32 + (4, 7, 8, 28, 36, 0x200, len(app) - 1, len(app) + 1)
        kw[key] = rng.choice(odd) & (0xFFFF if key == "hdr_size" else 0xFFFFFFFF)
        return f"{key} = {kw[key]:#x}", mcuboot_image(app, **kw)

    def hex_line_mutation():
        lines = data.decode().splitlines()
        i = rng.randrange(len(lines))
        line = lines[i]
        kind = rng.choice(("type", "length", "char", "drop", "dup", "address"))
        if kind == "type":
            line = line[:7] + rng.choice(("02", "03", "04", "05", "06", "FF")) + line[9:]
        elif kind == "length":
            line = ":" + rng.choice(("00", "FF", "10", "7F")) + line[3:]
        elif kind == "char":
            j = rng.randrange(len(line))
            line = line[:j] + rng.choice("0F:G \x00") + line[j + 1:]
        elif kind == "address":
            line = line[:3] + rng.choice(("0000", "FFFF", "8000")) + line[7:]
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, line)
        else:
            lines[i] = line
        return f"line {i} {kind}", ("\n".join(lines) + "\n").encode("latin-1")

    def cases():
        for _ in range(count * SCALE):
            if suffix == ".hex" and rng.random() < 0.5:
                yield hex_line_mutation()
            elif suffix == ".elf" and rng.random() < 0.5:
                yield elf_header_mutation(rng, data)
            elif name.startswith("mcuboot/") and rng.random() < 0.5:
                yield mcuboot_header_mutation()
            else:
                yield byte_mutation(rng, data)
    run_cases(tmp_path, capsys, cases(), "fw" + suffix)


# -------------------------------------------------------------- reproductions
def _patch_headers(data: bytes, **fields) -> bytes:
    """Every local and central header's fields set (method, flags, usize)."""
    local = {"flags": 6, "method": 8, "usize": 22}
    central = {"flags": 8, "method": 10, "usize": 24}
    b = bytearray(data)
    for sig, offs in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
        p = b.find(sig)
        while p >= 0:
            for k, v in fields.items():
                fmt = "<I" if k == "usize" else "<H"
                if k == "flags":
                    v |= struct.unpack_from("<H", b, p + offs[k])[0]
                struct.pack_into(fmt, b, p + offs[k], v)
            p = b.find(sig, p + 1)
    return bytes(b)


def refused(tmp_path, capsys, data: bytes, *words, seconds: float = CASE_SECONDS):
    p = tmp_path / "bad.zip"
    p.write_bytes(data)
    rc, err, took = info(p, capsys)
    assert rc == 2, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(p) in lines[0], err
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert took < seconds, took
    return lines[0]


def test_damaged_deflate_stream(tmp_path, capsys, app_bin):
    data = bytearray(package(app_bin))
    i = data.find(b"app.bin") + len("app.bin") + 100       # inside app.bin's stream
    data[i] ^= 0xFF
    refused(tmp_path, capsys, bytes(data), "corrupt DFU package", "app.bin")


def test_compression_method_99(tmp_path, capsys, app_bin):
    refused(tmp_path, capsys, _patch_headers(package(app_bin), method=99), "method 99")


def test_encrypted_flag(tmp_path, capsys, app_bin):
    refused(tmp_path, capsys, _patch_headers(package(app_bin), flags=1), "encrypted")


@pytest.mark.parametrize("key,value", [("bin_file", ["app.bin"]), ("bin_file", {"a": 1}),
                                       ("dat_file", ["app.dat"]), ("dat_file", {"a": 1}),
                                       ("bin_file", 7), ("bin_file", "")])
def test_names_that_are_not_names(tmp_path, capsys, app_bin, key, value):
    m = json.loads(json.dumps(MANIFEST))
    m["manifest"]["application"][key] = value
    refused(tmp_path, capsys, package(app_bin, m), key, "not a file name")


@pytest.mark.parametrize("depth", [5000, 30000])
def test_deeply_nested_manifest(tmp_path, capsys, app_bin, depth):
    text = '{"manifest": ' + "[" * depth + "]" * depth + "}"
    refused(tmp_path, capsys, package(app_bin, text), "manifest")


def handmade_zip(members: list) -> bytes:
    """A zip written field by field: members are (name, stored bytes, method,
    crc, declared uncompressed size), so a header can lie."""
    out, central = bytearray(), bytearray()
    for name, stored, method, crc, usize in members:
        n = name.encode()
        fields = (20, 0, method, 0, 0, crc, len(stored), usize, len(n))
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, 0, 0, 0, 0, 0,
                               len(out)) + n
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, 0) + n + stored
    count = len(members)
    return bytes(out + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count,
                                             len(central), len(out), 0))


@functools.lru_cache(maxsize=None)
def zeros_deflated(mib: int) -> bytes:
    """A raw deflate stream of ``mib`` MiB of zeros (about 1/1000 of that)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    return b"".join(c.compress(chunk) for _ in range(mib)) + c.flush()


def member(name: str, data: bytes) -> tuple:
    return (name, data, 0, zlib.crc32(data), len(data))


def bomb(name: str, declared: int, mib: int = 256) -> tuple:
    """A member inflating to ``mib`` MiB of zeros that declares ``declared``."""
    return (name, zeros_deflated(mib), 8, 0, declared)


APP_ONLY = json.dumps({"manifest": {"application": {"bin_file": "app.bin"}}}).encode()


@pytest.mark.parametrize("size", [256 << 20, (2 << 30) - 1])
def test_app_bin_bomb(tmp_path, capsys, size):
    data = handmade_zip([member("manifest.json", APP_ONLY), bomb("app.bin", size)])
    refused(tmp_path, capsys, data, "app.bin", f"declares {size} bytes", seconds=1.0)


def test_app_dat_bomb(tmp_path, capsys, app_bin):
    data = handmade_zip([member("manifest.json", json.dumps(MANIFEST).encode()),
                         member("app.bin", app_bin), bomb("app.dat", 1 << 30)])
    refused(tmp_path, capsys, data, "app.dat", "declares", seconds=1.0)


def test_bomb_whose_header_understates_its_size(tmp_path, capsys):
    """Declared sizes are not trusted: a member whose headers say 1 KiB (or
    the flash's size) but whose stream inflates to 256 MiB is read no further
    than that, quickly."""
    for declared in (1024, 512 * 1024):
        data = handmade_zip([member("manifest.json", APP_ONLY), bomb("app.bin", declared)])
        refused(tmp_path, capsys, data, seconds=1.0)
    data = handmade_zip([member("manifest.json", APP_ONLY), bomb("app.bin", 0xFFFFFFFF)])
    refused(tmp_path, capsys, data, "app.bin", "declares", seconds=1.0)


def test_manifest_bomb(tmp_path, capsys, app_bin):
    data = handmade_zip([bomb("manifest.json", 256 << 20), member("app.bin", app_bin)])
    refused(tmp_path, capsys, data, "manifest.json", "declares", seconds=1.0)


def test_valid_packages_still_load(tmp_path, capsys, app_bin):
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        p = tmp_path / "ok.zip"
        p.write_bytes(package(app_bin, method=method))
        rc, err, _took = info(p, capsys)
        assert rc == 0, err
