"""Input mapping for the desktop window, kept free of pygame so it is unit-testable.

- :class:`Layout`: where the 240x240 panel sits in the window at a given
  scale; window pixel -> panel pixel (``None`` outside the glass, or clamped
  for drags that leave it).
- :class:`GestureTracker`: mouse down/motion/up plus a clock -> touch
  gestures for the board's ``touch`` API: a click is a tap, a drag longer
  than ``SWIPE_THRESHOLD`` panel pixels is a swipe in the drag's dominant
  direction, holding still for ``LONG_PRESS_S`` is a long press (fired while
  still held, as the CST816S does), a second click within
  ``DOUBLE_CLICK_S`` is a double tap (the first click has already been
  delivered as a tap, as on the watch).
- :data:`KEYMAP` / :func:`key_action`: pygame key names -> frontend actions.
- :class:`TextDialog`: the small in-window form used to edit a caller's name
  and number or a notification's title and body.
- :func:`phone_action`: one phone action (notify, call, music, set time)
  with the connect-first and the failure note both frontends give it.

Times passed to the tracker are host seconds: gestures are the user's
perception (in fast mode emulated time races ahead of the hand).  Gestures
are applied to the board only at slice boundaries, so emulation stays
deterministic for a given input sequence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

PANEL = 240                 # ST7789 visible area used by the PineTime: 240x240
SWIPE_THRESHOLD = 30        # panel pixels a drag must travel to count as a swipe
LONG_PRESS_S = 0.6
DOUBLE_CLICK_S = 0.4
DOUBLE_CLICK_SLOP = 20      # panel pixels between the two clicks of a double tap

# Keyboard: pygame.key.name() -> action.  The side button is held as long as
# its key is down (press on KEYDOWN, release on KEYUP).
KEYMAP = {
    "space": "button", "b": "button",
    "up": "swipe_up", "down": "swipe_down", "left": "swipe_left", "right": "swipe_right",
    "c": "call", "e": "end_call", "n": "notify", "m": "music",
    "k": "connect", "t": "set_time", "s": "screenshot", "f": "fast", "h": "help",
    "=": "battery_up", "+": "battery_up", "[+]": "battery_up",
    "-": "battery_down", "[-]": "battery_down",
    "p": "charging", "]": "hr_up", "[": "hr_down", "w": "walk",
    "i": "inspect", "escape": "escape", "q": "quit",
}

HELP = [
    ("mouse click", "tap"), ("double click", "double tap"),
    ("hold mouse", "long press"), ("drag / arrows", "swipe"),
    ("space / B (hold)", "side button"),
    ("1-4 / click (hold)", "nRF52 DK buttons 1-4"),
    ("C", "incoming call (edit name, number)"), ("E", "end call"),
    ("N", "notification (edit title, body)"), ("M", "music info + play/pause"),
    ("K", "phone connect / disconnect"), ("T", "set time from host clock"),
    ("+ / -", "battery voltage"), ("P", "charger on/off"),
    ("] / [", "heart rate"), ("W", "walking on/off"),
    ("S", "screenshot PNG"), ("F", "fast / real-time"),
    ("I", "panel: current, heaps, tasks"),
    ("` (backquote)", "RTT console: type to the firmware (Esc ends)"),
    ("H", "this help"), ("Q / close", "quit"),
]


def key_action(key_name: str) -> Optional[str]:
    return KEYMAP.get(key_name.lower())


@dataclass
class Layout:
    """Geometry of the watch drawing, in window pixels."""
    scale: int = 2
    margin: int = 40          # window edge -> case, left and right
    strap: int = 36           # strap stub above and below the case
    log_lines: int = 6

    def __post_init__(self):
        if self.scale < 1:
            raise ValueError("scale must be >= 1")
        s = self.scale
        self.screen_size = PANEL * s
        self.bezel = 14 * s
        self.case_w = self.screen_size + 2 * self.bezel
        self.case_h = self.case_w
        self.width = max(self.case_w + 2 * self.margin, 560)
        self.case_x = (self.width - self.case_w) // 2
        self.case_y = self.strap
        self.screen_x = self.case_x + self.bezel
        self.screen_y = self.case_y + self.bezel
        bw, bh = max(6, 4 * s), max(24, 22 * s)
        self.button_rect = (self.case_x + self.case_w - 2, self.case_y + self.case_h // 3,
                            bw, bh)
        self.status_y = self.case_y + self.case_h + self.strap + 8
        self.line_h = 18
        self.height = self.status_y + (2 + self.log_lines) * self.line_h + 8

    @property
    def screen_rect(self) -> tuple:
        return (self.screen_x, self.screen_y, self.screen_size, self.screen_size)

    def window_to_panel(self, wx: int, wy: int, clamp: bool = False) -> Optional[tuple]:
        """Window pixel -> panel pixel.  Outside the glass: None, or the nearest
        edge pixel when ``clamp`` (a drag that leaves the screen)."""
        px = (wx - self.screen_x) // self.scale
        py = (wy - self.screen_y) // self.scale
        if 0 <= px < PANEL and 0 <= py < PANEL:
            return (px, py)
        if not clamp:
            return None
        return (min(max(px, 0), PANEL - 1), min(max(py, 0), PANEL - 1))

    def on_button(self, wx: int, wy: int) -> bool:
        x, y, w, h = self.button_rect
        return x - 4 <= wx < x + w + 4 and y <= wy < y + h


def drag_direction(dx: int, dy: int, threshold: int = SWIPE_THRESHOLD) -> Optional[str]:
    """The swipe a finger movement of (dx, dy) panel pixels makes, or None."""
    if max(abs(dx), abs(dy)) < threshold:
        return None
    if abs(dx) > abs(dy):
        return "right" if dx > 0 else "left"
    return "down" if dy > 0 else "up"


@dataclass
class GestureTracker:
    """Mouse (in panel pixels) + host time -> ("tap", x, y), ("double_tap", x, y),
    ("long_press", x, y) or ("swipe", direction)."""
    long_press_s: float = LONG_PRESS_S
    double_click_s: float = DOUBLE_CLICK_S
    threshold: int = SWIPE_THRESHOLD
    _start: Optional[tuple] = None
    _t0: float = 0.0
    _cur: Optional[tuple] = None
    _dragging: bool = False
    _long_fired: bool = False
    _last_tap: Optional[tuple] = None     # (t, x, y)

    @property
    def held(self) -> bool:
        return self._start is not None

    def down(self, pos: Optional[tuple], t: float) -> None:
        if pos is None:          # click outside the glass
            return
        self._start = self._cur = pos
        self._t0 = t
        self._dragging = False
        self._long_fired = False

    def motion(self, pos: tuple) -> None:
        if self._start is None:
            return
        self._cur = pos
        if drag_direction(pos[0] - self._start[0], pos[1] - self._start[1],
                          self.threshold):
            self._dragging = True

    def poll(self, t: float) -> list:
        """Gestures due because time passed (long press while held)."""
        if (self._start is not None and not self._dragging and not self._long_fired
                and t - self._t0 >= self.long_press_s):
            self._long_fired = True
            self._last_tap = None
            return [("long_press",) + self._start]
        return []

    def up(self, pos: Optional[tuple], t: float) -> list:
        if self._start is None:
            return []
        if pos is not None:
            self.motion(pos)
        start, cur = self._start, self._cur
        self._start = None
        out = self.poll(t)
        if out or self._long_fired:
            return out
        d = drag_direction(cur[0] - start[0], cur[1] - start[1], self.threshold)
        if d is not None:
            self._last_tap = None
            return [("swipe", d)]
        last = self._last_tap
        if (last is not None and t - last[0] <= self.double_click_s
                and abs(start[0] - last[1]) <= DOUBLE_CLICK_SLOP
                and abs(start[1] - last[2]) <= DOUBLE_CLICK_SLOP):
            self._last_tap = None
            return [("double_tap",) + start]
        self._last_tap = (t,) + start
        return [("tap",) + start]


@dataclass
class TextDialog:
    """A small form of named text fields (Tab/Enter moves on, Enter on the
    last field accepts, Escape cancels)."""
    title: str
    action: str
    fields: list                       # [[label, value], ...]
    index: int = 0
    done: bool = False
    accepted: bool = False
    max_len: int = 60

    def key(self, key_name: str, text: str = "") -> None:
        if self.done:
            return
        k = key_name.lower()
        if k == "escape":
            self.done = True
        elif k in ("return", "enter", "keypad enter"):
            if self.index == len(self.fields) - 1:
                self.done = self.accepted = True
            else:
                self.index += 1
        elif k == "tab":
            self.index = (self.index + 1) % len(self.fields)
        elif k == "backspace":
            self.fields[self.index][1] = self.fields[self.index][1][:-1]
        elif text and text.isprintable():
            v = self.fields[self.index][1]
            self.fields[self.index][1] = (v + text)[: self.max_len]

    def values(self) -> list:
        return [v for _, v in self.fields]


def phone_action(phone, desc: str, fn, note) -> None:
    """One phone action from a frontend (the window's keys, the web page's
    buttons): connect first if needed (that runs the machine, between slices,
    until the watch advertises), run ``fn(phone)``, and ``note`` what
    happened; a failure (PhoneError, a watch that stopped advertising, ...)
    is a note, never an exception out of the frontend's loop."""
    try:
        if not getattr(phone, "connected", True):
            note("phone: connecting...")
            phone.connect()
        fn(phone)
        note("phone -> " + desc)
    except Exception as e:            # noqa: BLE001 - shown to the user
        note(f"phone: {desc} failed: {e}")


def battery_percent(volts: float) -> int:
    """Rough Li-ion state of charge for display: 3.5 V empty, 4.2 V full
    (the status line only; the firmware computes its own from the ADC)."""
    return int(round(min(max((volts - 3.5) / 0.7, 0.0), 1.0) * 100))
