"""WDT tests (PS v1.4 section 25): register level and a chip reset through a
Machine running firmware/tests/periph_wdt.c."""
from emu.clock import LFCLK_TICKS as LF
from emu.soc.nrf52832 import Nrf52832
from conftest import (assert_firmware_passed, assert_same_state, both_ways, image_both_ways,
                      flip, run_fw)

RELOAD = 0x6E524635


def test_timeout_event_then_reset_two_lfclk_later():
    soc = Nrf52832()
    wdt = soc.peripherals["wdt"]
    resets = []
    soc.reset_request_handler = lambda why: resets.append((why, soc.clock.now))
    wdt.write(0x504, 15)                   # CRV: 16 LFCLK periods
    wdt.write(0x304, 1)                    # INTENSET TIMEOUT
    wdt.write(0x000, 1)
    soc.clock.advance_to(8 * LF)
    wdt.write(0x600, RELOAD)               # reload at t=8
    soc.clock.advance_to(24 * LF - 1)      # one tick short of the timeout
    assert wdt.read(0x100) == 0
    soc.clock.advance_to(24 * LF)
    assert wdt.read(0x100) == 1 and (soc.cpu.irq_level >> 16) & 1
    assert resets == []
    soc.clock.advance_to(26 * LF)
    assert resets == [("dog", 26 * LF)]


def test_cannot_be_stopped_or_reconfigured_and_rren():
    soc = Nrf52832()
    wdt = soc.peripherals["wdt"]
    assert wdt.read(0x504) == 0xFFFFFFFF and wdt.read(0x508) == 1 and wdt.read(0x50C) == 1
    wdt.write(0x508, 0b101)                # RR[0], RR[2]
    wdt.write(0x504, 99)
    wdt.write(0x000, 1)
    wdt.write(0x504, 5)
    wdt.write(0x508, 1)
    assert wdt.read(0x504) == 99 and wdt.read(0x508) == 0b101
    assert wdt.read(0x404) == 0b101
    wdt.write(0x600, 0x12345678)           # wrong value: nothing
    assert wdt.read(0x404) == 0b101
    wdt.write(0x600, RELOAD)
    assert wdt.read(0x404) == 0b100
    soc.clock.advance_to(50 * LF)
    wdt.write(0x608, RELOAD)               # all enabled RR written: reload
    assert wdt.read(0x404) == 0b101
    soc.clock.advance_to(149 * LF)
    assert wdt.read(0x100) == 0
    soc.clock.advance_to(150 * LF)
    assert wdt.read(0x100) == 1
    wdt.system_reset("sysresetreq")        # soft reset does not stop it
    assert wdt.read(0x400) == 1
    wdt.system_reset("dog")
    assert wdt.read(0x400) == 0


def test_debug_halt_pauses_when_config_halt_0():
    soc = Nrf52832()
    wdt = soc.peripherals["wdt"]
    wdt.write(0x504, 15)
    wdt.write(0x000, 1)
    soc.clock.advance_to(10 * LF)
    wdt.set_debug_halted(True)
    soc.clock.advance_to(100 * LF)
    assert wdt.read(0x100) == 0
    wdt.set_debug_halted(False)
    soc.clock.advance_to(106 * LF)
    assert wdt.read(0x100) == 1


def test_watchdog_resets_machine(run_firmware):
    m, r = run_firmware("periph_wdt", ms=200, board="nrf52832")
    assert_firmware_passed(m, r, min_passes=9)
    assert m.resets == 1
    assert "PASS resetreas dog only" in m.console_text()
    assert m.soc.peripherals["clock_power"].read(0x400) == 0   # firmware cleared it


