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
    monkeypatch.setattr(cycles.CostModel, "insn_cost", lambda self, insn, prev: (1, False))
    m, r = run_firmware("cpu_dwt", ms=100)
    got = cpi(m)
    assert got["subs_bne"] != pytest.approx(TRM["subs_bne"], rel=0.10)
