"""TEMP register-level tests (PS v1.4 section 27)."""
from emu.clock import us
from emu.soc.nrf52832 import Nrf52832


def test_measurement_after_36us_in_quarter_degrees():
    soc = Nrf52832()
    t = soc.peripherals["temp"]
    t.write(0x304, 1)                       # INTENSET DATARDY
    t.write(0x000, 1)                       # START
    soc.clock.advance_to(us(36) - 1)
    assert t.read(0x100) == 0
    soc.clock.advance_to(us(36))
    assert t.read(0x100) == 1 and (soc.cpu.irq_level >> 12) & 1
    assert t.read(0x508) == 100             # 25 degC
    t.write(0x100, 0)
    assert not (soc.cpu.irq_level >> 12) & 1
    t.set_temperature(-3.25)
    t.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + us(36))
    assert t.read(0x508) == (-13) & 0xFFFFFFFF


def test_stop_abandons_and_calibration_resets():
    soc = Nrf52832()
    t = soc.peripherals["temp"]
    t.write(0x000, 1)
    t.write(0x004, 1)
    soc.clock.advance_to(us(100))
    assert t.read(0x100) == 0
    assert t.read(0x520) == 0x326 and t.read(0x544) == 0x3FBE and t.read(0x570) == 0x50
