"""``run --power FILE``: the energy model's record as CSV, JSON or a PNG plot,
and the end-of-run summary lines (heaps, tasks, current).

* ``.csv``: one row per interval of the record (``--power-interval``,
  default 1 s; 0: one at every change of a current): ``time_s`` (where the
  interval starts), the average ``current_uA`` over the interval, then each
  part's average (uA), from the exact charge; a row holds until the next
  row's time, and the last row, repeating the one before, marks the end.
  Streamed: each row is written as its interval closes
  (emu/outputs.py StreamOutput), so nothing of it is kept in memory; a run
  cut short leaves a valid prefix, ended at the moment it stopped.
* ``.json``: the report (duration, charge, average, the present current,
  share per part, the battery and its implied life) plus the series the
  meter keeps in memory (at most its ``max_rows``, pairs of rows merged
  beyond: ``interval_s`` says how long its rows are).
* ``.png``: that series (a step plot, log scale) with the average and the
  implied battery life in the title; needs matplotlib (the ``plot`` extra):
  without it the option is refused before the run, in one line.

JSON and PNG are written whole at the end through emu/outputs.py
(atomic_write).
"""
from __future__ import annotations

import io
import json
from typing import Optional

from emu.clock import TICKS_PER_SECOND
from emu.outputs import StreamOutput, atomic_write

FORMATS = (".csv", ".json", ".png")


def format_problem(path: str) -> Optional[str]:
    """Why ``--power path`` cannot be honoured (None if it can)."""
    low = path.lower()
    if not low.endswith(FORMATS):
        return f"--power {path}: the file is written as .csv, .json or .png"
    if low.endswith(".png"):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return (f"--power {path}: a PNG plot needs matplotlib (pip install "
                    "'pinetime-emu[plot]'), or give a .csv or .json file")
    return None


def is_stream(path: str) -> bool:
    """``path`` is written as the run goes (CSV)."""
    return path.lower().endswith(".csv")


def write(meter, path: str) -> None:
    """Write the record to ``path`` whole, from the rows the meter kept."""
    low = path.lower()
    if low.endswith(".csv"):
        atomic_write(path, csv_text(meter))
    elif low.endswith(".json"):
        atomic_write(path, json.dumps(json_data(meter), indent=1) + "\n")
    else:
        atomic_write(path, png_bytes(meter))


def _rows(meter) -> list:
    """[(tick, total nA, [nA per part])], the averages of the meter's rows,
    the end appended."""
    rows = []
    end = None
    for s, e, charges in meter.rows():
        if e > s:
            rows.append((s, sum(charges) / (e - s), [c / (e - s) for c in charges]))
            end = e
    if rows:
        rows.append((end, rows[-1][1], rows[-1][2]))
    return rows


def _csv_head(meter) -> str:
    return "time_s,current_uA," + ",".join(f"{p.name}_uA" for p in meter.parts) + "\n"


def _csv_line(t: int, total: float, parts) -> str:
    return (f"{t / TICKS_PER_SECOND:.9f},{total / 1000:.3f},"
            + ",".join(f"{v / 1000:.3f}" for v in parts) + "\n")


def csv_text(meter) -> str:
    out = io.StringIO()
    out.write(_csv_head(meter))
    for t, total, parts in _rows(meter):
        out.write(_csv_line(t, total, parts))
    return out.getvalue()


class CsvStream:
    """The CSV written as the run goes: the header now, each row of the
    meter's record as it closes (``meter.row_listeners``); :meth:`close`
    writes the open row up to now and the end.  ``error``: the one-line
    message of a failed write (``on_error`` is called with it; the file is
    cut back to whole lines and the stream stops).  Opening raises OSError."""

    def __init__(self, meter, path: str, on_error=None, chunk: int = StreamOutput.CHUNK):
        self.meter = meter
        self.path = path
        self.out = StreamOutput(path, on_error=on_error, chunk=chunk)
        self.out.write(_csv_head(meter))
        self._last = None
        self.rows = 0                     # rows written
        meter.row_listeners.append(self._row)

    @property
    def error(self):
        return self.out.error

    def _row(self, s: int, e: int, charges) -> None:
        if e <= s:
            return
        d = e - s
        self._last = (e, sum(charges) / d, [c / d for c in charges])
        self.out.write(_csv_line(s, *self._last[1:]))
        self.rows += 1

    def close(self) -> None:
        if self.out.closed:
            return
        m = self.meter
        if self._row in m.row_listeners:
            m.flush()                         # the whole intervals up to now
            m.row_listeners.remove(self._row)
            row = m.open_row()
            if row is not None:
                self._row(*row)
        if self._last is not None:
            self.out.write(_csv_line(*self._last))
        self.out.close()


def json_data(meter) -> dict:
    d = meter.report().as_dict()
    d["series"] = {"interval_s": meter.kept_interval_s, "time_s": [], "current_uA": []}
    for t, total, _parts in _rows(meter):
        d["series"]["time_s"].append(t / TICKS_PER_SECOND)
        d["series"]["current_uA"].append(total / 1000)
    return d


def png_bytes(meter) -> bytes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = _rows(meter)
    r = meter.report()
    fig, ax = plt.subplots(figsize=(10, 4), dpi=100)
    xs = [t / TICKS_PER_SECOND for t, _tot, _p in rows]
    ys = [max(total / 1000, 0.01) for _t, total, _p in rows]
    if xs:
        ax.step(xs, ys, where="post", linewidth=0.7)
    ax.axhline(max(r.average_uA, 0.01), color="tab:red", linewidth=0.8, linestyle="--",
               label=f"average {r.average_uA:.1f} uA")
    ax.set_yscale("log")
    ax.set_xlabel("emulated time (s)")
    ax.set_ylabel("current (uA)")
    life = r.battery_hours
    title = f"average {_current(r.average_uA)}"
    if life is not None:
        title += f", {_life(life)} on a {r.battery_mAh} mAh battery"
    ax.set_title(title)
    ax.legend(loc="upper right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _current(uA: float) -> str:
    return f"{uA / 1000:.2f} mA" if uA >= 1000 else f"{uA:.1f} uA"


def _life(hours: float) -> str:
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} h"


def power_lines(meter, top: int = 5) -> list:
    """The summary's energy lines."""
    r = meter.report()
    lines = [f"power: average {_current(r.average_uA)} over {r.seconds:.3f} s "
             f"(charge {r.charge_uC / 1000:.3f} mC), now {_current(r.present_uA)}"]
    if r.battery_hours is not None:
        lines.append(f"power: a {r.battery_mAh} mAh battery lasts {_life(r.battery_hours)} "
                     "at this average")
    shares = [f"{p.name} {p.share * 100:.1f} %" for p in r.parts[:top] if p.share >= 0.001]
    if shares:
        lines.append("power: " + ", ".join(shares))
    return lines


def inspect_lines(machine) -> list:
    """The summary's heap and task lines (none when the image has neither)."""
    lines = []
    try:
        heaps, tasks = machine.heaps(), machine.tasks()
    except Exception as e:            # a reader's bug must not cost the run its exit status
        return [f"heaps: not readable ({type(e).__name__}: {e})"]
    for h in heaps:
        lines.append("heap: " + h.summary())
    for t in tasks:
        hw = "?" if t.stack_high_water is None else f"{t.stack_high_water} words"
        text = f"task: {t.name:<8} {t.state:<9} prio {t.priority}  stack high-water {hw}"
        if t.problem:
            text += f" ({t.problem})"
        lines.append(text)
    return lines
