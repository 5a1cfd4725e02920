"""The desktop window, driven by synthetic pygame events on SDL's dummy video driver.

A fake board/phone records what the window asks of them; a fake wall clock
makes long presses and double clicks deterministic.
"""
from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"       # before pygame is imported anywhere
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


import numpy as np
import pytest

pygame = pytest.importorskip("pygame")

from frontends.input import (GestureTracker, Layout, TextDialog, drag_direction,  # noqa: E402
                             key_action)
from frontends.window import NoDisplayError, Window, run_window  # noqa: E402
from helpers.paths import ROOT  # noqa: E402

TPS = 512_000_000


# ----------------------------------------------------------------------
# fakes
# ----------------------------------------------------------------------
class Rec:
    def __init__(self, log, name):
        self._log, self._name = log, name

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        return lambda *a: self._log.append((self._name + "." + attr,) + a)


class FakeButton:
    def __init__(self, log):
        self.log, self.pressed = log, False

    def press(self):
        self.pressed = True
        self.log.append(("button.press",))

    def release(self):
        self.pressed = False
        self.log.append(("button.release",))


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeBoard:
    def __init__(self, pattern=None):
        self.log = []
        self.touch = Rec(self.log, "touch")
        self.button = FakeButton(self.log)
        self.motor = Obj(on=False, timeline=[])
        self.backlight = Obj(level=3)
        self.battery = Obj(voltage=3.9, charging=False, power_present=False)
        self.heart_rate = Obj(bpm=70)
        self.accel = Obj(steps=0)
        self.accel.walk = self._walk
        self.pattern = pattern if pattern is not None else np.zeros((240, 240, 3), np.uint8)
        self.closed = False

    def _walk(self, n):
        self.accel.steps += n

    def screen(self):
        return self.pattern

    def screenshot(self, path):
        self.log.append(("screenshot", path))

    def close(self):
        self.closed = True


class FakePhone:
    def __init__(self):
        self.log = []
        self.messages = []
        self.connected = False
        for name in ("incoming_call", "end_call", "notify", "music_info", "music_state",
                     "set_time"):
            setattr(self, name, (lambda n: lambda *a: self._call(n, a))(name))

    def _call(self, name, args):
        if not self.connected:
            raise RuntimeError("not connected")
        self.log.append((name,) + args)

    def connect(self):
        self.log.append(("connect",))
        self.connected = True

    def disconnect(self):
        self.log.append(("disconnect",))
        self.connected = False


class Result:
    reason, ok, exit_code = "deadline", True, None


class FakeMachine:
    def __init__(self, board=None, phone=None):
        self.board = board or FakeBoard()
        self.phone = phone
        self.clock = Obj(now=0)
        self.runs = []

    def run(self, until_tick):
        self.runs.append((self.clock.now, until_tick))
        self.clock.now = until_tick
        return Result()


class FakeWall:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def make(scale=2, phone=None, pattern=None, **kw):
    m = FakeMachine(FakeBoard(pattern), phone)
    wall = FakeWall()
    w = Window(m, scale=scale, wall_clock=wall, sleep=lambda s: None, **kw)
    return m, w, wall


def click(w, wx, wy, wall=None, hold=0.05):
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=(wx, wy), button=1))
    if wall is not None:
        wall.t += hold
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONUP, pos=(wx, wy), button=1))


def key(w, k, up=True, text=""):
    w.handle_event(pygame.event.Event(pygame.KEYDOWN, key=k, mod=0, unicode=text))
    if up:
        w.handle_event(pygame.event.Event(pygame.KEYUP, key=k, mod=0, unicode=text))


def type_text(w, s):
    for ch in s:
        key(w, ord(ch), up=False, text=ch)


def window_pos(w, px, py):
    """Centre of panel pixel (px, py) in window coordinates."""
    L = w.layout
    return L.screen_x + px * L.scale + L.scale // 2, L.screen_y + py * L.scale + L.scale // 2


@pytest.fixture(autouse=True)
def _quit_pygame():
    yield
    pygame.display.quit()


