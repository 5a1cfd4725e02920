"""An MMIO access inside a CPU slice sees time up to one block ahead of the
scheduler.  A register write then (INTENSET, CC, ...) must not make a counter
skip the compare edge that is already due.  Real wasp-os hung in
mp_hal_delay_ms when RTC1 did (found booting the image)."""
from emu.clock import LFCLK_TICKS as LF
from emu.soc.nrf52832 import Nrf52832


def test_rtc_compare_due_but_unprocessed_still_fires():
    soc = Nrf52832()
    rtc = soc.peripherals["rtc1"]
    rtc.write(0x000, 1)                 # START
    soc.clock.advance_to(10 * LF)
    rtc.write(0x540, rtc.read(0x504) + 5)   # CC[0] = COUNTER + 5
    edge = rtc._ev.when
    soc.clock.now = edge + 100          # the CPU is mid-slice, past the edge
    rtc.write(0x304, 0x2)               # INTENSET OVRFLW: re-arms the counter
    soc.clock.run_due()
    assert rtc.read(0x140) == 1         # COMPARE[0] happened on its edge


def test_timer_compare_due_but_unprocessed_still_fires():
    soc = Nrf52832()
    t = soc.peripherals["timer1"]
    t.write(0x510, 4)                   # PRESCALER: 1 MHz
    t.write(0x508, 3)                   # BITMODE 32
    t.write(0x540, 50)                  # CC[0]
    t.write(0x000, 1)                   # START
    edge = t._ev.when
    soc.clock.now = edge + 10
    t.write(0x544, 1000)                # CC[1] written while CC[0] is due
    soc.clock.run_due()
    assert t.read(0x140) == 1
