"""TIMER register-level tests (PS v1.4 section 23)."""
from emu.clock import HF16_TICKS as T16
from helpers.periph import soc_with

START, STOP, COUNT, CLEAR, SHUTDOWN, CAPTURE0 = 0x000, 0x004, 0x008, 0x00C, 0x010, 0x040
EV_CMP0 = 0x140
SHORTS, INTENSET = 0x200, 0x304
MODE, BITMODE, PRESCALER, CC0 = 0x504, 0x508, 0x510, 0x540


def test_capture_exact_at_tick():
    soc, t = soc_with("timer0")
    t.write(PRESCALER, 0)                  # 16 MHz: 32 ticks per count
    t.write(BITMODE, 3)
    t.write(START, 1)
    soc.clock.advance_to(1000 * T16 - 1)   # one tick short of count 1000
    t.write(CAPTURE0, 1)
    assert t.read(CC0) == 999
    soc.clock.advance_to(1000 * T16)
    t.write(CAPTURE0 + 4, 1)
    assert t.read(CC0 + 4) == 1000


def test_compare_interrupt_level_and_short_clear():
    soc, t = soc_with("timer1")
    t.write(PRESCALER, 4)                  # 1 MHz
    t.write(BITMODE, 3)
    t.write(CC0, 100)
    t.write(SHORTS, 1 << 0)                # COMPARE0_CLEAR
    t.write(INTENSET, 1 << 16)
    t.write(START, 1)
    tpc = T16 << 4
    soc.clock.advance_to(100 * tpc - 1)
    assert t.read(EV_CMP0) == 0 and not (soc.cpu.irq_level >> 9) & 1
    soc.clock.advance_to(100 * tpc)
    assert t.read(EV_CMP0) == 1 and (soc.cpu.irq_level >> 9) & 1
    t.write(EV_CMP0, 0)
    assert not (soc.cpu.irq_level >> 9) & 1
    # periodic: next compare exactly 100 counts later
    soc.clock.advance_to(200 * tpc - 1)
    assert t.read(EV_CMP0) == 0
    soc.clock.advance_to(200 * tpc)
    assert t.read(EV_CMP0) == 1


def test_short_stop():
    soc, t = soc_with("timer0")
    t.write(PRESCALER, 0)
    t.write(CC0 + 8, 10)
    t.write(SHORTS, 1 << (8 + 2))          # COMPARE2_STOP
    t.write(START, 1)
    soc.clock.advance_to(50 * T16)
    t.write(CAPTURE0, 1)
    assert t.read(EV_CMP0 + 8) == 1
    assert t.read(CC0) == 10               # stopped at the compare


def test_bitmode_8_wraps():
    soc, t = soc_with("timer0")
    t.write(PRESCALER, 0)
    t.write(BITMODE, 1)                    # 8 bit
    t.write(START, 1)
    soc.clock.advance_to(300 * T16)
    t.write(CAPTURE0, 1)
    assert t.read(CC0) == 300 - 256


def test_counter_mode():
    soc, t = soc_with("timer3")
    assert t.num_cc == 6
    t.write(MODE, 1)
    t.write(CC0 + 20, 3)                   # CC[5]
    t.write(START, 1)
    for _ in range(3):
        assert t.read(EV_CMP0 + 20) == 0
        t.write(COUNT, 1)
    assert t.read(EV_CMP0 + 20) == 1
    t.write(CAPTURE0, 1)
    assert t.read(CC0) == 3
    t.write(SHUTDOWN, 1)
    t.write(CAPTURE0, 1)
    assert t.read(CC0) == 0


def test_prescaler_reset_value():
    soc, t = soc_with("timer0")
    assert t.read(PRESCALER) == 4


def test_firmware_compares_one_count_apart(run_firmware):
    """firmware/tests/periph_timer_adjacent_cc.c: CC[0] one to three counts
    after CC[1], polled from every phase: both fire, natively and in pure
    Python, in the same cycles."""
    from conftest import assert_firmware_passed
    cycles = set()
    for pure in (False, True):
        m, r = run_firmware("periph_timer_adjacent_cc", ms=50, pure_python=pure)
        assert_firmware_passed(m, r, min_passes=3)
        cycles.add(m.cpu.cycles)
    assert len(cycles) == 1


def test_next_compare_planned_from_now_is_missed(run_firmware, monkeypatch):
    """Companion: planning the next compare from the time the event ran (a
    few cycles after its tick) instead of the tick takes CC[0] as a wrap away
    when the counter already equals it: a compare is missed."""
    from emu.peripherals.timer import Timer
    rearm = Timer._rearm
    monkeypatch.setattr(Timer, "_rearm", lambda self, at=-1: rearm(self))
    m, r = run_firmware("periph_timer_adjacent_cc", ms=50)
    assert r.reason == "exit" and r.exit_code != 0
    assert "FAIL no compare one count after another was missed" in m.console_text()
