"""POWER System OFF (PS v1.4 17.1.2): the core stops, time passes, GPIO DETECT
(or a reset) wakes the chip with a reset that sets RESETREAS.OFF, keeps
GPREGRET and clears RAM sections that were not retained."""
from conftest import assert_firmware_passed

from emu import Machine
from emu.clock import NEVER, TICKS_PER_MS, ms
from emu.cpu.cortexm import StopReason
from helpers.periph import soc_with

POWER, GPIO, RTC1, WDT = 0x40000000, 0x50000000, 0x40011000, 0x40010000
SYSTEMOFF, RESETREAS, GPREGRET = 0x500, 0x400, 0x51C
RAM_POWERSET = lambda n: 0x904 + 16 * n   # noqa: E731
PIN_CNF = lambda n: 0x700 + 4 * n         # noqa: E731
SENSE_HIGH, SENSE_LOW, PULLDOWN = 2 << 16, 3 << 16, 1 << 2
SPIN, RETAINED, LOST = 0x20008004, 0x20008000, 0x2000A000


# -- register level ------------------------------------------------------
def soc_with_resets():
    soc, clock_power, gpio = soc_with("clock_power", "gpio")
    resets = []
    soc.reset_request_handler = resets.append
    return soc, clock_power, gpio, resets


def test_systemoff_powers_core_off_and_stops_peripherals():
    soc, cp, gpio, resets = soc_with_resets()
    rtc, wdt = soc.peripherals["rtc1"], soc.peripherals["wdt"]
    rtc.write(0x000, 1)                        # RTC1 START
    wdt.write(0x000, 1)                        # WDT START
    gpio.write(PIN_CNF(5), 1)                  # P0.05 output ...
    gpio.write(0x508, 1 << 5)                  # ... high
    soc.clock.advance_to(ms(1))
    assert rtc.running and wdt.running and not soc.cpu.powered_off
    cp.write(SYSTEMOFF, 1)
    assert cp.system_off and soc.cpu.powered_off
    assert not rtc.running and not wdt.running          # no clocks in System OFF
    assert not soc.clock.events["wdt.timeout"].pending
    assert soc.pins[5].level and gpio.pin_cnf(5) == 1     # GPIO keeps its configuration
    assert resets == []                                   # nothing wakes it by itself
    soc.clock.advance_to(ms(1) + 300 * 1000 * TICKS_PER_MS)  # 300 s: the WDT would have fired
    assert resets == []


def test_detect_rising_in_system_off_requests_off_reset():
    soc, cp, gpio, resets = soc_with_resets()
    gpio.write(PIN_CNF(13), PULLDOWN | SENSE_HIGH)
    cp.write(SYSTEMOFF, 1)
    assert resets == []
    soc.pins[13].drive("button", True)          # the board presses the button
    assert resets == ["off"]


def test_detect_already_high_wakes_at_once():
    soc, cp, gpio, resets = soc_with_resets()
    gpio.write(PIN_CNF(7), SENSE_LOW)          # pin floats low: condition met, DETECT high
    assert gpio.detect
    cp.write(SYSTEMOFF, 1)
    assert resets == ["off"]


def test_detect_in_system_on_does_not_reset():
    soc, cp, gpio, resets = soc_with_resets()
    gpio.write(PIN_CNF(13), PULLDOWN | SENSE_HIGH)
    soc.pins[13].drive("button", True)
    assert gpio.detect and resets == []


def test_wake_reset_clears_only_unretained_ram_sections():
    soc, cp, gpio, resets = soc_with_resets()
    cpu = soc.cpu
    for addr in (0x20000000, 0x20001000, 0x20002000, 0x20003000, 0x2000F000):
        cpu.write32(addr, 0xA5A50000 | (addr >> 12))
    cp.write(RAM_POWERSET(0), 1 << 17)          # RAM[0] section 1 (0x20001000) retained
    cp.write(RAM_POWERSET(1), 1 << 16)          # RAM[1] section 0 (0x20002000) retained
    cp.write(RAM_POWERSET(7), 1 << 17)          # RAM[7] section 1 (0x2000F000) retained
    cp.write(GPREGRET, 0x77)
    cp.write(SYSTEMOFF, 1)
    cp.system_reset("off")
    assert cpu.read32(0x20000000) == 0                          # RAM[0] S0: lost
    assert cpu.read32(0x20001000) == 0xA5A50000 | 0x20001        # RAM[0] S1: kept
    assert cpu.read32(0x20002000) == 0xA5A50000 | 0x20002        # RAM[1] S0: kept
    assert cpu.read32(0x20003000) == 0                          # RAM[1] S1: lost
    assert cpu.read32(0x2000F000) == 0xA5A50000 | 0x2000F
    assert cp.read(RESETREAS) == 1 << 16 and cp.read(GPREGRET) == 0x77
    assert not cp.system_off


