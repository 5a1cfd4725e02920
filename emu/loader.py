"""Firmware loaders: ELF, Intel HEX, raw binary and full flash dumps.

``load_firmware(path)`` returns a :class:`FirmwareImage` (segments to program,
symbols, where the vector table is) or raises :class:`FirmwareError` with a
one-line message that names the file and the problem.  The CLI turns that
into exit status 2.

* ELF (pyelftools): PT_LOAD segments with file data are loaded at their
  physical (load) address, so initialised data lands in flash where the
  startup code copies it from.  The symbol table is kept for messages and the
  debugger.
* Intel HEX: every data record at its address.  A well-formed file (data,
  extended linear address, start linear address and end-of-file records,
  checksums right, no address twice) is read by ``_parse_hex`` in one pass
  (micro:bit MicroPython's 15 000 records: 10 ms instead of intelhex's
  100 ms); anything else goes to the intelhex package, which either reads
  it the same way or names the fault.
* Raw binary: at ``base``; by default 0x26000 when the image's own vector
  table points there and it fits there (a wasp-os/SoftDevice application),
  else 0 (InfiniTime's ``pinetime-app-*.bin``, whose reset handler also
  lies above 0x26000).  A file of
  exactly the flash size is a full flash dump at 0.
* Nordic DFU package (the ``.zip`` that nrfutil/adafruit-nrfutil ``genpkg``
  makes, e.g. wasp-os's ``micropython.zip``): ``manifest.json`` names the
  application's ``.bin`` and ``.dat``; the legacy init packet's CRC16
  (CRC-16/CCITT-FALSE over the image) is checked, and the application is
  placed at 0x26000 (right after the S132 v6.1.1 SoftDevice; ``base``
  overrides).  Packages holding a SoftDevice or bootloader are refused: the
  SoftDevice is emulated at its API and the bootloader is not run.  A
  package whose application is an MCUBoot image (InfiniTime's
  ``pinetime-mcuboot-app-dfu-*.zip``) is placed like that image, below.
  The package is read as hostile (emu/safezip.py): only stored and deflated
  members, none encrypted, the application no larger than the flash, the
  manifest and init packet at most 64 KiB each (declared sizes checked
  before inflating, and inflating stops at the cap), names that are
  strings; anything else is a one-line FirmwareError.
* MCUBoot image (InfiniTime's ``pinetime-mcuboot-app-image-*.bin``, from
  imgtool): a 32-bit magic 0x96f3b83d, then the header (ih_hdr_size at +8,
  ih_img_size at +12, version at +20), the image, and the TLV area whose
  SHA-256 is checked.  The file goes into the primary slot at 0x8000 (or
  ``base``) and is booted as the PineTime bootloader (MCUBoot on Mynewt)
  does: it copies the 256-byte vector table found ih_hdr_size bytes into the
  slot to flash at 0x7F00, sets VTOR there (VTOR cannot hold 0x8020: its low
  seven bits read as zero) and takes MSP and the reset address from it.  The
  same image as Intel HEX (header at 0x8000) is booted the same way.  With
  the real bootloader (``with_bootloader``, ``run --bootloader``, or a 512
  KiB flash dump holding it) the bootloader's own code does all that, and
  more: its logo, the swap from the NOR's secondary slot, the watchdog.

The format comes from the file's first bytes.  A file named ``.elf``,
``.zip`` or ``.hex`` without that format's header, a text file, a file that
is not a regular file (a directory, a device, a FIFO) or one over 256 MiB is
refused before anything is loaded.
"""
from __future__ import annotations

import bisect
import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Optional

APP_BASE_S132 = 0x26000
MCUBOOT_MAGIC = 0x96F3B83D
MCUBOOT_SLOT = 0x8000                   # primary slot: InfiniTime's gcc_nrf52-mcuboot.ld
MCUBOOT_SLOT_SIZE = 0x74000             # 0x8000-0x7BFFF (imgtool --slot-size 475136)
MCUBOOT_VECTOR_COPY = 0x7F00            # where the PineTime bootloader puts the app's vectors
MAX_FILE_SIZE = 256 * 1024 * 1024       # a firmware ELF with debug information fits
MAX_DFU_PACKAGE = 16 * 1024 * 1024      # an application (at most the flash) with room to spare
MAX_MANIFEST = 64 * 1024                # manifest.json: a few hundred bytes in practice
MAX_INIT_PACKET = 64 * 1024             # the .dat: 14 bytes legacy, a few hundred signed


class FirmwareError(Exception):
    """A firmware file that cannot be loaded (message names file and problem)."""


