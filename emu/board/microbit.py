"""BBC micro:bit v1: an nRF51822 wired to its LED matrix, buttons and sensors.

Wiring (micro:bit v1.3/1.5 schematic, as the DAL and MicroPython drive it):

* LED matrix: 3 row lines ROW1-3 on P0.13-P0.15 (active high, sourcing)
  and 9 column lines COL1-9 on P0.04-P0.12 (active low, sinking).  The 27
  row/column crossings carry the 25 LEDs of the 5x5 display through the
  fixed map ``LED_MAP`` (display (x, y) -> (row, column)); two crossings
  have no LED.  An LED is lit while its row is driven high and its column
  driven low.
* Buttons A on P0.17 and B on P0.26: active low with external
  pull-ups (modelled as the button driving the pin high when released).
* I2C on P0.00 (SCL) / P0.30 (SDA): MMA8653 accelerometer at 0x1D (INT1 on
  P0.28, active low) and MAG3110 magnetometer at 0x0E (INT1 on P0.29,
  active high).  The bus lies on those pins (emu/buses.py): TWI0 or TWI1
  reaches it while enabled with PSELSCL/PSELSDA on P0.00/P0.30.
* UART: TX P0.24, RX P0.25, 115200 baud, the USB serial console through the
  interface chip: a terminal on those pins (``console``,
  emu/devices/terminal.py); its bytes also go to ``machine.console``.
* Edge connector: pins 0, 1, 2 (P0.03, P0.02, P0.01 = AIN4, AIN3, AIN2)
  take analogue voltages with ``edge_voltage``; ``EDGE_PINS`` lists the
  rest (``soc.pins[n]`` for digital use).

The display image follows the firmware's multiplexing: each LED's on-time
and each row's driven time are integrated over fixed windows of
``DISPLAY_WINDOW_MS`` of emulated time (aligned to multiples of the window,
so the result does not depend on when it is asked for); :meth:`leds` gives
each LED's brightness over the last complete window as the fraction of its
row's driven time that the LED was lit (1.0 = lit whenever its row was
scanned; the firmware's greyscale PWM gives fractions: MicroPython's level
1 is under 1 %).  An LED is "on" in :meth:`bits` when it was lit at all.

Not modelled: the KL26 interface chip (USB mass storage, its own reset
button), the light sensing through the LED matrix (reads what the ADC gets:
0 V), the edge connector's 3 V / GND rails, the battery.
"""
from __future__ import annotations

import logging

from emu.board.base import Board
from emu.clock import TICKS_PER_MS
from emu.devices.mag3110 import ADDRESS as MAG_ADDRESS, Mag3110
from emu.devices.mma8653 import ADDRESS as ACCEL_ADDRESS, Mma8653
from emu.devices.simple import PushButton
from emu.devices.terminal import SerialTerminal
from emu.soc.nrf51822 import Nrf51822

log = logging.getLogger("emu.board.microbit")

ROW_PINS = (13, 14, 15)
COL_PINS = (4, 5, 6, 7, 8, 9, 10, 11, 12)
BUTTON_PINS = {"a": 17, "b": 26}
I2C_SCL, I2C_SDA = 0, 30
ACCEL_INT1, MAG_INT1 = 28, 29
UART_TX, UART_RX = 24, 25
# edge connector ring pins -> nRF51 pin
EDGE_PINS = {0: 3, 1: 2, 2: 1, 3: 4, 4: 5, 5: 17, 6: 12, 7: 11, 8: 18, 9: 10, 10: 6,
             11: 26, 12: 20, 13: 23, 14: 22, 15: 21, 16: 16, 19: 0, 20: 30}
EDGE_AIN = {0: 4, 1: 3, 2: 2}
# LED_MAP[y][x] = (row << 4) | column, rows 0-2 = ROW1-3, columns 0-8 = COL1-9
LED_MAP = (
    (0x00, 0x13, 0x01, 0x14, 0x02),
    (0x23, 0x24, 0x25, 0x26, 0x27),
    (0x11, 0x08, 0x12, 0x28, 0x10),
    (0x07, 0x06, 0x05, 0x04, 0x03),
    (0x22, 0x16, 0x20, 0x15, 0x21),
)
DISPLAY_WINDOW_MS = 20


class Button(PushButton):
    """A push button to ground with an external pull-up."""

    def __init__(self, clock, pin, name: str):
        super().__init__(clock, pin, name)
        self._update()

    def _update(self) -> None:
        self.pin.drive(self.name, not self._pressed)


