"""CLOCK/POWER register-level tests (PS v1.4 sections 17-18)."""
from emu.clock import ms, us
from emu.soc.nrf52832 import Nrf52832
from helpers.periph import soc_with

CP = 0x40000000
HFCLKSTART, LFCLKSTART, LFCLKSTOP, CAL, CTSTART = 0x000, 0x008, 0x00C, 0x010, 0x014
EV_HF, EV_LF, EV_DONE, EV_CTTO = 0x100, 0x104, 0x10C, 0x110
INTENSET = 0x304
HFCLKRUN, HFCLKSTAT, LFCLKRUN, LFCLKSTAT, LFCLKSRCCOPY = 0x408, 0x40C, 0x414, 0x418, 0x41C
LFCLKSRC, CTIV = 0x518, 0x538
RESETREAS, GPREGRET, GPREGRET2 = 0x400, 0x51C, 0x520


def test_hfclk_start_delay_and_irq0_level():
    soc, cp = soc_with("clock_power")
    cp.write(HFCLKSTART, 1)
    assert cp.read(HFCLKRUN) == 1 and cp.read(HFCLKSTAT) == 0
    soc.clock.advance_to(us(360) - 1)
    assert cp.read(EV_HF) == 0
    soc.clock.advance_to(us(360))
    assert cp.read(EV_HF) == 1 and cp.read(HFCLKSTAT) == 0x10001
    assert not soc.cpu.irq_level & 1
    cp.write(INTENSET, 1)                  # enable after the event: line rises
    assert soc.cpu.irq_level & 1
    cp.write(EV_HF, 0)
    assert not soc.cpu.irq_level & 1


def test_lfclk_source_copy_and_startup_per_source():
    soc, cp = soc_with("clock_power")
    cp.write(LFCLKSRC, 1)                  # LFXO
    cp.write(LFCLKSTART, 1)
    cp.write(LFCLKSRC, 0)                  # changing SRC later does not change the copy
    assert cp.read(LFCLKSRCCOPY) == 1 and cp.read(LFCLKRUN) == 1
    soc.clock.advance_to(ms(249))
    assert cp.read(EV_LF) == 0
    soc.clock.advance_to(ms(250))
    assert cp.read(EV_LF) == 1 and cp.read(LFCLKSTAT) == 0x10001
    cp.write(LFCLKSTOP, 1)
    assert cp.read(LFCLKSTAT) == 0 and cp.read(LFCLKRUN) == 0
    cp.write(EV_LF, 0)
    cp.write(LFCLKSTART, 1)                # LFRC now: 600 us
    soc.clock.advance_to(soc.clock.now + us(600))
    assert cp.read(EV_LF) == 1 and cp.read(LFCLKSTAT) == 0x10000


def test_cal_and_ct_timer():
    soc, cp = soc_with("clock_power")
    cp.write(CTIV, 2)                      # 0.5 s
    cp.write(CTSTART, 1)
    cp.write(CAL, 1)
    soc.clock.advance_to(ms(16))
    assert cp.read(EV_DONE) == 1 and cp.read(EV_CTTO) == 0
    soc.clock.advance_to(ms(500))
    assert cp.read(EV_CTTO) == 1


def test_resetreas_and_gpregret_across_resets():
    soc, cp = soc_with("clock_power")
    assert cp.read(RESETREAS) == 0
    cp.write(GPREGRET, 0x1B5)               # 8 bits
    cp.write(GPREGRET2, 0x42)
    assert cp.read(GPREGRET) == 0xB5
    cp.system_reset("sysresetreq")          # soft reset keeps GPREGRET
    assert cp.read(RESETREAS) == 1 << 2
    assert cp.read(GPREGRET) == 0xB5 and cp.read(GPREGRET2) == 0x42
    cp.system_reset("lockup")
    assert cp.read(RESETREAS) == (1 << 2) | (1 << 3)   # cumulative
    cp.write(RESETREAS, 1 << 2)              # W1C
    assert cp.read(RESETREAS) == 1 << 3
    cp.system_reset("dog")                   # watchdog clears GPREGRET
    assert cp.read(RESETREAS) == (1 << 3) | (1 << 1)
    assert cp.read(GPREGRET) == 0
    cp.system_reset("pin")
    cp.system_reset("off")
    assert cp.read(RESETREAS) == (1 << 3) | (1 << 1) | 1 | (1 << 16)
    cp.power_on_reset()
    assert cp.read(RESETREAS) == 0