class SymbolTable:
    def __init__(self, symbols: Optional[dict] = None):
        # name -> (address, size, kind)
        self.by_name: dict = dict(symbols or {})
        items = sorted((a & ~1, s, n) for n, (a, s, k) in self.by_name.items()
                       if k in ("func", "object") and a)
        self._addrs = [a for a, _s, _n in items]
        self._items = items

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def lookup(self, name: str) -> Optional[int]:
        v = self.by_name.get(name)
        return None if v is None else v[0]

    def size(self, name: str) -> Optional[int]:
        """The size the ELF gives a symbol (an array's bytes), or None when it
        has none or no such symbol."""
        v = self.by_name.get(name)
        return v[1] if v is not None and v[1] else None

    def extent(self, name: str) -> Optional[tuple]:
        """(start, end inclusive) of a symbol with a size (a function's code
        without its Thumb bit), or None."""
        v = self.by_name.get(name)
        if v is None or not v[1]:
            return None
        start = v[0] & ~1
        return start, start + v[1] - 1

    def describe(self, addr: int) -> str:
        """'name+0x12' for an address inside a known symbol, else ''."""
        if not self._addrs:
            return ""
        i = bisect.bisect_right(self._addrs, addr) - 1
        if i < 0:
            return ""
        a, size, name = self._items[i]
        off = addr - a
        if size and off >= size:
            if off > 0x1000:
                return ""
        return name if off == 0 else f"{name}+{off:#x}"


@dataclass
class FirmwareImage:
    path: str
    format: str
    segments: list                        # [(address, bytes)]
    symbols: SymbolTable = field(default_factory=SymbolTable)
    entry: Optional[int] = None
    vector_table: Optional[int] = None    # where reset takes SP and PC from
    notes: list = field(default_factory=list)
    mcuboot: Optional["McubootImage"] = None

    @property
    def size(self) -> int:
        return sum(len(d) for _a, d in self.segments)

    def word_at(self, addr: int) -> Optional[int]:
        for a, d in self.segments:
            if a <= addr and addr + 4 <= a + len(d):
                return struct.unpack_from("<I", d, addr - a)[0]
        return None


@dataclass
class MemoryLayout:
    flash_base: int = 0
    flash_size: int = 512 * 1024
    ram_base: int = 0x20000000
    ram_size: int = 64 * 1024
    extra: tuple = ((0x10001000, 0x1000, "UICR"),)

    def region_of(self, addr: int, size: int) -> Optional[str]:
        end = addr + size
        if self.flash_base <= addr and end <= self.flash_base + self.flash_size:
            return "flash"
        if self.ram_base <= addr and end <= self.ram_base + self.ram_size:
            return "RAM"
        for base, sz, name in self.extra:
            if base <= addr and end <= base + sz:
                return name
        return None


def load_firmware(path: str, base: Optional[int] = None,
                  layout: Optional[MemoryLayout] = None) -> FirmwareImage:
    layout = layout or MemoryLayout()
    name = os.fspath(path)
    from emu.outputs import path_problem, shown_path
    problem = path_problem(name)
    if problem is not None:
        raise FirmwareError(f"{shown_path(name)}: {problem}")
    if not os.path.exists(name):
        raise FirmwareError(f"{name}: no such file")
    if os.path.isdir(name):
        raise FirmwareError(f"{name}: is a directory, not a firmware file")
    if not os.path.isfile(name):
        raise FirmwareError(f"{name}: not a regular file")
    size = os.path.getsize(name)
    if size > MAX_FILE_SIZE:
        raise FirmwareError(f"{name}: {size} bytes, too large for a firmware file (at most "
                            f"{MAX_FILE_SIZE // (1024 * 1024)} MiB)")
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as e:
        raise FirmwareError(f"{name}: cannot read ({e.strerror or e})") from None
    if not data:
        raise FirmwareError(f"{name}: empty file")
    ext = os.path.splitext(name)[1].lower()
    text = _is_text(data)
    if data[:4] == b"\x7fELF":
        img = _load_elf(name, data)
    elif data[:4] == b"PK\x03\x04":
        img = _load_dfu_zip(name, data, base, layout)
    elif data[:4] == MCUBOOT_MAGIC.to_bytes(4, "little"):
        img = _load_mcuboot(name, data, base)
    elif data[:1] == b":" and _looks_like_hex(data):
        img = _load_hex(name, data)
    elif ext in (".hex", ".ihex"):
        raise FirmwareError(f"{name}: not an Intel HEX file (first byte is {data[:1]!r}, "
                            "expected ':')")
    elif ext in (".elf", ".axf", ".out"):
        raise FirmwareError(f"{name}: not an ELF file ({'it is text; ' if text else ''}an ELF "
                            "file starts with 7f 45 4c 46)")
    elif ext == ".zip":
        raise FirmwareError(f"{name}: not a zip file, so not a DFU package "
                            f"({'a text file' if text else 'no zip header'})")
    elif text:
        raise FirmwareError(f"{name}: a text file, not a firmware image (ELF, Intel HEX, raw "
                            "binary, flash dump or DFU .zip)")
    else:
        img = _load_bin(name, data, base, layout)
    if img.mcuboot is None and img.word_at(MCUBOOT_SLOT) == MCUBOOT_MAGIC:
        _boot_mcuboot_in_place(img)                  # the Intel HEX of an MCUBoot image
    _check_layout(img, layout)
    if img.mcuboot is not None:
        img.vector_table = _mcuboot_vector_table(img, layout)
    else:
        img.vector_table = _find_vector_table(img, layout)
    return img


