"""DWT CYCCNT over hand-written loops against the Cortex-M4 TRM cycle counts
(ARM DDI 0439B table 3-1), not against our own cost table."""
import re

import pytest

from conftest import assert_firmware_passed

# cycles per iteration from the TRM: taken branch = 1 + P with P = 1 on a
# zero-wait-state fetch (nRF52 with cache/ICODE at 64 MHz); LDR 2; MUL 1.
TRM = {"subs_bne": 1 + 2, "alu": 4 + 1 + 2, "ldr": 2 + 1 + 2, "mul": 1 + 1 + 1 + 2}


def cpi(m):
    return {k: int(v) / 100 for k, v in re.findall(r"CPI (\w+) (\d+)", m.console_text())}


def test_cycle_counts_match_trm(run_firmware):
    m, r = run_firmware("cpu_dwt", ms=100)
    assert_firmware_passed(m, r, min_passes=3)
    got = cpi(m)
    assert set(got) == set(TRM)
    for name, want in TRM.items():
        assert got[name] == pytest.approx(want, rel=0.10), (name, got[name], want)


def test_wrong_branch_cost_is_detected(run_firmware, monkeypatch):
    """Costing every instruction one cycle (a naive model) breaks the TRM comparison."""
    from emu.cpu import cycles
    monkeypatch.setattr(cycles.CostModel, "native_cost", False)    # the reference costs
    monkeypatch.setattr(cycles.CostModel, "insn_cost", lambda self, insn, prev: (1, False))
    m, r = run_firmware("cpu_dwt", ms=100)
    got = cpi(m)
    assert got["subs_bne"] != pytest.approx(TRM["subs_bne"], rel=0.10)


def test_cyccnt_op_matches_the_pure_path(fw):
    """CYCCNT is an op of the DWT page (a CYCLES op while it counts, a CONST
    op with the frozen value while stopped), served in C on the native path:
    the run ends exactly as on the pure-Python path."""
    from emu import Machine
    runs = []
    for pure in (False, True):
        m = Machine(fw("cpu_dwt"), board="nrf52832", pure_python=pure)
        r = m.run(ms=100)
        assert_firmware_passed(m, r, min_passes=7)
        runs.append((m.cpu.cycles, m.clock.now, m.console_text()))
        if not pure:
            reads = m.soc.bus.access_stats()[(0xE0001000, 0x004)]
            assert reads[0] > 100 and reads[1] == 0      # all by the op
    assert runs[0] == runs[1]


def test_stale_cyccnt_op_is_detected(fw, monkeypatch):
    """Companion: if DWT writes did not re-resolve the op (its base), the
    counter would not go on from a written value."""
    from emu import Machine
    from emu.cpu.scs import DwtPage
    monkeypatch.setattr(DwtPage, "ops_changed", lambda self: None)
    m = Machine(fw("cpu_dwt"), board="nrf52832")
    m.run(ms=100)
    assert "FAIL CYCCNT" in m.console_text()
