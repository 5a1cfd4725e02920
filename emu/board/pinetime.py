"""The PineTime: an nRF52832 wired to its display, touch, sensors and flash.

Wiring (PineTime schematic v1.0a): an SPI bus on SCK P0.02, MOSI P0.03,
MISO P0.04 with the ST7789 LCD (CS P0.25, D/C P0.18, RST P0.26) and the
XT25F32B NOR flash (CS P0.05); an I2C bus on SDA P0.06, SCL P0.07 with the
CST816S touch 0x15 (INT P0.28, RST P0.10), BMA421 0x18, HRS3300 0x44.
Backlight P0.14/P0.22/P0.23 (active low), motor P0.16 (active low), button
P0.13 with BUTTON_EN P0.15, CHARGING P0.12, POWER_PRESENT P0.19, battery
on AIN7 (P0.31) through a 1:2 divider; VDD from the battery through the
3.3 V regulator (0.1 V dropout, an assumption) feeds POWER's power-fail
comparator (POFWARN).  The UART console of the
development kit (Zephyr's ``pinetime_devkit0``: TX P0.11, RX P0.30, 115200
baud) is a terminal on those pins (``console``, emu/devices/terminal.py;
``uart_send``/``uart_output``), its bytes also in ``machine.console``.

The devices hang on pins, not on a peripheral instance (emu/buses.py):
whichever SPI/SPIM instance is enabled with its PSEL registers on
P0.02/03/04 drives the display and the NOR (wasp-os and InfiniTime use
SPI0/SPIM0, Zephyr's pinetime_devkit0 SPI1), whichever TWI/TWIM has SCL
P0.07 / SDA P0.06 reaches the sensors (wasp-os TWI1, Zephyr TWIM0).

The wiring is declared in one table of pins (``WIRING``; the buses' pins
are its "SPI ..." and "I2C ..." roles) and validated when the board is
built: no two peripherals on one address slot, each IRQ number used by one
peripheral, at most one device driving each pin, no I2C address twice on a
bus, no chip-select pin shared.

Board options: ``flash_file`` (path backing the NOR flash; default
``$XDG_DATA_HOME/pinetime-emu/flash.bin``; None keeps it in memory; a
directory or a device is a ValueError), ``bpm`` (heart rate, 0 to 1000),
``hrs_seed`` (an integer); any other option is a TypeError.

Not modelled: ACCEL_INT P0.08 and the HRS interrupt (not connected to
anything the firmware uses), the charger and battery discharge, the
VIBRATOR PWM filtering (the motor follows the pin level).
"""
from __future__ import annotations

import logging
import os
from typing import Optional

from emu import checks
from emu.board.bare import BareNrf52832
from emu.devices.bma421 import Bma421
from emu.devices.cst816s import Cst816s
from emu.devices.hrs3300 import Hrs3300
from emu.devices.simple import Backlight, Battery, Button, VibrationMotor
from emu.devices.st7789 import St7789
from emu.devices.xt25f32 import Xt25f32
from emu.png import write_png

log = logging.getLogger("emu.board.pinetime")

# pin -> (role, driven by a board device?)
WIRING = {
    2: ("SPI SCK", False), 3: ("SPI MOSI", False), 4: ("SPI MISO", False),
    5: ("NOR CS", False), 6: ("I2C SDA", False), 7: ("I2C SCL", False),
    10: ("TP RST", False), 12: ("CHARGING", True), 13: ("BUTTON", True),
    14: ("LCD_BACKLIGHT_LOW", False), 15: ("BUTTON_EN", False), 16: ("VIBRATOR", False),
    18: ("LCD D/C", False), 19: ("POWER_PRESENT", True), 22: ("LCD_BACKLIGHT_MID", False),
    23: ("LCD_BACKLIGHT_HIGH", False), 25: ("LCD CS", False), 26: ("LCD RST", False),
    28: ("TP INT", True), 31: ("BATTERY AIN7", False),
    11: ("UART TX (console)", False), 30: ("UART RX (console)", False),
}
CONSOLE_PINS = (11, 30)                                       # chip TX, RX


def pin_of(role: str) -> int:
    """The pin WIRING gives ``role``."""
    return next(p for p, (r, _drv) in WIRING.items() if r == role)


SPI_DEVICES = {"display": pin_of("LCD CS"), "flash": pin_of("NOR CS")}   # device -> CS pin
I2C_DEVICES = {"touch": 0x15, "accel": 0x18, "heart_rate": 0x44}         # on the I2C bus


class WiringError(Exception):
    """The board description is inconsistent (raised when the board is built)."""


def default_flash_path() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return os.path.join(base, "pinetime-emu", "flash.bin")


def check_flash_file(path) -> Optional[str]:
    """The ``flash_file`` option: None (in memory) or the path of a file that
    can back the 4 MiB NOR (new, or an existing regular file).  TypeError if
    it is not a path, ValueError if it names a directory or something that
    is not a regular file (a device such as /dev/full, a FIFO)."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"flash_file must be a path or None, not {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise ValueError(f"flash_file must be a file name, not {path!r:.40}")
    if os.path.isdir(path):
        raise ValueError(f"flash_file {path}: is a directory")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"flash_file {path}: not a regular file (the NOR flash is saved "
                         "there by replacing it)")
    return path


REGULATOR_V, DROPOUT_V = 3.3, 0.1     # the PineTime's LDO (an assumption: its
                                      # dropout at the watch's light load)


def vdd_from_battery(volts: float) -> float:
    """The chip's VDD with the cell at ``volts``: 3.3 V, or the cell less
    the regulator's dropout once the cell falls that far."""
    return round(min(REGULATOR_V, max(0.0, volts - DROPOUT_V)), 3)


