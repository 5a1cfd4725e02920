"""Bounded, seeded mutation of files for test_fuzz_dfu.py and test_fuzz_snapshot.py.

Every generator takes a ``random.Random`` and yields ``(description, bytes)``;
the same seed gives the same cases, so a failure names a case that can be
replayed.  Mutations are byte-level (bit flips, truncations, overwritten
fields, inserted and deleted runs) and structural for zip archives (header
fields of the local and central directory entries: method, flags, sizes,
offsets) and for JSON documents (a value replaced by another type, an
absurd number, a deep nest, a key removed).
"""
from __future__ import annotations

import io
import json
import random
import struct
import zipfile

INTERESTING32 = (0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
                 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 0x26000, 0x20010000)


def flip_bits(rng: random.Random, data: bytes, n: int) -> bytes:
    b = bytearray(data)
    for _ in range(n):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def byte_mutation(rng: random.Random, data: bytes) -> tuple:
    """One random byte-level mutation: (description, mutated bytes)."""
    kind = rng.choice(("flip", "flips", "truncate", "zero", "ff", "field", "insert",
                       "delete", "duplicate"))
    n = len(data)
    if kind == "flip":
        return "one bit flipped", flip_bits(rng, data, 1)
    if kind == "flips":
        k = rng.randint(2, 16)
        return f"{k} bits flipped", flip_bits(rng, data, k)
    if kind == "truncate":
        at = rng.randrange(n)
        return f"truncated at {at}", data[:at]
    i = rng.randrange(n)
    k = rng.randint(1, 64)
    if kind == "zero":
        return f"{k} bytes zeroed at {i}", data[:i] + bytes(k) + data[i + k:]
    if kind == "ff":
        return f"{k} bytes 0xff at {i}", data[:i] + b"\xff" * k + data[i + k:]
    if kind == "field":
        v = rng.choice(INTERESTING32)
        i &= ~3
        return f"word {v:#x} at {i}", data[:i] + struct.pack("<I", v) + data[i + 4:]
    if kind == "insert":
        junk = bytes(rng.randrange(256) for _ in range(k))
        return f"{k} bytes inserted at {i}", data[:i] + junk + data[i:]
    if kind == "delete":
        return f"{k} bytes deleted at {i}", data[:i] + data[i + k:]
    j = rng.randrange(n)
    return f"{k} bytes at {j} copied to {i}", data[:i] + data[j:j + k] + data[i + k:]


# ------------------------------------------------------------------- zip
# (signature, {field: (offset, struct format)}) of the zip headers zipfile reads
_LOCAL = (b"PK\x03\x04", {"flags": (6, "<H"), "method": (8, "<H"), "crc": (14, "<I"),
                          "csize": (18, "<I"), "usize": (22, "<I"), "namelen": (26, "<H"),
                          "extralen": (28, "<H")})
_CENTRAL = (b"PK\x01\x02", {"flags": (8, "<H"), "method": (10, "<H"), "crc": (16, "<I"),
                            "csize": (20, "<I"), "usize": (24, "<I"), "namelen": (28, "<H"),
                            "extralen": (30, "<H"), "offset": (42, "<I")})
_END = (b"PK\x05\x06", {"entries_here": (8, "<H"), "entries": (10, "<H"), "cdsize": (12, "<I"),
                        "cdoffset": (16, "<I"), "commentlen": (20, "<H")})
_ZIP_VALUES = {"flags": (1, 8, 0x41, 0xFFFF), "method": (1, 9, 12, 14, 99, 0xFFFF),
               "namelen": (0, 1, 0xFFFF), "extralen": (1, 4, 0xFFFF),
               "entries_here": (0, 1, 0xFFFF), "entries": (0, 1, 0xFFFF),
               "commentlen": (1, 0xFFFF)}


