"""AIRCR.SYSRESETREQ: a real system reset that keeps RAM (boot counter in .noinit)."""
from conftest import assert_firmware_passed


def test_sysresetreq_reboots(run_firmware):
    m, r = run_firmware("cpu_sysreset", ms=100)
    assert_firmware_passed(m, r, min_passes=2)
    assert m.resets == 2
    assert m.console_text().count("boot ") == 3


def test_ignored_sysresetreq_is_detected(run_firmware, monkeypatch):
    """If SYSRESETREQ did nothing, the firmware spins and never reports."""
    from emu.cpu import scs
    monkeypatch.setattr(scs.SystemControlSpace, "reset_requested",
                        property(lambda self: False, lambda self, v: None), raising=False)
    m, r = run_firmware("cpu_sysreset", ms=20)
    assert "PASS three boots" not in m.console_text()
    assert m.resets == 0
