"""Every register our peripheral models declare must exist in Nordic's
nrf52.svd (shipped with pyocd) at the same offset, under the same name (up
to the ``PSEL.SCK`` -> ``PSEL_SCK`` spelling), with the SVD's reset value.

Run with ``-s`` to see the coverage per peripheral (declared / in SVD).
"""
from __future__ import annotations

import re

import pytest

from emu.peripherals.base import NrfPeripheral, WO
from helpers.svd import declared, norm, svd_peripherals

# Registers in the nRF52832 Product Specification v1.4 that this SVD lacks
# or names differently (deprecated alias at the same offset: helpers/svd.py).
PS_ONLY = {
    "TEMP": {f"A{i}" for i in range(6)} | {f"B{i}" for i in range(6)} | {f"T{i}" for i in range(5)},
    "NVMC": {"READYNEXT"},
}


_SOC = None
_SVD = None


def _soc():
    global _SOC
    if _SOC is None:
        from emu.soc.nrf52832 import Nrf52832
        _SOC = Nrf52832()
    return _SOC


def _svd():
    global _SVD
    if _SVD is None:
        _SVD = svd_peripherals()
    return _SVD


def check_peripheral(pname: str, p) -> tuple:
    """(coverage line, [problems]) for one mapped peripheral."""
    cands = _svd().get(p.base)
    if not cands:
        line = f"  {pname:12s} (no SVD peripheral at {p.base:#x})"
        if type(p).__name__ != "StoragePeripheral":
            return line, [f"{pname}: no SVD peripheral at {p.base:#x}"]
        return line, []
    # shared slots (CLOCK+POWER, SPIM0/TWIM0/...): a register may match any
    # SVD peripheral at this base address
    ours = declared(p)
    snames = "/".join(n for n, _ in cands)
    union = set()
    for _, regs in cands:
        union |= set(regs)
    bad = []
    for off, (n, reset) in sorted(ours.items()):
        found = [regs[off] for _, regs in cands if off in regs]
        if not found:
            if not any(n in PS_ONLY.get(re.sub(r"\d+$", "", sn), ()) for sn, _ in cands):
                bad.append(f"+{off:#05x} {n} not in SVD {snames}")
            continue
        match = [f for f in found if norm(f[0]) == norm(n)]
        if not match:
            bad.append(f"+{off:#05x} ours {n} vs SVD {found[0][0]}")
            continue
        sreset = match[0][1]
        if reset is not None and reset != sreset and not n.startswith(("TASKS_", "EVENTS_")):
            bad.append(f"+{off:#05x} {n} reset {reset:#x} vs SVD {sreset:#x}")
    line = (f"  {pname:12s} {snames:22s} {len(ours):4d} / {len(union):4d} registers modelled"
            + (f"  {len(bad)} MISMATCH" if bad else ""))
    return line, [f"{pname}: {b}" for b in bad]


def _models() -> dict:
    """name -> model for every declared-register model, the variants of the
    shared-ID slots (serial0.spim, ccm_aar.aar, ...) included."""
    out = {}
    for name, p in sorted(_soc().peripherals.items(), key=lambda kv: kv[1].base):
        if isinstance(p, NrfPeripheral):
            out[name] = p
        for _val, v in sorted(getattr(p, "variants", {}).items()):
            if isinstance(v, NrfPeripheral):
                out[f"{name}.{v.NAME.lower()}"] = v
    return out


def _mapped():
    return list(_models())


# Known differences, kept visible (strict: the test fails once the model is fixed).
KNOWN_MISMATCHES: dict = {}   # name -> why (a strict xfail: fails once it is fixed)


def test_coverage_report():
    """Prints declared / SVD register counts per peripheral (run with -s)."""
    print()
    n = 0
    for name, p in _models().items():
        line, _ = check_peripheral(name, p)
        print(line)
        n += 1
    assert n >= 30          # every slot of the chip is mapped and checked


@pytest.mark.parametrize("pname", [
    pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_MISMATCHES[n], strict=True))
    if n in KNOWN_MISMATCHES else n for n in _mapped()])
def test_peripheral_matches_svd(pname):
    _, problems = check_peripheral(pname, _models()[pname])
    assert not problems, "\n".join(problems)
