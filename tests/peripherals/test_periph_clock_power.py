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
