"""Nordic's nRF52 DK (PCA10040): an nRF52832 with four LEDs, four buttons and
a UART console through the interface MCU.

Wiring (PCA10040 v1.2 user guide, as Zephyr's ``nrf52dk_nrf52832`` board and
the nRF5 SDK's ``pca10040.h`` use it), declared once in ``WIRING``:

* LED1-LED4 on P0.17-P0.20, wired from VDD: lit while the pin is driven low;
* BUTTON1-BUTTON4 on P0.13-P0.16, to ground with no external pull-up: the
  firmware enables the pin's pull-up (PIN_CNF PULL) and reads low while the
  button is pressed;
* the UART console of the interface MCU (the J-Link's virtual COM port,
  115200 baud): the chip's TXD on P0.06, RXD on P0.08, RTS P0.05, CTS P0.07.
  The console (``console``, emu/devices/terminal.py) hears whatever UART
  transmits on P0.06 and sends on P0.08; its bytes also go to
  ``machine.console``.

API: ``leds`` (the four states, LED1 first), ``led[n]`` (:class:`emu.devices.led.Led`,
each with its ``timeline`` of (tick, on)), ``buttons[n]`` (press, release,
hold at exact emulated times; ``button`` is BUTTON1, the window's one
button), ``uart_send(data)`` / ``uart_output()``, ``screen()`` (a 240x240
picture of the LEDs and buttons for the window; ``button_at(x, y)`` says
which button a point of it shows) and ``screenshot(path)``.

Not modelled: RTS/CTS flow control (the interface MCU never stops the
chip), the Arduino headers' other pins (plain ``soc.pins[n]``), the NFC
antenna, the 32 MHz/32.768 kHz crystals' start-up (the chip model's).
"""
from __future__ import annotations

import numpy as np

from emu.board.bare import BareNrf52832
from emu.devices.led import GroundButton, Led
from emu.png import write_png

# pin -> (name, part): the board's one wiring table
WIRING = {
    17: ("LED1", "led"), 18: ("LED2", "led"), 19: ("LED3", "led"), 20: ("LED4", "led"),
    13: ("BUTTON1", "button"), 14: ("BUTTON2", "button"), 15: ("BUTTON3", "button"),
    16: ("BUTTON4", "button"),
    6: ("UART TXD", "console tx"), 8: ("UART RXD", "console rx"),
    5: ("UART RTS", "flow control"), 7: ("UART CTS", "flow control"),
}
LED_PINS = tuple(sorted(p for p, (_n, part) in WIRING.items() if part == "led"))
BUTTON_PINS = tuple(sorted(p for p, (_n, part) in WIRING.items() if part == "button"))
CONSOLE_TX = next(p for p, (_n, part) in WIRING.items() if part == "console tx")
CONSOLE_RX = next(p for p, (_n, part) in WIRING.items() if part == "console rx")
BAUD = 115200

# the picture: four LEDs above four buttons, 240x240, (x, y, w, h) boxes
LED_BOXES = tuple((18 + 56 * i, 44, 36, 36) for i in range(4))
BUTTON_BOXES = tuple((12 + 56 * i, 140, 48, 48) for i in range(4))
_DIGITS = {1: ("010", "110", "010", "010", "111"), 2: ("111", "001", "111", "100", "111"),
           3: ("111", "001", "111", "001", "111"), 4: ("101", "101", "111", "001", "001")}


class WiringError(Exception):
    """The board description is inconsistent (raised when the board is built)."""


class Nrf52dk(BareNrf52832):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("button", "buttons", "led")
    name = "nrf52dk"
    CONSOLE_PINS = (CONSOLE_TX, CONSOLE_RX)
    console_is_main = True          # the CLI gives its console the terminal (frontends/cli.py)

    def __init__(self, machine, pure_python: bool = False, **options):
        super().__init__(machine, pure_python=pure_python, **options)
        clock, pins = self.soc.clock, self.soc.pins
        self.led = [Led(clock, pins[p], WIRING[p][0].lower()) for p in LED_PINS]
        self.buttons = [GroundButton(clock, pins[p], WIRING[p][0].lower()) for p in BUTTON_PINS]
        self.button = self.buttons[0]            # the window's one button
        self.validate()

    # ------------------------------------------------------------------ API
    @property
    def leds(self) -> tuple:
        """LED1-LED4: True while lit."""
        return tuple(led.on for led in self.led)

    def button_at(self, x: int, y: int):
        """The index of the button drawn at panel point (x, y), or None."""
        for i, (bx, by, bw, bh) in enumerate(BUTTON_BOXES):
            if bx <= x < bx + bw and by <= y < by + bh:
                return i
        return None

    def screen(self) -> np.ndarray:
        """The board as a (240, 240, 3) RGB picture: LED1-4 (green when lit)
        above BUTTON1-4 (darker while pressed), each with its number."""
        img = np.zeros((240, 240, 3), dtype=np.uint8)
        img[:, :] = (16, 70, 120)                                 # the DK's blue board
        for i, (x, y, w, h) in enumerate(LED_BOXES):
            img[y - 4:y + h + 4, x - 4:x + w + 4] = (235, 235, 225)    # LED package
            img[y:y + h, x:x + w] = (40, 255, 90) if self.led[i].on else (40, 70, 50)
            self._digit(img, i + 1, x + w // 2, y + h + 12, (255, 255, 255))
        for i, (x, y, w, h) in enumerate(BUTTON_BOXES):
            pressed = self.buttons[i].pressed
            img[y:y + h, x:x + w] = (60, 60, 64)
            m = 8 if not pressed else 11
            img[y + m:y + h - m, x + m:x + w - m] = (20, 20, 22) if pressed else (110, 110, 118)
            self._digit(img, i + 1, x + w // 2, y + h + 14, (255, 255, 255))
        return img

    def screenshot(self, path: str) -> None:
        write_png(path, self.screen())

    @staticmethod
    def _digit(img, n: int, cx: int, top: int, colour, cell: int = 3) -> None:
        rows = _DIGITS[n]
        x0 = cx - 3 * cell // 2
        for r, line in enumerate(rows):
            for c, bit in enumerate(line):
                if bit == "1":
                    img[top + r * cell:top + (r + 1) * cell,
                        x0 + c * cell:x0 + (c + 1) * cell] = colour

    # ---------------------------------------------------------- validation
    def validate(self) -> None:
        """Raise WiringError if the wiring is inconsistent."""
        errors = []
        if len(LED_PINS) != 4 or len(BUTTON_PINS) != 4:
            errors.append("the DK has four LEDs and four buttons")
        for pin in self.soc.pins:
            if len(pin.drivers) > 1:
                errors.append(f"pin {pin.name} driven by {sorted(pin.drivers)}")
        for tx_or_rx in (CONSOLE_TX, CONSOLE_RX):
            if self.soc.pins[tx_or_rx].serial is not self.console:
                errors.append(f"P0.{tx_or_rx:02d}: the console is not wired there")
        if errors:
            raise WiringError("nRF52 DK wiring: " + "; ".join(errors))
