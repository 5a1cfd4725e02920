"""WDT CONFIG.SLEEP / CONFIG.HALT (PS v1.4 25.3): the watchdog pauses while the
CPU sleeps (SLEEP=0) or the debugger halts it (HALT=0), and resumes with the
ticks it had left."""
import pytest
from conftest import assert_firmware_passed

from emu import Machine
from emu.clock import LFCLK_TICKS, ms
from helpers.periph import soc_with

WDT = 0x40010000
START, TIMEOUT, RUNSTATUS, CRV, RREN, CONFIG = 0x000, 0x100, 0x400, 0x504, 0x508, 0x50C
RR0, RELOAD = 0x600, 0x6E524635
PERIOD = 32768 * LFCLK_TICKS                   # CRV = 32767: exactly one second


def start(config: int, at: int = 0):
    soc, wdt = soc_with("wdt")
    resets = []
    soc.reset_request_handler = resets.append
    soc.clock.advance_to(at)
    wdt.write(CRV, 32767)
    wdt.write(CONFIG, config)
    wdt.write(START, 1)
    return soc, soc.cpu, wdt, resets


def test_sleep0_pauses_while_cpu_sleeps():
    t0 = ms(3)
    soc, cpu, wdt, _ = start(config=0x8, at=t0)   # SLEEP=0 (pause), HALT=1 (run)
    clock = soc.clock
    clock.advance_to(t0 + ms(250))
    cpu.sleeping = True                        # WFI at t0 + 250 ms
    assert wdt.paused
    clock.advance_to(t0 + ms(10250))           # ten seconds asleep: no timeout
    assert wdt.read(TIMEOUT) == 0
    cpu.sleeping = False                       # woken at t0 + 10.25 s: 750 ms left
    assert not wdt.paused
    due = t0 + ms(10250) + PERIOD - ms(250)
    clock.advance_to(due - 1)                  # one tick short of the timeout
    assert wdt.read(TIMEOUT) == 0
    clock.advance_to(due)
    assert wdt.read(TIMEOUT) == 1


def test_counter_frozen_while_paused():
    soc, cpu, wdt, _ = start(config=0x0)
    soc.clock.advance_to(ms(100))
    cpu.sleeping = True
    c = wdt.counter
    soc.clock.advance_to(ms(900))
    assert wdt.counter == c
    cpu.sleeping = False
    soc.clock.advance_to(ms(900) + 10 * LFCLK_TICKS)
    assert wdt.counter == c - 10


def test_sleep1_keeps_counting_in_sleep():
    soc, cpu, wdt, resets = start(config=0x1)  # reset value of SLEEP: run
    soc.clock.advance_to(ms(250))
    cpu.sleeping = True
    assert not wdt.paused
    soc.clock.advance_to(PERIOD - 1)
    assert wdt.read(TIMEOUT) == 0
    soc.clock.advance_to(PERIOD)
    assert wdt.read(TIMEOUT) == 1
    soc.clock.advance_to(PERIOD + 2 * LFCLK_TICKS)   # reset two LFCLK periods later
    assert resets == ["dog"]


def test_several_sleeps_add_up():
    soc, cpu, wdt, _ = start(config=0x0)
    clock = soc.clock
    awake = 0
    t = 0
    for _ in range(4):                         # 200 ms awake, 300 ms asleep, four times
        t += ms(200)
        awake += ms(200)
        clock.advance_to(t)
        cpu.sleeping = True
        t += ms(300)
        clock.advance_to(t)
        cpu.sleeping = False
    assert wdt.read(TIMEOUT) == 0
    due = t + PERIOD - awake                   # 800 ms used: 200 ms left
    clock.advance_to(due - 1)
    assert wdt.read(TIMEOUT) == 0
    clock.advance_to(due)
    assert wdt.read(TIMEOUT) == 1


def test_reload_while_asleep_then_full_period_after_wake():
    """A reload while paused (RR written by a debugger while the CPU sleeps)
    loads the full period, which starts counting when the CPU wakes."""
    soc, cpu, wdt, _ = start(config=0x0)
    soc.clock.advance_to(ms(600))
    cpu.sleeping = True
    wdt.write(RR0, RELOAD)                     # RREN reset value: RR[0] enabled
    soc.clock.advance_to(ms(5000))
    cpu.sleeping = False
    soc.clock.advance_to(ms(5000) + PERIOD - 1)
    assert wdt.read(TIMEOUT) == 0
    soc.clock.advance_to(ms(5000) + PERIOD)
    assert wdt.read(TIMEOUT) == 1


def test_halt0_pauses_while_debugger_halts_and_combines_with_sleep():
    soc, cpu, wdt, _ = start(config=0x0)       # SLEEP=0 and HALT=0
    clock = soc.clock
    clock.advance_to(ms(100))
    wdt.set_debug_halted(True)                 # 100 ms used
    clock.advance_to(ms(200))
    cpu.sleeping = True                        # asleep and halted
    wdt.set_debug_halted(False)                # still asleep: stays paused
    clock.advance_to(ms(300))
    assert wdt.paused
    cpu.sleeping = False                       # resumes at 300 ms with 900 ms left
    clock.advance_to(ms(300) + PERIOD - ms(100) - 1)
    assert wdt.read(TIMEOUT) == 0
    clock.advance_to(ms(300) + PERIOD - ms(100))
    assert wdt.read(TIMEOUT) == 1


def test_halt1_runs_while_debugger_halts():
    soc, cpu, wdt, _ = start(config=0x1 | 0x8)
    wdt.set_debug_halted(True)
    soc.clock.advance_to(PERIOD)
    assert wdt.read(TIMEOUT) == 1


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_wfi_in_firmware_pauses_watchdog(fw, pure):
    """periph_wdt_sleep: a 10 ms watchdog with SLEEP=0 survives 50 ms of WFI,
    then bites during a 30 ms busy wait (RESETREAS.DOG on the next boot);
    natively the CPU's sleep reaches the WDT through WdtCore.cpu_sleep (C),
    in pure Python through Wdt._cpu_sleep: the same cycles."""
    runs = []
    for p in (pure, not pure):
        m = Machine(fw("periph_wdt_sleep"), board="nrf52832", pure_python=p)
        wdt = m.soc.peripherals["wdt"]
        listener = wdt._core.cpu_sleep if not p else wdt._cpu_sleep
        assert listener in m.cpu.on_sleep
        r = m.run(ms=300)
        assert_firmware_passed(m, r, min_passes=5)
        assert m.resets == 1
        runs.append((m.cpu.cycles, m.clock.now, m.console_text()))
    assert runs[0] == runs[1]


def test_without_pause_the_sleeping_firmware_is_reset(fw, monkeypatch):
    """The same firmware fails if the WDT ignores CPU sleep: it is reset while
    asleep, before it gets to its checks."""
    from emu.peripherals import wdt as wdt_mod
    monkeypatch.setattr(wdt_mod.Wdt, "_cpu_sleep", lambda self, asleep: None)
    m = Machine(fw("periph_wdt_sleep"), board="nrf52832")
    r = m.run(ms=300)
    assert "FAIL" in m.console_text() or r.exit_code != 0
