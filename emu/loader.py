"""Firmware loaders: ELF, Intel HEX, raw binary and full flash dumps.

``load_firmware(path)`` returns a :class:`FirmwareImage` (segments to program,
symbols, where the vector table is) or raises :class:`FirmwareError` with a
one-line message that names the file and the problem.  The CLI turns that
into exit status 2.

* ELF (pyelftools): PT_LOAD segments with file data are loaded at their
  physical (load) address, so initialised data lands in flash where the
  startup code copies it from.  The symbol table is kept for messages and the
  debugger.
* Intel HEX (intelhex): every data record at its address.
* Raw binary: at ``base``; by default 0x26000 when the image's own vector
  table points there (a wasp-os/SoftDevice application), else 0.  A file of
  exactly the flash size is a full flash dump at 0.
* Nordic DFU package (the ``.zip`` that nrfutil/adafruit-nrfutil ``genpkg``
  makes, e.g. wasp-os's ``micropython.zip``): ``manifest.json`` names the
  application's ``.bin`` and ``.dat``; the legacy init packet's CRC16
  (CRC-16/CCITT-FALSE over the image) is checked, and the application is
  placed at 0x26000 (right after the S132 v6.1.1 SoftDevice; ``base``
  overrides).  Packages holding a SoftDevice or bootloader are refused: the
  SoftDevice is emulated at its API and the bootloader is not run.

The format comes from the file's first bytes.  A file named ``.elf``,
``.zip`` or ``.hex`` without that format's header, a text file, a file that
is not a regular file (a directory, a device, a FIFO) or one over 256 MiB is
refused before anything is loaded.
"""
from __future__ import annotations

import bisect
import io
import json
import os
import struct
import zipfile
from dataclasses import dataclass, field
from typing import Optional

APP_BASE_S132 = 0x26000
MAX_FILE_SIZE = 256 * 1024 * 1024       # a firmware ELF with debug information fits


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
        img = _load_dfu_zip(name, data, base)
    elif data[:1] == b":" and _looks_like_hex(data):
        img = _load_hex(name)
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
    _check_layout(img, layout)
    img.vector_table = _find_vector_table(img, layout)
    return img


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
                for sym in sec.iter_symbols():
                    t = sym["st_info"]["type"]
                    if not sym.name or t not in ("STT_FUNC", "STT_OBJECT", "STT_NOTYPE"):
                        continue
                    if t == "STT_NOTYPE" and (sym.name.startswith("$") or sym["st_shndx"] == "SHN_UNDEF"):
                        continue
                    kind = {"STT_FUNC": "func", "STT_OBJECT": "object"}.get(t, "label")
                    addr = sym["st_value"]
                    if kind == "func":
                        addr &= ~1
                    symbols.setdefault(sym.name, (addr, sym["st_size"], kind))
        entry = elf["e_entry"]
    except FirmwareError:
        raise
    except (ELFError, struct.error, ValueError, KeyError, IndexError, OSError) as e:
        raise FirmwareError(f"{name}: corrupt or truncated ELF ({e})") from None
    if not segments:
        raise FirmwareError(f"{name}: ELF has no loadable segments")
    return FirmwareImage(name, "elf", segments, SymbolTable(symbols), entry)


def _load_hex(name: str) -> FirmwareImage:
    from intelhex import HexRecordError, IntelHex, IntelHexError
    ih = IntelHex()
    try:
        ih.loadhex(name)
    except (IntelHexError, HexRecordError, ValueError, UnicodeDecodeError) as e:
        raise FirmwareError(f"{name}: corrupt Intel HEX ({e})") from None
    segments = []
    for start, end in ih.segments():
        segments.append((start, bytes(ih.tobinarray(start=start, size=end - start))))
    if not segments:
        raise FirmwareError(f"{name}: Intel HEX file holds no data")
    return FirmwareImage(name, "hex", segments, SymbolTable(),
                         ih.start_addr.get("EIP") if ih.start_addr else None)


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
                if APP_BASE_S132 <= (reset & ~1) < APP_BASE_S132 + len(data):
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


def _load_dfu_zip(name: str, data: bytes, base: Optional[int]) -> FirmwareImage:
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
        manifest = json.loads(z.read("manifest.json"))["manifest"]
    except KeyError:
        raise FirmwareError(f"{name}: a zip without manifest.json: not a Nordic DFU "
                            "package") from None
    except (zipfile.BadZipFile, ValueError, TypeError) as e:
        raise FirmwareError(f"{name}: corrupt DFU package ({e})") from None
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
    try:
        image = z.read(app["bin_file"])
        dat = z.read(app["dat_file"]) if app.get("dat_file") else b""
    except (KeyError, zipfile.BadZipFile, OSError) as e:
        raise FirmwareError(f"{name}: corrupt DFU package ({e})") from None
    notes = [f"Nordic DFU package: application {app['bin_file']} ({len(image)} bytes)"]
    if len(dat) >= 14:
        # legacy init packet: device type, revision, app version, SD list, CRC16
        n_sd = struct.unpack_from("<H", dat, 8)[0]
        if len(dat) >= 12 + 2 * n_sd:
            want = struct.unpack_from("<H", dat, 10 + 2 * n_sd)[0]
            got = crc16_ccitt(image)
            if got != want:
                raise FirmwareError(f"{name}: corrupt DFU package: {app['bin_file']} has CRC16 "
                                    f"{got:#06x}, its init packet says {want:#06x}")
            notes.append(f"init packet CRC16 {want:#06x} matches")
    if base is None:
        base = APP_BASE_S132
        notes.append("application placed at 0x26000 (after the S132 v6.1.1 SoftDevice)")
    return FirmwareImage(name, "dfu", [(base, image)], SymbolTable(), None, notes=notes)


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


def softdevice_present(img: FirmwareImage) -> bool:
    """A Nordic SoftDevice in the image (its info structure magic at 0x3004)."""
    return img.word_at(0x3004) == SOFTDEVICE_INFO_MAGIC


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
