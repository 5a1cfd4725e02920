"""The TIMER's compare event, its re-planning, CPU writes of CC and the
CAPTURE tasks in C (emu.peripherals._cores.TimerCore, used by
emu.peripherals.timer.Timer when its Cells are native): the same steps as
Timer._on_compare, _rearm, the CC write and task_CAPTURE; a compare with a
shortcut, a PPI task or the energy model watching calls the model's fire()
(counted as handed).

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

from conftest import (assert_firmware_passed, assert_same_state, both_ways, image_both_ways,
                      flip, parity_state, run_fw)
from emu import Machine
from emu.peripherals import timer
from helpers.microbit import MICROBIT_HEX, microbit_typed

FW = "periph_timer_core"


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
    runs = both_ways((False, True), lambda pure: run_fw(fw(FW), 100, pure_python=pure)[0])
    assert_same_state(runs[0], runs[1], "the core and the model")


def test_core_with_the_wrong_width_is_seen(fw, monkeypatch):
    """Companion: a core that takes every TIMER for 8 bits wide captures and
    compares on the low byte of the 16-bit count: the ticker's handler finds
    the time far from its compare."""
    from emu.peripherals import _cores
    real = _cores.TimerCore

    def narrow(model, ev, clock, cells, num_cc, ci, hf16, max_mask, ppi_fn):
        return real(model, ev, clock, cells, num_cc, ci, hf16, 0xFF, ppi_fn)
    monkeypatch.setattr(_cores, "TimerCore", narrow)
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
    def start(on):
        monkeypatch.setattr(timer.Timer, "native_core", on)
        return microbit_typed(b"for i in range(3000): pass\r\rdisplay.show('A')\r", 600)

    def leds_and_work(m, on):
        cores = [m.soc.timer0._core, m.soc.timer1._core]
        return {"leds": m.board.display.bits(),
                "work": [(c.fired, c.captures) for c in cores] if on else None}
    on, off = both_ways((True, False), start, extra=leds_and_work)
    (f0, _), (f1, cap1) = on.pop("work")
    assert off.pop("work") is None
    assert f0 > 50 and f1 > 50 and cap1 > 500          # the core did the ticker
    assert on["leds"] != ["00000"] * 5                 # 'A' is up
    assert_same_state(on, off, "the TIMER core and the model")


def test_core_changes_nothing_on_infinitime(monkeypatch):
    """InfiniTime's first 3 emulated s (NimBLE's TIMER0 with its compares
    routed through PPI to the RADIO, heard by a scanner): the same with the
    core on or off."""
    runs = image_both_ways("infinitime", 3.0, flip(monkeypatch, timer.Timer, "native_core"))
    assert runs[0]["cycles"] > 60_000_000
    assert_same_state(runs[0], runs[1], "the TIMER core and the model")


def test_random_register_traffic_agrees_with_the_model():
    """Differential: two nRF52832s, one whose TIMERs have the core (its CC
    writes and CAPTUREs through the core's bus-op entry points, its compares
    through the core's event) and one in pure Python, take the same 3000
    random steps on TIMER1 and TIMER3: CC writes (often near the count),
    CAPTUREs, START/STOP/CLEAR/COUNT/SHUTDOWN, MODE/BITMODE/PRESCALER
    changes, INTENSET/INTENCLR, SHORTS, event clears, and time moving by a
    few ticks to a few counts.  After every step the registers, events, the
    counter's base, the interrupt lines and the planned edges agree."""
    import random

    from emu.soc.nrf52832 import Nrf52832
    rng = random.Random(2912)
    native, pure = Nrf52832(), Nrf52832(force_python_counter=True)
    names = ("timer1", "timer3")
    for n in names:
        assert getattr(native, n)._core is not None and getattr(pure, n)._core is None

    def state(soc):
        out = {}
        for n in names:
            t = getattr(soc, n)
            out[n] = (dict(t.values), dict(t.events), t.inten, t.shorts, int(t.running),
                      t.base_time, t.base_value, int(t.irq_line_level), t._ev.when)
        return out, soc.cpu.irq_level, soc.clock.now

    used = {"fired": 0, "captures": 0}
    for step in range(3000):
        n = rng.choice(names)
        tn, tp = getattr(native, n), getattr(pure, n)
        num_cc = tn.num_cc
        r = rng.random()
        if r < 0.25:                                  # CC[k] near the count, or anything
            k = rng.randrange(num_cc)
            cur = tp.counter
            v = rng.choice([cur + rng.randrange(-2, 6), rng.randrange(1 << 32), 0, 0xFFFF])
            v &= 0xFFFFFFFF
            tn._core.write_cc(0x540 + 4 * k, v)
            tp.write(0x540 + 4 * k, v)
        elif r < 0.40:                                # CAPTURE[k], or a write of 0
            k = rng.randrange(num_cc)
            v = rng.choice([1, 1, 1, 0, 0xFFFFFFFF])
            tn._core.capture(0x040 + 4 * k, v)
            tp.write(0x040 + 4 * k, v)
        elif r < 0.55:                                # a task
            off = rng.choice([0x000, 0x000, 0x004, 0x008, 0x00C, 0x010])
            tn.write(off, 1)
            tp.write(off, 1)
        elif r < 0.62:                                # MODE / BITMODE / PRESCALER
            off, v = rng.choice([(0x504, rng.choice([0, 0, 1, 2])), (0x508, rng.randrange(4)),
                                 (0x510, rng.choice([0, 1, 4, 9, 12]))])
            tn.write(off, v)
            tp.write(off, v)
        elif r < 0.68:                                # interrupts on/off
            off = rng.choice([0x304, 0x308])
            v = rng.randrange(1 << num_cc) << 16
            tn.write(off, v)
            tp.write(off, v)
        elif r < 0.72:                                # shortcuts (the model's compares)
            v = rng.choice([0, 0, 0, 1, 1 << 8, rng.randrange(1 << 14)])
            tn.write(0x200, v)
            tp.write(0x200, v)
        elif r < 0.80:                                # clear an event
            off = 0x140 + 4 * rng.randrange(num_cc)
            tn.write(off, 0)
            tp.write(off, 0)
        else:                                         # time moves
            dt = rng.choice([1, 7, 32, 32 * 16, 32 * 16 * 5, rng.randrange(1, 40000)])
            to = native.clock.now + dt
            native.clock.advance_to(to)
            pure.clock.advance_to(to)
        assert state(native) == state(pure), f"step {step}"
    for n in names:
        core = getattr(native, n)._core
        used["fired"] += core.fired
        used["captures"] += core.captures
    assert used["fired"] > 30 and used["captures"] > 300, used
