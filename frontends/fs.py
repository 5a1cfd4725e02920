"""pinetime-emu fs: the files in a NOR flash image's littlefs (emu/norfs.py).

    pinetime-emu fs ls    FLASH [PATH...] [-R]
    pinetime-emu fs get   FLASH PATH [DEST]        (DEST '-': standard output)
    pinetime-emu fs put   FLASH SRC [DEST]         (DEST: a path or a directory ending in /)
    pinetime-emu fs rm    FLASH PATH... [-r]
    pinetime-emu fs mkdir FLASH PATH... [-p]
    pinetime-emu fs logo  FLASH PNG                (the bootloader's logo, at the NOR's start)

FLASH is a 4 MiB image of the PineTime's external flash (``run --flash-file``).
The filesystem is InfiniTime's or wasp-os's, whichever mounts (``--layout``
to say which); ``--format`` (put, mkdir) makes a new one in its layout,
creating FLASH when it does not exist.  The image is read whole, changed in
memory and written back in one piece (emu/outputs.py's atomic_write): a
command that fails leaves FLASH as it was.  Every problem is one line on
stderr and exit status 2.
"""
from __future__ import annotations

import os
import posixpath
import sys
from typing import Optional

from emu.norfs import LAYOUTS, NOR_SIZE, NorFs, NorFsError
from emu.outputs import Files, atomic_write
from frontends.common import EXIT_OK, EXIT_USAGE, ArgumentParser

MAX_PUT = NOR_SIZE      # nothing bigger fits in the flash


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="pinetime-emu fs",
                       description="List, read and write the files in the littlefs of a "
                                   "4 MiB PineTime NOR flash image (InfiniTime's at 0xB4000 "
                                   "or wasp-os's over the whole flash).  FLASH is changed "
                                   "only when the whole command succeeds.")
    sub = p.add_subparsers(dest="verb", metavar="VERB")
    common = ArgumentParser(add_help=False)
    common.add_argument("--layout", choices=sorted(LAYOUTS), default=None,
                        help="whose filesystem: infinitime or wasp-os (default: the one "
                             "that mounts)")
    ls = sub.add_parser("ls", parents=[common], help="list directories (default /)")
    ls.add_argument("flash", metavar="FLASH")
    ls.add_argument("paths", metavar="PATH", nargs="*")
    ls.add_argument("-R", "--recursive", action="store_true", help="everything below")
    get = sub.add_parser("get", parents=[common], help="copy a file out")
    get.add_argument("flash", metavar="FLASH")
    get.add_argument("path", metavar="PATH")
    get.add_argument("dest", metavar="DEST", nargs="?",
                     help="file to write (default: PATH's name here; '-': standard output)")
    put = sub.add_parser("put", parents=[common], help="copy a file in")
    put.add_argument("flash", metavar="FLASH")
    put.add_argument("src", metavar="SRC")
    put.add_argument("dest", metavar="DEST", nargs="?",
                     help="path in the filesystem (default: /SRC's name; ending in /: "
                          "into that directory)")
    put.add_argument("--format", action="store_true",
                     help="make a new filesystem first (needs --layout; FLASH may be new)")
    put.add_argument("-p", "--parents", action="store_true",
                     help="make DEST's missing directories")
    rm = sub.add_parser("rm", parents=[common], help="remove files or empty directories")
    rm.add_argument("flash", metavar="FLASH")
    rm.add_argument("paths", metavar="PATH", nargs="+")
    rm.add_argument("-r", "--recursive", action="store_true",
                    help="remove directories with what is in them")
    mk = sub.add_parser("mkdir", parents=[common], help="make directories")
    mk.add_argument("flash", metavar="FLASH")
    mk.add_argument("paths", metavar="PATH", nargs="+")
    mk.add_argument("-p", "--parents", action="store_true",
                    help="make missing parents; no error if it exists")
    mk.add_argument("--format", action="store_true",
                    help="make a new filesystem first (needs --layout; FLASH may be new)")
    logo = sub.add_parser("logo", help="write the bootloader's boot logo (a PNG of at most "
                                       "240 x 240) at the NOR's start; FLASH may be new")
    logo.add_argument("flash", metavar="FLASH")
    logo.add_argument("png", metavar="PNG")
    return p


def main(argv: list) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.error("a verb is needed: ls, get, put, rm, mkdir or logo")
    try:
        if args.verb == "logo":
            return _logo(args)
        return _run(args)
    except NorFsError as e:
        return _fail(str(e))