def test_gpio_is_kept_through_the_wakeup_reset_only():
    soc, cp, gpio, resets = soc_with_resets()
    gpio.write(PIN_CNF(3), 1)                  # P0.03 output high
    gpio.write(0x508, 1 << 3)
    gpio.write(PIN_CNF(13), PULLDOWN | SENSE_HIGH)
    cp.write(SYSTEMOFF, 1)
    soc.pins[13].drive("button", True)
    assert resets == ["off"]
    gpio.system_reset("off")
    assert gpio.pin_cnf(13) == PULLDOWN | SENSE_HIGH and gpio.read(0x520) == 1 << 13
    assert soc.pins[3].level                   # the output kept driving
    gpio.system_reset("pin")
    assert gpio.pin_cnf(13) == 2 and gpio.read(0x520) == 0 and not soc.pins[3].driven


def test_reset_in_system_on_keeps_ram():
    soc, cp, gpio, resets = soc_with_resets()
    soc.cpu.write32(0x20004000, 0x12345678)
    cp.system_reset("sysresetreq")
    assert soc.cpu.read32(0x20004000) == 0x12345678


# -- firmware level ------------------------------------------------------
def test_button_wakes_pinetime_from_system_off(fw):
    m = Machine(fw("periph_systemoff"), flash_file=None)
    r = m.run(ms=20)
    assert r.reason == StopReason.DEADLINE and r.system_off and m.system_off
    assert "entering System OFF" in m.console_text()
    cycles, spin = m.cpu.cycles, m.cpu.read32(SPIN)
    t0 = m.clock.now
    r = m.run(ms=500)                          # half a second of System OFF
    assert m.clock.now - t0 == ms(500)         # time passes ...
    assert m.cpu.cycles == cycles              # ... with no instruction executed
    assert m.cpu.read32(SPIN) == spin == 0
    assert m.cpu.read32(LOST) == 0xDEADBEEF    # RAM is only lost on the wake-up
    assert r.system_off and m.resets == 0
    m.board.button.press()
    r = m.run(ms=100)
    assert_firmware_passed(m, r, min_passes=6)
    assert m.resets == 1 and not m.system_off
    assert m.console_text().count("boot 1") == 1


def test_bare_board_system_off_with_nothing_scheduled(fw):
    """Nothing can wake it and no deadline: run() returns 'off' at once."""
    m = Machine(fw("periph_systemoff"), board="nrf52832")
    r = m.run(until_tick=NEVER)
    assert r.reason == StopReason.OFF and r.ok and m.system_off
    # the test bench drives the sense pin: the chip wakes and reports
    m.soc.pins[13].drive("test", True)
    r = m.run(ms=10)
    assert_firmware_passed(m, r, min_passes=6)


def test_pin_reset_ends_system_off(fw):
    m = Machine(fw("periph_systemoff"), board="nrf52832")
    m.run(ms=5)
    assert m.system_off
    m.system_reset("pin")                      # the reset pin, or a debugger
    assert not m.system_off
    assert m.soc.peripherals["clock_power"].read(RESETREAS) == 1    # RESETPIN, not OFF
    assert m.cpu.read32(LOST) == 0             # RAM was off: lost all the same
    r = m.run(ms=5)                            # boot 1 again: not woken by DETECT
    assert m.console_text().count("boot 1") == 2 and r.system_off


def test_interrupts_do_not_wake_a_powered_off_core(fw):
    """Only a reset ends System OFF: a pending, enabled interrupt is not taken."""
    m = Machine(fw("periph_systemoff"), board="nrf52832")
    m.run(ms=5)
    cpu = m.cpu
    assert m.system_off
    cycles, pc = cpu.cycles, cpu.pc
    cpu.irq_enabled |= 1 << 6                  # GPIOTE, enabled and asserted
    cpu.set_irq_level(6, True)
    r = m.run(ms=20)
    assert r.system_off and cpu.cycles == cycles and cpu.pc == pc
    assert cpu.ipsr == 0 and m.resets == 0
