"""The web view (``run --web``) without a browser: its WebSocket protocol,
its HTTP pages, its input rules, the command line.  The browser itself is
tests/frontends/test_web_browser.py.

The firmware is firmware/tests/pinetime_web.c: it draws a face, reacts to
touch (a tap paints a white square where the finger was, a swipe repaints
the background), the side button (a white frame while held) and Nordic UART
lines (echoed; a Gadgetbridge notification paints an orange banner), and
prints what it saw ("touch 5 120 40", "button") on the console.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from conftest import free_port
from helpers.web import console, decode_png, pause, running_view, screen, wait, ws_url

pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

WHITE = (255, 255, 255)


@pytest.fixture
def machine(fw):
    from emu import Machine
    m = Machine(fw("pinetime_web"), flash_file=None)
    m.run(ms=300)                                    # booted: the face is drawn
    yield m
    m.close()


class Client:
    """A scripted browser tab: collects what the server sends."""

    def __init__(self, view, **kw):
        # max_queue=None: frames keep being read while the test looks elsewhere
        self.ws = connect(ws_url(view), open_timeout=10, max_queue=None, **kw).__enter__()
        self.messages: list = []
        self.frames: list = []                       # (seq, png)

    def pump(self, timeout: float = 0.05) -> None:
        while True:
            try:
                m = self.ws.recv(timeout=timeout)
            except TimeoutError:
                return
            if isinstance(m, bytes):
                self.frames.append((int.from_bytes(m[:4], "big"), m[4:]))
            else:
                self.messages.append(json.loads(m))

    def until(self, cond, timeout: float = 10.0, what: str = "a message"):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump()
            v = cond(self)
            if v:
                return v
        raise AssertionError(f"timed out waiting for {what}; got {self.messages[-5:]}")

    def of(self, kind: str) -> list:
        return [m for m in self.messages if m.get("t") == kind]

    def send(self, **msg) -> None:
        self.ws.send(json.dumps(msg))

    def frame_with(self, pred):
        """The newest frame, once one satisfies ``pred(image)``."""
        def check(c):
            return c.frames and pred(decode_png(c.frames[-1][1]))
        self.until(check, what="a frame showing it")
        return decode_png(self.frames[-1][1])

    def close(self):
        self.ws.close()


def test_hello_then_the_screen_as_the_machine_shows_it(machine):
    with running_view(machine) as view:
        seq = pause(view)
        expected = screen(view)
        c = Client(view)
        c.until(lambda c: c.frames and c.frames[-1][0] == seq, what=f"frame {seq}")
        hello = c.messages[0]
        assert hello["t"] == "hello" and hello["board"] == "pinetime"
        assert hello["screen"] == {"width": 240, "height": 240}
        assert hello["touch"] and hello["side_button"] and hello["phone"]
        assert hello["buttons"] == [] and hello["firmware"] == "pinetime_web.elf"
        got = decode_png(c.frames[-1][1])
        assert got.shape == (240, 240, 3)
        assert np.array_equal(got, expected)             # exact pixels
        assert got.max() > 0
        st = c.until(lambda c: c.of("status") and c.of("status")[-1]["clients"] == 1,
                     what="a status counting this tab")
        st = c.of("status")[-1]
        assert st["paused"] is True and st["backlight"] == 3
        assert "pinetime web demo running" in "".join(
            m["text"] for m in c.of("console"))            # the console so far, replayed
        c.close()


def test_frames_are_pushed_when_the_screen_changes_only(machine):
    """The face counts seconds: a redraw a second (which may span two or three
    slices: the firmware paints it in many small windows), not 60 frames."""
    with running_view(machine) as view:
        c = Client(view)
        c.until(lambda c: c.frames, what="the first frame")
        t0 = view.call(lambda: view.machine.time)
        c.until(lambda c: view.call(lambda: view.machine.time) - t0 > 2.2, timeout=15,
                what="2 emulated seconds")
        c.pump()
        assert 2 <= len(c.frames) - 1 <= 12, [s for s, _ in c.frames]   # not ~130
        seqs = [s for s, _ in c.frames]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        c.close()


def test_a_click_is_a_tap_and_a_drag_a_swipe(machine):
    with running_view(machine) as view:
        c = Client(view)
        c.send(t="pointer", kind="down", x=120, y=40)
        c.send(t="pointer", kind="up", x=120, y=40)
        wait(lambda: "touch 5 120 40" in console(view), what="the firmware's tap")
        c.frame_with(lambda img: tuple(img[40, 120]) == WHITE)
        before = tuple(screen(view)[10, 10])
        c.send(t="pointer", kind="down", x=120, y=200)
        for y in (180, 150, 100):
            c.send(t="pointer", kind="move", x=121, y=y)
        c.send(t="pointer", kind="up", x=121, y=60)
        wait(lambda: "touch 2 " in console(view), what="the firmware's swipe up")
        img = c.frame_with(lambda img: tuple(img[10, 10]) != before)
        assert img[10, 10, 2] > 150                       # repainted blue (swipe up)
        c.send(t="swipe", dir="left")                     # the keyboard's arrows
        wait(lambda: "touch 3 " in console(view), what="the firmware's swipe left")
        c.close()


def test_a_long_press_fires_while_held(machine):
    with running_view(machine) as view:
        c = Client(view)
        c.send(t="pointer", kind="down", x=60, y=60)
        time.sleep(0.8)                                  # past LONG_PRESS_S, still held
        # the CST816S reports a long press after its own 1 s of finger down
        wait(lambda: "touch 12 60 60" in console(view), timeout=10, what="a long press")
        c.send(t="pointer", kind="up", x=60, y=60)
        time.sleep(0.2)
        assert "touch 5 60 60" not in console(view)       # no tap after it
        c.close()


def test_a_quick_button_press_lasts_a_slice(machine):
    """Down and up in one message burst: the firmware still sees the press
    (the button is held for at least one slice, as in the window)."""
    with running_view(machine) as view:
        c = Client(view)
        c.send(t="button", down=True)
        c.send(t="button", down=False)
        wait(lambda: "button" in console(view).replace("button_", ""), what="the press")
        assert not view.call(lambda: view.machine.board.button.pressed)
        c.close()


def test_phone_actions_and_the_repl_pane(machine):
    with running_view(machine) as view:
        c = Client(view)
        c.send(t="phone", action="notify", title="Hello", body="from the page")
        c.until(lambda c: any("phone -> notification: Hello" in m["text"]
                              for m in c.of("log")), what="the phone's log line")
        img = c.frame_with(lambda img: tuple(img[30, 20]) != tuple(img[100, 20]))
        assert img[30, 20, 0] > 200 and img[30, 20, 2] < 50        # the orange banner
        c.send(t="console", stream="phone", text="echo me\r")
        c.until(lambda c: "echo me" in "".join(m["text"] for m in c.of("console")
                                              if m["stream"] == "phone"),
                what="the watch's echo in the REPL pane")
        for action in ({"action": "call", "name": "Ann", "number": "555"},
                       {"action": "music", "artist": "A", "track": "B", "playing": True},
                       {"action": "set_time", "unix": 1764772920}, {"action": "end_call"}):
            c.send(t="phone", **action)
        c.until(lambda c: sum("phone -> " in m["text"] for m in c.of("log")) >= 5,
                what="every action's log line")
        c.close()


def test_bad_messages_are_refused_without_harm(machine):
    with running_view(machine) as view:
        c = Client(view)
        for bad in ({"t": "frobnicate"}, {"t": "pointer", "kind": "down", "x": "a", "y": 1},
                    {"t": "swipe", "dir": "sideways"}, {"t": "board_button", "index": 0},
                    {"t": "phone", "action": "set_time", "unix": -1},
                    {"t": "phone", "action": "notify", "title": "x" * 10000, "body": ""},
                    {"t": "console", "stream": "uart", "text": 5},
                    {"t": "pointer", "kind": "down", "x": float("nan"), "y": 0}):
            c.ws.send(json.dumps(bad))
        c.send(t="pointer", kind="down", x=200, y=200)      # still served, in order
        c.send(t="pointer", kind="up", x=200, y=200)
        wait(lambda: "touch 5 200 200" in console(view), what="the tap after the bad ones")
        c.ws.send("this is not JSON")
        with pytest.raises(Exception):
            for _ in range(100):
                c.ws.recv(timeout=5)                      # the server closes that tab
        assert c.ws.close_code == 1003
        c2 = Client(view)                                 # others are not affected
        c2.until(lambda c: c.of("hello"))
        c2.close()


def test_origin_of_another_site_is_refused(machine):
    from websockets.exceptions import InvalidStatus
    with running_view(machine) as view:
        with pytest.raises(InvalidStatus) as e:
            connect(ws_url(view), origin="http://evil.example", open_timeout=5)
        assert e.value.response.status_code == 403
        with connect(ws_url(view), origin=f"http://127.0.0.1:{view.port}", open_timeout=5):
            pass


def test_origin_rule():
    from frontends.web.server import origin_allowed
    assert origin_allowed(None, "127.0.0.1:8080")
    assert origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080")
    assert origin_allowed("http://localhost:9000", "localhost:9000")     # an SSH tunnel
    assert not origin_allowed("http://evil.example", "127.0.0.1:8080")
    assert not origin_allowed("http://127.0.0.1:8081", "127.0.0.1:8080")
    assert not origin_allowed("file://", "127.0.0.1:8080")
    assert not origin_allowed("http://127.0.0.1:8080", None)


def test_http_serves_the_page_and_the_last_frame(machine):
    with running_view(machine) as view:
        base = view.url
        page = urllib.request.urlopen(base, timeout=5)
        assert page.headers["Content-Type"].startswith("text/html")
        html = page.read().decode()
        assert 'src="app.js"' in html and "<canvas" in html
        js = urllib.request.urlopen(base + "app.js", timeout=5)
        assert js.headers["Content-Type"].startswith("text/javascript")
        assert b"new WebSocket" in js.read()
        css = urllib.request.urlopen(base + "style.css", timeout=5)
        assert b"pixelated" in css.read()
        pause(view)
        png = urllib.request.urlopen(base + "screen.png", timeout=5)
        assert png.headers["Content-Type"] == "image/png"
        assert np.array_equal(decode_png(png.read()), screen(view))
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "../etc/passwd", timeout=5)
        assert e.value.code == 404


def test_several_tabs_watch_one_emulator(machine):
    with running_view(machine) as view:
        a, b = Client(view), Client(view)
        a.until(lambda c: c.frames)
        b.until(lambda c: c.frames)
        a.send(t="pointer", kind="down", x=100, y=120)
        a.send(t="pointer", kind="up", x=100, y=120)
        b.frame_with(lambda img: tuple(img[120, 100]) == WHITE)   # b sees a's tap
        b.until(lambda c: c.of("status") and c.of("status")[-1]["clients"] == 2)
        a.close()
        b.until(lambda c: c.of("status")[-1]["clients"] == 1, what="a's leaving")
        b.close()


def test_a_tab_that_leaves_lets_go_of_the_button(machine):
    with running_view(machine) as view:
        c = Client(view)
        c.send(t="button", down=True)
        wait(lambda: view.call(lambda: view.machine.board.button.pressed), what="the press")
        c.close()
        wait(lambda: not view.call(lambda: view.machine.board.button.pressed),
             what="the release when the tab left")


def test_pause_and_fast(machine):
    with running_view(machine) as view:
        c = Client(view)
        c.send(t="pause", on=True)
        c.until(lambda c: c.of("status") and c.of("status")[-1]["paused"])
        t0 = view.call(lambda: view.machine.clock.now)
        time.sleep(0.3)
        assert view.call(lambda: view.machine.clock.now) == t0
        c.send(t="pause", on=False)
        c.send(t="fast", on=True)
        c.until(lambda c: not c.of("status")[-1]["paused"]
                and not c.of("status")[-1]["realtime"])
        # an idle watch in fast mode runs far faster than real time
        c.until(lambda c: c.of("status")[-1]["speed"] > 3, timeout=10, what="speed > 3x")
        c.close()


def test_the_held_button_rule():
    from frontends.web.view import _Held

    class B:
        def __init__(self):
            self.log = []

        def press(self):
            self.log.append("press")

        def release(self):
            self.log.append("release")
    b = B()
    h = _Held(b)
    h.hold(1)
    h.let_go(1)                         # before any slice ran: kept down
    assert b.log == ["press"] and h.down
    h.after_slice()
    assert b.log == ["press", "release"] and not h.down
    h.hold(1)
    h.hold(2)                           # two tabs hold it: one press
    h.after_slice()
    h.let_go(1)
    assert b.log == ["press", "release", "press"]
    h.let_go(2)                         # the last lets go
    assert b.log[-1] == "release"


def test_a_tab_that_falls_behind_loses_the_oldest_text():
    import asyncio
    from frontends.web import server

    async def go():
        c = server._Client(1, None)
        for i in range(server.MAX_BACKLOG + 10):
            c.queue(str(i))
        return c
    c = asyncio.run(go())
    assert len(c.texts) == server.MAX_BACKLOG and c.dropped == 10
    assert c.texts[0] == "10"


def test_inputs_land_at_slice_boundaries_deterministically(fw):
    """The same messages, handed over at the same frames, give the same
    cycles and the same screen on two runs (the wall clock only paces)."""
    from emu import Machine
    from frontends.web.view import WebView

    def run():
        m = Machine(fw("pinetime_web"), flash_file=None)
        clock = [0.0]

        def wall():                                 # a second passes at every look:
            clock[0] += 1.0                         # each frame runs one slice
            return clock[0]
        view = WebView(m, realtime=False, wall_clock=wall, sleep=lambda s: None)
        try:
            for i in range(75):
                if i == 30:                         # the firmware is listening by then
                    view.server.inbox.append((1, {"t": "pointer", "kind": "down",
                                                  "x": 50, "y": 50}, clock[0]))
                    view.server.inbox.append((1, {"t": "pointer", "kind": "up",
                                                  "x": 50, "y": 50}, clock[0]))
                if i == 40:
                    view.server.inbox.append((1, {"t": "swipe", "dir": "down"}, clock[0]))
                if i == 60:                         # after the swipe's repaint (115 ms)
                    view.server.inbox.append((1, {"t": "button", "down": True}, clock[0]))
                    view.server.inbox.append((1, {"t": "button", "down": False}, clock[0]))
                view.frame()
            return m.cpu.cycles, m.clock.now, m.board.screen().tobytes(), m.console_text()
        finally:
            view.close()
            m.close()
    a, b = run(), run()
    assert "touch 5 50 50" in a[3] and "touch 1 " in a[3] and "button" in a[3]
    assert a == b


def test_other_boards_buttons(fw):
    """The nRF52 DK: its four buttons by index and by a click on its picture."""
    from emu import Machine
    m = Machine(fw("board_nrf52dk"), board="nrf52dk")
    with running_view(m) as view:
        c = Client(view)
        hello = c.until(lambda c: c.of("hello"))[0]
        assert hello["buttons"] == ["1", "2", "3", "4"] and hello["button_at"]
        assert not hello["touch"] and not hello["side_button"] and hello["uart"]
        c.send(t="board_button", index=2, down=True)
        wait(lambda: view.call(lambda: m.board.buttons[2].pressed), what="BUTTON3")
        c.send(t="board_button", index=2, down=False)
        wait(lambda: not view.call(lambda: m.board.buttons[2].pressed), what="its release")
        from emu.board.nrf52dk import BUTTON_BOXES
        x, y, w, h = BUTTON_BOXES[0]
        c.send(t="pointer", kind="down", x=x + w // 2, y=y + h // 2)
        wait(lambda: view.call(lambda: m.board.buttons[0].pressed), what="BUTTON1 by click")
        c.send(t="pointer", kind="up", x=x + w // 2, y=y + h // 2)
        wait(lambda: not view.call(lambda: m.board.buttons[0].pressed), what="its release")
        c.close()


def test_microbit_buttons(fw):
    from emu import Machine
    from frontends.web.view import board_buttons
    m = Machine(fw("nrf51/cpu_m0"), board="microbit")
    assert [n for n, _b in board_buttons(m.board)] == ["A", "B"]
    with running_view(m) as view:
        c = Client(view)
        hello = c.until(lambda c: c.of("hello"))[0]
        assert hello["buttons"] == ["A", "B"] and hello["screen"] == {"width": 240,
                                                                       "height": 240}
        c.send(t="board_button", index=1, down=True)
        wait(lambda: view.call(lambda: m.board.button_b.pressed), what="button B")
        c.close()


# ---------------------------------------------------------------- the command line
def test_cli_serves_and_ends_after_seconds(fw, tmp_path):
    port = free_port()
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_web"),
                        "--web", str(port), "--seconds", "0.5", "--flash-file", "none",
                        "--screenshot", str(tmp_path / "end.png")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"web view on http://127.0.0.1:{port}/" in r.stderr
    assert (tmp_path / "end.png").exists()


def test_cli_port_in_use_is_one_line_and_status_2(fw):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_web"),
                            "--web", str(port), "--flash-file", "none"],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == (
        f"pinetime-emu: error: --web {port}: cannot listen on 127.0.0.1:{port} "
        "(Address already in use)")
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, says", [
    (["--web", "99999"], "not a TCP port"),
    (["--web", "x"], "not a number"),
    (["--web", "7000", "--gdb", "7000"], "--web and --gdb both ask for port 7000"),
])
def test_cli_bad_web_options(fw, args, says):
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_web"),
                        *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr


def test_cli_ctrl_c_ends_a_web_run_cleanly(fw, tmp_path):
    import signal
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_web"),
                          "--web", str(port), "--flash-file", "none"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait(lambda: _listening(port), timeout=30, what="the web view")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
            assert b"<canvas" in page.read()
        time.sleep(0.5)              # the run has started (Ctrl-C before it is Python's own)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert time.monotonic() - t0 < 5
    assert err.strip().splitlines()[-1] == "pinetime-emu: interrupted"


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_the_frame_check_can_fail(machine, monkeypatch):
    """Companion: a frame that is one pixel off is caught by the comparison
    the tests above rely on."""
    import emu.png
    real = emu.png.encode_png

    def off_by_one(img):
        img = np.array(img, dtype=np.uint8)
        img[0, 0] ^= 1
        return real(img)
    monkeypatch.setattr(emu.png, "encode_png", off_by_one)
    with running_view(machine) as view:
        seq = pause(view)
        c = Client(view)
        c.until(lambda c: c.frames and c.frames[-1][0] == seq, what=f"frame {seq}")
        assert not np.array_equal(decode_png(c.frames[-1][1]), screen(view))
        c.close()


def test_a_board_without_a_screen(fw):
    """The bare nRF52832: no frames, no touch; the console still works."""
    from emu import Machine
    m = Machine(fw("cpu_exceptions"), board="nrf52832")
    with running_view(m) as view:
        c = Client(view)
        hello = c.until(lambda c: c.of("hello"))[0]
        assert hello["screen"] is None and not hello["touch"] and not hello["phone"]
        c.send(t="pointer", kind="down", x=1, y=1)          # ignored: no screen
        c.until(lambda c: "PASS" in "".join(m["text"] for m in c.of("console")),
                what="the firmware's console")
        assert not c.frames
        c.close()
