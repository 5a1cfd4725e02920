"""Structure layouts from an ELF's DWARF (pyelftools): member offsets and
sizes of a named struct, cached per file.  Returns None when the ELF has no
DWARF or no such struct, never raises for a damaged file."""
from __future__ import annotations

import logging
import os
from typing import Optional

log = logging.getLogger("emu.inspect")

_CACHE: dict = {}


def struct_layout(path: Optional[str], name: str, cu_hint: str = "") -> Optional[dict]:
    """{member: (offset, size)} plus '__size__' for ``struct name`` (or a
    typedef of that name), looked for first in the compilation units whose
    name ends with ``cu_hint``; None if not found."""
    if not path or not os.path.isfile(path):
        return None
    key = (path, os.path.getmtime(path), name)
    if key in _CACHE:
        return _CACHE[key]
    try:
        found = _find(path, name, cu_hint)
    except Exception as e:              # a damaged or unusual DWARF: no layout
        log.info("%s: DWARF not readable for %s (%s)", path, name, e)
        found = None
    _CACHE[key] = found
    return found


def _find(path: str, name: str, cu_hint: str) -> Optional[dict]:
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        elf = ELFFile(f)
        if not elf.has_dwarf_info():
            return None
        dwarf = elf.get_dwarf_info()
        cus = list(dwarf.iter_CUs())

        def cu_name(cu) -> str:
            a = cu.get_top_DIE().attributes.get("DW_AT_name")
            return a.value.decode("utf-8", "replace") if a is not None else ""
        if cu_hint:
            cus.sort(key=lambda cu: not cu_name(cu).endswith(cu_hint))
        want = name.encode()
        for cu in cus:
            for die in cu.iter_DIEs():
                if die.tag not in ("DW_TAG_structure_type", "DW_TAG_typedef"):
                    continue
                a = die.attributes.get("DW_AT_name")
                if a is None or a.value != want:
                    continue
                s = die
                while s is not None and s.tag == "DW_TAG_typedef":
                    s = s.get_DIE_from_attribute("DW_AT_type") \
                        if "DW_AT_type" in s.attributes else None
                if s is None or s.tag != "DW_TAG_structure_type" \
                        or "DW_AT_byte_size" not in s.attributes:
                    continue                 # a declaration only
                out = {"__size__": (0, s.attributes["DW_AT_byte_size"].value)}
                for m in s.iter_children():
                    if m.tag != "DW_TAG_member" or "DW_AT_name" not in m.attributes:
                        continue
                    loc = m.attributes.get("DW_AT_data_member_location")
                    if loc is None:
                        continue
                    off = loc.value if isinstance(loc.value, int) else _expr_offset(loc.value)
                    out[m.attributes["DW_AT_name"].value.decode()] = (off, _size(m))
                return out
    return None


def _expr_offset(expr) -> int:
    # DW_OP_plus_uconst N (old GCC): [0x23, uleb128 N]
    if expr and expr[0] == 0x23:
        v, shift = 0, 0
        for b in expr[1:]:
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        return v
    raise ValueError(f"member location {expr!r}")


def _size(member) -> int:
    """Byte size of a member's type (through typedefs, qualifiers, arrays)."""
    if "DW_AT_type" not in member.attributes:
        return 0
    return _type_size(member.get_DIE_from_attribute("DW_AT_type"), 0)


def _type_size(t, depth: int) -> int:
    if depth > 16:
        return 0
    if t.tag == "DW_TAG_array_type":
        n = 1
        for sub in t.iter_children():
            if sub.tag == "DW_TAG_subrange_type":
                if "DW_AT_count" in sub.attributes:
                    n *= sub.attributes["DW_AT_count"].value
                elif "DW_AT_upper_bound" in sub.attributes:
                    n *= sub.attributes["DW_AT_upper_bound"].value + 1
        elem = t.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in t.attributes else None
        return n * (_type_size(elem, depth + 1) if elem is not None else 0)
    if "DW_AT_byte_size" in t.attributes:
        return t.attributes["DW_AT_byte_size"].value
    if "DW_AT_type" not in t.attributes:
        return 0
    return _type_size(t.get_DIE_from_attribute("DW_AT_type"), depth + 1)
