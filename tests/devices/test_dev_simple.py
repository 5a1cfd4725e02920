"""Motor, backlight, button, battery on plain pins."""
from emu.clock import TICKS_PER_MS, Clock
from emu.devices.simple import Backlight, Battery, Button, VibrationMotor
from emu.signals import Pin


def test_motor_timeline_follows_active_low_pin():
    clock = Clock()
    p = Pin("P0.16", 16)
    m = VibrationMotor(clock, p)
    p.drive("gpio", True)
    assert not m.on
    clock.advance_to(100)
    p.drive("gpio", False)
    clock.advance_to(40 * TICKS_PER_MS + 100)
    p.drive("gpio", True)
    assert m.timeline == [(100, True), (40 * TICKS_PER_MS + 100, False)]
    assert m.on_time_ticks() == 40 * TICKS_PER_MS


def test_backlight_levels():
    pins = [Pin(n) for n in ("14", "22", "23")]
    b = Backlight(*pins)
    assert b.level == 0
    for p in pins:
        p.drive("gpio", True)
    assert b.level == 0
    pins[0].drive("gpio", False)
    assert b.level == 1
    pins[1].drive("gpio", False)
    assert b.level == 2
    pins[2].drive("gpio", False)
    assert b.level == 3


def test_button_needs_enable_and_hold_is_timed():
    clock = Clock()
    btn, en = Pin("P0.13", 13), Pin("P0.15", 15)
    b = Button(clock, btn, en)
    b.press()
    assert b.pressed and not btn.level           # BUTTON_EN not driven
    en.drive("gpio", True)
    assert btn.level
    en.drive("gpio", False)
    assert not btn.level
    en.drive("gpio", True)
    b.release()
    assert not btn.level
    b.hold(500, delay_ms=10)
    clock.advance_to(10 * TICKS_PER_MS - 1)
    assert not btn.level
    clock.advance_to(10 * TICKS_PER_MS)
    assert btn.level
    clock.advance_to(510 * TICKS_PER_MS - 1)
    assert btn.level
    clock.advance_to(510 * TICKS_PER_MS)
    assert not btn.level and not b.pressed


def test_battery_pins_and_saadc_input():
    class FakeSaadc:
        def __init__(self):
            self.inputs = {}

        def set_input(self, ain, volts):
            self.inputs[ain] = volts
    chg, pwr, adc = Pin("P0.12", 12), Pin("P0.19", 19), FakeSaadc()
    bat = Battery(chg, pwr, saadc=adc, voltage=3.8)
    assert adc.inputs[7] == 1.9
    assert chg.level and pwr.level                 # inactive: high
    bat.charging = True
    bat.power_present = True
    assert not chg.level and not pwr.level
    bat.voltage = 4.2
    assert adc.inputs[7] == 2.1 and bat.voltage == 4.2


def test_motor_runs_while_a_pwm_keeps_the_pin_low_part_time():
    clock = Clock()
    p = Pin("P0.16", 16)
    duty = [None]
    m = VibrationMotor(clock, p, pwm_duty=lambda: duty[0])
    p.drive("gpio", True)
    assert not m.on
    clock.advance_to(50)
    duty[0] = 0.75                       # high 75 %: low a quarter of each period
    p.drive("pwm0", True)                # majority level: high
    assert m.on and m.timeline == [(50, True)]
    clock.advance_to(90)
    duty[0] = None
    p.drive("pwm0", None)
    assert not m.on and m.timeline[-1] == (90, False)
