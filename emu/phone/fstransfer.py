"""Files over Bluetooth: the Adafruit BLE file transfer protocol, as InfiniTime serves it.

The phone's side of the protocol of InfiniTime's FSService
(src/components/ble/FSService.cpp, its version 4 of Adafruit's BLE file
transfer), which ITD, Gadgetbridge and Amazfish use to put InfiniTime's
external resources (fonts and pictures for some watch faces) into the
watch's littlefs: service 0xFEBB; version adaf0100-4669-6c65-5472-616e73666572
(read); transfer adaf0200-... (write, notify).  Every command is one write
of the transfer characteristic, little-endian and packed, answered by a
notification:

* WRITE 0x20 (pathlen, offset, mtime, total size, path) -> WRITE_PACING
  0x21 (status, offset, mtime, free space); then WRITE_DATA 0x22 (status
  1, offset, size, data) for each chunk, each answered by WRITE_PACING;
* READ 0x10 (pathlen, offset, chunk size, path) -> READ_DATA 0x11 (status,
  offset, total length, chunk length, data); READ_PACING 0x12 for the next;
* MKDIR 0x40 -> 0x41, DELETE 0x30 -> 0x31, MOVE 0x60 -> 0x61;
* LISTDIR 0x50 -> one LISTDIR_ENTRY 0x51 per entry (flags bit 0:
  directory; size), then one with entry == total entries.

Status 1 is success; a negative status is littlefs's error (-2 no such file,
-17 exists...).  :class:`FileTransfer` gives each as a GATT procedure
(emu/phone/gatt.py) and ``upload_resources`` does what the companion apps do
with an ``infinitime-resources-*.zip`` (its resources.json: each file to its
path, the folders made first, the obsolete files deleted).  The watch only
answers when Settings > Over-the-air allows file access.

Not modelled: the protocol's modification times (InfiniTime ignores them),
resuming an interrupted write.
"""
from __future__ import annotations

import json
import posixpath
import struct
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional

from emu.phone.gatt import NEXT_NOTIFICATION, GattError

FS_SERVICE = "0000febb-0000-1000-8000-00805f9b34fb"
FS_VERSION = "adaf0100-4669-6c65-5472-616e73666572"
FS_TRANSFER = "adaf0200-4669-6c65-5472-616e73666572"
READ, READ_DATA, READ_PACING = 0x10, 0x11, 0x12
WRITE, WRITE_PACING, WRITE_DATA = 0x20, 0x21, 0x22
DELETE, DELETE_STATUS, MKDIR, MKDIR_STATUS = 0x30, 0x31, 0x40, 0x41
LISTDIR, LISTDIR_ENTRY, MOVE, MOVE_STATUS = 0x50, 0x51, 0x60, 0x61
LFS_ERRORS = {-2: "no such file or directory", -17: "already exists", -20: "not a directory",
              -21: "is a directory", -39: "directory not empty", -28: "no space left",
              -36: "name too long", -84: "corrupt filesystem", -5: "I/O error"}
MAX_RESOURCES_ZIP = 4 * 1024 * 1024
STALL = 30 * 512_000_000        # ticks of silence before the phone gives up


class FsError(GattError):
    """The watch refused a file command (message says which and why)."""


@dataclass
class DirEntry:
    name: str
    is_dir: bool
    size: int


def _status(code: int) -> str:
    s = code - 256 if code > 127 else code
    return LFS_ERRORS.get(s, f"status {s}")


