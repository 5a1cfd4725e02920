"""GPIO OUT, OUTSET and OUTCLR writes as bus ops (Gpio.write_op: a W_VALUE
op into OUT whose ``slow_bits`` hand any write that changes a pin to the
model, which drives it; the register table declares them ``changes_only``
with OUT as the ``target`` of OUTSET/OUTCLR).

firmware/tests/gpio_out_ops.c sets, clears and rewrites two output pins
whose input buffers are connected, 1000 of its writes changing nothing; it
passes natively and in pure Python in the same cycles, accesses and RAM,
and the pins' listeners hear the same 8 changes (after the
two PIN_CNF writes that make them outputs).  The companion's op never
bails: the first OUTSET is stored in OUT but drives no pin.  micro:bit
MicroPython scrolling text (its display scan: about 11 000 of its 20 000
OUTSET/OUTCLR writes change nothing) gives the same cycles, accesses, RAM
and LEDs with the ops and with the model's Python."""
import pytest

from conftest import assert_firmware_passed, assert_same_state, both_ways, run_fw
from emu.peripherals.gpio import Gpio
from emu.soc.ops import W_VALUE, Op
from helpers.microbit import microbit_typed

FW = "gpio_out_ops"
OUTSET, OUTCLR = (0x50000000, 0x508), (0x50000000, 0x50C)


def _run(fw, pure=False):
    """The firmware's run, and the changes of pins 20 and 21 it made."""
    changes = []

    def listen(m):
        for n in (20, 21):
            m.soc.pins[n].on_change(lambda level, n=n: changes.append((n, level)))
    m, r = run_fw(fw(FW), 20, pure_python=pure, setup=listen)
    return m, r, changes


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_out_writes(fw, pure):
    m, r, changes = _run(fw, pure)
    assert_firmware_passed(m, r, min_passes=11)
    # the PIN_CNF writes make them outputs (low), then the 8 changes
    assert changes == [(20, False), (21, False), (20, True), (20, False), (21, True),
                       (20, True), (21, False), (20, False), (21, True), (21, False)]
    st = m.soc.bus.access_stats()
    if not pure:
        assert st[OUTSET][2] >= 500 and st[OUTCLR][2] >= 500   # by the op
        assert st[OUTSET][3] == 3 and st[OUTCLR][3] == 4         # the changes: the model


def test_native_and_python_agree(fw):
    changes = {}

    def start(pure):
        m, _r, changes[pure] = _run(fw, pure)
        return m
    runs = both_ways((False, True), start, extra=lambda m, pure: {"changes": changes[pure]})
    assert_same_state(runs[0], runs[1], "the GPIO OUT ops and the model")


def test_an_op_that_never_bails_is_seen(fw, monkeypatch):
    """Companion: OUTSET/OUTCLR ops without the bail on a change store OUT
    and drive nothing: the firmware's IN stays low."""
    def never_bails(self, offset):
        op = Gpio.__dict__["write_op"].__wrapped__(self, offset)
        if op is not None and op.kind == W_VALUE:
            return Op(W_VALUE, self, op.args, mask=op.mask)
        return op
    orig = Gpio.write_op
    never_bails.__defaults__ = None
    monkeypatch.setattr(Gpio, "write_op",
                        lambda self, off: _strip(orig(self, off), self))
    m, r, changes = _run(fw)
    assert "FAIL OUTSET drives A high" in m.console_text()
    assert changes == [(20, False), (21, False)] and r.exit_code != 0


def _strip(op, p):
    if op is not None and op.kind == W_VALUE:
        return Op(W_VALUE, p, op.args, mask=op.mask)
    return op


def test_microbit_display_scan_agrees(monkeypatch):
    def start(ops):
        if not ops:
            orig = Gpio.write_op
            monkeypatch.setattr(Gpio, "write_op", lambda self, off: None
                                if 0x504 <= off <= 0x50C else orig(self, off))
        # the scroll, then the blank display's scan
        m = microbit_typed(b"display.scroll('HI')\r", 3000)
        by_op = m.soc.bus.access_stats()[OUTSET][2]
        assert (by_op > 100) == ops
        return m
    runs = both_ways((True, False), start,
                     extra=lambda m, ops: {"leds": m.board.display.bits()})
    assert_same_state(runs[0], runs[1], "the GPIO OUT ops and the model")
