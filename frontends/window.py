"""The desktop window: a PineTime on your screen, driven through the board's public API.

    from emu import Machine
    from frontends.window import run_window
    run_window(Machine("watch.elf"), scale=2)

It shows the 240x240 panel (``board.screen()``, which already applies the
backlight) scaled by an integer factor inside a drawn watch case with its
side button and strap, a status line (emulated time, speed relative to real
time, backlight level, battery, charger, heart rate, steps, motor) and a log
of what the phone sent and what the watch answered (``phone.messages``).
Input mapping lives in :mod:`frontends.input` (pure, unit-tested).

A board without a touch screen may draw its own panel: the micro:bit's LED
matrix, the nRF52 DK's four LEDs and four buttons (``board.screen()``).  A
board with ``buttons`` takes keys 1-4 for them, and one with ``button_at(x,
y)`` (the DK) presses the button drawn under a mouse click on the panel,
held while the key or mouse button is down (at least one slice, as the side
button).

Pacing: the machine runs in slices of 1/60 s of emulated time.  In real-time
mode emulated time never runs ahead of the wall clock (the loop sleeps when
ahead, and re-anchors when the emulator cannot keep up rather than racing to
catch up); fast mode (F) runs flat out and redraws ~30 times a second.  The
host clock only decides *how much* emulated time to run per frame; inputs are
applied between slices, so the emulation itself stays deterministic.  The T
key (set the watch's time from the host clock) is the one deliberate use of
host time, as a user action.

Not modelled / limits: multi-touch and finger-move reports (a drag becomes
one swipe gesture on release); a double click delivers a tap then a double
tap (the first click cannot be held back without delaying every tap); a long
press is sent after 0.6 s of hold and the CST816S model adds its own 1 s
finger-down time; the motor is shown as a frame shake and an indicator, not
sound; the window does not resize (choose --scale).  Phone actions connect
on demand, which runs the machine until the watch advertises (up to 5 s of
emulated time) and fails with a log line when there is no BLE stack.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

from emu.clock import TICKS_PER_SECOND
from frontends.input import (HELP, GestureTracker, Layout, TextDialog, phone_action,
                             battery_percent, key_action)
from frontends.pacing import FAST_FRAME_S, run_slice

log = logging.getLogger("frontends.window")

SPEED_WINDOW_S = 0.5        # the status line's speed: emulated/wall time over >= this
WALK_STEPS_PER_MINUTE = 120

CASE = (38, 40, 46)
CASE_EDGE = (70, 74, 84)
STRAP = (24, 25, 28)
BG = (205, 208, 214)
TEXT = (20, 20, 24)
DIM = (90, 90, 100)
ACCENT = (200, 60, 40)


class NoDisplayError(RuntimeError):
    """No display to open a window on; the CLI prints the message (no traceback)."""


def _have_display() -> bool:
    if os.environ.get("SDL_VIDEODRIVER") in ("dummy", "offscreen"):
        return True
    if sys.platform.startswith(("win", "darwin")):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _no_display_message() -> str:
    return ("no display to open the window on (DISPLAY/WAYLAND_DISPLAY not set): "
            "use --headless, or run under Xvfb, or set SDL_VIDEODRIVER=dummy")


class Window:
    """One open window over a machine.  ``run_window`` loops over ``frame()``;
    tests call ``handle_event``/``frame``/``draw`` directly."""

    def __init__(self, machine, scale: int = 2, realtime: bool = True,
                 on_close: Optional[Callable[[], None]] = None,
                 pollers: Iterable[Callable[[], None]] = (),
                 screenshot_dir: str = ".", seconds: Optional[float] = None, gdb=None,
                 wall_clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if not _have_display():
            raise NoDisplayError(_no_display_message())
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        import pygame
        self.pg = pygame
        self.machine = machine
        self.board = machine.board
        self.layout = Layout(scale=int(scale))
        self.realtime = realtime
        self.on_close = on_close
        self.pollers = list(pollers)
        self.screenshot_dir = Path(screenshot_dir)
        self.gdb = gdb
        self.result = None                      # the RunResult that stopped the machine
        self.last_result = None
        self._end_tick = (None if seconds is None
                          else int(machine.clock.now) + int(round(seconds * TICKS_PER_SECOND)))
        self.wall = wall_clock
        self.sleep = sleep
        self.gestures = GestureTracker()
        self.dialog: Optional[TextDialog] = None
        self.show_help = False
        self.show_inspect = False               # the I panel: current, heaps, tasks
        self._inspect_lines: list = []
        self._inspect_at = -1.0
        # the energy model, for the present current (emu/power.py; no record kept)
        self.meter = getattr(machine, "power_meter", None)
        if self.meter is None and hasattr(machine, "power"):
            self.meter = machine.power(record=False)
        self.closed = False
        self.stopped: Optional[str] = None      # why the machine stopped running
        self.log_lines: list = []
        self.status_note = ""
        self.walking = False
        self._walk_by_device = False
        self._walk_since = 0
        self._walk_done = 0
        self._msg_seen = 0
        self._shake = 0
        self._speed = 0.0
        self._playing = False
        self._button_held = False
        self._release_pending = False
        self._held: dict = {}                   # board button index -> slices since press
        self._release_soon: set = set()         # released within their first slice
        self._mouse_board_button = None
        self._slices_since_press = 0
        self._call = ["Alice", "+1 555 0100"]
        self._note = ["Hello", "Sent from the emulator"]
        self._anchor_wall = self.wall()
        self._anchor_emu = self._emu_ticks()
        self._speed_mark = (self._anchor_wall, self._anchor_emu)
        # RTT on (machine.start_rtt, --rtt): its channel 0 in a pane on the right
        self.console_pane = None
        if getattr(machine, "rtt", None) is not None:
            from frontends.console_pane import ConsolePane
            self.console_pane = ConsolePane(machine.rtt)
        pane_w = self.console_pane.width if self.console_pane is not None else 0
        try:
            pygame.display.init()
            pygame.font.init()
            self.surface = pygame.display.set_mode((self.layout.width + pane_w,
                                                    self.layout.height))
        except pygame.error as e:
            raise NoDisplayError(f"cannot open a window ({e}): use --headless") from None
        pygame.display.set_caption(f"pinetime-emu — {getattr(machine, 'board_name', 'pinetime')}")
        pygame.key.set_repeat(0)
        self.font = pygame.font.Font(None, 20)
        self.small = pygame.font.Font(None, 18)

    # ------------------------------------------------------------------
    # helpers over the board/phone API (parts may be missing on other boards)
    # ------------------------------------------------------------------
    @property
    def phone(self):
        return getattr(self.machine, "phone", None)

    def _part(self, name: str):
        return getattr(self.board, name, None)

    def _emu_ticks(self) -> int:
        return int(self.machine.clock.now)

    def note(self, text: str) -> None:
        self.log_lines.append(text)
        del self.log_lines[:-50]

    # ------------------------------------------------------------------
    # events
    # ------------------------------------------------------------------
    def handle_event(self, ev) -> None:
        pg = self.pg
        if ev.type == pg.QUIT:
            self.closed = True
        elif ev.type == pg.KEYDOWN:
            self._key_down(pg.key.name(ev.key), getattr(ev, "unicode", ""), ev.mod)
        elif ev.type == pg.KEYUP:
            name = pg.key.name(ev.key)
            if self.console_pane is not None and self.console_pane.focused:
                return                          # the key went to the RTT console
            if self.dialog is None and self._board_button_key(name) is not None:
                self._board_button(self._board_button_key(name), False)
            elif key_action(name) == "button" and self.dialog is None:
                self._button(False)
        elif ev.type == pg.MOUSEBUTTONDOWN and ev.button == 1:
            if self.dialog is not None:
                return
            if self.show_help:
                self.show_help = False
                return
            if self.layout.on_button(*ev.pos):
                self._mouse_button = True
                self._button(True)
                return
            at = getattr(self.board, "button_at", None)
            pos = self.layout.window_to_panel(*ev.pos)
            if at is not None and pos is not None and at(*pos) is not None:
                self._mouse_board_button = at(*pos)
                self._board_button(self._mouse_board_button, True)
                return
            self.gestures.down(pos, self.wall())
        elif ev.type == pg.MOUSEMOTION:
            if self.gestures.held:
                self.gestures.motion(self.layout.window_to_panel(*ev.pos, clamp=True))
        elif ev.type == pg.MOUSEBUTTONUP and ev.button == 1:
            if self._mouse_board_button is not None:
                self._board_button(self._mouse_board_button, False)
                self._mouse_board_button = None
                return
            if getattr(self, "_mouse_button", False):
                self._mouse_button = False
                self._button(False)
                return
            pos = self.layout.window_to_panel(*ev.pos, clamp=True)
            self._apply_gestures(self.gestures.up(pos, self.wall()))

    def _key_down(self, name: str, text: str, mod: int) -> None:
        if self.dialog is None and self.console_pane is not None and \
                self.console_pane.key(name, text):
            return                              # typed into RTT's down channel 0
        if self.dialog is not None:
            self.dialog.key(name, text)
            if self.dialog.done:
                d, self.dialog = self.dialog, None
                if d.accepted:
                    self._dialog_done(d)
            return
        if self._board_button_key(name) is not None:
            self._board_button(self._board_button_key(name), True)
            return
        action = key_action(name) or key_action(text or "")
        if action is None:
            return
        if self.show_help and action in ("escape", "help"):
            self.show_help = False
            return
        getattr(self, "_act_" + action)()

    def _apply_gestures(self, gestures: list) -> None:
        touch = self._part("touch")
        for g in gestures:
            if touch is None:
                self.note("(this board has no touch screen)")
                return
            kind = g[0]
            if kind == "swipe":
                touch.swipe(g[1])
            else:
                getattr(touch, kind)(g[1], g[2])

    def _button(self, down: bool) -> None:
        """Side button: held while the key/mouse is down.  A press and release
        within one frame keep the button down for at least one slice, so the
        firmware can see a quick tap."""
        b = self._part("button")
        if b is None:
            return
        if down and not self._button_held:
            self._button_held = True
            self._release_pending = False
            self._slices_since_press = 0
            b.press()
        elif not down and self._button_held:
            if self._slices_since_press == 0:
                self._release_pending = True
            else:
                self._button_held = False
                b.release()

    def _board_button_key(self, name: str):
        """Keys 1-4 (main row or keypad): the board's buttons, when it has them."""
        buttons = getattr(self.board, "buttons", None)
        n = name.strip("[]")
        if buttons is None or len(n) != 1 or not n.isdigit():
            return None
        i = int(n) - 1
        return i if 0 <= i < len(buttons) else None

    def _board_button(self, i: int, down: bool) -> None:
        """One of the board's buttons, held like the side button (at least one slice)."""
        b = self.board.buttons[i]
        if down and i not in self._held:
            self._held[i] = 0
            self._release_soon.discard(i)
            b.press()
        elif not down and i in self._held:
            if self._held[i] == 0:
                self._release_soon.add(i)
            else:
                del self._held[i]
                b.release()

    # --- key actions -------------------------------------------------
    def _act_button(self):
        self._button(True)

    def _swipe(self, d):
        self._apply_gestures([("swipe", d)])

    def _act_swipe_up(self):
        self._swipe("up")

    def _act_swipe_down(self):
        self._swipe("down")

    def _act_swipe_left(self):
        self._swipe("left")

    def _act_swipe_right(self):
        self._swipe("right")

    def _need_phone(self):
        p = self.phone
        if p is None:
            self.note("no phone: this firmware has no BLE stack (SoftDevice)")
        return p

    def _phone_do(self, desc: str, fn: Callable) -> None:
        """Run one phone action, connecting first if needed.  Connecting runs
        the machine (between slices) until the watch advertises; failures are
        shown in the log, never raised out of the window."""
        p = self._need_phone()
        if p is not None:
            phone_action(p, desc, fn, self.note)

    def _act_connect(self):
        p = self._need_phone()
        if p is None:
            return
        try:
            if getattr(p, "connected", False):
                p.disconnect()
                self.note("phone: disconnected")
            else:
                p.connect()
                self.note("phone: connected")
        except Exception as e:
            self.note(f"phone: connect failed: {e}")

    def _act_call(self):
        if self._need_phone() is not None:
            self.dialog = TextDialog("Incoming call", "call",
                                     [["Name", self._call[0]], ["Number", self._call[1]]])

    def _act_notify(self):
        if self._need_phone() is not None:
            self.dialog = TextDialog("Notification", "notify",
                                     [["Title", self._note[0]], ["Body", self._note[1]]])

    def _dialog_done(self, d: TextDialog) -> None:
        if d.action == "call":
            self._call = name, number = d.values()
            self._phone_do(f"call from {name} ({number})",
                           lambda p: p.incoming_call(name, number))
        elif d.action == "notify":
            self._note = title, body = d.values()
            self._phone_do(f"notification: {title}: {body}", lambda p: p.notify(title, body))

    def _act_end_call(self):
        self._phone_do("end call", lambda p: p.end_call())

    def _act_music(self):
        playing = not self._playing

        def send(p):
            p.music_info("The Emulators", "Cycle Accurate")
            p.music_state(playing)
            self._playing = playing
        self._phone_do(f"music {'playing' if playing else 'paused'}", send)

    def _act_set_time(self):
        now = int(time.time())      # the user's action: give the watch the host's time
        self._phone_do(f"set time {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(now))}",
                       lambda p: p.set_time(now))

    def _act_screenshot(self):
        self.screenshot_dir.mkdir(parents=True, exist_ok=True)
        path = self.screenshot_dir / f"pinetime-{self._emu_ticks() * 1000 // TICKS_PER_SECOND}ms.png"
        shot = getattr(self.board, "screenshot", None)
        if shot is not None:
            shot(str(path))
        else:
            self.pg.image.save(self._panel_surface(), str(path))
        self.status_note = f"saved {path}"
        self.note(f"screenshot: {path}")

    def _act_fast(self):
        self.realtime = not self.realtime
        self._reanchor()
        self.note("real-time pacing" if self.realtime else "fast mode: as fast as possible")

    def _act_inspect(self):
        self.show_inspect = not self.show_inspect
        self._inspect_at = -1.0

    def inspect_lines(self) -> list:
        """The I panel's text: the current (now, average, the largest parts),
        then the heaps and tasks read from guest RAM (emu/inspect)."""
        lines = []
        m = self.meter
        if m is not None:
            r = m.report()
            lines.append(f"current {r.present_uA / 1000:.3f} mA, average "
                         f"{r.average_uA / 1000:.3f} mA")
            if r.battery_hours is not None:
                lines.append(f"  {r.battery_mAh} mAh battery: {r.battery_hours:.1f} h")
            for p in r.parts[:4]:
                if p.present_uA:
                    lines.append(f"  {p.name:<9} {p.present_uA / 1000:8.3f} mA  {p.state}")
        try:
            heaps, tasks = self.machine.heaps(), self.machine.tasks()
        except Exception as e:                  # a reader's bug: shown, not raised
            return lines + [f"heaps: {type(e).__name__}: {e}"]
        for h in heaps:
            lines.append(h.kind)
            if h.free is not None:
                frag = h.fragmentation
                lines.append(f"  free {h.free} of {h.total}  largest {h.largest_free}")
                extra = [] if h.min_ever_free is None else [f"min ever {h.min_ever_free}"]
                if frag is not None:
                    extra.append(f"frag {frag * 100:.0f}%")
                if extra:
                    lines.append("  " + "  ".join(extra))
            if h.problem:
                lines.append(f"  ! {h.problem}"[:60])
        if tasks:
            lines.append("task      state     prio  stack free")
            for t in tasks[:16]:
                hw = "?" if t.stack_high_water is None else f"{t.stack_high_water * 4} B"
                lines.append(f"  {t.name[:8]:<8}{t.state[:9]:<10}{t.priority:>3}  {hw}")
        if not heaps and not tasks and m is None:
            lines.append("no heap or task structures in this image")
        return lines

    def _draw_inspect(self) -> None:
        now = self.wall()
        if now - self._inspect_at >= 0.5:        # read guest RAM twice a second
            self._inspect_at = now
            self._inspect_lines = self.inspect_lines()
        lines = self._inspect_lines
        pg, L = self.pg, self.layout
        w = min(300, L.width // 2)
        h = min(L.status_y - 16, 12 + 16 * len(lines))
        box = pg.Surface((w, h), pg.SRCALPHA)
        box.fill((250, 250, 250, 230))
        x, y = L.width - w - 6, 8
        self.surface.blit(box, (x, y))
        pg.draw.rect(self.surface, TEXT, (x, y, w, h), 1)
        for i, line in enumerate(lines):
            if 6 + 16 * (i + 1) > h:
                break
            self.surface.blit(self.small.render(line, True, TEXT), (x + 6, y + 6 + 16 * i))

    def _act_help(self):
        self.show_help = not self.show_help

    def _act_escape(self):
        self.show_help = False

    def _act_quit(self):
        self.closed = True

    def _battery(self, dv: float):
        bat = self._part("battery")
        if bat is not None:
            bat.voltage = round(min(max(bat.voltage + dv, 3.3), 4.3), 3)
            self.note(f"battery {bat.voltage:.2f} V")

    def _act_battery_up(self):
        self._battery(+0.05)

    def _act_battery_down(self):
        self._battery(-0.05)

    def _act_charging(self):
        bat = self._part("battery")
        if bat is None:
            return
        on = not getattr(bat, "power_present", False)
        bat.power_present = on
        bat.charging = on
        self.note("charger connected" if on else "charger removed")

    def _hr(self, d: int):
        hr = self._part("heart_rate")
        if hr is not None:
            hr.bpm = min(max(int(hr.bpm) + d, 30), 220)
            self.note(f"heart rate {hr.bpm} bpm")

    def _act_hr_up(self):
        self._hr(+5)

    def _act_hr_down(self):
        self._hr(-5)

    def _act_walk(self):
        self.walking = not self.walking
        self._walk_since = self._emu_ticks()
        self._walk_done = 0
        accel = self._part("accel")
        cadence = getattr(accel, "set_steps_per_minute", None)
        self._walk_by_device = cadence is not None
        if cadence is not None:          # the sensor paces steps in emulated time itself
            cadence(WALK_STEPS_PER_MINUTE if self.walking else 0)
        self.note("walking" if self.walking else "standing still")

    # ------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------
    def _reanchor(self) -> None:
        self._anchor_wall = self.wall()
        self._anchor_emu = self._emu_ticks()

    def _between_slices(self) -> None:
        """Inputs that depend on emulated time, and the pollers."""
        self._apply_gestures(self.gestures.poll(self.wall()))
        if self.walking and not self._walk_by_device:
            # two steps per emulated second, deterministic in emulated time
            due = (self._emu_ticks() - self._walk_since) * WALK_STEPS_PER_MINUTE // (
                60 * TICKS_PER_SECOND)
            accel = self._part("accel")
            if accel is not None and due > self._walk_done:
                accel.walk(int(due - self._walk_done))
            self._walk_done = due
        for p in self.pollers:
            p()

    def _run_slice(self) -> None:
        if self.stopped is not None:
            return
        r, stopped, killed = run_slice(self.machine, self.gdb, self._emu_ticks(),
                                       self._end_tick)
        if killed:
            self.closed = True
        if r is not None:
            self.last_result = r
        if stopped is not None:
            if r is not None:
                self.result = r
            self.stopped = stopped
            self.note(f"machine stopped: {self.stopped}")
        self._slices_since_press += 1
        if self._release_pending:
            self._release_pending = False
            self._button(False)
        for i in list(self._held):
            self._held[i] += 1
        for i in sorted(self._release_soon):
            self._release_soon.discard(i)
            self._board_button(i, False)
        if self._end_tick is not None and (self._emu_ticks() >= self._end_tick
                                           or self.stopped is not None):
            self.closed = True                  # --seconds elapsed, or the run is over

    def frame(self) -> None:
        """Handle pending events, run emulated time for one frame, draw."""
        pg = self.pg
        for ev in pg.event.get():
            self.handle_event(ev)
        if self.closed:
            return
        w0, e0 = self.wall(), self._emu_ticks()
        if self.realtime:
            target = self._anchor_emu + int((self.wall() - self._anchor_wall) * TICKS_PER_SECOND)
            ahead = self._emu_ticks() - target
            if ahead > 0:
                self.sleep(ahead / TICKS_PER_SECOND)
            elif -ahead > TICKS_PER_SECOND // 4:    # cannot keep up: don't race to catch up
                self._reanchor()
            self._between_slices()
            self._run_slice()
        else:
            while True:
                self._between_slices()
                self._run_slice()
                if self.stopped is not None or self.wall() - w0 >= FAST_FRAME_S:
                    break
        if self._emu_ticks() == e0:             # stopped or halted by GDB: don't spin
            self.sleep(1 / 60)
            self._reanchor()
        self._collect_messages()
        self.draw()
        pg.display.flip()
        self._measure_speed()

    def _measure_speed(self) -> None:
        """The status line's speed: emulated time over wall time between frame
        ends at least SPEED_WINDOW_S apart, so drawing, event handling and
        pacing sleeps count (measuring only the emulation reads 50-80x for a
        watch that runs at 1x)."""
        wall, emu = self.wall(), self._emu_ticks()
        wall0, emu0 = self._speed_mark
        if wall - wall0 >= SPEED_WINDOW_S:
            self._speed = (emu - emu0) / TICKS_PER_SECOND / (wall - wall0)
            self._speed_mark = (wall, emu)

    def _collect_messages(self) -> None:
        p = self.phone
        msgs = getattr(p, "messages", None) if p is not None else None
        if msgs is None:
            return
        for m in msgs[self._msg_seen:]:
            self.note("watch -> " + (json.dumps(m, separators=(",", ":"))
                                     if not isinstance(m, str) else m))
        self._msg_seen = len(msgs)

    def close(self) -> None:
        if getattr(self, "_finished", False):
            return
        self._finished = True
        try:
            if self.on_close is not None:
                self.on_close()
        finally:
            close = getattr(self.board, "close", None)
            if close is not None:
                close()
            self.pg.display.quit()

    # ------------------------------------------------------------------
    # drawing
    # ------------------------------------------------------------------
    def _panel_surface(self):
        import numpy as np
        img = np.asarray(self.board.screen(), dtype=np.uint8)
        return self.pg.surfarray.make_surface(np.ascontiguousarray(img.transpose(1, 0, 2)))

    def draw(self) -> None:
        pg, L, s = self.pg, self.layout, self.surface
        s.fill(BG)
        motor = self._part("motor")
        buzzing = bool(getattr(motor, "on", False))
        self._shake = (self._shake + 1) % 4
        dx = (-2, 0, 2, 0)[self._shake] * L.scale // 2 if buzzing else 0
        # strap stubs, case, button
        sw = L.case_w * 2 // 3
        sx = L.case_x + (L.case_w - sw) // 2 + dx
        pg.draw.rect(s, STRAP, (sx, 0, sw, L.case_y + 20), border_radius=6)
        pg.draw.rect(s, STRAP, (sx, L.case_y + L.case_h - 20, sw, L.strap + 20), border_radius=6)
        bx, by, bw, bh = L.button_rect
        bdown = self._button_held
        pg.draw.rect(s, (150, 150, 160) if not bdown else (110, 110, 120),
                     (bx + dx - (2 if bdown else 0), by, bw, bh), border_radius=3)
        pg.draw.rect(s, CASE_EDGE, (L.case_x + dx - 2, L.case_y - 2, L.case_w + 4, L.case_h + 4),
                     border_radius=12 * L.scale)
        pg.draw.rect(s, CASE, (L.case_x + dx, L.case_y, L.case_w, L.case_h),
                     border_radius=11 * L.scale)
        panel = self._panel_surface()
        if L.scale != 1:
            panel = pg.transform.scale(panel, (L.screen_size, L.screen_size))
        s.blit(panel, (L.screen_x + dx, L.screen_y))
        if buzzing:
            s.blit(self.font.render("~ VIBRATING ~", True, ACCENT), (8, 8))
        self._draw_status()
        if self.console_pane is not None:
            self.console_pane.draw(pg, s, (L.width, 0, self.console_pane.width, L.height))
        if self.show_inspect:
            self._draw_inspect()
        if self.show_help:
            self._draw_help()
        if self.dialog is not None:
            self._draw_dialog()

    def _status_text(self) -> str:
        parts = [f"t={self._emu_ticks() / TICKS_PER_SECOND:.3f}s",
                 f"{self._speed:5.2f}x" + ("" if self.realtime else " FAST")]
        bl = self._part("backlight")
        if bl is not None:
            parts.append(f"backlight {bl.level}/3")
        leds = self._part("leds")
        if leds is not None:
            parts.append("LED1-4 " + "".join("*" if on else "." for on in leds))
        bat = self._part("battery")
        if bat is not None:
            parts.append(f"bat {battery_percent(bat.voltage)}% {bat.voltage:.2f}V"
                         + (" charging" if getattr(bat, "charging", False) else "")
                         + (" (usb)" if getattr(bat, "power_present", False)
                            and not getattr(bat, "charging", False) else ""))
        hr = self._part("heart_rate")
        if hr is not None:
            parts.append(f"hr {int(hr.bpm)} bpm")
        acc = self._part("accel")
        if acc is not None:
            parts.append(f"steps {getattr(acc, 'steps', 0)}" + (" walking" if self.walking else ""))
        if self.meter is not None:
            ua = self.meter.now_uA()
            parts.append(f"{ua / 1000:.2f} mA" if ua >= 1000 else f"{ua:.0f} uA")
        if self.stopped:
            parts.append("STOPPED: " + self.stopped)
        elif self.gdb is not None and getattr(self.gdb, "halted", False):
            parts.append("halted by debugger")
        return "  |  ".join(parts)

    def _draw_status(self) -> None:
        L, s = self.layout, self.surface
        y = L.status_y
        s.blit(self.font.render(self._status_text(), True, TEXT), (10, y))
        y += L.line_h
        hint = self.status_note or "H: help"
        s.blit(self.small.render(hint, True, DIM), (10, y))
        y += L.line_h
        for line in self.log_lines[-L.log_lines:]:
            s.blit(self.small.render(line[:110], True, TEXT), (10, y))
            y += L.line_h

    def _overlay(self, w: int, h: int):
        pg, L = self.pg, self.layout
        box = pg.Surface((w, h), pg.SRCALPHA)
        box.fill((250, 250, 250, 235))
        x = (L.width - w) // 2
        y = max(10, (L.status_y - h) // 2)
        self.surface.blit(box, (x, y))
        pg.draw.rect(self.surface, TEXT, (x, y, w, h), 1)
        return x, y

    def _draw_help(self) -> None:
        w, h = min(self.layout.width - 20, 520), 24 + 18 * len(HELP)
        x, y = self._overlay(w, h)
        for i, (k, what) in enumerate(HELP):
            self.surface.blit(self.small.render(k, True, ACCENT), (x + 12, y + 12 + 18 * i))
            self.surface.blit(self.small.render(what, True, TEXT), (x + 180, y + 12 + 18 * i))

    def _draw_dialog(self) -> None:
        d = self.dialog
        w, h = min(self.layout.width - 20, 480), 40 + 28 * len(d.fields) + 24
        x, y = self._overlay(w, h)
        self.surface.blit(self.font.render(d.title, True, TEXT), (x + 12, y + 10))
        for i, (label, value) in enumerate(d.fields):
            yy = y + 36 + 28 * i
            self.surface.blit(self.small.render(label, True, DIM), (x + 12, yy + 4))
            self.pg.draw.rect(self.surface, ACCENT if i == d.index else DIM,
                              (x + 90, yy, w - 104, 22), 1)
            cursor = "_" if i == d.index else ""
            self.surface.blit(self.small.render(value + cursor, True, TEXT), (x + 95, yy + 4))
        self.surface.blit(self.small.render("Tab: next field   Enter: send   Esc: cancel",
                                            True, DIM), (x + 12, y + h - 20))


def run_window(machine, scale: int = 2, realtime: bool = True,
               on_close: Optional[Callable[[], None]] = None,
               pollers: Iterable[Callable[[], None]] = (),
               seconds: Optional[float] = None, gdb=None):
    """Open the window over ``machine`` and run until the user closes it (or,
    with ``seconds``, until that much emulated time has run).

    ``pollers`` run each frame between slices; with ``gdb`` (an
    frontends.gdbstub.GdbStub) the stub runs the machine, so breakpoints and halts
    work while the window keeps drawing.  Raises :class:`NoDisplayError`
    (before touching the machine) when there is no display.  On close:
    ``on_close()`` then ``board.close()``.  Returns the RunResult that stopped
    the machine (exit, fault, lockup), or the last one for ``seconds``, or None
    when the user closed a running watch.
    """
    win = Window(machine, scale=scale, realtime=realtime, on_close=on_close, pollers=pollers,
                 seconds=seconds, gdb=gdb)
    try:
        while not win.closed:
            win.frame()
    finally:
        win.close()
    if win.result is None and seconds is not None:
        return win.last_result or _Deadline(machine)
    return win.result


class _Deadline:
    """A RunResult-like value for a window run that ended at --seconds."""
    reason = "deadline"

    def __init__(self, machine):
        self.exit_code = getattr(machine, "exit_code", None)
        self.time_ticks = machine.clock.now
