"""Nordic's SVD files (shipped with pyocd) read as the peripherals' register
maps, and the registers our models declare, for the conformance tests of
both chips (tests/peripherals/test_svd_conformance.py, test_nrf51_svd.py)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from emu.peripherals.base import NrfPeripheral


def _svd_root(svd_file: str):
    import pyocd
    z = Path(pyocd.__file__).parent / "debug" / "svd" / "svd_data.zip"
    with zipfile.ZipFile(z) as zf:
        return ET.fromstring(zf.read(svd_file))


def _int(s, default=0):
    if s is None:
        return default
    s = s.strip().lower()
    return int(s, 0) if not s.startswith("#") else int(s[1:], 2)


def _expand(elem, prefix, base_off, reset_default, out):
    """Flatten <register>/<cluster> into out[offset] = (name, reset)."""
    for child in elem:
        tag = child.tag
        if tag not in ("register", "cluster"):
            continue
        name = child.findtext("name")
        off = base_off + _int(child.findtext("addressOffset"))
        dim = _int(child.findtext("dim"), 1)
        inc = _int(child.findtext("dimIncrement"), 0)
        reset = _int(child.findtext("resetValue"), reset_default)
        for i in range(dim):
            n = name.replace("[%s]", f"[{i}]") if "%s" in name else name
            o = off + i * inc
            if tag == "register":
                out[o] = (prefix + n, reset)
            else:
                _expand(child, prefix + n + ".", o, reset, out)


def svd_peripherals(svd_file: str = "nrf52.svd") -> dict:
    """base address -> [(SVD peripheral name, {offset: (register, reset)})]
    of ``svd_file`` (a peripheral derived from another one has the other's
    registers)."""
    root = _svd_root(svd_file)
    dev_reset = _int(root.findtext("resetValue"), 0)
    periphs = {p.findtext("name"): p for p in root.iter("peripheral")}
    result = {}
    for name, p in periphs.items():
        base = _int(p.findtext("baseAddress"))
        src = p
        if p.find("registers") is None and p.get("derivedFrom"):
            src = periphs[p.get("derivedFrom")]
        regs: dict = {}
        regs_elem = src.find("registers")
        if regs_elem is not None:
            _expand(regs_elem, "", 0, _int(src.findtext("resetValue"), dev_reset), regs)
        result.setdefault(base, []).append((name, regs))
    return result


# a deprecated alias at the same offset
ALIASES = {"ERASEPAGE": "ERASEPCR1"}


def norm(name: str) -> str:
    n = re.sub(r"\[\d+\]|\[%s\]", "", name).replace(".", "_").upper()
    return ALIASES.get(n, n)


def declared(p: NrfPeripheral) -> dict:
    """offset -> (our name, reset or None if not checked)"""
    out = {}
    for off, t in p.TASKS.items():
        out[off] = ("TASKS_" + t, 0)
    for off, e in p.EVENTS.items():
        out[off] = ("EVENTS_" + e, 0)
    if p.SHORTS:
        out[0x200] = ("SHORTS", 0)
    if p.irq is not None and p.EVENTS:
        if p.HAS_INTEN:
            out[0x300] = ("INTEN", 0)
        out[0x304] = ("INTENSET", 0)
        out[0x308] = ("INTENCLR", 0)
    for off, r in p._regs.items():
        out[off] = (r.name, r.reset)
    return out
