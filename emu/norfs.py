"""The littlefs inside a PineTime's external NOR flash image.

Both firmwares that keep files in the 4 MiB XT25F32 use littlefs v2 with on-disk
version 2.0; they place and cut it differently:

==============  ===========================  =====================================
                InfiniTime 1.16              wasp-os
==============  ===========================  =====================================
where           0x0B4000-0x3FFFFF            the whole NOR (0x000000-0x3FFFFF)
                (below it: the boot logo     (MicroPython's ``os.VfsLfs2`` on
                at 0 and MCUBoot's           wasp/drivers/flash's block device)
                secondary slot at 0x40000)
littlefs        v2.4 (src/libs/littlefs)     v2.3 (micropython/lib/littlefs)
block           4096 bytes x 844             512 bytes x 8192 (virtual blocks:
                                             the driver erases 4 KiB sectors)
read/prog       16 / 8                       32 / 32
cache           16                           128 (4 x max(read, prog))
lookahead       16                           32
name_max        50 (attr_max 50)             255
block_cycles    1000                         100
==============  ===========================  =====================================

(InfiniTime: src/components/fs/FS.h and FS.cpp; wasp-os:
wasp/boards/pinetime/watch.py, wasp/drivers/flash/bdevice.py and
micropython/extmod/vfs_lfsx.c.)

The files are read and written with littlefs-python (its littlefs is newer,
v2.11, and writes on-disk version 2.1 unless told otherwise: it is told 2.0,
which the watches' littlefs requires, or they would reformat and lose
everything).  :class:`NorFs` works on the image in memory; the caller
writes :meth:`NorFs.image` back (the CLI through emu/outputs.py's
atomic_write, so an error never leaves a half-written file).  Problems are
:class:`NorFsError` with a one-line message.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Optional

NOR_SIZE = 4 * 1024 * 1024
DISK_VERSION = 0x00020000          # littlefs on-disk 2.0: what littlefs 2.3/2.4 mount


@dataclass(frozen=True)
class Layout:
    name: str
    offset: int
    size: int
    block_size: int
    read_size: int
    prog_size: int
    cache_size: int
    lookahead_size: int
    block_cycles: int
    name_max: int
    attr_max: int = 0

    @property
    def block_count(self) -> int:
        return self.size // self.block_size


INFINITIME = Layout("infinitime", 0x0B4000, 0x34C000, 4096, 16, 8, 16, 16, 1000, 50, 50)
WASP_OS = Layout("wasp-os", 0, NOR_SIZE, 512, 32, 32, 128, 32, 100, 255)
LAYOUTS = {lay.name: lay for lay in (INFINITIME, WASP_OS)}


class NorFsError(Exception):
    """A NOR image or a path that cannot be used (message names what and why)."""


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool
    size: int


def _littlefs():
    try:
        import littlefs
    except ImportError:
        raise NorFsError("littlefs-python is not installed (pip install littlefs-python)") \
            from None
    return littlefs


class NorFs:
    """The littlefs of ``nor`` (the 4 MiB image's bytes) in ``layout`` (a
    name of LAYOUTS; None: the one that mounts, InfiniTime's first).
    ``format=True`` makes a new, empty filesystem there (``layout`` needed)."""

    def __init__(self, nor: bytes, layout: Optional[str] = None, *, format: bool = False,
                 name: str = "NOR image"):
        self.name = name
        if len(nor) != NOR_SIZE:
            raise NorFsError(f"{name}: {len(nor)} bytes, not a 4 MiB NOR flash image "
                             f"({NOR_SIZE} bytes)")
        if layout is not None and layout not in LAYOUTS:
            raise NorFsError(f"unknown layout {layout!r} (one of: {', '.join(LAYOUTS)})")
        self._nor = bytearray(nor)
        self.changed = False
        if format:
            if layout is None:
                raise NorFsError("formatting needs a layout (infinitime or wasp-os)")
            self.layout = LAYOUTS[layout]
            self._fs = self._make(self.layout, mount=False)
            self._call("format", self._fs.format)
            self._call("mount", self._fs.mount)
            self.changed = True
            return
        tried = [LAYOUTS[layout]] if layout else list(LAYOUTS.values())
        for lay in tried:
            fs = self._make(lay, mount=False)
            try:
                fs.mount()
            except _littlefs().errors.LittleFSError:
                continue
            self.layout, self._fs = lay, fs
            return
        where = " or ".join(f"{lay.name}'s at {lay.offset:#x}" for lay in tried)
        raise NorFsError(f"{name}: no littlefs found ({where}); --format makes one")

    # -- reading -------------------------------------------------------
    def ls(self, path: str = "/") -> list:
        """The entries of directory ``path`` (or the one entry of a file)."""
        path = self._path(path)
        st = self._stat(path)
        if not self._is_dir(st):
            return [Entry(posixpath.basename(path), False, st.size)]
        out = []
        for st in self._call(path, lambda: list(self._fs.scandir(path))):
            out.append(Entry(st.name, self._is_dir(st), 0 if self._is_dir(st) else st.size))
        return sorted(out, key=lambda e: e.name)

    def walk(self, path: str = "/"):
        """(path, entry) for everything under directory ``path``, depth first."""
        for e in self.ls(path):
            full = posixpath.join(self._path(path), e.name)
            yield full, e
            if e.is_dir:
                yield from self.walk(full)

    def read(self, path: str) -> bytes:
        path = self._path(path)
        if self._is_dir(self._stat(path)):
            raise NorFsError(f"{path}: is a directory")

        def rd():
            with self._fs.open(path, "rb") as f:
                return f.read()
        return bytes(self._call(path, rd))

    def exists(self, path: str) -> bool:
        try:
            self._stat(self._path(path))
            return True
        except NorFsError:
            return False

    def is_dir(self, path: str) -> bool:
        return self._is_dir(self._stat(self._path(path)))

    # -- writing -------------------------------------------------------
    def write(self, path: str, data: bytes) -> None:
        """Create or replace file ``path`` (its directory must exist)."""
        path = self._path(path)
        if path == "/":
            raise NorFsError("/: is a directory")
        parent = posixpath.dirname(path)
        if not self.exists(parent) or not self.is_dir(parent):
            raise NorFsError(f"{path}: no directory {parent}")
        if self.exists(path) and self.is_dir(path):
            raise NorFsError(f"{path}: is a directory")
        self._check_name(path)

        def wr():
            with self._fs.open(path, "wb") as f:
                f.write(bytes(data))
        self._call(path, wr)
        self.changed = True

    def mkdir(self, path: str) -> None:
        path = self._path(path)
        self._check_name(path)
        if self.exists(path):
            raise NorFsError(f"{path}: already exists")
        self._call(path, lambda: self._fs.mkdir(path))
        self.changed = True

    def remove(self, path: str, recursive: bool = False) -> None:
        path = self._path(path)
        if path == "/":
            raise NorFsError("/: the root cannot be removed")
        self._stat(path)
        self._call(path, lambda: self._fs.remove(path, recursive=recursive))
        self.changed = True

    def image(self) -> bytes:
        """The whole NOR image with the filesystem as it is now."""
        lay = self.layout
        self._nor[lay.offset:lay.offset + lay.size] = self._fs.context.buffer
        return bytes(self._nor)

    def usage(self) -> tuple:
        """(blocks used, block count, block size)."""
        return (self._call("/", lambda: self._fs.used_block_count), self.layout.block_count,
                self.layout.block_size)

    # -- internals -----------------------------------------------------
    def _make(self, lay: Layout, mount: bool):
        lfs = _littlefs()
        ctx = lfs.UserContext(buffer=bytearray(self._nor[lay.offset:lay.offset + lay.size]))
        return lfs.LittleFS(context=ctx, mount=mount, block_size=lay.block_size,
                            block_count=lay.block_count, read_size=lay.read_size,
                            prog_size=lay.prog_size, cache_size=lay.cache_size,
                            lookahead_size=lay.lookahead_size, block_cycles=lay.block_cycles,
                            name_max=lay.name_max, attr_max=lay.attr_max,
                            disk_version=DISK_VERSION)

    def _path(self, path: str) -> str:
        if not isinstance(path, str) or not path or "\0" in path:
            raise NorFsError(f"{path!r}: not a path")
        return posixpath.normpath("/" + path.lstrip("/")) if path != "/" else "/"

    def _check_name(self, path: str) -> None:
        for part in path.strip("/").split("/"):
            if len(part.encode("utf-8")) > self.layout.name_max:
                raise NorFsError(f"{path}: the name {part[:20]!r}... is longer than "
                                 f"{self.layout.name_max} bytes ({self.layout.name}'s name_max)")

    def _stat(self, path: str):
        return self._call(path, lambda: self._fs.stat(path))

    @staticmethod
    def _is_dir(st) -> bool:
        return st.type == 2          # LFS_TYPE_DIR

    def _call(self, what: str, fn):
        errors = _littlefs().errors
        try:
            return fn()
        except errors.LittleFSError as e:
            why = {-2: "no such file or directory", -17: "already exists",
                   -20: "not a directory", -21: "is a directory", -39: "directory not empty",
                   -28: "no space left in the filesystem", -36: "name too long",
                   -84: "the filesystem is corrupt", -27: "file too large"}.get(
                       e.code, e.name)
            raise NorFsError(f"{what}: {why}") from None


# -- the bootloader's logo ---------------------------------------------------
LOGO_OFFSET = 0
LOGO_SIZE = 240 * 240 * 2


def boot_logo(rgb) -> bytes:
    """The bytes the PineTime bootloader (bootloader-5.0.4, pinetime_boot's
    display.c) draws at boot from the NOR's start: 240 x 240 pixels of
    RGB565, high byte first, row by row, as it sends them to the ST7789.  It
    draws with MADCTL 0x60 (row/column exchange and column mirror), which
    shows the stored picture turned a quarter clockwise, so ``rgb`` (a
    height x width x 3 array of 0-255, at most 240 x 240, centred on black)
    is stored turned a quarter anticlockwise and shows upright.  (InfiniTime's
    own bootloader/boot_graphics.h, the pine cone, is stored unturned: it
    shows with its tip to the right.)"""
    import numpy as np
    a = np.asarray(rgb)
    if a.ndim != 3 or a.shape[2] < 3 or a.shape[0] > 240 or a.shape[1] > 240:
        raise NorFsError(f"a boot logo is at most 240 x 240 pixels of RGB, not "
                         f"{'x'.join(map(str, a.shape))}")
    canvas = np.zeros((240, 240, 3), dtype=np.uint16)
    y, x = (240 - a.shape[0]) // 2, (240 - a.shape[1]) // 2
    canvas[y:y + a.shape[0], x:x + a.shape[1]] = a[:, :, :3]
    r, g, b = canvas[:, :, 0], canvas[:, :, 1], canvas[:, :, 2]
    px = ((r >> 3) << 11) | ((g >> 2) << 5) | (b >> 3)
    return np.rot90(px, 1).astype(">u2").tobytes()
