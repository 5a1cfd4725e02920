"""The energy model (emu/power.py): its integral against the figures times
the times, on our own firmware (firmware/tests/power_states.c) that holds
the backlight, the RADIO, the CPU asleep and the CPU busy in known states
for known emulated times; a broken state hook gives a different integral;
the --power outputs of ``run``."""
from __future__ import annotations

import json

import pytest

from emu import Machine
from emu.clock import LFCLK_TICKS, TICKS_PER_SECOND, TICKS_PER_US
from emu.currents import BASES, CURRENT, FIGURES, TXPOWER_DBM
from helpers.paths import DOCS

BL_TICKS, TX_TICKS = 100, 66          # as firmware/tests/power_states.c
T_TXRU, T_TXDISABLE = 140 * TICKS_PER_US, 6 * TICKS_PER_US   # PS v1.4 RADIO timing


def _marked(m, text: str) -> None:
    assert m.run_until(lambda: text in m.console_text(), timeout_ms=2000), m.console_text()


def _measure(fw, break_hook=None):
    """(meter, charges at 'MARK start', at 'MARK end', ticks, cycles between)"""
    m = Machine(fw("power_states"), board="pinetime", flash_file=None)
    meter = m.power(interval=0)               # a row at every change (_turned_on)
    if break_hook is not None:
        break_hook(m, meter)
    _marked(m, "MARK start")
    c0, t0, n0 = meter.charge_nA_ticks(), m.clock.now, m.cpu.cycles
    _marked(m, "MARK end")
    c1, t1, n1 = meter.charge_nA_ticks(), m.clock.now, m.cpu.cycles
    r = m.run(ms=10)
    passes = [l for l in m.console_text().splitlines() if l.startswith(("PASS", "FAIL"))]
    assert r.reason == "exit" and r.exit_code == 0 and passes and all(
        l.startswith("PASS") for l in passes), m.console_text()
    return m, meter, {k: c1[k] - c0[k] for k in c1}, (t0, t1), n1 - n0


def _turned_on(meter, name: str) -> int:
    """The tick part ``name`` first drew current (from the meter's record)."""
    idx = next(p.index for p in meter.parts if p.name == name)
    return next(s for s, _e, charges in meter.rows() if charges[idx])


def _expected(ticks: int, cycles: int) -> dict:
    radio_on = TX_TICKS * LFCLK_TICKS
    return {
        "backlight": CURRENT["backlight.3"] * BL_TICKS * LFCLK_TICKS,
        "radio": (CURRENT["radio.rampup.tx.dcdc"] * (T_TXRU + T_TXDISABLE)
                  + CURRENT["radio.tx.0dbm.dcdc"] * (radio_on - T_TXRU)),
        "cpu": CURRENT["cpu.flash.cache.dcdc"] * cycles * 8,     # awake = executing
        "chip": CURRENT["sleep.on"] * ticks,
        "lfclk": CURRENT["lfclk.lfxo"] * ticks,
        "hfclk": 0,
    }


def test_integral_is_the_figures_times_the_times(fw):
    m, meter, got, (t0, t1), cycles = _measure(fw)
    ticks = t1 - t0
    want = _expected(ticks, cycles)
    # RTC1 starts a few instructions after MARK start, and runs to the end
    want["rtc1"] = CURRENT["rtc"] * (t1 - _turned_on(meter, "rtc1"))
    for name, value in want.items():
        assert got[name] == value, (name, got[name], value)
    # the CPU slept most of the window
    assert 0 < cycles * 8 < ticks // 2
    # the parts that did not change in the window: their current times the window
    for p in meter.parts:
        if p.name not in want:
            assert got[p.name] == p.nA * ticks, p.name
    # the total is the sum of the parts, and the report agrees with it
    r = meter.report()
    assert abs(r.charge_uC - float(meter.charge_uC())) < 1e-6
    assert abs(sum(p.share for p in r.parts) - 1) < 1e-9


@pytest.mark.parametrize("broken", ["radio", "cpu", "backlight"])
def test_a_broken_state_hook_changes_the_integral(fw, broken):
    def break_hook(m, meter):
        if broken == "radio":
            m.soc.peripherals["radio"].power_watch = None
        elif broken == "cpu":
            m.cpu.on_sleep.clear()
        else:
            m.board.backlight.listeners.clear()
    _m, _meter, got, (t0, t1), cycles = _measure(fw, break_hook)
    assert got[broken] != _expected(t1 - t0, cycles)[broken]


def test_every_figure_has_a_source_and_a_basis():
    for f in FIGURES:
        assert f.nA >= 0 and f.source and f.what
        assert f.basis in BASES, f.key
        assert f.kind in ("typ", "max")
        if f.basis in ("estimate", "derived", "unchecked", "datasheet"):
            assert f.note, f"{f.key}: a figure not checked in its table says why"
        if f.basis == "checked":
            # the table's symbol and the public copy it was read in
            assert "I_" in f.source or "Working current" in f.source, f.key
            assert "https://" in f.source, f.key


