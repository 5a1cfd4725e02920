"""PPI register-level tests (PS v1.4 section 21): channels, groups, forks,
fixed channels, and tasks triggered through the CPU-write path."""
import pytest

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


def _random_ppi_writes(soc, seed, n=3000):
    """CHEN/CHENSET/CHENCLR/CHG enable-disable among a few channel sets (as
    NimBLE does), with endpoint writes now and then; after each write the
    routing map the next event uses (an endpoint write leaves it to be built
    then) must be the one built from the registers."""
    import random
    from emu.peripherals.ppi import Ppi
    rnd = random.Random(seed)
    ppi = soc.peripheral_at(PPI)
    sets = [rnd.getrandbits(20) for _ in range(4)] + [0]
    w(soc, PPI + 0x800, sets[0])                         # CHG[0]
    for _ in range(n):
        k = rnd.random()
        if k < 0.03:
            ch = rnd.randrange(20)
            reg = rnd.choice([0x510 + 8 * ch, 0x514 + 8 * ch, 0x910 + 4 * ch])
            w(soc, PPI + reg, rnd.choice([0, TIMER0 + 0x140, RTC0 + 0x140, EGU0 + 4 * ch,
                                          TIMER1 + 0x144]))
        elif k < 0.4:
            w(soc, PPI + 0x504, rnd.choice(sets))        # CHENSET
        elif k < 0.8:
            w(soc, PPI + 0x508, rnd.choice(sets))        # CHENCLR
        elif k < 0.9:
            w(soc, PPI + 0x500, rnd.choice(sets))        # CHEN
        else:
            w(soc, PPI + rnd.choice([0x000, 0x004]), 1)  # TASKS_CHG[0].EN / DIS
        ppi.routes_from(0)                                # as the next event would
        assert ppi._map == Ppi._build(ppi, ppi.values[0x500])
    return ppi


def test_map_memo_matches_a_fresh_build():
    """The routing map kept per CHEN value (Ppi._maps) is always the one a
    full rebuild gives, and it is used."""
    ppi = _random_ppi_writes(Nrf52832(), seed=1)
    assert 1 < len(ppi._maps) <= 64


def test_map_memo_not_cleared_on_endpoint_write_is_detected(monkeypatch):
    """Companion: a memo kept across CH[n].EEP/TEP/FORK writes is stale."""
    import pytest
    from emu.peripherals import ppi as ppi_mod
    monkeypatch.setattr(ppi_mod.Ppi, "_wr_map", lambda self, new, old: self._rebuild())
    with pytest.raises(AssertionError):
        _random_ppi_writes(Nrf52832(), seed=1)


def _ppi_run(fw, name, ms, lazy, pure, monkeypatch):
    from emu import Machine
    from emu.peripherals.ppi import Ppi
    with monkeypatch.context() as mp:
        mp.setattr(Ppi, "lazy_chen", lazy)
        m = Machine(fw(name), board="nrf52832", pure_python=pure)
        r = m.run(ms=ms)
    stats = m.soc.bus.access_stats()
    chenset = stats.get((PPI, 0x504), (0, 0, 0, 0))
    return m, r, chenset, (r.reason, m.cpu.cycles, m.clock.now, m.console_text())


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
@pytest.mark.parametrize("name,ms", [("periph_ppi", 50)])
def test_chenset_chenclr_as_bus_ops_change_nothing(fw, monkeypatch, name, ms, pure):
    """CHENSET/CHENCLR carried out by the bus (bits of CHEN set and cleared
    without the model; the routing follows CHEN when an event fires) give
    the same machine as the model's writes, natively and in pure Python.
    (tests/peripherals/test_radio_conn.py compares a whole connection too.)"""
    from conftest import assert_firmware_passed
    m, r, chenset, fast = _ppi_run(fw, name, ms, True, pure, monkeypatch)
    _m, _r, slow_chenset, slow = _ppi_run(fw, name, ms, False, pure, monkeypatch)
    assert_firmware_passed(m, r)
    assert fast == slow
    assert chenset[2] > 0 and chenset[3] == 0           # op writes, no model write
    assert slow_chenset[2] == 0 and slow_chenset[3] > 0


def test_chen_bus_ops_without_the_refresh_are_detected(fw, monkeypatch):
    """Companion: routing that does not follow CHEN changed by the ops (the
    map of the last model write kept) breaks the PPI chain."""
    from emu.peripherals.ppi import Ppi
    orig = Ppi._on_event

    def stale(self, periph, offset):
        self._chen = self.values[0x500]      # pretend the map is current
        return orig(self, periph, offset)
    monkeypatch.setattr(Ppi, "_on_event", stale)
    m, r, _chenset, _fp = _ppi_run(fw, "periph_ppi", 50, True, False, monkeypatch)
    assert r.reason != "exit" or r.exit_code != 0 or "FAIL" in m.console_text()
