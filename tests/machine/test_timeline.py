"""Several machines in one process, and on one timeline (emu/timeline.py).

* Two machines built side by side and run interleaved, in small steps, end
  exactly as each run alone: cycles, clock, console, registers, RAM, screen,
  register accesses - natively, in pure Python, and one of each.  Nothing
  of one machine lives in another's state or in a module's globals.
* Two boards joined by a wire (a GPIO line with a delay) on a Timeline: the
  receiver timestamps the sender's edges; the results are the same whatever
  order the machines run in within a window and whatever the windows'
  length (up to the wire's delay, the lookahead), and each edge arrives
  exactly its delay after it left.  The companion lets the receiver run
  past the lookahead and sees the late edge refused.
"""
from __future__ import annotations

import pytest

from conftest import parity_state
from emu import Machine
from emu.clock import TICKS_PER_US
from emu.timeline import Timeline, Wire

PAIRS = [
    (("pinetime_demo", "pinetime"), ("periph_rtc_core", "nrf52832")),
    (("board_nrf52dk", "nrf52dk"), ("pinetime_display", "pinetime")),
    (("cpu_pendsv", "nrf52832"), ("cpu_mpu", "nrf52832")),
]


def _machine(fw, name, board, pure):
    kw = {"board": board, "pure_python": pure}
    if board == "pinetime":
        kw["flash_file"] = None
    return Machine(fw(name), **kw)


def _state(m, board):
    st = parity_state(m, board=board == "pinetime")
    st["ram_hash"] = hash(st.pop("ram"))
    return st


@pytest.mark.parametrize("paths", [(False, False), (True, True), (False, True)],
                         ids=["native", "python", "native+python"])
@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a[0]}+{b[0]}" for a, b in PAIRS])
def test_two_machines_interleaved_run_as_each_alone(fw, a, b, paths):
    ms = 300
    alone = []
    for (name, board), pure in zip((a, b), paths):
        m = _machine(fw, name, board, pure)
        m.run(ms=ms)
        alone.append(_state(m, board))
        m.close()
    ma, mb = (_machine(fw, n, bd, p) for (n, bd), p in zip((a, b), paths))
    tl = Timeline([ma, mb])
    tl.run(ms=ms, longest_round=37 * TICKS_PER_US)      # interleaved every 37 us
    # (until the first of them stops: the cpu_* programs exit)
    assert tl.rounds >= min(ma.clock.now, mb.clock.now) // (37 * TICKS_PER_US)
    together = [_state(ma, a[1]), _state(mb, b[1])]
    for st_alone, st_tl, (name, _b) in zip(alone, together, (a, b)):
        for k in st_alone:
            assert st_alone[k] == st_tl[k], f"{name}: {k} differs alone and side by side"


def _wired(fw, order="ab", window=None, delay_us=20):
    a = Machine(fw("wire_sender"), board="nrf52832")
    b = Machine(fw("wire_receiver"), board="nrf52832")
    tl = Timeline([a, b])
    wire = tl.connect(Wire(a, 17, b, 13, delay=delay_us * TICKS_PER_US))
    res = tl.run(ms=5, order=[a, b] if order == "ab" else [b, a], longest_round=window)
    return a, b, wire, res, tl


def test_a_wire_between_two_boards_carries_every_edge(fw):
    a, b, wire, res, tl = _wired(fw)
    assert res[b].reason == "exit" and res[b].exit_code == 0, b.console_text()
    lines = [l for l in b.console_text().splitlines() if l.startswith("edge ")]
    assert len(lines) == 16
    assert [l.endswith(f"level {1 - i % 2}") for i, l in enumerate(lines)] == [True] * 16
    edges = [(s, d, lv) for s, d, lv in wire.log if s > wire.log[0][0]]   # (the pin's set-up)
    assert len(edges) >= 16
    assert all(d - s == 20 * TICKS_PER_US for s, d, _lv in edges)
    assert "PASS sent 16 edges" in a.console_text()


@pytest.mark.parametrize("order,window_us", [("ab", None), ("ba", None), ("ab", 7),
                                              ("ba", 3), ("ab", 1)])
def test_wired_boards_give_the_same_results_whatever_the_order_and_windows(fw, order,
                                                                             window_us):
    ref_a, ref_b, ref_wire, _r, _tl = _wired(fw)
    a, b, wire, _res, tl = _wired(fw, order, window_us and window_us * TICKS_PER_US)
    assert b.console_text() == ref_b.console_text()
    assert wire.log == ref_wire.log
    assert (a.cpu.cycles, b.cpu.cycles) == (ref_a.cpu.cycles, ref_b.cpu.cycles)
    assert parity_state(b)["ram"] == parity_state(ref_b)["ram"]


def test_a_bound_past_the_lookahead_is_seen(fw, monkeypatch):
    """Companion: a timeline that lets the receiver run 50 delays past the
    sender's tick delivers edges into the receiver's past: refused."""
    monkeypatch.setattr(Wire, "bound", lambda self, k, h, now: (
        now[self._src_side] + 50 * self.delay if k is self._dst_side else 1 << 62))
    with pytest.raises(RuntimeError, match="reached its destination .* late"):
        _wired(fw)


def test_machines_join_a_timeline_at_one_tick(fw):
    a = Machine(fw("cpu_systick"), board="nrf52832")
    b = Machine(fw("cpu_systick"), board="nrf52832")
    a.run(ms=1)
    tl = Timeline([a])
    with pytest.raises(ValueError, match="join at the same tick"):
        tl.add(b)
    with pytest.raises(ValueError, match="each machine"):
        tl.run(ms=1, order=[b])
    with pytest.raises(ValueError, match="at least one tick"):
        Wire(a, 17, b, 13, delay=0)


def test_infinitime_and_wasp_os_side_by_side_run_as_each_alone():
    """The two real firmwares (their images when present) in one process,
    interleaved every millisecond for two emulated seconds, end as alone."""
    from conftest import cached_image
    paths = [cached_image("PINETIME_EMU_INFINITIME_IMAGE", "infinitime/pinetime-app-*.out"),
             cached_image("PINETIME_EMU_WASP_IMAGE", "wasp-os/upstream/micropython.elf")]
    alone = []
    for p in paths:
        m = Machine(p, flash_file=None)
        m.run(seconds=2)
        alone.append(_state(m, "pinetime"))
        m.close()
    ms = [Machine(p, flash_file=None) for p in paths]
    Timeline(ms).run(seconds=2, longest_window=1000 * TICKS_PER_US)
    for st, m in zip(alone, ms):
        together = _state(m, "pinetime")
        for k in st:
            assert st[k] == together[k], f"{k} differs alone and side by side"