def _grid() -> list:
    return [[0] * 5 for _ in range(5)]


class LedMatrix:
    """The 3x9 multiplexed matrix seen as a 5x5 display (on-time integration)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_acc", "_last", "_lit", "_racc", "_rlast", "_rows", "_t", "_where",
                "_win_start", "changes", "window")
    STRUCTURE = ("_col_pins", "_row_pins", "clock", "pins")

    def __init__(self, clock, pins, window_ms: float = DISPLAY_WINDOW_MS):
        self.clock = clock
        self.pins = pins
        self.window = int(window_ms * TICKS_PER_MS)
        self._where = {}                    # (row, col) -> (x, y)
        for y, line in enumerate(LED_MAP):
            for x, rc in enumerate(line):
                self._where[(rc >> 4, rc & 0xF)] = (x, y)
        # plain lists, numpy only for the API's arrays: a run that never looks
        # at the display does not import it (micro:bit startup: 45 ms less)
        self._acc = _grid()                 # ticks lit in the current window, [y][x]
        self._last = _grid()                # ticks lit in the last full window
        self._racc = [0] * len(ROW_PINS)    # ticks each row was driven
        self._rlast = [0] * len(ROW_PINS)
        self._win_start = 0
        self._t = 0                         # time up to which the sums are folded
        self._lit: list = []                # (x, y) lit since _t
        self._rows: list = []               # rows driven high since _t
        self.changes = 0
        self._row_pins = [pins[n] for n in ROW_PINS]
        self._col_pins = [pins[n] for n in COL_PINS]
        for n in ROW_PINS + COL_PINS:
            pins[n].on_change(lambda _lvl: self._changed())
        self._lit, self._rows = self._lit_now()

    def _lit_now(self) -> tuple:
        """((x, y) of the LEDs lit now, rows driven high now)."""
        out = []
        rows = []
        cols = self._col_pins
        for r, rp in enumerate(self._row_pins):
            if not (rp.drivers and rp.level):       # driven high
                continue
            rows.append(r)
            for c, cp in enumerate(cols):
                if cp.drivers and not cp.level:     # driven low
                    xy = self._where.get((r, c))
                    if xy is not None:
                        out.append(xy)
        return out, rows

    def _fold(self, now: int) -> None:
        """Account the lit LEDs from ``_t`` to ``now`` into the windows."""
        w = self.window
        while self._t < now:
            wend = self._win_start + w
            end = min(now, wend)
            for x, y in self._lit:
                self._acc[y][x] += end - self._t
            for r in self._rows:
                self._racc[r] += end - self._t
            self._t = end
            if end == wend:
                self._last, self._rlast = self._acc, self._racc
                self._acc = _grid()
                self._racc = [0] * len(ROW_PINS)
                self._win_start = wend
                k = (now - wend) // w
                if k >= 1:             # whole windows with nothing changing: one step
                    self._last = _grid()
                    self._rlast = [0] * len(ROW_PINS)
                    for x, y in self._lit:
                        self._last[y][x] = w
                    for r in self._rows:
                        self._rlast[r] = w
                    self._win_start += k * w
                    self._t = self._win_start

    def _changed(self) -> None:
        self.changes += 1
        self._fold(self.clock.now)
        self._lit, self._rows = self._lit_now()

    def reset(self) -> None:
        self._fold(self.clock.now)
        self._lit, self._rows = self._lit_now()

    # -- API -------------------------------------------------------------
    def leds(self):
        """5x5 float brightness (0..1) over the last complete window, [y][x]
        (a numpy array)."""
        import numpy as np
        self._fold(self.clock.now)
        b = np.zeros((5, 5))
        for y, line in enumerate(LED_MAP):
            for x, rc in enumerate(line):
                row_time = self._rlast[rc >> 4]
                if row_time > 0:
                    b[y, x] = min(1.0, max(0.0, self._last[y][x] / row_time))
        return b

    def bits(self, threshold: float = 0.0) -> list:
        """The display as 5 strings of '0'/'1' (top row first)."""
        b = self.leds()
        return ["".join("1" if b[y, x] > threshold else "0" for x in range(5)) for y in range(5)]

    def image(self, scale: int = 16):
        """An RGB picture of the display: red LEDs on a dark board (a numpy
        array)."""
        import numpy as np
        b = self.leds()
        cell = scale
        img = np.zeros((5 * cell, 5 * cell, 3), dtype=np.uint8)
        img[:, :] = (24, 24, 24)
        m = cell // 4
        for y in range(5):
            for x in range(5):
                v = float(b[y, x]) ** 0.25          # the eye sees short pulses brighter
                colour = (int(90 + 165 * v), int(12 + 20 * v), int(12 + 20 * v)) if v > 0 \
                    else (60, 12, 12)
                img[y * cell + m:(y + 1) * cell - m, x * cell + m:(x + 1) * cell - m] = colour
        return img


class Microbit(Board):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("accelerometer", "adc", "button", "button_a", "button_b", "compass",
                 "console", "display", "i2c", "soc", "uart")
    name = "microbit"
    console_is_main = True          # the CLI gives its console the terminal (frontends/cli.py)

    def __init__(self, machine, pure_python: bool = False, **options):
        super().__init__(machine, **options)
        soc = self.soc = Nrf51822(machine.clock, force_python_counter=pure_python)
        soc.reset_request_handler = self.request_reset
        clock = soc.clock
        pins = soc.pins
        self.uart = soc.peripherals["uart0"]
        self.console = SerialTerminal(pins[UART_TX], pins[UART_RX])
        self.console.on_output(lambda b: machine._emit(bytes([b])))
        self.button_a = Button(clock, pins[BUTTON_PINS["a"]], "button_a")
        self.button_b = Button(clock, pins[BUTTON_PINS["b"]], "button_b")
        self.button = self.button_a         # the window's one button
        self.accelerometer = Mma8653(clock, int1_pin=pins[ACCEL_INT1])
        self.compass = Mag3110(clock, int_pin=pins[MAG_INT1])
        self.i2c = soc.buses.add_i2c("i2c", scl=I2C_SCL, sda=I2C_SDA)
        self.i2c.attach(self.accelerometer, ACCEL_ADDRESS)
        self.i2c.attach(self.compass, MAG_ADDRESS)
        self.display = LedMatrix(clock, pins)
        self.adc = soc.peripherals["adc"]
        self.adc.set_vdd(3.0)
        self.validate()

    # ------------------------------------------------------------------ API
    def uart_send(self, data: bytes) -> None:
        """Bytes typed on the USB serial console (arrive at 115200 baud)."""
        self.console.send(bytes(data))

    def uart_output(self) -> bytes:
        return bytes(self.console.output)

    def set_acceleration(self, x_mg: float, y_mg: float, z_mg: float) -> None:
        """Acceleration in milli-g in the micro:bit's frame (what the DAL and
        MicroPython report): the MMA8653 is mounted with its X and Y axes
        reversed, so the chip sees (-x, -y, z)."""
        self.accelerometer.set_acceleration(-x_mg, -y_mg, z_mg)

    def edge_voltage(self, pin: int, volts: float) -> None:
        """Analogue voltage on edge pin 0, 1 or 2."""
        if pin not in EDGE_AIN:
            raise ValueError(f"edge pin {pin} has no analogue input (0, 1, 2 do)")
        self.adc.set_input(EDGE_AIN[pin], volts)

    def screen(self):
        """The LED display as a (240, 240, 3) RGB array (48-pixel cells)."""
        return self.display.image(scale=48)

    def screenshot(self, path: str) -> None:
        from emu.png import write_png
        write_png(path, self.screen())

    def power_on_reset(self) -> None:
        super().power_on_reset()
        self.accelerometer.reset()
        self.compass.reset()

    # ---------------------------------------------------------- validation
    def validate(self) -> None:
        """Raise ValueError if the wiring is inconsistent."""
        errors = []
        used = list(ROW_PINS) + list(COL_PINS) + list(BUTTON_PINS.values()) + [
            I2C_SCL, I2C_SDA, ACCEL_INT1, MAG_INT1, UART_TX, UART_RX]
        dup = {p for p in used if used.count(p) > 1}
        if dup:
            errors.append(f"pins used twice: {sorted(dup)}")
        seen = set()
        for line in LED_MAP:
            for rc in line:
                if rc in seen or (rc >> 4) >= len(ROW_PINS) or (rc & 0xF) >= len(COL_PINS):
                    errors.append(f"LED map entry {rc:#04x} invalid or repeated")
                seen.add(rc)
        for pin in self.soc.pins:
            if len(pin.drivers) > 1:
                errors.append(f"pin {pin.name} driven by {sorted(pin.drivers)}")
        if errors:
            raise ValueError("micro:bit wiring: " + "; ".join(errors))