def _short_repr(v) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


def _is_text(data: bytes) -> bool:
    """Printable text (UTF-8, tabs and line ends, no NUL).  Never a firmware
    image: a vector table's initial SP (0x2000xxxx) holds a 0x00 or 0x20 byte
    among its first eight and a Thumb reset address is odd, so a raw image
    made only of text has no valid vector table anyway."""
    head = data[:4096]
    try:
        decoded = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3:          # not just a character cut at 4096
            return False
        decoded = head[:e.start].decode("utf-8")
    return all(c.isprintable() or c in "\t\r\n\f" for c in decoded)


def _looks_like_hex(data: bytes) -> bool:
    head = data[:64]
    return all(c in b":0123456789ABCDEFabcdef\r\n" for c in head)


def _load_elf(name: str, data: bytes) -> FirmwareImage:
    import io
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection
    try:
        elf = ELFFile(io.BytesIO(data))
        if elf.elfclass != 32 or not elf.little_endian:
            raise FirmwareError(f"{name}: ELF is not 32-bit little-endian (class "
                                f"{elf.elfclass}), not firmware for an ARM Cortex-M")
        if elf["e_machine"] != "EM_ARM":
            raise FirmwareError(f"{name}: ELF is for {elf['e_machine']}, not ARM (EM_ARM)")
        segments = []
        for seg in elf.iter_segments():
            if seg["p_type"] != "PT_LOAD" or seg["p_filesz"] == 0:
                continue
            off, size = seg["p_offset"], seg["p_filesz"]
            if off + size > len(data):
                raise FirmwareError(f"{name}: truncated ELF (segment at {seg['p_paddr']:#x} "
                                    f"needs bytes up to {off + size}, file has {len(data)})")
            segments.append((seg["p_paddr"], seg.data()))
        symbols = {}
        for sec in elf.iter_sections():
            if isinstance(sec, SymbolTableSection):
                _read_symbols(sec, elf.get_section(sec["sh_link"]).data(), symbols)
        entry = elf["e_entry"]
    except FirmwareError:
        raise
    except (ELFError, struct.error, ValueError, KeyError, IndexError, OSError) as e:
        raise FirmwareError(f"{name}: corrupt or truncated ELF ({e})") from None
    if not segments:
        raise FirmwareError(f"{name}: ELF has no loadable segments")
    return FirmwareImage(name, "elf", segments, SymbolTable(symbols), entry)


_SYM_KINDS = {2: "func", 1: "object", 0: "label"}   # STT_FUNC, STT_OBJECT, STT_NOTYPE


def _read_symbols(sec, strtab: bytes, symbols: dict) -> None:
    """Functions, objects and labels of one ELF32 symbol table into ``symbols``
    (name -> (address, size, kind)); the first of a name wins.  Read with
    struct rather than pyelftools' per-symbol parsing (about 10x faster: a
    MicroPython image has ~10 000 symbols, ~0.4 s of start-up)."""
    data = sec.data()
    for st_name, value, size, info, _other, shndx in struct.iter_unpack(
            "<IIIBBH", data[:len(data) - len(data) % 16]):
        kind = _SYM_KINDS.get(info & 0xF)
        if kind is None or not st_name:
            continue
        end = strtab.find(b"\0", st_name)
        name = strtab[st_name:end if end >= 0 else None].decode("utf-8", "replace")
        if not name or (kind == "label" and (name.startswith("$") or shndx == 0)):
            continue
        if kind == "func":
            value &= ~1
        symbols.setdefault(name, (value, size, kind))


_HEX_CHARS = frozenset(b":0123456789ABCDEFabcdef\r\n")


def _parse_hex(data: bytes):
    """(segments, start address or None) of a well-formed Intel HEX file, or
    None when it is anything else (intelhex then reads it, or names the
    fault).  Well-formed: only hex digits, ':' and line ends; every line
    empty or one record with its length and checksum right; record types
    00 (data), 01 (end of file: the rest is ignored, as intelhex does), 04
    (extended linear address), 03 and 05 (start segment or linear address,
    at most one; only 05's is the entry point, as before); no address
    written twice.  Segments are the runs of consecutive addresses, as
    intelhex's ``segments()``."""
    from binascii import Error as HexError, unhexlify
    if not _HEX_CHARS.issuperset(data):
        return None
    records = []                      # (address, bytes)
    upper = 0
    start, started = None, False
    for line in data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
        if not line:
            continue
        if line[:1] != b":":
            return None
        try:
            rec = unhexlify(line[1:])
        except HexError:
            return None
        n = len(rec)
        if n < 5 or rec[0] + 5 != n or sum(rec) & 0xFF:
            return None
        kind = rec[3]
        if kind == 0:
            records.append((upper + (rec[1] << 8 | rec[2]), rec[4:-1]))
        elif rec[1] or rec[2]:
            return None                   # the other records are at address 0
        elif kind == 1 and n == 5:
            break
        elif kind == 4 and n == 7:
            upper = (rec[4] << 8 | rec[5]) << 16
        elif kind in (3, 5) and n == 9 and not started:
            started = True                # 03 (CS:IP, objcopy's) is not an entry
            if kind == 5:
                start = int.from_bytes(rec[4:8], "big")
        else:
            return None
    records.sort(key=lambda r: r[0])
    segments = []
    seg_start, parts, end = None, [], None
    for addr, chunk in records:
        if not chunk:
            continue
        if end is not None and addr < end:
            return None                   # written twice: intelhex's AddressOverlapError
        if addr != end:
            if parts:
                segments.append((seg_start, b"".join(parts)))
            seg_start, parts = addr, []
        parts.append(chunk)
        end = addr + len(chunk)
    if parts:
        segments.append((seg_start, b"".join(parts)))
    return segments, start


