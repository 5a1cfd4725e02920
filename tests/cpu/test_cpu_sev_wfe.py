"""Nordic's standard idle ``__SEV(); __WFE(); __WFE();`` (nrf_pwr_mgmt and
most nRF5 SDK applications): the first WFE clears the event register the SEV
set, the second one sleeps.  The SEV's per-instruction hook makes Unicorn
report the first WFE with the PC already past it, at the second WFE; taking
that report for the second WFE ran the pair as one WFE and the idle never
slept (firmware/tests/cpu_sev_wfe.c)."""
import pytest

from conftest import assert_firmware_passed
from emu.cpu import cortexm


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_sev_wfe_wfe_sleeps(run_firmware, pure):
    m, r = run_firmware("cpu_sev_wfe", ms=200, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=3)
    assert "loops 20 20 20" in m.console_text()
    # 60 ms of idle: asleep nearly all of it (3.84 M cycles if it spun)
    assert m.cpu.cycles < 100_000


def test_without_the_sev_block_check_the_pair_is_one_wfe(run_firmware, monkeypatch):
    """Companion: forget which block the SEV ran in and the idle spins."""
    monkeypatch.setattr(cortexm.CortexM, "_hook_sev",
                        lambda self, uc, address, size, ud: setattr(self, "event_register", 1))
    m, r = run_firmware("cpu_sev_wfe", ms=200)
    assert "FAIL sev; wfe; wfe sleeps until the tick" in m.console_text()
