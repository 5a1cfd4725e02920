"""Hostile snapshot files: the read and restore path of emu/snapshot.py.

A bounded, seeded fuzz: a snapshot of the demo firmware is mutated (bit
flips, truncations, zip header fields, and values of snapshot.json replaced
by other types, absurd numbers, deep nests, missing keys, re-zipped so the
CRC holds) and each must either restore (and then run 2 ms without a Python
exception) or raise SnapshotError with one line, within CASE_SECONDS.  Then
the reproductions of issue 24: /dev/zero and /dev/urandom (which hung), a
bit flip (zlib.error), method 99, the encrypted flag, a deep snapshot.json,
the largest blob replaced by 512 MiB of zeros (restored, exit 0) and memory
regions that do not fit the machine; the CLI refuses each with one line and
exit status 2.
"""
from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import time
import zipfile
import zlib

import pytest

from emu.machine import Machine
from emu.snapshot import SnapshotError
from helpers.fuzz_files import byte_mutation, json_mutation, rezip, zip_header_mutation

SEED = int(os.environ.get("PINETIME_EMU_FUZZ_SEED", "24"))
SCALE = int(os.environ.get("PINETIME_EMU_FUZZ_SCALE", "1"))     # more cases, by hand
CASE_SECONDS = 5.0


@pytest.fixture(scope="module")
def demo_snapshot(tmp_path_factory, firmware_dir):
    """(firmware path, snapshot bytes, its metadata, its blobs)."""
    fw = str(firmware_dir / "pinetime_demo.elf")
    path = tmp_path_factory.mktemp("snap") / "demo.snap"
    m = Machine(fw, flash_file=None)
    m.run(ms=30)
    m.board.touch.tap(100, 100, delay_ms=5)       # input queued: a timeline in the state
    m.save_snapshot(str(path))
    data = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("snapshot.json"))
        blobs = {n: z.read(n) for n in z.namelist() if n != "snapshot.json"}
    return fw, data, meta, blobs


def snapshot_bytes(meta_text: str, blobs: dict, method=zipfile.ZIP_DEFLATED) -> bytes:
    return rezip({"snapshot.json": meta_text, **blobs}, method)


def assert_one_line(e: SnapshotError) -> None:
    text = str(e)
    assert text and "\n" not in text, repr(text)


# ---------------------------------------------------------------------- fuzz
def test_fuzz_snapshot_files(tmp_path, demo_snapshot):
    """130 mutated snapshots (60 byte-level, 20 zip headers, 50 JSON values),
    each restored into the demo's machine: SnapshotError (one line) or a
    restored machine that runs on."""
    fw, data, meta, blobs = demo_snapshot
    rng = random.Random(SEED)

    def cases():
        for _ in range(60 * SCALE):
            yield byte_mutation(rng, data)
        for _ in range(20 * SCALE):
            yield zip_header_mutation(rng, data)
        for _ in range(50 * SCALE):
            # the state's values most of the time, the metadata's sometimes
            what, text = json_mutation(
                rng, meta, pick=None if rng.random() < 0.2 else
                (lambda p, v: p[0] == "state" and len(p) > 2))
            yield f"snapshot.json {what}", snapshot_bytes(text, blobs)

    machine = None
    counts = {"restored": 0, "refused": 0}
    path = tmp_path / "case.snap"
    for i, (what, case) in enumerate(cases()):
        path.write_bytes(case)
        if machine is None:
            machine = Machine(fw, flash_file=None)
        t0 = time.monotonic()
        try:
            machine.load_snapshot(str(path))
            machine.run(ms=2)
            counts["restored"] += 1
        except SnapshotError as e:
            assert_one_line(e)
            counts["refused"] += 1
        except BaseException as e:      # noqa: B902 - the case must be named
            raise AssertionError(f"case {i} ({what}): {type(e).__name__}: {e}") from e
        finally:
            took = time.monotonic() - t0
        assert took < CASE_SECONDS, f"case {i} ({what}): took {took:.1f} s"
        if what.startswith("snapshot.json"):
            machine = None             # possibly partly restored: a fresh one next
    assert counts["refused"] > 80 * SCALE, counts


# -------------------------------------------------------------- reproductions
def cli_run(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "frontends.cli", "run", *map(str, args),
                           "--headless", "--seconds", "0.01", "--flash-file", "none"],
                          capture_output=True, text=True, timeout=timeout)


def assert_cli_refuses(fw, snap, *words):
    r = cli_run(fw, "--snapshot", snap)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert str(snap) in lines[0], lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "restored" not in r.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_without_reading_them(demo_snapshot, device):
    fw = demo_snapshot[0]
    with pytest.raises(SnapshotError, match="not a regular file"):
        Machine(fw, flash_file=None).load_snapshot(device)
    assert_cli_refuses(fw, device, "not a regular file")


