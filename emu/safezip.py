"""Reading zip archives that may be hostile: DFU packages and snapshots.

``zipfile`` trusts what an archive says about itself: a damaged deflate
stream raises ``zlib.error``, an unknown compression method
``NotImplementedError``, the encrypted flag ``RuntimeError``, and a member
is inflated whole however large it says (or turns out) to be.  Here every
failure is a :class:`ZipError` with a one-line message (the caller adds the
file's name), only stored and deflated members are read (what nrfutil and
the snapshot writer make), and a member is read with a cap: its declared
size is checked before anything is inflated, and inflating stops at the
cap whatever the header said.
"""
from __future__ import annotations

import io
import os
import stat
import struct
import zipfile
import zlib
from typing import Union

# what zipfile and the decompressors raise on a damaged or unusual archive
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, NotImplementedError,
              RuntimeError, EOFError, OSError, ValueError, struct.error, OverflowError,
              IndexError, KeyError, UnicodeDecodeError)
READABLE_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_CHUNK = 1 << 16


class ZipError(Exception):
    """The archive or one of its members cannot be read (one-line message)."""


class MissingMember(ZipError):
    """The archive has no member of that name."""


def _why(e: BaseException) -> str:
    kind = type(e).__name__
    if kind == "error":                    # zlib.error, struct.error
        kind = f"{type(e).__module__}.error"
    text = " ".join(str(e).split())
    return f"{kind}: {text}" if text else kind


def shown(name) -> str:
    """A member name as it can appear in a one-line message."""
    text = str(name)
    if text.isprintable() and len(text) <= 80:
        return text
    r = repr(text)
    return r if len(r) <= 80 else r[:77] + "..."


def read_regular_file(path, limit: int) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit``
    bytes (a device such as /dev/zero, a FIFO or a directory is refused before
    it is read; OSError otherwise, FileNotFoundError for a missing file)."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise ZipError("is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise ZipError("not a regular file")
    if st.st_size > limit:
        raise ZipError(f"{st.st_size} bytes, more than the {limit} this can be")
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:                  # grew while being read
        raise ZipError(f"more than the {limit} bytes this can be")
    return data


def open_zip(data: Union[bytes, bytearray]) -> zipfile.ZipFile:
    """A ZipFile over ``data``; ZipError if it is not a readable archive."""
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except ZIP_ERRORS as e:
        raise ZipError(f"not a zip archive or a damaged one ({_why(e)})") from None


def read_member(z: zipfile.ZipFile, name: str, limit: int) -> bytes:
    """Member ``name`` of ``z``, at most ``limit`` bytes once inflated.

    MissingMember if there is none; ZipError if it is encrypted, compressed
    with a method other than stored or deflated, declares or inflates to
    more than ``limit`` bytes, or is damaged (bad deflate stream, CRC)."""
    if not isinstance(name, str):
        raise ZipError(f"member name {name!r} is not a string")
    try:
        info = z.getinfo(name)
    except KeyError:
        raise MissingMember(f"no member {shown(name)}") from None
    name = shown(name)
    if info.flag_bits & 0x1:
        raise ZipError(f"{name} is encrypted")
    if info.compress_type not in READABLE_METHODS:
        raise ZipError(f"{name} is compressed with method {info.compress_type} (only "
                       f"{' and '.join(READABLE_METHODS.values())} members are read)")
    if info.file_size > limit:
        raise ZipError(f"{name} declares {info.file_size} bytes, more than the {limit} "
                       "it can hold")
    out = bytearray()
    try:
        with z.open(info) as f:
            while len(out) <= limit:
                chunk = f.read(min(_CHUNK, limit + 1 - len(out)))
                if not chunk:
                    break
                out += chunk
    except ZIP_ERRORS as e:
        raise ZipError(f"{name} is damaged ({_why(e)})") from None
    if len(out) > limit:
        raise ZipError(f"{name} inflates to more than the {limit} bytes it can hold")
    return bytes(out)