def zip_header_mutation(rng: random.Random, data: bytes) -> tuple:
    """A header field of a zip entry (local, central or end record) set to an
    odd value: (description, bytes)."""
    sig, fields = rng.choice((_LOCAL, _CENTRAL, _END))
    spots = []
    p = data.find(sig)
    while p >= 0:
        spots.append(p)
        p = data.find(sig, p + 1)
    if not spots:
        return "unchanged", data
    at = rng.choice(spots)
    name = rng.choice(sorted(fields))
    off, fmt = fields[name]
    size = struct.calcsize(fmt)
    limit = (1 << (8 * size)) - 1
    values = _ZIP_VALUES.get(name) or tuple(v & limit for v in INTERESTING32)
    v = rng.choice(values)
    b = bytearray(data)
    if at + off + size > len(b):
        return "unchanged", data
    struct.pack_into(fmt, b, at + off, v)
    return f"{sig[2:4].hex()} header at {at}: {name} = {v:#x}", bytes(b)


def rezip(members: dict, method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def json_leaves(doc, path=()):
    """Every (path, value) of a JSON document, containers included."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from json_leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from json_leaves(v, path + (i,))


_ODD_VALUES = (None, True, -1, 0, 2 ** 31, 2 ** 64, 10 ** 30, -10 ** 30, 1.5, float("1e308"),
               "", "x", "\n", [], [1, 2], {}, {"a": 1}, {"$b": 10 ** 9}, {"$b": -1},
               {"$b": "0"}, {"$t": 5}, {"$by": "!!"}, {"$nd": {"$b": 0}, "dtype": "<f8",
                                                      "shape": [10 ** 9]})


def json_mutation(rng: random.Random, doc, pick=None) -> tuple:
    """One value of ``doc`` replaced by an odd one, a key deleted, or a value
    buried in a deep nest: (description, the new document as JSON text).
    ``pick`` filters the (path, value) candidates."""
    doc = json.loads(json.dumps(doc))
    spots = [(p, v) for p, v in json_leaves(doc) if p and (pick is None or pick(p, v))]
    if not spots:
        return "unchanged", json.dumps(doc)
    path, value = rng.choice(spots)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    kind = rng.random()
    if kind < 0.1 and isinstance(parent, dict):
        del parent[key]
        return f"{'/'.join(map(str, path))} deleted", json.dumps(doc)
    if kind < 0.2:
        depth = rng.choice((50, 5000, 100000))
        parent[key] = "\0DEEP"
        text = json.dumps(doc).replace('"\\u0000DEEP"',
                                       "[" * depth + json.dumps(value) + "]" * depth, 1)
        return f"{'/'.join(map(str, path))} nested {depth} deep", text
    new = rng.choice(_ODD_VALUES)
    if isinstance(value, int) and not isinstance(value, bool) and rng.random() < 0.5:
        new = value + rng.choice((-1, 1, 1 << 32, -(1 << 40)))
    parent[key] = new
    return f"{'/'.join(map(str, path))} = {json.dumps(new)[:40]}", json.dumps(doc)


def elf_header_mutation(rng: random.Random, data: bytes) -> tuple:
    """A word or half-word of the ELF header, a program header or a section
    header set to an odd value: (description, bytes)."""
    phoff, shoff = struct.unpack_from("<II", data, 28)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 42)
    table = rng.choice(("ehdr", "phdr", "shdr"))
    if table == "ehdr":
        at = rng.randrange(16, 52)
    elif table == "phdr":
        at = phoff + rng.randrange(max(1, phnum * phentsize))
    else:
        at = shoff + rng.randrange(max(1, shnum * shentsize))
    size = rng.choice((2, 4))
    at &= ~(size - 1)
    if at + size > len(data):
        return "unchanged", data
    limit = (1 << (8 * size)) - 1
    v = rng.choice(INTERESTING32) & limit
    b = bytearray(data)
    b[at:at + size] = v.to_bytes(size, "little")
    return f"{table} field at {at} = {v:#x}", bytes(b)