# ----------------------------------------------------------------------
# pure mapping
# ----------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1, 2, 3])
def test_layout_maps_window_to_panel_at_any_scale(scale):
    L = Layout(scale=scale)
    assert L.window_to_panel(L.screen_x, L.screen_y) == (0, 0)
    last = L.screen_x + 240 * scale - 1
    assert L.window_to_panel(last, last - L.screen_x + L.screen_y) == (239, 239)
    assert L.window_to_panel(L.screen_x + 100 * scale + scale - 1, L.screen_y + 7 * scale) == (100, 7)
    assert L.window_to_panel(L.screen_x - 1, L.screen_y) is None
    assert L.window_to_panel(last + 1, L.screen_y) is None
    assert L.window_to_panel(L.screen_x - 50, L.screen_y + 10_000, clamp=True) == (0, 239)


def test_drag_direction_threshold_and_dominant_axis():
    assert drag_direction(29, 0) is None
    assert drag_direction(30, 0) == "right"
    assert drag_direction(-40, 10) == "left"
    assert drag_direction(10, -50) == "up"
    assert drag_direction(-20, 45) == "down"


def test_gesture_tracker_tap_double_long_swipe():
    g = GestureTracker()
    g.down((10, 20), 0.0)
    assert g.up((11, 21), 0.1) == [("tap", 10, 20)]
    g.down((12, 20), 0.3)
    assert g.up((12, 20), 0.35) == [("double_tap", 12, 20)]
    g.down((12, 20), 0.5)          # third click: a plain tap again
    assert g.up((12, 20), 0.55) == [("tap", 12, 20)]
    g.down((50, 50), 5.0)
    assert g.poll(5.59) == []
    assert g.poll(5.61) == [("long_press", 50, 50)]
    assert g.up((50, 50), 7.0) == []       # already delivered while held
    g.down((100, 100), 10.0)
    g.motion((100, 60))
    assert g.poll(11.0) == []              # a drag never becomes a long press
    assert g.up((100, 40), 11.0) == [("swipe", "up")]
    g.down(None, 12.0)                     # outside the glass
    assert g.up((5, 5), 12.1) == []


def test_keymap_and_dialog_editing():
    assert key_action("space") == "button" and key_action("C") == "call"
    assert key_action("up") == "swipe_up" and key_action("x") is None
    d = TextDialog("t", "call", [["Name", "Al"], ["Number", "1"]])
    d.key("backspace")
    d.key("a", "x")
    d.key("tab")
    d.key("2", "2")
    d.key("return")
    assert d.done and d.accepted and d.values() == ["Ax", "12"]
    d = TextDialog("t", "call", [["Name", "Al"]])
    d.key("escape")
    assert d.done and not d.accepted


# ----------------------------------------------------------------------
# the window with synthetic events
# ----------------------------------------------------------------------
@pytest.mark.parametrize("scale", [2, 3])
def test_click_taps_at_panel_coordinates(scale):
    m, w, wall = make(scale)
    click(w, *window_pos(w, 37, 201), wall)
    click(w, w.layout.screen_x - 3, w.layout.screen_y + 5, wall)   # outside: ignored
    wall.t += 1
    click(w, *window_pos(w, 239, 0), wall)
    assert m.board.log == [("touch.tap", 37, 201), ("touch.tap", 239, 0)]


def test_double_click_is_double_tap():
    m, w, wall = make(2)
    pos = window_pos(w, 120, 120)
    click(w, *pos, wall)
    wall.t += 0.1
    click(w, *pos, wall)
    assert m.board.log == [("touch.tap", 120, 120), ("touch.double_tap", 120, 120)]