class FileTransfer:
    """File commands through ``gatt`` (a connected GattClient)."""

    def __init__(self, gatt):
        self.gatt = gatt
        self._notes: deque = deque()
        self._handle = None
        self._clock = gatt.link.clock
        self.last_heard = self._clock.now
        self._subscribed_for = None

    def quiet_ticks(self) -> int:
        return self._clock.now - self.last_heard

    # -- procedures (generators for GattClient.start) -------------------
    def setup(self):
        try:
            c = self.gatt.characteristic(FS_TRANSFER)
        except GattError:
            raise GattError("the watch has no file transfer service (0xFEBB: InfiniTime's "
                            "FSService)") from None
        self._handle = c.value_handle
        if self._heard not in self.gatt.listeners:
            self.gatt.listeners.append(self._heard)
        if self._subscribed_for is not self.gatt.services:     # once per connection
            yield from self.gatt.subscribe(FS_TRANSFER)
            self._subscribed_for = self.gatt.services

    def mkdir(self, path: str, exist_ok: bool = False):
        yield from self.setup()
        p = path.encode()
        rsp = yield from self._command(struct.pack("<BBHIQ", MKDIR, 0, len(p), 0, 0) + p,
                                       MKDIR_STATUS)
        if rsp[1] != 1 and not (exist_ok and _status(rsp[1]) == "already exists"):
            raise FsError(f"mkdir {path}: {_status(rsp[1])}")

    def makedirs(self, path: str):
        parts = [x for x in path.strip("/").split("/") if x]
        for i in range(1, len(parts) + 1):
            yield from self.mkdir("/" + "/".join(parts[:i]), exist_ok=True)

    def delete(self, path: str, missing_ok: bool = False):
        yield from self.setup()
        p = path.encode()
        rsp = yield from self._command(struct.pack("<BBH", DELETE, 0, len(p)) + p, DELETE_STATUS)
        if rsp[1] != 1 and not (missing_ok and _status(rsp[1]) == "no such file or directory"):
            raise FsError(f"delete {path}: {_status(rsp[1])}")

    def write(self, path: str, data: bytes, on_progress: Optional[Callable] = None):
        yield from self.setup()
        p = path.encode()
        rsp = yield from self._command(
            struct.pack("<BBHIQI", WRITE, 0, len(p), 0, 0, len(data)) + p, WRITE_PACING)
        if rsp[1] != 1:
            raise FsError(f"write {path}: {_status(rsp[1])}")
        chunk = max(20, self.gatt.mtu - 3 - 12)
        for off in range(0, len(data), chunk):
            piece = data[off:off + chunk]
            rsp = yield from self._command(
                struct.pack("<BBHII", WRITE_DATA, 1, 0, off, len(piece)) + piece, WRITE_PACING)
            if rsp[1] != 1:
                raise FsError(f"write {path} at {off}: {_status(rsp[1])}")
            if on_progress is not None:
                on_progress(off + len(piece), len(data))
        return len(data)

    def read(self, path: str):
        yield from self.setup()
        p = path.encode()
        size = max(20, self.gatt.mtu - 3 - 16)
        out = bytearray()
        rsp = yield from self._command(struct.pack("<BBHII", READ, 0, len(p), 0, size) + p,
                                       READ_DATA)
        while True:
            if rsp[1] != 1:
                raise FsError(f"read {path}: {_status(rsp[1])}")
            off, total, n = struct.unpack_from("<III", rsp, 4)
            out += rsp[16:16 + n]
            if len(out) >= total or n == 0:
                return bytes(out)
            rsp = yield from self._command(
                struct.pack("<BBHII", READ_PACING, 1, 0, len(out), size), READ_DATA)

    def listdir(self, path: str = "/"):
        yield from self.setup()
        p = path.encode()
        rsp = yield from self._command(struct.pack("<BBH", LISTDIR, 0, len(p)) + p,
                                       LISTDIR_ENTRY)
        entries = []
        while True:
            if rsp[1] != 1:
                raise FsError(f"listdir {path}: {_status(rsp[1])}")
            n, entry, total, flags, _mtime, size = struct.unpack_from("<HIIIQI", rsp, 2)
            if entry >= total:
                return entries
            name = rsp[28:28 + n].decode("utf-8", "replace")
            if name not in (".", ".."):
                entries.append(DirEntry(name, bool(flags & 1), size))
            rsp = yield from self._expect(LISTDIR_ENTRY)

    def upload_resources(self, files: list, obsolete: list = (),
                         on_progress: Optional[Callable] = None):
        """``files``: (path, data) in order; ``obsolete``: paths to delete.
        ``on_progress(bytes done, total bytes, path)``."""
        total = sum(len(d) for _p, d in files)
        done = 0
        for path in obsolete:
            yield from self.delete(path, missing_ok=True)
        for path, data in files:
            parent = posixpath.dirname(path)
            if parent not in ("", "/"):
                yield from self.makedirs(parent)
            base = done
            yield from self.write(path, data, on_progress=None if on_progress is None else
                                  (lambda a, _t, b=base, p=path: on_progress(b + a, total, p)))
            done += len(data)
        return done

    # -- helpers ----------------------------------------------------------
    def _heard(self, handle: int, value: bytes) -> None:
        if handle == self._handle:
            self.last_heard = self._clock.now
            self._notes.append(bytes(value))

    def _command(self, payload: bytes, answer: int):
        self._notes.clear()
        yield from self.gatt.write(FS_TRANSFER, payload)
        return (yield from self._expect(answer))

    def _expect(self, answer: int):
        while True:
            while not self._notes:
                yield NEXT_NOTIFICATION
            got = self._notes.popleft()
            if got[:1] == bytes([answer]) and len(got) >= 2:
                return got


def read_resources(path: str) -> tuple:
    """(files, obsolete) of an InfiniTime resources package
    (``infinitime-resources-*.zip``, made by src/resources/generate-package.py):
    ``files`` (watch path, bytes) in resources.json's order, ``obsolete`` the
    paths to delete.  Read as hostile; ValueError with one line otherwise."""
    from emu.safezip import ZipError, read_regular_file
    try:
        data = read_regular_file(path, MAX_RESOURCES_ZIP)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (ZipError, OSError) as e:
        raise ValueError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    return resources_from_bytes(str(path), data)


def resources_from_bytes(path: str, data: bytes) -> tuple:
    """read_resources for a package already in memory (named ``path``)."""
    from emu.safezip import MissingMember, ZipError, open_zip, read_member
    if len(data) > MAX_RESOURCES_ZIP:
        raise ValueError(f"{path}: {len(data)} bytes, more than a resources package can be")
    try:
        z = open_zip(data)
        meta = json.loads(read_member(z, "resources.json", 256 * 1024))
    except MissingMember:
        raise ValueError(f"{path}: no resources.json: not an InfiniTime resources package") \
            from None
    except (ZipError, OSError) as e:
        raise ValueError(f"{path}: {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: resources.json is not JSON ({type(e).__name__})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("resources"), list):
        raise ValueError(f"{path}: resources.json has no list of resources")
    files = []
    for r in meta["resources"]:
        if not isinstance(r, dict) or not isinstance(r.get("filename"), str) \
                or not isinstance(r.get("path"), str) or not r["path"].startswith("/"):
            raise ValueError(f"{path}: a resource without a file name and an absolute path")
        try:
            files.append((r["path"], read_member(z, r["filename"], MAX_RESOURCES_ZIP)))
        except MissingMember:
            raise ValueError(f"{path}: resources.json names {r['filename']!r}, which is not "
                             "in the package") from None
        except ZipError as e:
            raise ValueError(f"{path}: {e}") from None
    obsolete = [o["path"] for o in meta.get("obsolete_files") or []
                if isinstance(o, dict) and isinstance(o.get("path"), str)]
    return files, obsolete
