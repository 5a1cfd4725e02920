"""RTC register-level tests (PS v1.4 section 24): lazy counter, compare,
overflow, TICK, EVTEN vs INTEN routing, interrupt line as a level."""
from emu.clock import LFCLK_TICKS as LF
from emu.soc.nrf52832 import Nrf52832
from helpers.periph import soc_with

RTC1 = 0x40011000
START, STOP, CLEAR, TRIGOVRFLW = 0x000, 0x004, 0x008, 0x00C
EV_TICK, EV_OVRFLW, EV_CMP0 = 0x100, 0x104, 0x140
INTENSET, INTENCLR, EVTENSET = 0x304, 0x308, 0x344
COUNTER, PRESCALER, CC0 = 0x504, 0x508, 0x540


def irq_line(soc, irq):
    return bool((soc.cpu.irq_level >> irq) & 1)


def test_counter_exact_at_lfclk_edges():
    soc, rtc = soc_with("rtc1")
    rtc.write(START, 1)
    soc.clock.advance_to(5 * LF - 1)      # one tick short of the 5th edge
    assert rtc.read(COUNTER) == 4
    soc.clock.advance_to(5 * LF)          # exactly on it
    assert rtc.read(COUNTER) == 5
    rtc.write(STOP, 1)
    soc.clock.advance_to(100 * LF)
    assert rtc.read(COUNTER) == 5         # stopped: holds


def test_prescaler_and_ignored_while_running():
    soc, rtc = soc_with("rtc1")
    rtc.write(PRESCALER, 7)               # 4096 Hz
    rtc.write(START, 1)
    rtc.write(PRESCALER, 0)               # ignored while running
    assert rtc.read(PRESCALER) == 7
    soc.clock.advance_to(8 * LF * 3)
    assert rtc.read(COUNTER) == 3


def test_compare_event_and_level_interrupt():
    soc, rtc = soc_with("rtc1")
    rtc.write(CC0 + 4, 10)                # CC[1]
    rtc.write(START, 1)
    soc.clock.advance_to(10 * LF - 1)     # one tick short of CC[1]
    assert rtc.read(EV_CMP0 + 4) == 0
    soc.clock.advance_to(10 * LF)
    assert rtc.read(EV_CMP0 + 4) == 1
    assert not irq_line(soc, 17)          # INTEN off
    rtc.write(INTENSET, 1 << 17)          # enabling after the event raises the line
    assert irq_line(soc, 17)
    rtc.write(EV_CMP0 + 4, 0)             # clearing the event drops it
    assert not irq_line(soc, 17)
    rtc.write(INTENCLR, 1 << 17)
    assert rtc.read(INTENSET) == 0


def test_cc_written_n_plus_1_does_not_fire_but_n_plus_2_does():
    soc, rtc = soc_with("rtc1")
    rtc.write(START, 1)
    soc.clock.advance_to(3 * LF + 5)
    assert rtc.read(COUNTER) == 3
    rtc.write(CC0, 4)                     # N+1: may not fire -> modelled as not
    rtc.write(CC0 + 4, 5)                 # N+2: fires
    soc.clock.advance_to(6 * LF)
    assert rtc.read(EV_CMP0) == 0
    assert rtc.read(EV_CMP0 + 4) == 1


def test_overflow_via_trigovrflw():
    soc, rtc = soc_with("rtc1")
    rtc.write(START, 1)
    rtc.write(TRIGOVRFLW, 1)
    assert rtc.read(COUNTER) == 0xFFFFF0
    soc.clock.advance_to(16 * LF - 1)
    assert rtc.read(EV_OVRFLW) == 0
    soc.clock.advance_to(16 * LF)
    assert rtc.read(COUNTER) == 0
    assert rtc.read(EV_OVRFLW) == 1


def test_tick_only_scheduled_when_enabled():
    soc, rtc = soc_with("rtc1")
    rtc.write(START, 1)
    soc.clock.advance_to(3 * LF)
    assert rtc.read(EV_TICK) == 0
    assert len(soc.clock.pending_events()) >= 1
    # only the overflow/compare event is pending, far away
    assert min(w for w, n in soc.clock.pending_events() if "rtc1" in n) > 1000 * LF
    rtc.write(INTENSET, 1)
    soc.clock.advance_to(4 * LF)
    assert rtc.read(EV_TICK) == 1
    assert irq_line(soc, 17)


def test_evten_gates_ppi_routing():
    soc, rtc = soc_with("rtc1")
    seen = []
    rtc.event_listeners.append(lambda p, off: seen.append(off))
    rtc.write(CC0, 2)
    rtc.write(CC0 + 4, 3)
    rtc.write(EVTENSET, 1 << 16)          # only COMPARE[0] to PPI
    rtc.write(START, 1)
    soc.clock.advance_to(4 * LF)
    assert rtc.read(EV_CMP0) == 1 and rtc.read(EV_CMP0 + 4) == 1
    assert seen == [EV_CMP0]


