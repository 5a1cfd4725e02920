"""An interrupt between an IT instruction and its conditional instruction
(firmware/tests/cpu_it_irq.c): EPSR.IT is cleared on exception entry."""
from conftest import assert_firmware_passed


def test_interrupt_inside_an_it_block(run_firmware):
    m, r = run_firmware("cpu_it_irq", ms=100)
    assert_firmware_passed(m, r, min_passes=4)


def test_it_state_leaking_into_the_handler_is_detected(run_firmware, monkeypatch):
    """Companion: without clearing IT on entry the handler's first
    instruction is skipped (what crashed InfiniTime's RTC0 handler)."""
    from emu.cpu import cortexm, exceptions
    monkeypatch.setattr(exceptions, "XPSR_IT", 0)          # (_enter's module)
    monkeypatch.setattr(cortexm.CortexM, "native_entries", False)   # Python's entries
    m, r = run_firmware("cpu_it_irq", ms=100)
    assert "FAIL every handler ran its first instruction" in m.console_text()
