"""The energy model's record (emu/power.py rows, ``run --power`` with
``--power-interval``): rows of an interval add up to the exact totals, the
same totals as a run that keeps every change or none; the rows kept in
memory stay within ``max_rows`` however long the run (and the check fails
when that bound is off); the CSV is streamed as the run goes."""
from __future__ import annotations

import json

import pytest

from emu import Machine
from emu.clock import TICKS_PER_SECOND
from frontends import power_output

IMAGES = ("power_states", "pinetime_demo", "air_beacon")   # each part in turn; the demo; a radio


def _meter(fw, image, seconds, **options):
    m = Machine(fw(image), board="pinetime", flash_file=None)
    meter = m.power(**options)
    m.run(seconds=seconds)
    return m, meter


def _sums(meter) -> dict:
    rows = meter.rows()
    return {p.name: sum(r[2][p.index] for r in rows) for p in meter.parts}


@pytest.mark.parametrize("image", IMAGES)
def test_aggregated_totals_equal_the_unaggregated_ones_exactly(fw, image):
    _m, every = _meter(fw, image, 3, interval=0, max_rows=None)     # each change a row
    want = every.charge_nA_ticks()
    assert every.changes > 10 and _sums(every) == want
    for options in ({"record": False}, {}, {"interval": 0.25}, {"interval": 0.0007},
                    {"interval": 0.001, "max_rows": 16}, {"interval": 0, "max_rows": 4}):
        _m, meter = _meter(fw, image, 3, **options)
        assert meter.charge_nA_ticks() == want, options
        assert meter.report() == every.report(), options
        if meter.record:
            assert _sums(meter) == want, options                     # to the nA x tick
            rows = meter.rows()
            assert rows[0][0] == meter.start and rows[-1][1] == meter.cpu.time_now()
            assert all(a[1] == b[0] for a, b in zip(rows, rows[1:])), options


def _integrated(steps, s: int, e: int) -> list:
    """Each part's charge over [s, e) from a record of every change (a row
    per constant stretch), integrated here: the reference for a row."""
    out = [0] * len(steps[0][2])
    for a, b, charges in steps:
        lo, hi = max(a, s), min(b, e)
        if hi > lo:
            for i, c in enumerate(charges):
                out[i] += c // (b - a) * (hi - lo)
    return out


def _steps(fw, image="power_states") -> list:
    """The record of every change: a row per stretch of constant currents."""
    _m, every = _meter(fw, image, 1, interval=0, max_rows=None)
    steps = every.rows()
    for a, b, charges in steps:              # constant within each: exact currents
        assert all(c % (b - a) == 0 for c in charges)
    return steps


def _check_rows_against_the_steps(fw, steps, image="power_states"):
    """Every aggregated row holds exactly the charge the step function of
    the unaggregated record integrates to over the row's span."""
    for options in ({"interval": 0.001}, {"interval": 0.0007}, {"interval": 0.05},
                    {"interval": 0.0005, "max_rows": 16}):
        _m, meter = _meter(fw, image, 1, **options)
        rows = meter.rows()
        assert len(rows) > 3, options
        for s, e, charges in rows:
            assert charges == _integrated(steps, s, e), f"row {s}-{e} with {options}"


def test_each_aggregated_row_is_the_exact_integral_over_its_span(fw):
    _check_rows_against_the_steps(fw, _steps(fw))


def test_the_row_check_fails_when_rows_close_after_the_change(fw, monkeypatch):
    """The companion: a meter that closes a row only when read (not before
    a current changes) books the new current into the row before; the
    totals still add up, the rows do not, and the check says so."""
    from emu.power import PowerMeter
    steps = _steps(fw)                       # the reference, from the real meter
    real_update, real_roll = PowerMeter._update, PowerMeter._roll

    def update(self, part):
        self._in_update = True
        try:
            return real_update(self, part)
        finally:
            self._in_update = False

    def roll(self, t):
        if not getattr(self, "_in_update", False):
            real_roll(self, t)
    monkeypatch.setattr(PowerMeter, "_update", update)
    monkeypatch.setattr(PowerMeter, "_roll", roll)
    with pytest.raises(AssertionError, match="row "):
        _check_rows_against_the_steps(fw, steps)


def test_rows_fall_on_whole_intervals(fw):
    m, meter = _meter(fw, "pinetime_demo", 2.5, interval=0.5)
    rows = meter.rows()
    half = TICKS_PER_SECOND // 2
    assert [r[0] for r in rows[1:]] == [k * half for k in range(1, 5)]
    assert rows[-1][1] == m.cpu.time_now()
    # a row's average is its charge over its length
    s, e, c = rows[2]
    assert meter.part_series()[2] == (s, [x / (e - s) for x in c])


def _most_kept(m, meter, seconds: float, step: float = 0.25) -> int:
    """Run ``seconds`` in steps; the most rows the meter held at any step."""
    most = 0
    for _ in range(round(seconds / step)):
        m.run(seconds=step)
        most = max(most, meter.kept_rows)
    return most


