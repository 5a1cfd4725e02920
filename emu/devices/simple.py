"""Simple PineTime parts on GPIO pins: vibration motor, backlight, button, battery.

- VibrationMotor: on while its pin is driven low (active low, P0.16); the
  on/off timeline records (tick, on) at every change of the pin, whoever
  drives it (GPIO or PWM).
- Backlight: three active-low enables (P0.14 low, P0.22 mid, P0.23 high);
  level 0-3 is the highest enable driven low.
- Button: P0.13 reads high only while the button is pressed AND BUTTON_EN
  (P0.15) is driven high (the switch connects the two); released, the
  device does not drive P0.13 (the firmware's pull-down makes it read low).
  press/release/hold happen at exact emulated times (:class:`PushButton`,
  shared with the micro:bit's buttons).
- Battery: voltage fed to the SAADC on AIN7 through the board's 1:2
  divider (``saadc.set_input(7, volts / 2)``); CHARGING (P0.12) and
  POWER_PRESENT (P0.19) are driven low when active, high otherwise.

Not modelled: PWM dimming of the backlight
(level follows the static pin state), button bounce, battery discharge
curve and charger timing (voltage and flags are what the user sets).
"""
from __future__ import annotations

from typing import Optional

from emu import checks
from emu.clock import NEVER, TICKS_PER_MS
from emu.devices.timeline import Timeline


