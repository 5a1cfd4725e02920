"""The TIMER's compare event, its re-planning, CPU writes of CC and the
CAPTURE tasks in C (emu.soc._mmio.TimerCore, used by
emu.peripherals.timer.Timer when its Cells are native): the same steps as
Timer._on_compare, _rearm, the CC write and task_CAPTURE; a compare with a
shortcut, a PPI task or the energy model watching goes to the model.

firmware/tests/periph_timer_core.c (a periodic compare re-armed from its
handler with a CAPTURE there, two CCs on one edge, COMPARE0_CLEAR, a
compare routed to PPI, an 8-bit wrap, a stopped timer's CAPTURE) passes
natively and in pure Python in the same cycles, accesses per register,
registers and RAM; the companion gives the core the wrong counter width
and sees the ticker read the time far from its compare.  A snapshot taken between ticks
restores into a machine whose core goes on the same.  Debian's micro:bit
MicroPython (its ticker: TIMER1 compares and ~1000 CAPTUREs an emulated
second) and, when the image is present, InfiniTime (NimBLE's TIMER0, its
compares routed to the RADIO through PPI) give the same cycles, accesses
per register, RAM, display or screen, NOR and air with the core on or
off."""
import os

import pytest

from conftest import assert_firmware_passed, cached_image, parity_state
from emu import Machine
from emu.peripherals import timer

FW = "periph_timer_core"
MICROBIT_HEX = "/usr/share/firmware-microbit-micropython/firmware.hex"


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_timer_core_firmware_passes(fw, pure):
    m = Machine(fw(FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=100)
    assert_firmware_passed(m, r, min_passes=9)
    t1, t2, t3 = (m.soc.timer1._core, m.soc.timer2._core, m.soc.timer3._core)
    if pure:
        assert t1 is None and t2 is None and t3 is None
    else:
        assert t1.fired >= 20 and t1.captures >= 40      # the ticker and its reads in C
        assert t2.fired == 0 and t2.handed == 10         # COMPARE0_CLEAR: the model's
        assert t3.fired == 0 and t3.handed == 1          # routed to PPI: the model's
        st = m.soc.bus.access_stats()
        cc0 = st[(0x40009000, 0x540)]
        assert cc0[2] >= 20 and cc0[3] == 0              # CC[0] writes: all by the op


def test_native_and_python_agree(fw):
    runs = []
    for pure in (False, True):
        m = Machine(fw(FW), board="nrf52832", pure_python=pure)
        m.run(ms=100)
        runs.append(parity_state(m))
    for k in runs[0]:
        assert runs[0][k] == runs[1][k], f"{k} differs between the core and the model"


def test_core_with_the_wrong_width_is_seen(fw, monkeypatch):
    """Companion: a core that takes every TIMER for 8 bits wide captures and
    compares on the low byte of the 16-bit count: the ticker's handler finds
    the time far from its compare."""
    from emu.soc import _mmio
    real = _mmio.TimerCore

    def narrow(model, ev, clock, cells, num_cc, ci, hf16, max_mask, ppi_fn):
        return real(model, ev, clock, cells, num_cc, ci, hf16, 0xFF, ppi_fn)
    monkeypatch.setattr(_mmio, "TimerCore", narrow)
    m = Machine(fw(FW), board="nrf52832")
    r = m.run(ms=100)
    assert "FAIL the handler reads the time within a count" in m.console_text()
    assert r.exit_code != 0


def test_a_replaced_step_turns_the_core_off(fw, monkeypatch):
    """A test (or subclass) replacing one of the steps the core writes again
    gets the model's Python for all of them: the core would not see it."""
    rearm = timer.Timer._rearm
    monkeypatch.setattr(timer.Timer, "_rearm", lambda self, at=-1: rearm(self, at))
    m = Machine(fw(FW), board="nrf52832")
    assert m.soc.timer1._core is None
    assert_firmware_passed(m, m.run(ms=100), min_passes=9)


def test_snapshot_between_ticks_goes_on_the_same(fw, tmp_path):
    whole = Machine(fw(FW), board="nrf52832")
    whole.run(ms=100)
    m = Machine(fw(FW), board="nrf52832")
    m.run(us=300)
    assert m.soc.timer1._core.fired > 0
    path = str(tmp_path / "mid.snap")
    m.save_snapshot(path)
    r = Machine.from_snapshot(path)
    r.run(ms=100 - r.time * 1000)
    a, b = parity_state(whole), parity_state(r)
    for k in ("cycles", "console", "regs", "ram"):
        assert a[k] == b[k], f"{k} differs after the snapshot"


@pytest.mark.skipif(not os.path.exists(MICROBIT_HEX),
                    reason="Debian's firmware-microbit-micropython is not installed")
def test_core_changes_nothing_on_microbit_micropython(monkeypatch):
    """micro:bit MicroPython boots, runs a loop and scrolls text on its LEDs
    (TIMER1's ticker with a CAPTURE per ms, TIMER0's display timing): the
    same with the core on or off."""
    runs = []
    for on in (True, False):
        monkeypatch.setattr(timer.Timer, "native_core", on)
        m = Machine(MICROBIT_HEX, board="microbit")
        assert m.run_until(lambda: m.console.endswith(b">>> "), timeout_ms=5000)
        m.board.uart_send(b"for i in range(3000): pass\r\rdisplay.show('A')\r")
        m.run(ms=600)
        st = parity_state(m)
        st["leds"] = m.board.display.bits()
        cores = [m.soc.timer0._core, m.soc.timer1._core]
        st["work"] = [(c.fired, c.captures) for c in cores] if on else None
        runs.append(st)
    on, off = runs
    (f0, _), (f1, cap1) = on.pop("work")
    assert off.pop("work") is None
    assert f0 > 50 and f1 > 50 and cap1 > 500          # the core did the ticker
    assert on["leds"] != ["00000"] * 5                 # 'A' is up
    for k in on:
        assert on[k] == off[k], f"{k} differs between the TIMER core and the model"


def test_core_changes_nothing_on_infinitime(monkeypatch):
    """InfiniTime's first 3 emulated s (NimBLE's TIMER0 with its compares
    routed through PPI to the RADIO, heard by a scanner): the same with the
    core on or off."""
    from emu.phone.scanner import Scanner
    path = cached_image("PINETIME_EMU_INFINITIME_IMAGE", "infinitime/pinetime-app-*.out")
    runs = []
    for on in (True, False):
        monkeypatch.setattr(timer.Timer, "native_core", on)
        m = Machine(path, flash_file=None)
        Scanner(m.air)
        m.run(seconds=3.0)
        runs.append(parity_state(m, board=True))
    assert runs[0]["cycles"] > 60_000_000
    for k in runs[0]:
        assert runs[0][k] == runs[1][k], f"{k} differs between the TIMER core and the model"