def _check_bounded(fw, max_rows):
    """A run 50 times longer than the bound allows at 1 ms: the rows kept
    stay within 64, and they still add up to the totals."""
    m = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    meter = m.power(interval=0.001, max_rows=max_rows)
    most = _most_kept(m, meter, 3.2)
    assert most <= 64, f"{most} rows kept in memory"
    assert meter.kept_interval_s >= 3.2 / 64
    assert _sums(meter) == meter.charge_nA_ticks()


def test_the_rows_kept_in_memory_are_bounded(fw):
    _check_bounded(fw, 64)


def test_the_bound_check_fails_when_rows_are_not_merged(fw):
    """The companion: with no bound (every row kept, as the record was
    before) the same check fails."""
    with pytest.raises(AssertionError, match="rows kept in memory"):
        _check_bounded(fw, None)


def test_the_streamed_csv_is_the_kept_record(fw, tmp_path):
    """Nothing merged: the CSV written as the run went is the one written
    from the kept rows at the end, and it integrates back to the charge."""
    m = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    meter = m.power(interval=0.002)
    out = tmp_path / "p.csv"
    stream = power_output.CsvStream(meter, str(out), chunk=4096)
    m.run(seconds=1.005)
    mid = out.stat().st_size
    m.run(seconds=1)
    assert out.stat().st_size > mid > 0          # written as it goes, not at the end
    stream.close()
    text = out.read_text()
    assert text == power_output.csv_text(meter) and stream.error is None
    lines = [list(map(float, l.split(","))) for l in text.splitlines()[1:]]
    assert len(lines) == 1004                    # 1003 rows (the last one open), the end
    charge = sum(a[1] * (b[0] - a[0]) for a, b in zip(lines, lines[1:]))  # uA x s
    assert charge == pytest.approx(meter.report().charge_uC, abs=0.0005 * 2.01)


def _cli(*argv):
    from frontends.cli import main
    return main(list(argv))


def test_run_power_streams_rows_and_keeps_few(fw, tmp_path, monkeypatch, capsys):
    """``run --power x.csv --power-interval 0.001`` over 20 emulated s: 20 000
    rows reach the file; the meter holds at most its max_rows (8192)."""
    import frontends.cli as cli
    seen = {}
    real = cli._end_of_run

    def end_of_run(machine, args, meter):
        seen["kept"], seen["max"] = meter.kept_rows, meter.max_rows
        seen["charge"] = meter.report().charge_uC
        return real(machine, args, meter)
    monkeypatch.setattr(cli, "_end_of_run", end_of_run)
    out = tmp_path / "p.csv"
    assert _cli("run", fw("pinetime_demo"), "--board", "pinetime", "--headless", "--seconds",
                "20", "--flash-file", "none", "--console", "none", "--power", str(out),
                "--power-interval", "0.001") == 0
    assert seen["max"] == 8192 and seen["kept"] <= 8192
    lines = out.read_text().splitlines()
    assert len(lines) == 1 + 20_000 + 1
    assert "written to" in capsys.readouterr().err
    js = tmp_path / "p.json"
    assert _cli("run", fw("pinetime_demo"), "--board", "pinetime", "--headless", "--seconds",
                "20", "--flash-file", "none", "--console", "none", "--power", str(js),
                "--power-interval", "0.001") == 0
    d = json.loads(js.read_text())
    assert d["charge_uC"] == pytest.approx(seen["charge"], rel=1e-12)
    assert len(d["series"]["time_s"]) <= 8192 + 2 and d["series"]["interval_s"] >= 0.002


@pytest.mark.parametrize("argv, says", [
    (["--power-interval", "1"], "--power-interval needs --power"),
    (["--power", "P", "--power-interval", "-1"], "--power-interval -1:"),
    (["--power", "P", "--power-interval", "nan"], "--power-interval nan:"),
    (["--power", "P", "--power-interval", "1e-12"], "at least one tick"),
    (["--power", "P", "--power-interval", "x"], "--power-interval x:"),
])
def test_run_power_interval_refuses_bad_values(fw, tmp_path, capsys, argv, says):
    argv = [str(tmp_path / "p.csv") if a == "P" else a for a in argv]
    assert _cli("run", fw("pinetime_demo"), "--headless", "--seconds", "0.1", *argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pinetime-emu: error: --power-interval") \
        and says in err[0], err
    assert not (tmp_path / "p.csv").exists()


def test_meter_refuses_bad_options(fw):
    m = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    from emu.power import PowerMeter
    for bad in ({"interval": -1}, {"interval": float("inf")}, {"interval": 1e-10},
                {"max_rows": 1}):
        with pytest.raises(ValueError):
            PowerMeter(m, **bad)
    with pytest.raises(TypeError):
        PowerMeter(m, interval="1")