@pytest.mark.parametrize("scale,start,end,want", [
    (2, (120, 200), (120, 60), "up"),
    (2, (120, 60), (120, 200), "down"),
    (3, (200, 120), (20, 130), "left"),
    (3, (20, 120), (200, 110), "right"),
])
def test_drag_is_swipe(scale, start, end, want):
    m, w, wall = make(scale)
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=window_pos(w, *start), button=1))
    mid = ((start[0] + end[0]) // 2, (start[1] + end[1]) // 2)
    w.handle_event(pygame.event.Event(pygame.MOUSEMOTION, pos=window_pos(w, *mid), rel=(0, 0),
                                      buttons=(1, 0, 0)))
    wall.t += 0.2
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONUP, pos=window_pos(w, *end), button=1))
    assert m.board.log == [("touch.swipe", want)]


def test_hold_is_long_press_delivered_between_slices():
    m, w, wall = make(2)
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=window_pos(w, 60, 70), button=1))
    w.frame()
    assert m.board.log == []
    wall.t += 0.7
    w.frame()                                  # held past the threshold: fires while held
    assert m.board.log == [("touch.long_press", 60, 70)]
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONUP, pos=window_pos(w, 60, 70), button=1))
    assert m.board.log == [("touch.long_press", 60, 70)]


def test_button_key_held_while_down_and_arrows_swipe():
    m, w, wall = make(2)
    key(w, pygame.K_SPACE, up=False)
    assert m.board.button.pressed
    w.frame()
    assert m.board.button.pressed              # still held across a slice
    w.handle_event(pygame.event.Event(pygame.KEYUP, key=pygame.K_SPACE, mod=0, unicode=" "))
    assert not m.board.button.pressed
    key(w, pygame.K_LEFT)
    key(w, pygame.K_UP)
    assert m.board.log == [("button.press",), ("button.release",),
                           ("touch.swipe", "left"), ("touch.swipe", "up")]