class PineTime(BareNrf52832):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("accel", "backlight", "battery", "button", "display", "flash", "flash_path",
                 "heart_rate", "i2c", "motor", "power_on_reset", "spi", "system_reset", "touch")
    name = "pinetime"
    softdevice = "s132"      # emulated S132 API (emu/softdevice), machine.phone
    CONSOLE_PINS = CONSOLE_PINS
    _DEFAULT = object()

    def __init__(self, machine, pure_python: bool = False, flash_file=_DEFAULT,
                 bpm: float = 70.0, hrs_seed: int = 1, **options):
        super().__init__(machine, pure_python=pure_python, **options)
        soc = self.soc
        clock = soc.clock
        pins = soc.pins
        self.flash_path: Optional[str] = default_flash_path() if flash_file is self._DEFAULT \
            else check_flash_file(flash_file)
        checks.integer("hrs_seed", hrs_seed)
        spi = soc.buses.add_spi("spi", sck=pin_of("SPI SCK"), mosi=pin_of("SPI MOSI"),
                                miso=pin_of("SPI MISO"))
        i2c = soc.buses.add_i2c("i2c", scl=pin_of("I2C SCL"), sda=pin_of("I2C SDA"))
        self.spi = spi
        self.i2c = i2c

        self.backlight = Backlight(pins[14], pins[22], pins[23])
        self.display = St7789(pins[18], pins[26], backlight=self.backlight,
                              panel_inverted=True)     # true colours with INVON
        self.flash = Xt25f32(clock, self.flash_path)
        self.flash.on_error = machine.report_output_error     # a failed save: one line
        spi.attach(self.display, pins[SPI_DEVICES["display"]])
        spi.attach(self.flash, pins[SPI_DEVICES["flash"]])

        pins[28].set_board_pull(True)              # touch INT: open-drain, pull-up on the board
        self.touch = Cst816s(clock, int_pin=pins[28], rst_pin=pins[10])
        self.accel = Bma421(clock)
        self.heart_rate = Hrs3300(clock, bpm=bpm, seed=hrs_seed)
        for name, addr in I2C_DEVICES.items():
            i2c.attach(getattr(self, name), addr)

        self.motor = VibrationMotor(clock, pins[16], pwm_duty=self._pwm_duty_on_motor)
        self.button = Button(clock, pins[13], pins[15])
        self.battery = Battery(pins[12], pins[19], saadc=soc.peripherals.get("saadc"))
        # VDD through the 3.3 V regulator: POWER's power-fail comparator sees it
        power = soc.peripherals["clock_power"]
        self.battery.listeners.append(lambda v: power.set_supply(vdd_from_battery(v)))
        power.set_supply(vdd_from_battery(self.battery.voltage))
        self.validate()

    # ------------------------------------------------------------------ API
    def screen(self):
        """The visible screen as a (240, 240, 3) uint8 numpy array."""
        return self.display.screen()

    def screenshot(self, path: str) -> None:
        write_png(path, self.screen())

    def close(self) -> None:
        """Save the external flash to its file (if any)."""
        self.flash.close()

    def power_on_reset(self) -> None:
        super().power_on_reset()
        for dev in (self.display, self.touch, self.accel, self.heart_rate, self.flash):
            dev.reset()

    def system_reset(self, reason: str) -> None:
        # a chip reset does not reset the external parts (they keep power),
        # but GPIO outputs are released, which the devices see through pins
        super().system_reset(reason)

    def _pwm_duty_on_motor(self):
        """High-time fraction a PWM currently outputs on P0.16, or None."""
        for name in ("pwm0", "pwm1", "pwm2"):
            pwm = self.soc.peripherals.get(name)
            if name not in self.soc.pins[16].drivers:
                continue                  # not driving the pin (GPIO DIR input)
            for tick, pin, duty in reversed(getattr(pwm, "timeline", ())):
                if pin == 16:
                    if duty is not None:
                        return duty
                    break
        return None

    # ---------------------------------------------------------- validation
    def validate(self) -> None:
        """Raise WiringError if the wiring is inconsistent."""
        soc = self.soc
        errors = []
        by_base: dict = {}
        for name, p in soc.peripherals.items():
            base = getattr(p, "base", None)
            if base is None:
                continue
            other = by_base.get(base & ~0xFFF)
            if other is not None and other[1] is not p:
                errors.append(f"address slot {base:#010x} used by {other[0]} and {name}")
            by_base[base & ~0xFFF] = (name, p)
        irqs: dict = {}
        for slot, (name, p) in by_base.items():
            if slot >= 0x50000000 or slot < 0x40000000:
                continue
            irq = (slot >> 12) & 0xFF
            if irq in irqs:
                errors.append(f"IRQ {irq} connected to {irqs[irq]} and {name}")
            irqs[irq] = name
        for pin in soc.pins:
            if len(pin.drivers) > 1:
                errors.append(f"pin {pin.name} driven by {sorted(pin.drivers)}")
        drivers = [n for n, (_, drv) in WIRING.items() if drv]
        if len(set(drivers)) != len(drivers):
            errors.append("a pin has two device drivers")
        cs = list(SPI_DEVICES.values())
        if len(set(cs)) != len(cs):
            errors.append("two SPI devices share a chip select")
        if len(set(I2C_DEVICES.values())) != len(I2C_DEVICES):
            errors.append("two I2C devices share an address")
        roles = [WIRING[p][0] for p in cs]
        if any("CS" not in r for r in roles):
            errors.append("an SPI chip select is wired to a non-CS pin")
        if errors:
            raise WiringError("PineTime wiring: " + "; ".join(errors))