class VibrationMotor:
    """``pwm_duty()`` (optional) returns the high-time fraction a PWM output
    currently gives the pin, or None when no PWM drives it: a PWM that keeps
    the pin low for part of each period runs the motor."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_on", "name", "pwm_duty", "timeline")
    STRUCTURE = ("clock", "listeners", "pin")

    def __init__(self, clock, pin, name: str = "motor", pwm_duty=None):
        self.clock = clock
        self.pin = pin
        self.name = name
        self.pwm_duty = pwm_duty
        self.timeline: list = []          # [(tick, on)]
        self.listeners: list = []         # fn(on) at every change (emu/power.py)
        self._on = self._level_on()
        pin.on_change(self._changed)

    @property
    def on(self) -> bool:
        self._changed(self.pin.level)
        return self._on

    def _level_on(self) -> bool:
        duty = self.pwm_duty() if self.pwm_duty is not None else None
        if duty is not None:
            return duty < 1.0
        return self.pin.driven_low()

    def on_time_ticks(self, until: Optional[int] = None) -> int:
        """Total ticks spent on (up to ``until``, default now)."""
        until = self.clock.now if until is None else until
        total, since = 0, None
        for t, on in self.timeline:
            if on and since is None:
                since = t
            elif not on and since is not None:
                total += min(t, until) - since
                since = None
        if since is not None:
            total += max(0, until - since)
        return total

    def save_state(self) -> dict:
        return {"on": self._on, "timeline": list(self.timeline)}

    def load_state(self, st: dict) -> None:
        self._on = bool(st["on"])
        self.timeline = [tuple(e) for e in st["timeline"]]

    def _changed(self, _level: bool) -> None:
        on = self._level_on()
        if on != self._on:
            self._on = on
            self.timeline.append((self.clock.now, on))
            for fn in self.listeners:
                fn(on)


class Backlight:
    """Three active-low enables; ``level`` 0-3 is the highest one driven low.
    ``listeners`` (fn(level)) hear every change of the level (a recording
    takes a frame: a firmware that only blinks the backlight, as Zephyr's
    blinky on the PineTime, still shows it)."""

    def __init__(self, pin_low, pin_mid, pin_high, name: str = "backlight"):
        self.pins = (pin_low, pin_mid, pin_high)
        self.name = name
        self.listeners: list = []
        self._last = 0
        for p in self.pins:
            p.on_change(self._changed)

    def _changed(self, _level: bool) -> None:
        level = self.level
        if level != self._last:
            self._last = level
            for fn in self.listeners:
                fn(level)

    @property
    def level(self) -> int:
        lo, mid, hi = self.pins
        if hi.driven_low():
            return 3
        if mid.driven_low():
            return 2
        if lo.driven_low():
            return 1
        return 0

    def __call__(self) -> int:
        return self.level


def _delay(name: str, ms) -> float:
    """Milliseconds from now: a finite number >= 0 within the clock's range."""
    return checks.number(name, ms, 0, NEVER // 4 // TICKS_PER_MS)


class PushButton:
    """A push button scripted at exact emulated times; a subclass's
    :meth:`_update` drives its pin from :attr:`pressed`."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_pressed", "name")
    STRUCTURE = ("clock", "pin", "timeline")

    def __init__(self, clock, pin, name: str):
        self.clock = clock
        self.pin = pin
        self.name = name
        self._pressed = False
        self.timeline = Timeline(clock, f"{name}.input", owner=self)

    @property
    def pressed(self) -> bool:
        return self._pressed

    def press(self, delay_ms: float = 0) -> None:
        """Press ``delay_ms`` from now (TypeError if not a number, ValueError
        if negative or not finite)."""
        self._at(_delay("delay_ms", delay_ms), True)

    def release(self, delay_ms: float = 0) -> None:
        """Release ``delay_ms`` from now (the errors of :meth:`press`)."""
        self._at(_delay("delay_ms", delay_ms), False)

    def hold(self, ms: float, delay_ms: float = 0) -> None:
        """Press at now+delay, release ``ms`` later (exact emulated times).
        TypeError if ``ms`` or ``delay_ms`` is not a number, ValueError if
        either is negative or not finite."""
        ms, delay_ms = _delay("ms", ms), _delay("delay_ms", delay_ms)
        self._at(delay_ms, True)
        self._at(delay_ms + ms, False)

    def _at(self, delay_ms: float, pressed: bool) -> None:
        if delay_ms <= 0 and not self.timeline.pending:
            self._set(pressed)
        else:
            self.timeline.call_after(int(round(delay_ms * TICKS_PER_MS)), "_set", pressed)

    def save_state(self) -> dict:
        return {"pressed": self._pressed, "timeline": self.timeline.save_state()}

    def load_state(self, st: dict) -> None:
        self._pressed = bool(st["pressed"])
        self.timeline.load_state(st["timeline"])
        self._update()

    def _set(self, pressed: bool) -> None:
        self._pressed = pressed
        self._update()

    def _update(self) -> None:
        raise NotImplementedError


class Button(PushButton):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("enable_pin",)
    def __init__(self, clock, pin, enable_pin, name: str = "button"):
        super().__init__(clock, pin, name)
        self.enable_pin = enable_pin
        enable_pin.on_change(lambda _l: self._update())

    def _update(self) -> None:
        en = self.enable_pin.driven and self.enable_pin.level
        self.pin.drive(self.name, True if (self._pressed and en) else None)


class Battery:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_charging", "_power", "_voltage", "ain", "name")
    STRUCTURE = ("charging_pin", "listeners", "power_pin", "saadc")
    DIVIDER = 2.0

    def __init__(self, charging_pin, power_pin, saadc=None, ain: int = 7, voltage: float = 3.9,
                 name: str = "battery"):
        self.charging_pin = charging_pin
        self.power_pin = power_pin
        self.saadc = saadc
        self.ain = ain
        self.name = name
        self._voltage = voltage
        self.listeners: list = []      # fn(volts) when the voltage is set (the board's wiring)
        self._charging = False
        self._power = False
        self.voltage = voltage
        self.charging = False
        self.power_present = False

    @property
    def voltage(self) -> float:
        return self._voltage

    @voltage.setter
    def voltage(self, v: float) -> None:
        """Volts at the cell, 0 to 5 (TypeError / ValueError otherwise);
        the board's listeners (its regulator feeding VDD) hear it."""
        self._set_voltage(v)
        for fn in self.listeners:
            fn(self._voltage)

    def _set_voltage(self, v: float) -> None:
        self._voltage = checks.number("battery voltage", v, 0.0, 5.0)
        fn = getattr(self.saadc, "set_input", None)
        if fn is not None:
            fn(self.ain, self._voltage / self.DIVIDER)

    def save_state(self) -> dict:
        return {"voltage": self._voltage, "charging": self._charging, "power": self._power}

    def load_state(self, st: dict) -> None:
        self._set_voltage(st["voltage"])       # VDD is restored with POWER itself
        self.charging = st["charging"]
        self.power_present = st["power"]

    @property
    def charging(self) -> bool:
        return self._charging

    @charging.setter
    def charging(self, on: bool) -> None:
        self._charging = bool(on)
        self.charging_pin.drive(self.name, not self._charging)

    @property
    def power_present(self) -> bool:
        return self._power

    @power_present.setter
    def power_present(self, on: bool) -> None:
        self._power = bool(on)
        self.power_pin.drive(self.name, not self._power)
