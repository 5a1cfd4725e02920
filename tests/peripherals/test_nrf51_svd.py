"""Every register the nRF51822 models declare must exist in Nordic's
nrf51.svd (shipped with pyocd) at the same offset, under the same name (up
to the ``CH[n].EEP`` -> ``CH_EEP`` spelling), with the SVD's reset value.

The nRF51 reuses the nRF52 models with the nRF51 register tables
(emu/peripherals/nrf51.py); this test is what keeps those tables honest.
Run with ``-s`` to see the coverage per peripheral.
"""
from __future__ import annotations

import pytest

from emu.peripherals.base import NrfPeripheral
from helpers.svd import declared, norm, svd_peripherals

_SOC = None
_SVD = None


def _soc():
    global _SOC
    if _SOC is None:
        from emu.soc.nrf51822 import Nrf51822
        _SOC = Nrf51822()
    return _SOC


def _svd():
    global _SVD
    if _SVD is None:
        _SVD = svd_peripherals("nrf51.svd")
    return _SVD


def _models():
    """(name, model) for every declared-register model, shared-slot variants included."""
    out = []
    for name, p in sorted(_soc().peripherals.items(), key=lambda kv: kv[1].base):
        if isinstance(p, NrfPeripheral):
            out.append((name, p))
        for val, v in sorted(getattr(p, "variants", {}).items()):
            if isinstance(v, NrfPeripheral):
                out.append((f"{name}.{v.NAME.lower()}", v))
    return out


def check(pname: str, p) -> tuple:
    cands = _svd().get(p.base)
    if not cands:
        line = f"  {pname:16s} (no SVD peripheral)"
        if type(p).__name__ == "StoragePeripheral":      # SWI1-5: interrupt-only slots
            return line, []
        return line, [f"{pname}: no SVD peripheral at {p.base:#x}"]
    ours = declared(p)
    bad = []
    for off, (n, reset) in sorted(ours.items()):
        found = [regs[off] for _, regs in cands if off in regs]
        if not found:
            bad.append(f"+{off:#05x} {n} not in SVD {'/'.join(c for c, _ in cands)}")
            continue
        match = [f for f in found if norm(f[0]) == norm(n)]
        if not match:
            bad.append(f"+{off:#05x} ours {n} vs SVD {found[0][0]}")
            continue
        if reset is not None and reset != match[0][1] and not n.startswith(("TASKS_", "EVENTS_")):
            bad.append(f"+{off:#05x} {n} reset {reset:#x} vs SVD {match[0][1]:#x}")
    union = set()
    for _, regs in cands:
        union |= set(regs)
    line = f"  {pname:16s} {len(ours):4d} / {len(union):4d} registers" + (
        f"  {len(bad)} MISMATCH" if bad else "")
    return line, [f"{pname}: {b}" for b in bad]


def test_coverage_report():
    print()
    for name, p in _models():
        print(check(name, p)[0])
    assert len(_models()) >= 20


@pytest.mark.parametrize("pname", [n for n, _ in _models()])
def test_nrf51_peripheral_matches_svd(pname):
    p = dict(_models())[pname]
    _, problems = check(pname, p)
    assert not problems, "\n".join(problems)
