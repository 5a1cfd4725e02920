"""Hynitron CST816S capacitive touch controller (PineTime touch panel), I2C 0x15.

Register map as the PineTime firmwares use it: 0x01 GestureID, 0x02
FingerNum, 0x03 XposH (event flag in bits 7:6: 0 down, 1 up, 2 contact),
0x04 XposL, 0x05 YposH, 0x06 YposL, 0xA5 power mode (0x03 = deep sleep),
0xA6 firmware version (4-byte read 0xA6..0xA9: version, ChipID 0xB4,
ProjID, FwVersion).  A write sets the register pointer, reads auto-increment.

Gestures: 0 none, 1 slide down, 2 slide up, 3 slide left, 4 slide right,
5 single click, 0x0B double click, 0x0C long press.  When a gesture is
ready the INT pin is pulsed low (INT_PULSE_TICKS) — the board gives P0.28 a
pull-up; the device only drives it low during the pulse.  In deep sleep the
chip does not acknowledge its address at all until a reset pulse on RST.
Inputs are scheduled on the clock so they happen at exact emulated times.

With IrqCtl (0xFA) EnTouch or EnChange set (InfiniTime sets 0x70), the
lift of the finger is reported too: RELEASE_TICKS after a gesture, a second
INT pulse with FingerNum 0 and GestureID 0 (InfiniTime takes the next
slide only after such a report).  With EnTouch the gesture report carries
the event "contact" (finger on the panel, XposH bits 7:6 = 2) and the lift
report "up" (1), as Zephyr's kscan driver reads them (pressed = down or
contact).  Without them (wasp-os leaves 0xFA alone) only the gesture is
reported, with the event "up".

Not modelled: repeated reports while a finger stays down, the chip's
auto-sleep / motion-mask / IRQ-control registers (0xEC-0xFE; stored only),
multi-touch, reset start-up time.
"""
from __future__ import annotations

import logging

from emu import checks
from emu.buses import I2cRegisterDevice
from emu.clock import NEVER, TICKS_PER_MS
from emu.devices.timeline import Timeline

log = logging.getLogger("emu.dev.cst816s")

ADDRESS = 0x15
NONE, SLIDE_DOWN, SLIDE_UP, SLIDE_LEFT, SLIDE_RIGHT, SINGLE_CLICK = 0, 1, 2, 3, 4, 5
DOUBLE_CLICK, LONG_PRESS = 0x0B, 0x0C
SWIPES = {"down": SLIDE_DOWN, "up": SLIDE_UP, "left": SLIDE_LEFT, "right": SLIDE_RIGHT}
# where a swipe ends (x, y) on the 240x240 panel
SWIPE_END = {"down": (120, 200), "up": (120, 40), "left": (40, 120), "right": (200, 120)}
INT_PULSE_TICKS = TICKS_PER_MS // 2       # ~0.5 ms low pulse
LONG_PRESS_TICKS = 1000 * TICKS_PER_MS
RELEASE_TICKS = 20 * TICKS_PER_MS         # gesture report -> finger lifted report
IRQ_CTL = 0xFA                            # EnTest 0x80, EnTouch 0x40, EnChange 0x20, EnMotion 0x10
EN_TOUCH, EN_CHANGE = 0x40, 0x20
VERSION = (0x01, 0xB4, 0x00, 0x01)        # 0xA6..0xA9

PANEL = 240                               # pixels each way