def test_busy_loop_reloads_keep_one_clock_event():
    """Firmware that feeds the dog in a busy loop (wasp-os waiting for a
    Bluetooth notification to go out) writes RR[0] millions of times a
    second: a reload moves the deadline without scheduling a clock event
    each time (it did, and the emulator ran at a tenth of real time), and
    the timeout still comes one period after the last reload."""
    soc = Nrf52832()
    wdt = soc.peripherals["wdt"]
    resets = []
    soc.reset_request_handler = lambda why: resets.append((why, soc.clock.now))
    wdt.write(0x504, 15)
    wdt.write(0x000, 1)
    seq = soc.clock._seq                      # counts every scheduling of an event
    for i in range(20000):
        soc.clock.advance_to(i)               # ticks, well inside one LFCLK period
        wdt.write(0x600, RELOAD)
    assert soc.clock._seq - seq <= 1
    last = 19999
    soc.clock.advance_to(last + 16 * LF - 1)  # past the first deadline: moved, not fired
    assert wdt.read(0x100) == 0 and resets == []
    soc.clock.advance_to(last + 16 * LF)
    assert wdt.read(0x100) == 1
    soc.clock.advance_to(last + 18 * LF)
    assert resets == [("dog", last + 18 * LF)]


# -- the reload in C (the FEED op, emu/soc/_ops.c) ----------------------------------

def _rr0(m) -> tuple:
    """RR[0]'s (op writes, model writes): the FEED op's in C, the model's write()."""
    st = m.soc.bus.access_stats()[(0x40010000, 0x600)]
    return st[2], st[3]


def test_fed_the_common_way_natively_and_in_python(fw):
    """firmware/tests/periph_wdt_feed.c: RR[0] with RREN's reset value, fed
    every ~5 ms, then writes that reload nothing: it bites 10 ms after the
    last right feed.  The reloads natively in C, the same cycles, registers,
    RAM and accesses as the model's in pure Python."""
    def start(pure):
        m, r = run_fw(fw("periph_wdt_feed"), 200, pure_python=pure)
        assert_firmware_passed(m, r, min_passes=4)
        assert m.resets == 1
        core = m.soc.wdt._core
        assert (core is None) == pure
        if not pure:
            ops, model = _rr0(m)
            assert ops > 10 and model == 0     # every RR[0] write in C, the wrong ones too
        return m
    runs = both_ways((False, True), start)
    assert_same_state(runs[0], runs[1], "the core and the model")


def test_feed_with_the_wrong_period_is_seen(fw, monkeypatch):
    """Companion: the FEED op's period latched four times too long at START
    moves the bite 40 ms after the last right feed: the firmware sees it
    late."""
    from emu import Machine
    from emu.peripherals import wdt
    start = wdt.Wdt.task_START

    def long_period(self):
        start(self)
        self.feed_period *= 4
    monkeypatch.setattr(wdt.Wdt, "task_START", long_period)
    m = Machine(fw("periph_wdt_feed"), board="nrf52832")
    m.run(ms=200)
    assert "FAIL bit 10 ms after the last right feed" in m.console_text()


def test_a_replaced_write_turns_the_op_off(fw, monkeypatch):
    from emu import Machine
    from emu.peripherals import wdt
    write = wdt.Wdt.write
    monkeypatch.setattr(wdt.Wdt, "write", lambda self, *a: write(self, *a))
    m = Machine(fw("periph_wdt_feed"), board="nrf52832")
    assert_firmware_passed(m, m.run(ms=200), min_passes=4)
    assert _rr0(m)[0] == 0


def test_core_changes_nothing_on_wasp_os(monkeypatch):
    """wasp-os feeds the dog at every 1 kHz tick: its boot and idle face to
    6 emulated s with the reload in C or in the model, the same cycles,
    accesses per register, pending events, screen, NOR, air and RAM."""
    from emu.peripherals import wdt
    runs = image_both_ways("wasp-os", 6.0, flip(monkeypatch, wdt.Wdt, "native_core"),
                           scanner=False,
                           extra=lambda m, on: {"fed": _rr0(m)})
    assert runs[0].pop("fed")[0] > 1500 and runs[1].pop("fed")[0] == 0
    assert_same_state(runs[0], runs[1], "the WDT core and the model")