def _load_hex(name: str, data: bytes) -> FirmwareImage:
    parsed = _parse_hex(data)
    if parsed is not None:
        segments, start = parsed
    else:
        segments, start = _load_hex_intelhex(name)
    if not segments:
        raise FirmwareError(f"{name}: Intel HEX file holds no data")
    return FirmwareImage(name, "hex", segments, SymbolTable(), start)


def _load_hex_intelhex(name: str):
    from intelhex import HexRecordError, IntelHex, IntelHexError
    ih = IntelHex()
    try:
        ih.loadhex(name)
    except (IntelHexError, HexRecordError, ValueError, UnicodeDecodeError) as e:
        raise FirmwareError(f"{name}: corrupt Intel HEX ({e})") from None
    segments = []
    for start, end in ih.segments():
        segments.append((start, bytes(ih.tobinarray(start=start, size=end - start))))
    return segments, (ih.start_addr.get("EIP") if ih.start_addr else None)


def _load_bin(name: str, data: bytes, base: Optional[int], layout: MemoryLayout) -> FirmwareImage:
    notes = []
    if base is None:
        if len(data) == layout.flash_size:
            base = layout.flash_base
            fmt = "flashdump"
            notes.append("full flash dump")
        else:
            fmt = "bin"
            base = layout.flash_base
            if len(data) >= 8:
                sp, reset = struct.unpack_from("<II", data)
                if APP_BASE_S132 <= (reset & ~1) < APP_BASE_S132 + len(data) and \
                        APP_BASE_S132 + len(data) <= layout.flash_base + layout.flash_size:
                    base = APP_BASE_S132
                    notes.append("vector table points into 0x26000: loaded as an application "
                                 "for the S132 SoftDevice")
    else:
        fmt = "flashdump" if (base == layout.flash_base and len(data) == layout.flash_size) else "bin"
    return FirmwareImage(name, fmt, [(base, data)], SymbolTable(), None, notes=notes)


