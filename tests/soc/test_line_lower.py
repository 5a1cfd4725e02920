"""Writes that lower an interrupt line carried out by the bus's ops in C
(EVENT and INTENCLR/INTEN ops with the line's sink declared:
NrfPeripheral._line_sink, emu/soc/_mmio.c cells_lower).

firmware/tests/periph_line_lower.c lowers RTC1's line with INTENCLR and an
event write (the NVIC then keeps a pend cleared with ICPR cleared), keeps it
up with a second enabled event, raises it again with INTENSET, and takes 20
compare interrupts whose handler lowers the line as wasp-os's tick does; it
passes natively and in pure Python (where the model lowers it), in the same
cycles.  The companion gives the ops a sink that is not the CPU: the line
goes down in the Cells only, and the firmware sees the interrupt pend again.
On real firmware (wasp-os's 1 kHz tick, InfiniTime's advertising and tickless
idle), when the images are present, lowering in C or in the model gives the
same cycles, accesses per register, screen, NOR, air and RAM."""

import pytest

from conftest import (assert_firmware_passed, assert_same_state, both_ways, image_both_ways,
                      run_fw)
from emu import Machine
from emu.soc.nrf52832 import Nrf52832

FW = "periph_line_lower"
RTC1 = 0x40011000


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_lowering_writes_pass(fw, pure):
    m = Machine(fw(FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=11)
    intenclr = m.soc.bus.access_stats()[(RTC1, 0x308)]
    if not pure:     # the handler's 20 and main's 2 INTENCLRs: all by the op, none by the model
        assert intenclr[2] >= 22 and intenclr[3] == 0


def test_native_and_python_agree(fw):
    runs = both_ways((False, True), lambda pure: run_fw(fw(FW), 50, pure_python=pure)[0])
    assert_same_state(runs[0], runs[1], "C and Python")


def test_lowering_elsewhere_is_seen(fw, monkeypatch):
    """Companion: a sink that is not the CPU: the Cells' line goes down but
    the NVIC still sees it high, so a pend cleared with ICPR comes back."""
    class Elsewhere:
        irq_level = 0

    monkeypatch.setattr(Nrf52832, "line_sink", lambda self: (Elsewhere(), []))
    m = Machine(fw(FW), board="nrf52832")
    r = m.run(ms=50)
    assert "FAIL INTENCLR lowered the line: ICPR clears the pend" in m.console_text()
    assert r.exit_code != 0


def test_a_listener_sends_lowering_to_the_model(fw):
    """While the SoC has irq listeners (a VCD trace), a lowering write goes to
    the model, which tells them."""
    m = Machine(fw(FW), board="nrf52832")
    seen = []
    m.soc.irq_listeners.append(lambda irq, level: seen.append((irq, level)))
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=11)
    assert (17, False) in seen
    assert m.soc.bus.access_stats()[(RTC1, 0x308)][3] >= 21


@pytest.mark.parametrize("which", ["wasp-os", "infinitime"])
def test_lowering_in_c_changes_nothing_on_real_firmware(monkeypatch, which):
    """wasp-os's boot and 1 kHz tick to 5 emulated s, InfiniTime's first 3 s
    (advertising heard by a scanner, FreeRTOS's tickless idle): lowering in C
    or in the model, the same cycles, accesses per register, screen, NOR,
    air and RAM."""
    def lower_in_c(in_c):
        if not in_c:
            monkeypatch.setattr(Nrf52832, "line_sink", lambda self: ())
    fast, slow = image_both_ways(
        which, 5.0 if which == "wasp-os" else 3.0, lower_in_c,
        extra=lambda m, in_c: {"rtc1_intenclr": m.soc.bus.access_stats().get((RTC1, 0x308))})
    assert fast["cycles"] > 60_000_000
    # the fast path was taken: RTC1's INTENCLRs by the op, before by the model
    assert fast.pop("rtc1_intenclr")[3] < slow.pop("rtc1_intenclr")[3]
    assert_same_state(fast, slow, "lowering in C and in the model")
