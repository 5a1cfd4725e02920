"""Every twin of the registry (emu/twins.py), compared on our firmware.

Generated from the registry: for each pair (case, how the C side is turned
off) that some twin lists, the case runs with everything native and again
with that C side off, and the two machines must be the same: cycles, clock,
console, core registers, RAM, the register accesses (in all and per
register), the pending clock events, and on the PineTime its screen, NOR
and air (conftest.parity_state).  A twin is named in its test's id; the
coverage test (test_coverage.py) shows the cases reach its C side."""
from __future__ import annotations

import importlib

import pytest

from conftest import assert_same_state, parity_state
from emu import Machine, twins

import drivers  # noqa: F401  (tests/twins/ is on sys.path)


def _pairs() -> list:
    out: dict = {}
    for t in twins.TWINS:
        for case in t.cases:
            out.setdefault((case, t.off), []).append(t.name)
    return [pytest.param(case, off, names,
                         id=f"{case.firmware}{'+power' if case.power else ''}-{_off_id(off)}")
            for (case, off), names in out.items()]


def _off_id(off) -> str:
    return "pure" if off[0] == "pure" else off[1].rpartition(":")[2]


_native: dict = {}


def _cores(m, cls: str):
    return [p._core for p in m.soc.peripherals.values()
            if type(p).__name__ == cls and getattr(p, "_core", None) is not None]


#: what shows that a C side ran: a count the run leaves (0 when it is off)
EVIDENCE = {
    "pure": lambda m: int(type(m.clock).__module__ == "emu._clock"),
    "native_loop": lambda m: m.cpu._exc_hook.slices if m.cpu._exc_hook else 0,
    "native_returns": lambda m: m.cpu._exc_hook.returns if m.cpu._exc_hook else 0,
    "native_entries": lambda m: m.cpu._exc_hook.entries if m.cpu._exc_hook else 0,
    "native_wfe": lambda m: m.cpu._exc_hook.wfes if m.cpu._exc_hook else 0,
    "loop_skip": lambda m: getattr(m.cpu.cs, "skips", 0),
    "delay_skip": lambda m: m.cpu.delays_skipped[0],
    "fast_ram": lambda m: int(getattr(m.cpu, "pagemap", None) is not None),
    "native_cost": lambda m: m.cpu.cost_model.native_costed,
    "Rtc.native_core": lambda m: sum(c.fired + c.handed for c in _cores(m, "Rtc")),
    "Timer.native_core": lambda m: sum(c.fired + c.handed for c in _cores(m, "Timer")),
    "Wdt.native_core": lambda m: len(_cores(m, "Wdt")),
}


def _switch(off) -> str:
    if off[0] == "pure":
        return "pure"
    cls_attr = off[1].partition(":")[2]
    return cls_attr if cls_attr.split(".")[0] in ("Rtc", "Timer", "Wdt") else \
        cls_attr.rpartition(".")[2]


def run_case(fw, case, off=None, monkeypatch=None) -> dict:
    path = fw(case.firmware)
    kw = {"board": case.board}
    if case.board == "pinetime":
        kw["flash_file"] = None
    if off is not None and off[0] == "pure":
        kw["pure_python"] = True
    elif off is not None:
        mod, _, attr = off[1].partition(":")
        cls, _, name = attr.rpartition(".")
        monkeypatch.setattr(getattr(importlib.import_module(mod), cls), name, off[2])
    m = Machine(path, **kw)
    case.start(m)
    r = m.run(ms=case.ms)
    st = parity_state(m, board=case.board == "pinetime")
    st["reason"] = (r.reason, r.exit_code)
    evidence = {k: fn(m) for k, fn in EVIDENCE.items()}
    m.close()
    return st, evidence


@pytest.mark.parametrize("case,off,names", _pairs())
def test_twins_agree(fw, monkeypatch, case, off, names):
    """(the twins of this pair: ``names``)"""
    if case not in _native:
        _native[case] = run_case(fw, case)
    (on, _on_ev), (off_st, off_ev) = _native[case], run_case(fw, case, off, monkeypatch)
    sw = _switch(off)
    assert off_ev[sw] == 0, f"{sw} off, yet its C side ran"
    assert on["cycles"] > 0
    assert_same_state(on, off_st,
                      f"{case.firmware} native and with {_off_id(off)} off ({', '.join(names)})")


@pytest.mark.parametrize("twin", [t for t in twins.TWINS], ids=lambda t: t.name)
def test_each_twin_runs_in_one_of_its_cases(fw, twin):
    """The C side of each twin ran, natively, in at least one of its cases
    (the count its switch stands for: a fault's path may not count)."""
    sw = _switch(twin.off)
    for case in twin.cases:
        if case not in _native:
            _native[case] = run_case(fw, case)
        if _native[case][1][sw] > 0:
            return
    pytest.fail(f"no case of {twin.name} ran the C side {sw} stands for")


def _drivers() -> list:
    out: dict = {}
    for t in twins.TWINS:
        for d in t.drivers:
            out.setdefault(d, []).append(t.name)
    return [pytest.param(d, names, id=d.rpartition("::")[2]) for d, names in out.items()]


@pytest.mark.parametrize("driver,names", _drivers())
def test_drivers_agree(driver, names):
    """A twin's differential driver (tests/twins/drivers.py): both sides on
    the same input agree."""
    getattr(drivers, driver.rpartition("::")[2])()