def test_ram_power_set_clr_and_systemoff_flag():
    soc, cp = soc_with("clock_power")
    assert cp.read(0x900) == 0xFFFF and cp.read(0x910) == 0xFFFF
    cp.write(0x908, 0x3)                     # RAM[0].POWERCLR S0/S1 power
    assert cp.read(0x900) == 0xFFFC
    cp.write(0x904, 0x1)
    assert cp.read(0x900) == 0xFFFD
    assert not cp.system_off
    resets = []
    soc.reset_request_handler = resets.append
    cp.wake_from_off()
    assert resets == []                      # not in System OFF: nothing
    cp.write(0x500, 1)
    assert cp.system_off
    cp.wake_from_off()
    assert resets == ["off"]


def test_pofcon_keeps_the_enable_bit_and_threshold():
    soc = Nrf52832()
    power = soc.peripherals["clock_power"]
    power.write(0x510, 0x1F)              # POF enabled, THRESHOLD V28
    assert power.read(0x510) == 0x1F
    power.write(0x510, 0xFFFFFFFF)
    assert power.read(0x510) == 0x1F      # no other bits on the nRF52832


EV_POFWARN, POFCON = 0x108, 0x510


def test_pofwarn_fires_when_vdd_falls_below_the_threshold():
    soc, cp = soc_with("clock_power")
    cp.write(INTENSET, 1 << 2)
    cp.write(POFCON, 1 | (13 << 1))          # POF, V26 = 2.6 V
    cp.set_supply(2.7)
    assert cp.read(EV_POFWARN) == 0
    cp.set_supply(2.6)                        # at the threshold: not below
    assert cp.read(EV_POFWARN) == 0
    cp.set_supply(2.59)
    assert cp.read(EV_POFWARN) == 1 and soc.cpu.irq_level & 1
    cp.write(EV_POFWARN, 0)
    cp.set_supply(2.4)                        # still below: no new edge
    assert cp.read(EV_POFWARN) == 0
    cp.set_supply(3.0)
    cp.set_supply(2.5)                        # up and down again: warns again
    assert cp.read(EV_POFWARN) == 1


def test_pofwarn_off_reserved_and_enabled_below():
    soc, cp = soc_with("clock_power")
    cp.set_supply(2.0)
    cp.write(POFCON, 0 | (15 << 1))          # threshold, POF off: nothing
    assert cp.read(EV_POFWARN) == 0
    cp.write(POFCON, 1 | (2 << 1))           # POF on, a reserved threshold: nothing
    assert cp.read(EV_POFWARN) == 0
    cp.write(POFCON, 1 | (4 << 1))           # 1.7 V: VDD 2.0 is above
    assert cp.read(EV_POFWARN) == 0
    cp.write(POFCON, 1 | (15 << 1))          # raised to 2.8 V with VDD below: warns
    assert cp.read(EV_POFWARN) == 1


def test_firmware_saves_its_state_on_pofwarn_as_the_battery_falls(fw):
    """firmware/tests/power_pofwarn.c on the PineTime: VDD follows the cell
    through the regulator; the warning comes only once VDD is below 2.8 V."""
    from emu import Machine
    from emu.board.pinetime import vdd_from_battery
    m = Machine(fw("power_pofwarn"), board="pinetime", flash_file=None)
    assert m.run_until(lambda: "armed" in m.console_text(), timeout_ms=100)
    for volts in (3.9, 3.3, 3.0, 2.9):          # VDD 3.3 .. 2.8: not below 2.8 V
        m.board.battery.voltage = volts
        m.run(ms=5)
        assert "POFWARN" not in m.console_text(), volts
    assert vdd_from_battery(2.9) == 2.8
    m.board.battery.voltage = 2.85
    r = m.run(ms=5)
    assert r.reason == "exit" and r.exit_code == 0, m.console_text()
    assert m.console_text().count("POFWARN") == 2      # the edge, and POF re-enabled below


def test_firmware_without_the_comparator_never_hears(fw, monkeypatch):
    """The companion: a POWER that ignores its supply leaves the firmware
    waiting for a warning that never comes."""
    from emu import Machine
    from emu.peripherals.clock_power import ClockPower
    monkeypatch.setattr(ClockPower, "set_supply", lambda self, v: None)
    m = Machine(fw("power_pofwarn"), board="pinetime", flash_file=None)
    m.run(ms=5)
    m.board.battery.voltage = 2.5
    r = m.run(ms=20)
    assert r.reason != "exit" and "POFWARN" not in m.console_text()
