"""The firmware written for the twins (firmware/tests/cpu_twin_paths.c,
periph_twin_paths.c, pinetime_spi_stream.c, cpu_many_blocks.c,
cpu_sleep_forever.c, and the four that end in a lockup on purpose) checks
what it does, on the native and on the pure-Python path; the companions
break one behaviour each (in the Python reference, which both paths must
match) and see the firmware say so."""
from __future__ import annotations

import pytest

from conftest import assert_firmware_passed, run_fw

PASSING = [("cpu_twin_paths", "nrf52832", 100), ("periph_twin_paths", "nrf52832", 300),
           ("pinetime_spi_stream", "pinetime", 300), ("cpu_many_blocks", "nrf52832", 300)]
LOCKUPS = [("cpu_stack_error", "stack overflow while entering SysTick"),
           ("cpu_unstack_error", "unstacking error at SP=0x30000000"),
           ("cpu_bad_vector", "invalid vector 0x00000000 for IRQ22"),
           ("cpu_bad_vector_chain", "invalid vector 0x00000000 for IRQ22")]


def _run(fw, name, board, ms, pure):
    kw = {"flash_file": None} if board == "pinetime" else {}
    return run_fw(fw(name), ms, board=board, pure_python=pure, **kw)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
@pytest.mark.parametrize("name,board,ms", PASSING, ids=[p[0] for p in PASSING])
def test_twin_firmware_passes(fw, name, board, ms, pure):
    m, r = _run(fw, name, board, ms, pure)
    assert_firmware_passed(m, r, min_passes=2)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
@pytest.mark.parametrize("name,message", LOCKUPS, ids=[p[0] for p in LOCKUPS])
def test_fault_firmware_locks_up_as_meant(fw, name, message, pure):
    m, r = _run(fw, name, "nrf52832", 50, pure)
    assert r.reason == "lockup" and message in m.cpu.stop_info["message"], m.cpu.stop_info
    assert m.console_text().startswith("PASS about to")


def test_a_level_not_pended_again_is_seen(fw, monkeypatch):
    """Companion: an exception return that forgets a line still high (the
    Python reference, native returns off) enters the EGU handler once."""
    from emu.cpu import cortexm, exceptions
    orig = exceptions.Exceptions._exception_return

    def forgetful(self, exc_return):
        cur = self._ipsr
        bit = 1 << (cur - 16) if cur >= 16 else 0
        high = self.irq_level & bit
        self.irq_level &= ~bit                # the line not looked at
        try:
            orig(self, exc_return)
        finally:
            self.irq_level |= high
    monkeypatch.setattr(cortexm.CortexM, "native_returns", False)
    monkeypatch.setattr(cortexm.CortexM, "_exception_return", forgetful)
    m, r = _run(fw, "cpu_twin_paths", "nrf52832", 100, False)
    assert "FAIL a line still high is entered again" in m.console_text()


def test_a_stream_that_drops_the_second_byte_is_seen(fw, monkeypatch):
    """Companion: the SPI model forgetting its TXD buffer (pure Python, where
    the model does every byte) answers one byte, not two."""
    from emu.peripherals import spi
    orig = spi.Spi._write_txd

    def single(self, value, old):
        if self._shifting is not None and self._shifting >= 0:
            return None
        return orig(self, value, old)
    monkeypatch.setattr(spi.Spi, "_write_txd", single)
    m, r = _run(fw, "pinetime_spi_stream", "pinetime", 300, True)
    assert "FAIL" in m.console_text()