def test_directory_is_refused(demo_snapshot, tmp_path):
    with pytest.raises(SnapshotError, match="is a directory"):
        Machine.from_snapshot(str(tmp_path))


def _patch_all(data: bytes, field: str, value: int) -> bytes:
    offs = {"flags": (6, 8), "method": (8, 10)}[field]
    b = bytearray(data)
    for sig, off in zip((b"PK\x03\x04", b"PK\x01\x02"), offs):
        p = b.find(sig)
        while p >= 0:
            old = struct.unpack_from("<H", b, p + off)[0]
            struct.pack_into("<H", b, p + off, (old | value) if field == "flags" else value)
            p = b.find(sig, p + 1)
    return bytes(b)


def _bit_flipped(data: bytes, member: str = None) -> bytes:
    """A bit flipped in a member's deflate stream (the largest member's, in
    its middle; for ``member``, the first flip that breaks the stream itself
    rather than only its CRC: zipfile then raises zlib.error)."""
    import io
    z = zipfile.ZipFile(io.BytesIO(data))
    info = z.getinfo(member) if member else max(z.infolist(), key=lambda i: i.compress_size)
    start = info.header_offset + 30 + len(info.filename)
    spots = [start + info.compress_size // 2] if member is None else range(
        start, start + info.compress_size)
    for at in spots:
        b = bytearray(data)
        b[at] ^= 0x10
        if member is None:
            return bytes(b)
        try:
            zipfile.ZipFile(io.BytesIO(bytes(b))).read(member)
        except zlib.error:
            return bytes(b)
        except zipfile.BadZipFile:
            pass
    raise AssertionError("no flip breaks the stream")


@pytest.mark.parametrize("case,words", [
    ("bitflip", ["corrupt"]), ("bitflip-json", ["snapshot.json", "zlib.error"]),
    ("method99", ["method 99"]), ("encrypted", ["encrypted"]),
    ("deep", ["nested too deeply"]), ("truncated", ["corrupt"]),
    ("json-list", ["not a pinetime-emu snapshot"])])
def test_damaged_files_are_one_line(tmp_path, demo_snapshot, case, words):
    fw, data, meta, blobs = demo_snapshot
    if case == "bitflip":
        bad = _bit_flipped(data)
    elif case == "bitflip-json":
        bad = _bit_flipped(data, "snapshot.json")
    elif case == "method99":
        bad = _patch_all(data, "method", 99)
    elif case == "encrypted":
        bad = _patch_all(data, "flags", 1)
    elif case == "deep":
        m = dict(meta)
        m["state"] = "\0DEEP"
        bad = snapshot_bytes(json.dumps(m).replace('"\\u0000DEEP"', "[" * 100000 + "]" * 100000),
                             blobs)
    elif case == "truncated":
        bad = data[:len(data) // 2]
    else:
        bad = snapshot_bytes("[1, 2, 3]", blobs)
    p = tmp_path / f"{case}.snap"
    p.write_bytes(bad)
    with pytest.raises(SnapshotError) as e:
        Machine.from_snapshot(str(p))
    assert_one_line(e.value)
    for w in words:
        assert w in str(e.value)
    assert_cli_refuses(fw, p, *words)


def _largest_blob(blobs: dict) -> str:
    return max(blobs, key=lambda n: len(blobs[n]))


def test_largest_blob_replaced_by_512_mib_of_zeros(tmp_path, demo_snapshot):
    """It was restored ("restored", exit 0): a blob is capped, and read no
    further than the cap whatever its header says."""
    fw, data, meta, blobs = demo_snapshot
    name = _largest_blob(blobs)                     # the NOR flash's 4 MiB
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    stream = b"".join(c.compress(chunk) for _ in range(512)) + c.flush()
    p = tmp_path / "zeros.snap"
    # declared as what it is, and as the 4 MiB it replaces (a header that lies)
    for declared, words in ((512 << 20, ["declares 536870912 bytes"]), (4 << 20, ["blob"])):
        p.write_bytes(handmade_snapshot(meta, blobs, name, stream, declared))
        t0 = time.monotonic()
        with pytest.raises(SnapshotError) as e:
            Machine.from_snapshot(str(p))
        assert time.monotonic() - t0 < 2
        assert_one_line(e.value)
        for w in words:
            assert w in str(e.value), (w, str(e.value))
    assert_cli_refuses(fw, p, "blob")


def handmade_snapshot(meta: dict, blobs: dict, name: str, stream: bytes, declared: int) -> bytes:
    """A snapshot zip written field by field, blob ``name`` replaced by a raw
    deflate ``stream`` that declares ``declared`` bytes (zipfile would not
    write a header that lies)."""
    members = [("snapshot.json", json.dumps(meta).encode(), 0, None)]
    members += [(n, b, 0, None) for n, b in blobs.items() if n != name]
    members.append((name, stream, 8, declared))
    out, central = bytearray(), bytearray()
    for n, stored, method, usize in members:
        crc = 0 if usize is not None else zlib.crc32(stored)
        fields = (20, 0, method, 0, 0, crc, len(stored),
                  len(stored) if usize is None else usize, len(n))
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, 0, 0, 0, 0, 0,
                               len(out)) + n.encode()
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, 0) + n.encode() + stored
    k = len(members)
    return bytes(out + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, k, k, len(central),
                                             len(out), 0))