def crc16_ccitt(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE, as in Nordic's legacy DFU init packet."""
    for b in data:
        crc = ((crc >> 8) | (crc << 8)) & 0xFFFF
        crc ^= b
        crc ^= (crc & 0xFF) >> 4
        crc ^= (crc << 12) & 0xFFFF
        crc ^= (crc & 0xFF) << 5
    return crc


def _load_dfu_zip(name: str, data: bytes, base: Optional[int],
                  layout: MemoryLayout) -> FirmwareImage:
    image, _dat, notes = read_dfu_package(name, data, layout.flash_size)
    if image[:4] == MCUBOOT_MAGIC.to_bytes(4, "little"):
        img = _load_mcuboot(name, image, base)
        img.format = "dfu"
        img.notes[:0] = notes
        return img
    if base is None:
        base = APP_BASE_S132
        notes.append("application placed at 0x26000 (after the S132 v6.1.1 SoftDevice)")
    return FirmwareImage(name, "dfu", [(base, image)], SymbolTable(), None, notes=notes)


def read_dfu_package(name: str, data: bytes, flash_size: int = 512 * 1024) -> tuple:
    """The application image and legacy init packet (``.dat``, b"" if none) of
    a Nordic DFU package, read as hostile, and notes; the init packet's CRC16
    is checked against the image.  FirmwareError (one line) otherwise."""
    from emu.safezip import MissingMember, ZipError, open_zip, read_member, shown
    if len(data) > MAX_DFU_PACKAGE:
        raise FirmwareError(f"{name}: {len(data)} bytes, too large for a DFU package of an "
                            f"application for a {flash_size // 1024} KiB flash (at most "
                            f"{MAX_DFU_PACKAGE // (1024 * 1024)} MiB)")
    try:
        z = open_zip(data)
        text = read_member(z, "manifest.json", MAX_MANIFEST)
    except MissingMember:
        raise FirmwareError(f"{name}: a zip without manifest.json: not a Nordic DFU "
                            "package") from None
    except ZipError as e:
        raise FirmwareError(f"{name}: corrupt DFU package ({e})") from None
    try:
        manifest = json.loads(text)["manifest"]
    except KeyError:
        raise FirmwareError(f"{name}: corrupt DFU package (manifest.json has no "
                            "\"manifest\" object)") from None
    except (ValueError, TypeError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else " ".join(str(e).split())
        raise FirmwareError(f"{name}: corrupt DFU package (manifest.json: {why})") from None
    if not isinstance(manifest, dict):
        raise FirmwareError(f"{name}: corrupt DFU package (manifest is not an object)")
    others = sorted(k for k in manifest if k in ("softdevice", "bootloader",
                                                  "softdevice_bootloader"))
    if others:
        raise FirmwareError(f"{name}: DFU package with {', '.join(others)}: only application "
                            "packages can run (the SoftDevice is emulated at its API)")
    app = manifest.get("application")
    if not isinstance(app, dict) or "bin_file" not in app:
        raise FirmwareError(f"{name}: DFU package has no application")
    for key in ("bin_file", "dat_file"):
        v = app.get(key)
        if (key == "bin_file" or v is not None) and (not isinstance(v, str) or not v):
            raise FirmwareError(f"{name}: corrupt DFU package (manifest's application "
                                f"{key} is {_short_repr(v)}, not a file name)")
    # nothing in the package can be larger than the flash it would go into
    # (checked before inflating, and inflating stops there)
    try:
        image = read_member(z, app["bin_file"], flash_size)
        dat = read_member(z, app["dat_file"], MAX_INIT_PACKET) if app.get("dat_file") else b""
    except ZipError as e:
        raise FirmwareError(f"{name}: corrupt DFU package ({e})") from None
    if not image:
        raise FirmwareError(f"{name}: DFU package's application {shown(app['bin_file'])} is "
                            "empty")
    notes = [f"Nordic DFU package: application {shown(app['bin_file'])} ({len(image)} bytes)"]
    if len(dat) >= 14:
        # legacy init packet: device type, revision, app version, SD list, CRC16
        n_sd = struct.unpack_from("<H", dat, 8)[0]
        if len(dat) >= 12 + 2 * n_sd:
            want = struct.unpack_from("<H", dat, 10 + 2 * n_sd)[0]
            got = crc16_ccitt(image)
            if got != want:
                raise FirmwareError(f"{name}: corrupt DFU package: {shown(app['bin_file'])} has "
                                    f"CRC16 {got:#06x}, its init packet says {want:#06x}")
            notes.append(f"init packet CRC16 {want:#06x} matches")
    return image, dat, notes


# ---------------------------------------------------------------------- MCUBoot
_MCUBOOT_HEADER = struct.Struct("<IIHHIIBBHII")   # struct image_header, 32 bytes
IMAGE_F_ENCRYPTED = 0x04 | 0x08                   # AES128 | AES256
IMAGE_F_NON_BOOTABLE = 0x10
IMAGE_F_RAM_LOAD = 0x20
IMAGE_TLV_INFO_MAGIC = 0x6907
IMAGE_TLV_PROT_INFO_MAGIC = 0x6908
IMAGE_TLV_SHA256 = 0x10


@dataclass
class McubootImage:
    """What an MCUBoot image header (bootutil/image.h) and its TLVs say."""
    slot: int                 # flash address of the header
    hdr_size: int             # ih_hdr_size: the vector table starts this far into the slot
    img_size: int             # ih_img_size: bytes of firmware after the header
    tlv_size: int             # protected + unprotected TLV areas after the image
    flags: int
    version: str              # "major.minor.revision+build"
    sha256: Optional[bool]    # the SHA-256 TLV matched (None: the image has none)

    @property
    def entry_table(self) -> int:
        return self.slot + self.hdr_size


def parse_mcuboot(name: str, data: bytes, slot: int = MCUBOOT_SLOT) -> McubootImage:
    """Check an MCUBoot image (header, sizes, TLVs, SHA-256) the way the
    bootloader would before booting it; FirmwareError says what is wrong."""
    what = f"{name}: MCUBoot image"
    if len(data) < _MCUBOOT_HEADER.size:
        raise FirmwareError(f"{what} truncated: {len(data)} bytes, the header alone is "
                            f"{_MCUBOOT_HEADER.size}")
    (magic, _load, hdr_size, prot_size, img_size, flags, major, minor, rev, build,
     _pad) = _MCUBOOT_HEADER.unpack_from(data)
    if magic != MCUBOOT_MAGIC:
        raise FirmwareError(f"{what} expected at {slot:#x}: magic {magic:#010x}, not "
                            f"{MCUBOOT_MAGIC:#010x}")
    version = f"{major}.{minor}.{rev}+{build}"
    if hdr_size < _MCUBOOT_HEADER.size or hdr_size & 3:
        raise FirmwareError(f"{what} has a corrupt header: header size (ih_hdr_size) "
                            f"{hdr_size}, expected a multiple of 4 from 32")
    if img_size < 8:
        raise FirmwareError(f"{what} has a corrupt header: image size (ih_img_size) "
                            f"{img_size}, too small for a vector table")
    if hdr_size + img_size > MCUBOOT_SLOT_SIZE:
        raise FirmwareError(f"{what} has a corrupt header: {hdr_size} + {img_size} bytes "
                            f"do not fit the {MCUBOOT_SLOT_SIZE}-byte slot")
    end = hdr_size + img_size
    if end > len(data):
        raise FirmwareError(f"{what} truncated: the header says {hdr_size} + {img_size} "
                            f"bytes, the file has {len(data)}")
    if len(data) > MCUBOOT_SLOT_SIZE:
        raise FirmwareError(f"{what} of {len(data)} bytes does not fit the "
                            f"{MCUBOOT_SLOT_SIZE}-byte slot at {slot:#x}")
    if flags & IMAGE_F_ENCRYPTED:
        raise FirmwareError(f"{what} is encrypted (flags {flags:#x}): the bootloader "
                            "decrypts it while swapping it in, which is not emulated")
    if flags & (IMAGE_F_NON_BOOTABLE | IMAGE_F_RAM_LOAD):
        raise FirmwareError(f"{what} is not bootable from flash (flags {flags:#x}: "
                            f"{'non-bootable' if flags & IMAGE_F_NON_BOOTABLE else 'RAM load'})")
    # TLV areas: an optional protected one (ih_protect_tlv_size bytes, covered by
    # the hash), then the unprotected one holding the SHA-256 of all before it.
    off = end
    if prot_size:
        if off + 4 > len(data) or struct.unpack_from("<HH", data, off) != (
                IMAGE_TLV_PROT_INFO_MAGIC, prot_size):
            raise FirmwareError(f"{what} is corrupt: no protected TLV area of {prot_size} "
                                f"bytes after the image (at file offset {off:#x})")
        off += prot_size
    if off + 4 > len(data):
        raise FirmwareError(f"{what} truncated: no TLV area after the {img_size}-byte image "
                            f"(file ends at {len(data)}, the TLVs start at {off})")
    info_magic, tlv_len = struct.unpack_from("<HH", data, off)
    if info_magic != IMAGE_TLV_INFO_MAGIC or tlv_len < 4:
        raise FirmwareError(f"{what} is corrupt: no TLV area after the {img_size}-byte "
                            f"image (found {info_magic:#06x} at file offset {off:#x}, "
                            f"expected {IMAGE_TLV_INFO_MAGIC:#06x})")
    if off + tlv_len > len(data):
        raise FirmwareError(f"{what} truncated: its TLV area needs {tlv_len} bytes from file "
                            f"offset {off}, the file has {len(data)}")
    sha256 = None
    p = off + 4
    while p + 4 <= off + tlv_len:
        kind, length = struct.unpack_from("<HH", data, p)
        value = data[p + 4:p + 4 + length]
        if kind == IMAGE_TLV_SHA256:
            want = hashlib.sha256(data[:end + prot_size]).digest()
            if value != want:
                raise FirmwareError(f"{what} is corrupt: SHA-256 of header and image is "
                                    f"{want.hex()[:16]}..., its TLV says {value.hex()[:16]}...")
            sha256 = True
        p += 4 + length
    return McubootImage(slot, hdr_size, img_size, off + tlv_len - end, flags, version, sha256)


def _load_mcuboot(name: str, data: bytes, base: Optional[int]) -> FirmwareImage:
    slot = MCUBOOT_SLOT if base is None else base
    mcu = parse_mcuboot(name, data, slot)
    img = FirmwareImage(name, "mcuboot", [(slot, data)], SymbolTable(), None, mcuboot=mcu)
    img.notes.append(f"MCUBoot image placed in its slot at {slot:#x}")
    return img


def _boot_mcuboot_in_place(img: FirmwareImage) -> None:
    """An image that already holds an MCUBoot header at the slot (Intel HEX)."""
    for a, d in img.segments:
        if a == MCUBOOT_SLOT:
            img.mcuboot = parse_mcuboot(img.path, d, MCUBOOT_SLOT)
            img.notes.append(f"MCUBoot image found at {MCUBOOT_SLOT:#x}")
            return


def _mcuboot_vector_table(img: FirmwareImage, layout: MemoryLayout) -> int:
    """Boot as the PineTime bootloader does: the vector table ih_hdr_size
    bytes into the slot at 0x8000 is copied (256 bytes) to 0x7F00 and VTOR
    points there.  In another slot (``base``) VTOR is the table itself."""
    mcu = img.mcuboot
    vt = mcu.entry_table
    if not _valid_vectors(img, vt, layout):
        sp, reset = img.word_at(vt), img.word_at(vt + 4)
        raise FirmwareError(f"{img.path}: MCUBoot image has no valid vector table after its "
                            f"{mcu.hdr_size}-byte header at {vt:#x}: initial SP {sp:#010x}, "
                            f"reset vector {reset:#010x}")
    reset = img.word_at(vt + 4) & ~1
    if not vt <= reset < vt + mcu.img_size:
        raise FirmwareError(f"{img.path}: MCUBoot image's reset vector {reset | 1:#010x} lies "
                            f"outside the image ({vt:#x}-{vt + mcu.img_size - 1:#x}): it was "
                            f"linked for another address, not for the slot at {mcu.slot:#x}")
    copy = MCUBOOT_VECTOR_COPY
    if mcu.slot == MCUBOOT_SLOT and all(a + len(d) <= copy or a >= copy + 256
                                        for a, d in img.segments):
        a, d = next((a, d) for a, d in img.segments if a <= vt < a + len(d))
        table = d[vt - a:vt - a + 256].ljust(256, b"\xff")
        img.segments.append((copy, table))
        img.notes.append(f"vector table at {vt:#x} copied to {copy:#x} and VTOR set there, as "
                         "the PineTime bootloader does before jumping to the image")
        return copy
    return vt


def _check_layout(img: FirmwareImage, layout: MemoryLayout) -> None:
    spans = []
    for addr, d in img.segments:
        if layout.region_of(addr, len(d)) is None:
            raise FirmwareError(f"{img.path}: data at {addr:#010x}-{addr + len(d) - 1:#010x} "
                                f"falls outside flash ({layout.flash_base:#x}-"
                                f"{layout.flash_base + layout.flash_size - 1:#x}) and RAM")
        spans.append((addr, addr + len(d)))
    spans.sort()
    for (a0, e0), (a1, e1) in zip(spans, spans[1:]):
        if a1 < e0:
            raise FirmwareError(f"{img.path}: image overlaps itself at {a1:#010x}")


def _valid_vectors(img: FirmwareImage, base: int, layout: MemoryLayout) -> bool:
    sp = img.word_at(base)
    reset = img.word_at(base + 4)
    if sp is None or reset is None:
        return False
    sp_ok = layout.ram_base < sp <= layout.ram_base + layout.ram_size and sp & 3 == 0
    pc_ok = (reset & 1) == 1 and layout.flash_base <= (reset & ~1) < layout.flash_base + layout.flash_size
    return sp_ok and pc_ok


SOFTDEVICE_INFO_MAGIC = 0x51B1E5DB
UICR_BOOTLOADERADDR = 0x10001014        # UICR.NRFFW[0]: where the MBR finds a bootloader


def softdevice_present(img: FirmwareImage) -> bool:
    """A Nordic SoftDevice in the image (its info structure magic at 0x3004)."""
    return img.word_at(0x3004) == SOFTDEVICE_INFO_MAGIC


def boots_own_softdevice(img: FirmwareImage) -> bool:
    """The image is a whole chip that boots from Nordic's MBR at 0 with its own
    SoftDevice (``make bootloader``'s hex: the MBR, S132, a bootloader and
    UICR): run that SoftDevice's code, as ``--softdevice-hex`` does.  (With an
    application at 0x26000 too, the emulated API runs that application.)"""
    return img.vector_table == 0 and softdevice_present(img) and \
        img.word_at(0) is not None and img.word_at(4) is not None


def with_softdevice(app: FirmwareImage, softdevice: FirmwareImage) -> FirmwareImage:
    """The application together with a real SoftDevice image (Nordic's
    ``s132_nrf52_*_softdevice.hex``: the MBR at 0 and the SoftDevice from
    0x1000), booted as a chip programmed with both boots: from the MBR's
    vector table at 0, which starts the SoftDevice, which starts the
    application at the address in its info structure (0x26000 for S132
    v6.1.1).  The SoftDevice's code runs; nothing of its API is emulated."""
    if not softdevice_present(softdevice):
        raise FirmwareError(f"{softdevice.path}: no SoftDevice in it (no info structure magic "
                            f"{SOFTDEVICE_INFO_MAGIC:#010x} at 0x3004)")
    if softdevice.word_at(0) is None or softdevice.word_at(4) is None:
        raise FirmwareError(f"{softdevice.path}: no MBR vector table at 0 (a SoftDevice hex "
                            "without the MBR cannot boot)")
    if softdevice_present(app):
        raise FirmwareError(f"{app.path}: it holds a SoftDevice already (its info structure at "
                            "0x3000): run it without --softdevice-hex, and its own runs")
    app_base = softdevice.word_at(0x3008)        # SD_INFO: the application's start address
    sd_end = max(a + len(d) for a, d in softdevice.segments)
    for a, d in app.segments:
        if a < sd_end and a + len(d) > min(sa for sa, _d in softdevice.segments):
            raise FirmwareError(f"{app.path}: data at {a:#010x}-{a + len(d) - 1:#010x} overlaps "
                                f"the SoftDevice (up to {sd_end - 1:#010x}): not an application "
                                "for it")
    if app.vector_table != app_base and (app.vector_table is None or app.vector_table !=
                                         app.word_at(UICR_BOOTLOADERADDR)):
        raise FirmwareError(f"{app.path}: vector table at {app.vector_table:#x}, but the "
                            f"SoftDevice starts the application at {app_base:#x}")
    notes = list(app.notes) + [f"real SoftDevice from {softdevice.path} (MBR at 0, SoftDevice "
                               f"at 0x1000-{sd_end - 1:#x}); booting from the MBR, the "
                               f"application at {app_base:#x} is started by the SoftDevice"]
    return FirmwareImage(app.path, app.format, list(softdevice.segments) + list(app.segments),
                         app.symbols, app.entry, vector_table=0, notes=notes)


BOOTLOADER_SIZE = MCUBOOT_SLOT - 0x1000   # 0x0000-0x6FFF: 0x7000 holds the vector copy


def with_bootloader(app: FirmwareImage, bootloader: FirmwareImage) -> FirmwareImage:
    """An MCUBoot image with the PineTime's bootloader (InfiniTime's
    ``bootloader/bootloader-5.0.4.bin``, MCUBoot on Mynewt) at 0: the chip
    boots the bootloader, which draws the logo from the NOR, checks the
    image in the primary slot (0x8000), swaps in an update from the NOR's
    secondary slot, copies the image's vector table to 0x7F00 itself,
    starts the watchdog and jumps.  The direct loader's copy at 0x7F00 is
    left out: the bootloader writes it through the NVMC."""
    if app.mcuboot is None or app.mcuboot.slot != MCUBOOT_SLOT:
        raise FirmwareError(f"{app.path}: not an MCUBoot image for the slot at "
                            f"{MCUBOOT_SLOT:#x}: the bootloader boots only that (a 512 KiB "
                            "flash dump holds the bootloader already)")
    if bootloader.word_at(0) is None or bootloader.word_at(4) is None:
        raise FirmwareError(f"{bootloader.path}: no vector table at 0: not a bootloader")
    end = max(a + len(d) for a, d in bootloader.segments)
    if min(a for a, _d in bootloader.segments) != 0 or end > BOOTLOADER_SIZE:
        raise FirmwareError(f"{bootloader.path}: a bootloader lies in 0x0-"
                            f"{BOOTLOADER_SIZE - 1:#x}; this one covers "
                            f"{min(a for a, _d in bootloader.segments):#x}-{end - 1:#x}")
    segments = [(a, d) for a, d in app.segments
                if not (a == MCUBOOT_VECTOR_COPY and len(d) == 256)]
    notes = [n for n in app.notes if "copied to" not in n]
    notes.append(f"bootloader from {bootloader.path} at 0 (0x0-{end - 1:#x}): the chip boots "
                 f"it, and it starts the image at {MCUBOOT_SLOT:#x}")
    return FirmwareImage(app.path, app.format, list(bootloader.segments) + segments,
                         app.symbols, app.entry, vector_table=0, notes=notes,
                         mcuboot=app.mcuboot)


def _find_vector_table(img: FirmwareImage, layout: MemoryLayout) -> int:
    if softdevice_present(img) and _valid_vectors(img, APP_BASE_S132, layout):
        img.notes.append("Nordic SoftDevice found in the image: running the application at "
                         "0x26000 with the emulated SoftDevice API (the SoftDevice binary is "
                         "not executed)")
        return APP_BASE_S132
    if _valid_vectors(img, layout.flash_base, layout):
        return layout.flash_base
    if _valid_vectors(img, APP_BASE_S132, layout):
        return APP_BASE_S132
    boot = img.word_at(UICR_BOOTLOADERADDR)
    if boot not in (None, 0xFFFFFFFF) and _valid_vectors(img, boot, layout):
        img.notes.append(f"a bootloader at {boot:#x} (UICR.NRFFW[0]): Nordic's MBR starts it "
                         "(give the SoftDevice with --softdevice-hex)")
        return boot
    where = layout.flash_base
    for a, d in img.segments:
        if a in (layout.flash_base, APP_BASE_S132):
            where = a
            break
    sp, reset = img.word_at(where), img.word_at(where + 4)
    short = [len(d) for a, d in img.segments if a == where and len(d) < 8]
    if short:
        raise FirmwareError(f"{img.path}: too short for a vector table ({short[0]} bytes at "
                            f"{where:#x}; the initial SP and reset vector need 8)")
    if sp is None or reset is None:
        raise FirmwareError(f"{img.path}: no vector table: nothing is loaded at "
                            f"{layout.flash_base:#x} or {APP_BASE_S132:#x}")
    if sp in (0xFFFFFFFF, 0) and reset in (0xFFFFFFFF, 0):
        raise FirmwareError(f"{img.path}: empty vector table at {where:#x} (initial SP and "
                            "reset vector are erased)")
    raise FirmwareError(f"{img.path}: invalid vector table at {where:#x}: initial SP "
                        f"{sp:#010x}, reset vector {reset:#010x} (expected a RAM address and "
                        "an odd flash address)")