def _point(x, y, delay_ms) -> tuple:
    """(x, y, delay in ticks), checked: a pixel of the panel, a delay >= 0."""
    x = int(checks.number("touch x", x, 0, PANEL - 1))
    y = int(checks.number("touch y", y, 0, PANEL - 1))
    delay = checks.number("delay_ms", delay_ms, 0, NEVER // 2 // TICKS_PER_MS)
    return x, y, int(delay * TICKS_PER_MS)


class Cst816s(I2cRegisterDevice):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("in_reset", "name", "reports")
    STRUCTURE = ("clock", "int_pin", "rst_pin", "timeline")
    def __init__(self, clock, int_pin=None, rst_pin=None, name: str = "touch"):
        self.clock = clock
        self.name = name
        self.int_pin = int_pin
        self.rst_pin = rst_pin
        self.timeline = Timeline(clock, f"{name}.input", owner=self)
        self.reports: list = []            # (tick, gesture, x, y) delivered
        self.in_reset = False
        if rst_pin is not None:
            rst_pin.on_change(self._rst_changed)
        self.reset()

    # ------------------------------------------------------------------ API
    def tap(self, x: int, y: int, delay_ms: float = 0) -> None:
        """A single click at panel pixel (x, y), ``delay_ms`` from now.
        TypeError if a coordinate or the delay is not a number; ValueError if
        (x, y) is off the 240x240 panel or the delay negative or not finite."""
        self._schedule(delay_ms, SINGLE_CLICK, x, y)

    def double_tap(self, x: int, y: int, delay_ms: float = 0) -> None:
        """A double click at (x, y); the errors of :meth:`tap`."""
        self._schedule(delay_ms, DOUBLE_CLICK, x, y)

    def long_press(self, x: int, y: int, delay_ms: float = 0) -> None:
        """Finger down at now+delay; the long-press report comes 1 s later.
        The errors of :meth:`tap`."""
        x, y, delay = _point(x, y, delay_ms)
        self.timeline.call_after(delay + LONG_PRESS_TICKS, "_report", LONG_PRESS, x, y)

    def swipe(self, direction: str, delay_ms: float = 0) -> None:
        """A slide ``direction`` ("up", "down", "left", "right"), ``delay_ms``
        from now; ValueError for another direction or a bad delay."""
        if not isinstance(direction, str) or direction not in SWIPES:
            raise ValueError(f"swipe direction must be one of {sorted(SWIPES)}, not "
                             f"{direction!r:.40}")
        x, y = SWIPE_END[direction]
        self._schedule(delay_ms, SWIPES[direction], x, y)

    @property
    def asleep(self) -> bool:
        return self.regs[0xA5] == 0x03

    def reset(self) -> None:
        self.regs = bytearray(256)
        self.regs[0xA6:0xAA] = bytes(VERSION)
        self.regs[0xA7] = 0xB4
        self.ptr = 0
        self._first = False
        self._int_low(False)

    # --------------------------------------------------------- I2C contract
    def i2c_start(self, read: bool) -> bool:
        if self.in_reset or self.asleep:
            return False                   # no ACK while held in reset or asleep
        return super().i2c_start(read)

    # ------------------------------------------------------------- private
    def _schedule(self, delay_ms: float, gesture: int, x: int, y: int) -> None:
        x, y, delay = _point(x, y, delay_ms)
        self.timeline.call_after(delay, "_report", gesture, x, y)

    def _report(self, gesture: int, x: int, y: int) -> None:
        if self.in_reset or self.asleep:
            return                                   # a sleeping panel reports nothing
        x, y = max(0, min(239, int(x))), max(0, min(239, int(y)))
        r = self.regs
        r[0x01] = gesture
        r[0x02] = 1
        # event bits 7:6: with EnTouch the finger is reported on the panel
        # (contact) and its lift in the report after; in gesture-only mode the
        # report comes when the gesture is complete (lift up)
        contact = bool(r[IRQ_CTL] & EN_TOUCH)
        r[0x03] = (0x80 if contact else 0x40) | (x >> 8)
        r[0x04] = x & 0xFF
        r[0x05] = y >> 8
        r[0x06] = y & 0xFF
        self.reports.append((self.clock.now, gesture, x, y))
        self._pulse()
        if self.regs[IRQ_CTL] & (EN_TOUCH | EN_CHANGE):
            # the finger lifts: a report with no finger and no gesture
            self.timeline.call_after(RELEASE_TICKS, "_release", x)

    def _release(self, x: int) -> None:
        if self.in_reset or self.asleep:
            return
        self.regs[0x01] = NONE
        self.regs[0x02] = 0
        self.regs[0x03] = 0x40 | (x >> 8)
        self._pulse()

    def _pulse(self) -> None:
        self._int_low(True)
        self.timeline.call_after(INT_PULSE_TICKS, "_int_low", False)

    def _int_low(self, low: bool) -> None:
        if self.int_pin is not None:
            self.int_pin.drive(self.name, False if low else None)

    def _rst_changed(self, level: bool) -> None:
        low = self.rst_pin.driven_low()
        if low != self.in_reset:
            self.in_reset = low
            self.reset()

    def save_state(self) -> dict:
        return {"regs": bytes(self.regs), "ptr": self.ptr, "in_reset": self.in_reset}

    def load_state(self, st: dict) -> None:
        self.regs = bytearray(st["regs"])
        self.ptr = st["ptr"]
        self.in_reset = st["in_reset"]
