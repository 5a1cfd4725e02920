"""PPI register-level tests (PS v1.4 section 21): channels, groups, forks,
fixed channels, and tasks triggered through the CPU-write path."""
from emu.clock import HF16_TICKS as T16, LFCLK_TICKS as LF
from emu.soc.nrf52832 import Nrf52832

PPI = 0x4001F000
TIMER0, TIMER1, RTC0, EGU0 = 0x40008000, 0x40009000, 0x4000B000, 0x40014000


def w(soc, addr, v):
    soc.peripheral_at(addr).write(addr & 0xFFF, v)


def r(soc, addr):
    return soc.peripheral_at(addr).read(addr & 0xFFF)


def start_timer(soc, base, cc):
    w(soc, base + 0x510, 0)         # 16 MHz
    w(soc, base + 0x540, cc)
    w(soc, base + 0x200, 1)         # COMPARE0_CLEAR
    w(soc, base + 0x000, 1)


def test_channel_routes_event_to_task_and_fork():
    soc = Nrf52832()
    w(soc, PPI + 0x510 + 8 * 3, TIMER0 + 0x140)     # CH[3].EEP = TIMER0 COMPARE[0]
    w(soc, PPI + 0x514 + 8 * 3, EGU0 + 4 * 2)       # CH[3].TEP = EGU0 TRIGGER[2]
    w(soc, PPI + 0x910 + 4 * 3, EGU0 + 4 * 7)       # FORK[3].TEP = EGU0 TRIGGER[7]
    start_timer(soc, TIMER0, 100)
    soc.clock.advance_to(100 * T16)
    assert r(soc, EGU0 + 0x108) == 0                # channel not enabled yet
    w(soc, PPI + 0x504, 1 << 3)                     # CHENSET
    assert r(soc, PPI + 0x500) == 1 << 3
    soc.clock.advance_to(200 * T16)
    assert r(soc, EGU0 + 0x108) == 1
    assert r(soc, EGU0 + 0x11C) == 1
    w(soc, PPI + 0x508, 1 << 3)                     # CHENCLR
    w(soc, EGU0 + 0x108, 0)
    soc.clock.advance_to(300 * T16)
    assert r(soc, EGU0 + 0x108) == 0


def test_groups_enable_disable_via_tasks_and_ppi():
    soc = Nrf52832()
    w(soc, PPI + 0x800 + 4 * 2, 0b1010)             # CHG[2] = channels 1, 3
    w(soc, PPI + 8 * 2, 1)                          # TASKS_CHG[2].EN
    assert r(soc, PPI + 0x500) == 0b1010
    # a channel disabling its own group when EGU0 TRIGGERED[0] fires
    w(soc, PPI + 0x510 + 8 * 1, EGU0 + 0x100)
    w(soc, PPI + 0x514 + 8 * 1, PPI + 8 * 2 + 4)    # TASKS_CHG[2].DIS
    w(soc, EGU0, 1)                                 # TASKS_TRIGGER[0] (CPU write path)
    assert r(soc, PPI + 0x500) == 0


def test_fixed_channel_rtc0_starts_timer0():
    soc = Nrf52832()
    w(soc, RTC0 + 0x540, 2)                         # CC[0]
    w(soc, RTC0 + 0x344, 1 << 16)                   # EVTENSET COMPARE0 (routes to PPI)
    w(soc, PPI + 0x504, 1 << 31)                    # CH31: RTC0 COMPARE[0] -> TIMER0 START
    assert soc.peripherals["ppi"].endpoints(31) == (RTC0 + 0x140, TIMER0)
    w(soc, TIMER0 + 0x510, 0)
    w(soc, RTC0, 1)
    soc.clock.advance_to(2 * LF)
    assert soc.peripherals["timer0"].running            # started by PPI
    soc.clock.advance_to(2 * LF + 500 * T16)
    w(soc, TIMER0 + 0x040, 1)                       # CAPTURE[0]
    assert r(soc, TIMER0 + 0x540) == 500


def test_rtc_event_without_evten_not_routed():
    soc = Nrf52832()
    w(soc, RTC0 + 0x540, 2)
    w(soc, PPI + 0x504, 1 << 31)
    w(soc, RTC0, 1)
    soc.clock.advance_to(3 * LF)
    assert r(soc, RTC0 + 0x140) == 1
    assert not soc.peripherals["timer0"].running


def test_firmware_ppi_chain_toggles_pin_without_cpu(fw):
    from emu import Machine
    from conftest import assert_firmware_passed
    m = Machine(fw("periph_ppi"), board="nrf52832")
    edges = []
    pin = m.soc.pins[20]

    def on_change(level):
        if not edges or edges[-1][1] != level:
            edges.append((m.clock.now, level))
    edges.append((0, pin.level))
    pin.on_change(on_change)
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=2)
    toggles = edges[1:]
    assert len(toggles) == 20
    gaps = {b[0] - a[0] for a, b in zip(toggles, toggles[1:])}
    assert gaps == {50 * 512}              # exactly 50 us apart