def test_clicking_the_drawn_side_button_presses_it():
    m, w, wall = make(2)
    x, y, bw, bh = w.layout.button_rect
    click(w, x + bw // 2, y + bh // 2, wall)
    # pressed and released within one frame: held for one slice so firmware sees it
    assert m.board.log == [("button.press",)]
    w.frame()
    assert m.board.log == [("button.press",), ("button.release",)]
    assert m.board.button.log is m.board.log and not m.board.button.pressed


def test_phone_call_with_edited_name_and_notification():
    phone = FakePhone()
    m, w, wall = make(2, phone=phone)
    key(w, pygame.K_c, text="c")
    assert w.dialog is not None
    for _ in range(10):
        key(w, pygame.K_BACKSPACE, up=False)
    type_text(w, "Bob")
    key(w, pygame.K_TAB, up=False)
    for _ in range(20):
        key(w, pygame.K_BACKSPACE, up=False)
    type_text(w, "+4412")
    key(w, pygame.K_RETURN, up=False)
    assert w.dialog is None
    key(w, pygame.K_n, text="n")
    key(w, pygame.K_RETURN, up=False)            # keep the title, move to the body
    for _ in range(40):
        key(w, pygame.K_BACKSPACE, up=False)
    type_text(w, "Lunch?")
    key(w, pygame.K_RETURN, up=False)
    key(w, pygame.K_e, text="e")
    key(w, pygame.K_m, text="m")
    assert phone.log == [("connect",), ("incoming_call", "Bob", "+4412"), ("notify", "Hello", "Lunch?"),
                         ("end_call",), ("music_info", "The Emulators", "Cycle Accurate"),
                         ("music_state", True)]
    assert m.board.log == []                     # typing never leaked into the watch
    phone.messages.append({"t": "call", "n": "ACCEPT"})
    w.frame()
    assert any('"n":"ACCEPT"' in line for line in w.log_lines)


def test_board_controls_and_walking_follow_emulated_time():
    m, w, wall = make(2)
    key(w, pygame.K_EQUALS, text="=")
    assert m.board.battery.voltage == pytest.approx(3.95)
    key(w, pygame.K_p, text="p")
    assert m.board.battery.charging and m.board.battery.power_present
    key(w, pygame.K_RIGHTBRACKET, text="]")
    assert m.board.heart_rate.bpm == 75
    key(w, pygame.K_w, text="w")
    w.realtime = False                          # flat out: 1/60 s slices
    while m.clock.now < 2 * TPS:                # 2 s of emulated time
        w._between_slices()
        w._run_slice()
    w._between_slices()
    assert m.board.accel.steps == 4
    key(w, pygame.K_s, text="s")
    assert m.board.log[-1][0] == "screenshot" and m.board.log[-1][1].endswith(f"pinetime-{m.clock.now * 1000 // TPS}ms.png")


def test_realtime_pacing_never_runs_ahead_of_the_wall_clock():
    m, w, wall = make(2)
    slept = []
    w.sleep = lambda s: (slept.append(s), setattr(wall, "t", wall.t + s))
    for _ in range(30):
        w.frame()
        wall.t += 0.001                          # the host is fast: 1 ms per frame
    emu_s = m.clock.now / TPS
    assert all(b - a == TPS // 60 for a, b in m.runs)
    # emulated time is at most one slice ahead of the wall clock since the start
    assert emu_s <= (wall.t - 100.0) + 1 / 60 + 1e-9
    assert sum(slept) > 0.3


def test_status_speed_is_emulated_over_wall_time_including_drawing():
    # Each frame: 1 ms of emulation for a 1/60 s slice, then 30 ms of drawing.
    # The emulated clock advances at about 0.5x the wall clock; timing only
    # the emulation would claim about 17x.
    m, w, wall = make(2)
    w.sleep = lambda s: setattr(wall, "t", wall.t + s)
    run, draw = m.run, w.draw
    m.run = lambda until_tick: (setattr(wall, "t", wall.t + 0.001), run(until_tick))[1]
    w.draw = lambda: (setattr(wall, "t", wall.t + 0.030), draw())[1]
    t0, e0 = wall.t, m.clock.now
    for _ in range(60):
        w.frame()
    real = (m.clock.now - e0) / TPS / (wall.t - t0)
    shown = float(w._status_text().split("  |  ")[1].rstrip("x"))
    assert 0.4 < real < 0.7
    assert abs(shown - real) < 0.1 * real, (shown, real)


def test_render_of_known_frame_is_pixel_exact_at_scale():
    rng = np.random.default_rng(6)
    pattern = rng.integers(0, 256, (240, 240, 3), dtype=np.uint8)
    pattern[0, :] = (255, 0, 0)      # top row red: orientation check
    pattern[:, 0] = (0, 0, 255)      # left column blue
    for scale in (2, 3):
        m, w, wall = make(scale, pattern=pattern)
        w.draw()
        L = w.layout
        grab = pygame.surfarray.array3d(w.surface).transpose(1, 0, 2)   # (h, w, 3)
        area = grab[L.screen_y:L.screen_y + 240 * scale, L.screen_x:L.screen_x + 240 * scale]
        want = np.repeat(np.repeat(pattern, scale, axis=0), scale, axis=1)
        assert np.array_equal(area, want)
        pygame.display.quit()


def test_motor_shakes_the_frame():
    pattern = np.full((240, 240, 3), 200, np.uint8)
    m, w, wall = make(2, pattern=pattern)
    m.board.motor.on = True
    xs = set()
    for _ in range(4):
        w.draw()
        grab = pygame.surfarray.array3d(w.surface)
        row = grab[:, w.layout.screen_y + 100]
        xs.add(int(np.argmax((row == 200).all(axis=1))))
    assert len(xs) > 1


def test_close_calls_on_close_then_board_close():
    order = []
    m = FakeMachine()
    m.board.close = lambda: order.append("board.close")
    polled = []

    def poller():                       # the user closes the window after a frame
        polled.append(m.clock.now)
        pygame.event.post(pygame.event.Event(pygame.QUIT))
    run_window(m, scale=1, on_close=lambda: order.append("on_close"), pollers=[poller])
    assert order == ["on_close", "board.close"]
    assert polled == [0] and m.runs == [(0, TPS // 60)]


def test_pollers_run_between_slices():
    polled = []
    m = FakeMachine()
    w = Window(m, scale=1, pollers=[lambda: polled.append(m.clock.now)],
               wall_clock=FakeWall(), sleep=lambda s: None)
    w.realtime = False
    w.wall = iter([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]).__next__
    w.frame()
    assert len(polled) >= 1 and polled[0] == 0


def test_no_display_raises_specific_error(monkeypatch):
    monkeypatch.delenv("SDL_VIDEODRIVER", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    m = FakeMachine()
    with pytest.raises(NoDisplayError, match="--headless"):
        run_window(m)
    assert m.runs == [] and not m.board.closed


# ----------------------------------------------------------------------
# the real PineTime board and a firmware from firmware/
# ----------------------------------------------------------------------
def test_real_board_window_shows_the_panel_and_closes(firmware_dir):
    elf = firmware_dir / "pinetime_demo.elf"
    if not elf.exists():
        pytest.skip("firmware/build/pinetime_demo.elf not built")
    from emu.machine import Machine
    m = Machine(str(elf), board="pinetime")
    if not hasattr(m.board, "screen"):
        pytest.skip("PineTime board API (board.screen) not available yet")
    wall = FakeWall()
    closed = []
    w = Window(m, scale=2, wall_clock=wall, sleep=lambda s: setattr(wall, "t", wall.t + s),
               on_close=lambda: closed.append(True))
    for _ in range(12):                       # 12 frames of 1/60 s, paced against the fake wall
        wall.t += 1 / 60
        w.frame()
    assert m.clock.now >= 11 * (TPS // 60)
    assert m.clock.now <= int((wall.t - 100.0) * TPS) + TPS // 60
    w.draw()
    L = w.layout
    grab = pygame.surfarray.array3d(w.surface).transpose(1, 0, 2)
    area = grab[L.screen_y:L.screen_y + 480, L.screen_x:L.screen_x + 480]
    want = np.repeat(np.repeat(np.asarray(m.board.screen()), 2, axis=0), 2, axis=1)
    assert np.array_equal(area, want)
    assert f"backlight {m.board.backlight.level}/3" in w._status_text()
    reports = getattr(m.board.touch, "reports", None)
    if reports is not None and not m.board.touch.in_reset:   # the click reaches the CST816S
        n = len(reports)
        click(w, *window_pos(w, 33, 177), wall)
        w.frame()
        assert [(g, x, y) for _, g, x, y in reports[n:]] == [(5, 33, 177)]  # SINGLE_CLICK
    key(w, pygame.K_SPACE, up=False)           # the side button reaches the real board
    w.frame()
    assert m.board.button.pressed
    w.handle_event(pygame.event.Event(pygame.KEYUP, key=pygame.K_SPACE, mod=0, unicode=" "))
    w.frame()
    assert not m.board.button.pressed
    w.close()
    assert closed == [True]


def test_phone_failures_are_logged_not_raised():
    phone = FakePhone()
    phone.connect = lambda: (_ for _ in ()).throw(RuntimeError("the watch is not advertising"))
    m, w, wall = make(2, phone=phone)
    key(w, pygame.K_e, text="e")                 # must not raise
    assert phone.log == []
    assert any("not advertising" in line for line in w.log_lines)


def test_connect_key_toggles_and_no_phone_is_reported():
    phone = FakePhone()
    m, w, wall = make(2, phone=phone)
    key(w, pygame.K_k, text="k")
    key(w, pygame.K_k, text="k")
    assert phone.log == [("connect",), ("disconnect",)]
    m2, w2, _ = make(2, phone=None)
    key(w2, pygame.K_c, text="c")
    assert w2.dialog is None and "no phone" in w2.log_lines[-1]


def test_help_overlay_toggles_and_draws():
    m, w, wall = make(2)
    w.draw()
    before = pygame.surfarray.array3d(w.surface).copy()
    key(w, pygame.K_h, text="h")
    assert w.show_help
    w.draw()
    assert not np.array_equal(before, pygame.surfarray.array3d(w.surface))
    key(w, pygame.K_ESCAPE)
    assert not w.show_help


def test_seconds_limit_returns_last_result_and_stop_is_reported():
    m = FakeMachine()
    r = run_window(m, scale=1, realtime=False, seconds=0.05)
    assert m.clock.now == int(0.05 * TPS) and r.reason == "deadline"

    class Exited(Result):
        reason, ok, exit_code = "exit", True, 3
    m = FakeMachine()
    m.run = lambda until_tick: Exited()
    w = Window(m, scale=1, wall_clock=FakeWall(), sleep=lambda s: None)
    w.frame()
    w.frame()
    assert w.result.exit_code == 3 and "STOPPED: exit" in w._status_text()
    assert not w.closed                      # without --seconds the last screen stays up
    pygame.display.quit()
    m2 = FakeMachine()
    m2.run = lambda until_tick: Exited()
    r = run_window(m2, scale=1, seconds=5.0)  # with --seconds, a finished run closes
    assert r.exit_code == 3


def test_gdb_stub_runs_the_machine_and_kill_closes():
    calls = []

    class Stub:
        halted = False

        def run_machine(self, until):
            calls.append(until)
            return "killed" if len(calls) == 2 else "deadline"
    m = FakeMachine()
    r = run_window(m, scale=1, gdb=Stub())
    assert calls == [TPS // 60, TPS // 60] and m.runs == [] and r is None


def test_walking_uses_the_sensor_cadence_when_it_has_one():
    m, w, wall = make(2)
    cadence = []
    m.board.accel.set_steps_per_minute = cadence.append
    key(w, pygame.K_w, text="w")
    w.frame()
    key(w, pygame.K_w, text="w")
    assert cadence == [120, 0] and m.board.accel.steps == 0   # no double counting


def test_inspect_panel_shows_current_heaps_and_tasks():
    """I toggles a panel with the present current (the energy model the
    window starts) and the heaps and tasks read from guest RAM."""
    import subprocess
    from emu import Machine
    subprocess.run(["make", "-C", str(ROOT / "firmware"), "-s", "-j2"], check=True)
    m = Machine(str(ROOT / "firmware" / "build" / "heap_tasks.elf"), board="pinetime",
                flash_file=None)
    w = Window(m, scale=1, wall_clock=FakeWall(), sleep=lambda s: None)
    assert m.power_meter is w.meter and not w.meter.record
    m.run(ms=20)
    w.draw()
    before = pygame.surfarray.array3d(w.surface).copy()
    key(w, pygame.K_i, text="i")
    assert w.show_inspect
    w.draw()
    assert not np.array_equal(before, pygame.surfarray.array3d(w.surface))
    text = "\n".join(w.inspect_lines())
    assert "current" in text and "FreeRTOS heap_4" in text and "MicroPython GC heap" in text
    assert "sensor" in text and "blocked" in text
    assert " mA" in w._status_text() or " uA" in w._status_text()
    key(w, pygame.K_i, text="i")
    assert not w.show_inspect
    w.close()


def test_inspect_panel_on_a_machine_without_readers():
    m, w, wall = make(2)
    key(w, pygame.K_i, text="i")
    w.draw()                                  # the fake machine has no heaps(): no exception
    assert w.show_inspect and w.inspect_lines()


def test_phone_action_connects_first_and_never_raises():
    """frontends.input.phone_action, shared by the window and the web page:
    a phone not connected is connected first; a failing action is a note."""
    from frontends.input import phone_action

    class Phone:
        connected = False

        def connect(self):
            self.connected = True

    notes, p = [], Phone()
    phone_action(p, "notification: Hi", lambda ph: None, notes.append)
    assert p.connected and notes == ["phone: connecting...", "phone -> notification: Hi"]

    def boom(ph):
        raise RuntimeError("the watch stopped advertising")
    notes.clear()
    phone_action(p, "call from Ann", boom, notes.append)
    assert notes == ["phone: call from Ann failed: the watch stopped advertising"]
