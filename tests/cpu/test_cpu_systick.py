"""SysTick: reload, COUNTFLAG, CVR clear, interrupt rate against DWT CYCCNT."""
import re

from conftest import assert_firmware_passed


def test_systick(run_firmware):
    m, r = run_firmware("cpu_systick", ms=100)
    assert_firmware_passed(m, r, min_passes=10)
    ticks, cycles = map(int, re.search(r"(\d+) ticks in (\d+) cycles", m.console_text()).groups())
    assert abs(ticks - cycles // 10000) <= 1


def test_wrong_systick_period_is_detected(run_firmware, monkeypatch):
    """The firmware can fail: a SysTick that reloads to RVR+2 is caught."""
    from emu.cpu import cortexm
    orig = cortexm.SysTick.write_rvr
    monkeypatch.setattr(cortexm.SysTick, "write_rvr",
                        lambda self, v: orig(self, v + 500 if v == 9999 else v))
    m, r = run_firmware("cpu_systick", ms=100)
    assert "FAIL tick period" in m.console_text()
    assert r.exit_code != 0


def test_countflag_sticky_is_detected(run_firmware, monkeypatch):
    """COUNTFLAG must clear on read; a core that keeps it set is caught."""
    from emu.cpu import cortexm
    orig = cortexm.SysTick.read_csr

    def sticky(self):
        v = orig(self)
        self.countflag = 1 if v & (1 << 16) else self.countflag
        return v
    monkeypatch.setattr(cortexm.SysTick, "read_csr", sticky)
    m, r = run_firmware("cpu_systick", ms=100)
    assert "FAIL COUNTFLAG cleared by read" in m.console_text()