def _fail(msg: str) -> int:
    print(f"pinetime-emu fs: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def _read_flash(path: str, may_be_new: bool) -> Optional[bytes]:
    if not os.path.exists(path):
        if may_be_new:
            return None
        raise NorFsError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise NorFsError(f"{path}: not a regular file (give a 4 MiB NOR flash image)")
    size = os.path.getsize(path)
    if size != NOR_SIZE:
        raise NorFsError(f"{path}: {size} bytes, not a 4 MiB NOR flash image ({NOR_SIZE} "
                         "bytes)")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise NorFsError(f"{path}: cannot read ({e.strerror or e})") from None


def _run(args) -> int:
    fmt = getattr(args, "format", False)
    if fmt and args.layout is None:
        raise NorFsError("--format needs --layout (infinitime or wasp-os)")
    files = Files()
    files.read("FLASH", args.flash)
    writes_flash = args.verb in ("put", "rm", "mkdir")
    if writes_flash:
        files.write("FLASH", args.flash, kind="flash", may_replace=("FLASH",))
    if args.verb == "put":
        files.read("SRC", args.src)
    dest = None
    if args.verb == "get" and args.dest != "-":
        dest = args.dest or posixpath.basename(args.path.rstrip("/")) or "file"
        files.write("DEST", dest)
    problem = files.problem()
    if problem:
        raise NorFsError(problem)
    data = _read_flash(args.flash, may_be_new=fmt)
    if data is None:
        data = b"\xff" * NOR_SIZE
    fs = NorFs(data, args.layout, format=fmt, name=args.flash)
    if args.verb == "ls":
        _ls(fs, args.paths or ["/"], args.recursive)
    elif args.verb == "get":
        content = fs.read(args.path)
        if dest is None:
            sys.stdout.buffer.write(content)
            sys.stdout.flush()
        else:
            _save(dest, content)
    elif args.verb == "put":
        _put(fs, args)
    elif args.verb == "rm":
        for p in args.paths:
            fs.remove(p, recursive=args.recursive)
    elif args.verb == "mkdir":
        for p in args.paths:
            if args.parents:
                _makedirs(fs, p)
            else:
                fs.mkdir(p)
    if writes_flash and fs.changed:
        _save(args.flash, fs.image())
    return EXIT_OK


def _logo(args) -> int:
    from emu.norfs import LOGO_OFFSET, LOGO_SIZE, boot_logo
    from emu.png import read_png
    files = Files()
    files.read("PNG", args.png)
    files.write("FLASH", args.flash)
    problem = files.problem()
    if problem:
        raise NorFsError(problem)
    try:
        pixels = read_png(args.png)
    except (ValueError, OSError) as e:
        raise NorFsError(str(e).splitlines()[0] if str(e) else f"{args.png}: unreadable") \
            from None
    data = _read_flash(args.flash, may_be_new=True)
    nor = bytearray(data if data is not None else b"\xff" * NOR_SIZE)
    nor[LOGO_OFFSET:LOGO_OFFSET + LOGO_SIZE] = boot_logo(pixels)
    _save(args.flash, bytes(nor))
    return EXIT_OK


def _ls(fs: NorFs, paths: list, recursive: bool) -> None:
    out = sys.stdout
    for i, p in enumerate(paths):
        if len(paths) > 1:
            out.write(("\n" if i else "") + f"{p}:\n")
        if recursive and fs.is_dir(p):
            rows = [(full, e) for full, e in fs.walk(p)]
        else:
            rows = [(e.name, e) for e in fs.ls(p)]
        for name, e in rows:
            out.write(f"{'-' if e.is_dir else e.size:>8}  {name}{'/' if e.is_dir else ''}\n")
    used, count, size = fs.usage()
    out.write(f"({fs.layout.name} littlefs: {used} of {count} blocks of {size} bytes used)\n")


def _put(fs: NorFs, args) -> None:
    src = args.src
    if not os.path.isfile(src):
        raise NorFsError(f"{src}: {'no such file' if not os.path.exists(src) else 'not a regular file'}")
    if os.path.getsize(src) > MAX_PUT:
        raise NorFsError(f"{src}: larger than the flash")
    try:
        with open(src, "rb") as f:
            content = f.read()
    except OSError as e:
        raise NorFsError(f"{src}: cannot read ({e.strerror or e})") from None
    dest = args.dest or "/"
    if dest.endswith("/") or (fs.exists(dest) and fs.is_dir(dest)):
        dest = posixpath.join(dest, os.path.basename(src))
    if args.parents:
        _makedirs(fs, posixpath.dirname("/" + dest.lstrip("/")))
    fs.write(dest, content)


def _makedirs(fs: NorFs, path: str) -> None:
    parts = [p for p in path.strip("/").split("/") if p]
    cur = ""
    for part in parts:
        cur += "/" + part
        if fs.exists(cur):
            if not fs.is_dir(cur):
                raise NorFsError(f"{cur}: not a directory")
            continue
        fs.mkdir(cur)


def _save(path: str, data: bytes) -> None:
    try:
        atomic_write(path, data)
    except OSError as e:
        raise NorFsError(f"{path}: cannot write ({e.strerror or e})") from None