def test_clear_restarts_count():
    soc, rtc = soc_with("rtc1")
    rtc.write(CC0, 3)
    rtc.write(START, 1)
    soc.clock.advance_to(2 * LF + 100)
    rtc.write(CLEAR, 1)
    assert rtc.read(COUNTER) == 0
    soc.clock.advance_to(4 * LF)
    assert rtc.read(COUNTER) == 2 and rtc.read(EV_CMP0) == 0
    soc.clock.advance_to(5 * LF)
    assert rtc.read(EV_CMP0) == 1


def test_rtc0_has_three_cc():
    soc = Nrf52832()
    assert soc.peripherals["rtc0"].num_cc == 3
    assert soc.peripherals["rtc2"].num_cc == 4


def test_firmware_rtc_and_timer_interrupts(run_firmware):
    from conftest import assert_firmware_passed
    m, r = run_firmware("periph_rtc_timer", ms=100, board="nrf52832")
    assert_firmware_passed(m, r, min_passes=7)


def test_cc_written_n_plus_1_fires_when_the_increment_is_far_away():
    """With PRESCALER=4095 (8 Hz) the increment to N+1 is ~125 ms after the
    write, far outside the two-LFCLK-cycle sync window: COMPARE fires.  This
    is how MicroPython's periodic RTCounter re-arms (CC = COUNTER + 1)."""
    soc, rtc = soc_with("rtc1")
    rtc.write(PRESCALER, 4095)
    rtc.write(CC0, 1)
    rtc.write(START, 1)
    period = 4096 * LF
    soc.clock.advance_to(period)          # COUNTER becomes 1: COMPARE[0]
    assert rtc.read(COUNTER) == 1 and rtc.read(EV_CMP0) == 1
    soc.clock.advance_to(period + 40 * 512)   # the handler runs ~40 us later
    rtc.write(EV_CMP0, 0)
    rtc.write(CC0, rtc.read(COUNTER) + 1)     # N+1
    soc.clock.advance_to(2 * period - 1)
    assert rtc.read(EV_CMP0) == 0
    soc.clock.advance_to(2 * period)
    assert rtc.read(EV_CMP0) == 1


def test_cc_written_n_plus_1_just_before_a_slow_increment_is_missed():
    """Same prescaler, but the write lands one LFCLK cycle before the
    increment: inside the sync window, so the worst case (missed) applies."""
    soc, rtc = soc_with("rtc1")
    rtc.write(PRESCALER, 4095)
    rtc.write(START, 1)
    period = 4096 * LF
    soc.clock.advance_to(2 * period - LF)     # COUNTER 1, increments in 1 LFCLK cycle
    assert rtc.read(COUNTER) == 1
    rtc.write(CC0, 2)
    soc.clock.advance_to(3 * period)
    assert rtc.read(EV_CMP0) == 0


def test_intenclr_drops_and_intenset_raises_the_line_with_the_event_pending():
    soc, rtc = soc_with("rtc1")
    rtc.write(START, 1)
    rtc.write(TRIGOVRFLW, 1)
    soc.clock.advance_to(16 * LF)
    assert rtc.read(EV_OVRFLW) == 1
    for n in range(4):                    # COUNTER 0 matched CC[n] = 0 too
        rtc.write(EV_CMP0 + 4 * n, 0)
    rtc.write(INTENSET, 1 << 17)          # another source: line stays low
    assert not irq_line(soc, 17)
    rtc.write(INTENSET, 1 << 1)           # OVRFLW: high
    assert irq_line(soc, 17)
    rtc.write(INTENCLR, 1 << 17)          # clearing an unrelated bit keeps it
    assert irq_line(soc, 17)
    rtc.write(INTENCLR, 1 << 1)
    assert not irq_line(soc, 17) and rtc.read(INTENSET) == 0


def test_intenset_tick_starts_tick_events():
    soc, rtc = soc_with("rtc1")
    rtc.write(START, 1)
    soc.clock.advance_to(3 * LF)
    rtc.write(INTENSET, 1)                # TICK on: an event every LFCLK edge
    soc.clock.advance_to(4 * LF)
    assert rtc.read(EV_TICK) == 1 and irq_line(soc, 11 + 6)
    rtc.write(INTENCLR, 1)
    rtc.write(EV_TICK, 0)
    soc.clock.advance_to(8 * LF)
    assert rtc.read(EV_TICK) == 0
