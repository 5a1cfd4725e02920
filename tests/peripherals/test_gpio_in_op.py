"""GPIO IN read by the bus's ATTR op (Gpio.read_op: the model keeps IN in
``_in`` as pins change, PIN_CNF is written and the chip resets), so a poll of
IN runs no Python.

firmware/tests/gpio_in_poll.c polls IN for the side button pressed at 2 ms
and released at 4 ms, disconnects and reconnects the input buffer while it
is pressed, and reads the pulls; it passes natively and in pure Python (the
model's read) in the same cycles, accesses and RAM.  The companion forgets
to update IN on a pin change: the press is never seen.  On real wasp-os
(its tick reads IN), when the image is present, the op and the model's
Python give the same cycles, accesses per register, screen, NOR and RAM."""
import pytest

from conftest import assert_firmware_passed, assert_same_state, both_ways, image_both_ways
from emu import Machine
from emu.peripherals.gpio import Gpio

FW = "gpio_in_poll"
IN = (0x50000000, 0x510)


def _run(fw, pure=False, ms=10):
    m = Machine(fw(FW), board="pinetime", flash_file=None, pure_python=pure)
    assert m.run_until(lambda: "READY" in m.console_text(), timeout_ms=5)
    m.board.button.press(delay_ms=2.0 - m.time * 1000)
    m.board.button.release(delay_ms=4.0 - m.time * 1000)
    return m, m.run(ms=ms)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_polled_in_sees_the_button(fw, pure):
    m, r = _run(fw, pure)
    assert_firmware_passed(m, r, min_passes=8)
    reads = m.soc.bus.access_stats()[IN]
    assert reads[0] + reads[1] > 1000                 # a real poll, not one read
    if not pure:
        assert reads[1] == 0, reads                   # none through the model's Python
    assert m.time < 0.006                             # it ended after the release


def test_native_and_python_agree(fw):
    runs = both_ways((False, True), lambda pure: _run(fw, pure)[0])
    assert_same_state(runs[0], runs[1], "the op and the model")


def test_in_not_updated_on_a_pin_change_is_seen(fw, monkeypatch):
    """Companion: IN kept only at PIN_CNF writes and reset, not when a pin
    changes: the press is never seen."""
    def levels_only(self, n):
        if self.soc.pins[n].level:
            self._levels |= 1 << n
        else:
            self._levels &= ~(1 << n)
    monkeypatch.setattr(Gpio, "_pin_changed", levels_only)
    m, r = _run(fw, ms=400)
    assert "FAIL the press is seen" in m.console_text()
    assert r.exit_code != 0


def test_op_and_model_agree_on_wasp_os(monkeypatch):
    def op(on):
        if not on:
            monkeypatch.setattr(Gpio, "read_op", lambda self, off: None if off == 0x510
                                else super(Gpio, self).read_op(off))
    fast, slow = image_both_ways("wasp-os", 5.0, op, scanner=False,
                                 extra=lambda m, on: {"by_model": m.soc.bus.access_stats()[IN][1]})
    assert fast.pop("by_model") == 0 < slow.pop("by_model")
    assert_same_state(fast, slow, "the op and the model")