def test_blob_of_another_size_is_refused(tmp_path, demo_snapshot):
    """Under the cap but not the NOR flash's 4 MiB (or a memory's size): the
    restored machine would not be the one saved."""
    fw, data, meta, blobs = demo_snapshot
    name = _largest_blob(blobs)
    for size in (len(blobs[name]) + 4096, 100):
        bad = dict(blobs)
        bad[name] = bytes(size)
        p = tmp_path / f"size{size}.snap"
        p.write_bytes(snapshot_bytes(json.dumps(meta), bad))
        with pytest.raises(SnapshotError, match="bytes in the snapshot") as e:
            Machine.from_snapshot(str(p))
        assert_one_line(e.value)
    assert_cli_refuses(fw, p, "bytes in the snapshot")


@pytest.mark.parametrize("mutate,words", [
    (lambda s: s["memories"][0].__setitem__("size", 4), ["memory region flash"]),
    (lambda s: s["memories"].pop(), ["lacks memory region"]),
    (lambda s: s["memories"].append(dict(s["memories"][0])), ["flash twice"]),
    (lambda s: s["memories"][3].__setitem__("data", {"$b": 0}), ["RAM", "4096 bytes"]),
    (lambda s: s["cpu"]["registers"].pop("r0"), ["CPU registers"]),
    (lambda s: s["cpu"]["registers"].__setitem__("pc", 2 ** 40), ["not a 32-bit value"]),
    (lambda s: s["clock"].__setitem__("now", -1), ["clock"]),
    (lambda s: s["clock"].__setitem__("now", 2 ** 70), ["clock"]),
    (lambda s: s["clock"]["events"].append([1, 1, "nothing.such"]), ["nothing.such"]),
    (lambda s: s["objects"]["machine.cpu"]["attrs"].__setitem__("vtor", "x"),
     ["machine.cpu.vtor", "a string"]),
    (lambda s: s["objects"]["machine.board.display"]["attrs"].__setitem__(
        "mem", {"$nd": {"$b": 0}, "dtype": "|u1", "shape": [4096]}), ["display.mem", "shape"]),
    (lambda s: s["objects"]["machine.board.touch"]["attrs"].__setitem__(
        "regs", {"$ba": "AAAA"}), ["touch.regs", "3 bytes"]),
    (lambda s: s["objects"]["machine.cpu"]["attrs"].__setitem__("vtor", 10 ** 30),
     ["out of range"]),
    (lambda s: s["objects"]["machine.board.heart_rate"]["attrs"].__setitem__("bpm", [1]),
     ["heart_rate"]),
    (lambda s: s["objects"]["machine"]["attrs"].pop("exit_code"),
     ["lacks machine.exit_code"]),          # found by the fuzz: deleted, then run() failed
])
def test_fields_are_checked_against_the_machine(tmp_path, demo_snapshot, mutate, words):
    fw, data, meta, blobs = demo_snapshot
    m = json.loads(json.dumps(meta))
    mutate(m["state"])
    p = tmp_path / "bad.snap"
    p.write_bytes(snapshot_bytes(json.dumps(m), blobs))
    with pytest.raises(SnapshotError) as e:
        Machine(fw, flash_file=None).load_snapshot(str(p))
    assert_one_line(e.value)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_the_untouched_snapshot_still_restores(tmp_path, demo_snapshot):
    fw, data, meta, blobs = demo_snapshot
    p = tmp_path / "ok.snap"
    p.write_bytes(snapshot_bytes(json.dumps(meta), blobs))
    m = Machine.from_snapshot(str(p))
    assert m.clock.now == meta["time_ticks"]
    m.run(ms=10)
    assert m.board.touch.reports