def test_every_radio_state_has_a_figure():
    """The meter reads a missing key as 0 nA: every RADIO state x TXPOWER x MODE x
    regulator the model can name must be in the table."""
    from emu.power import _radio_state

    class R:
        def __init__(self, state, txpower, mode):
            self.state, self.values = state, {0x50C: txpower, 0x510: mode}

    seen = set()
    for state in range(16):
        for txpower in (*TXPOWER_DBM, 0x7F):
            for mode in (3, 4):
                for reg in ("dcdc", "ldo"):
                    key = _radio_state(R(state, txpower, mode), reg)
                    if key is not None:
                        assert key in CURRENT, (state, hex(txpower), mode, key)
                        seen.add(key)
    assert {"radio.rampup.tx.dcdc", "radio.rampup.rx.ldo", "radio.rx.2m.dcdc",
            "radio.tx.-40dbm.ldo", "radio.tx.+3dbm.dcdc"} <= seen


def _shown(nA: int) -> str:
    """A current as docs/energy.md's table writes it."""
    for unit, scale in (("mA", 1_000_000), ("uA", 1_000)):
        if nA >= scale:
            return f"{nA / scale:g} {unit}"
    return f"{nA} nA"


def test_the_docs_table_is_the_declaration():
    """docs/energy.md's table of figures says what emu/currents.py says: each key's
    current and basis (so the doc says which figures are checked)."""
    doc = (DOCS / "energy.md").read_text()
    rows = {}
    for line in doc.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells
    for f in FIGURES:
        assert f.key in rows, f"{f.key} is not in docs/energy.md"
        cells = rows[f.key]
        assert cells[1] == _shown(f.nA) and cells[5] == f.basis, (f.key, cells[1], cells[5])
    keys = {f.key for f in FIGURES}
    stale = [k for k in rows if k.startswith(("cpu.", "radio.", "lfclk.", "nor.")) and
             k not in keys]
    assert not stale, stale


# ------------------------------------------------------------ run --power
def _cli(*argv):
    from frontends.cli import main
    return main(list(argv))


def test_run_power_writes_csv_and_json_and_the_summary(fw, tmp_path, capsys):
    csv, js = tmp_path / "p.csv", tmp_path / "p.json"
    for out in (csv, js):
        rc = _cli("run", fw("power_states"), "--board", "pinetime", "--headless", "--seconds",
                  "0.5", "--flash-file", "none", "--console", "none", "--power", str(out),
                  "--summary", "--power-interval", "0")      # a row at every change
        assert rc == 0
    err = capsys.readouterr().err
    assert "power: average" in err and "mAh battery lasts" in err and "summary:" in err
    rows = csv.read_text().splitlines()
    head = rows[0].split(",")
    assert head[:2] == ["time_s", "current_uA"] and "radio_uA" in head
    # the radio's TX current appears in the series, and the total is the parts' sum
    radio = head.index("radio_uA")
    values = [list(map(float, r.split(","))) for r in rows[1:]]
    assert any(v[radio] == CURRENT["radio.tx.0dbm.dcdc"] / 1000 for v in values)
    assert all(abs(v[1] - sum(v[2:])) < 0.01 for v in values)
    d = json.loads(js.read_text())
    assert d["battery_mAh"] == 170 and d["average_uA"] > 0 and d["parts"]
    assert abs(sum(p["share"] for p in d["parts"]) - 1) < 1e-6
    assert d["battery_hours"] == pytest.approx(170 * 1000 / d["average_uA"])


def test_run_power_refuses_what_it_cannot_write(fw, tmp_path, capsys, monkeypatch):
    fwp = fw("power_states")
    assert _cli("run", fwp, "--headless", "--power", str(tmp_path / "p.txt")) == 2
    assert _cli("run", fwp, "--headless", "--power", fwp) == 2          # an input
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    assert _cli("run", fwp, "--headless", "--power", str(tmp_path / "p.png")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(l.startswith("pinetime-emu: error: --power") or
                                 "FIRMWARE" in l for l in err), err
    assert "matplotlib" in err[2]
    assert not (tmp_path / "p.png").exists()


def test_run_power_png(fw, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    assert _cli("run", fw("power_states"), "--board", "pinetime", "--headless", "--seconds",
                "0.3", "--flash-file", "none", "--console", "none", "--power", str(out)) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_machine_with_a_meter_saves_and_restores_its_snapshot(fw, tmp_path):
    m = Machine(fw("power_states"), board="pinetime", flash_file=None)
    m.power()
    m.run(ms=5)
    snap = str(tmp_path / "s.snap")
    m.save_snapshot(snap)                    # the meter is an instrument, not state
    m2 = Machine.from_snapshot(snap)
    assert m2.power_meter is None
    meter = m2.power()
    m2.run(ms=5)
    assert meter.report().average_uA > 0
