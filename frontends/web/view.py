"""The web view's emulator side: ``pinetime-emu run FW --web PORT``.

:class:`WebView` runs the machine as the desktop window does
(frontends/window.py) and shows it in a browser through
:class:`frontends.web.server.WebServer`: the emulator loop stays in this
thread, the server in its own; they meet only through the server's
:meth:`~frontends.web.server.WebServer.frame` / ``send`` and its ``inbox``.

- Time: slices of 1/60 s of emulated time.  Paced to the wall clock (never
  ahead of it; re-anchored, not raced, when it falls behind) unless
  ``realtime=False`` (the page's Fast switch or ``--fast``): then flat out,
  publishing about 30 times a second.  The host clock decides only *how much*
  emulated time runs per frame; what the browsers send is applied between
  slices, in the order it arrived, so the emulation stays deterministic for
  a given sequence of inputs.
- The screen: after each frame's slices, ``board.screen()`` (which applies
  the backlight) is compared with the last one sent; when it changed it goes
  out as a PNG (emu/png.py), so an idle watch face costs one frame a second.
- Input, through the board's public API only: pointer down/move/up on the
  screen are turned into gestures by :class:`frontends.input.GestureTracker`
  (one per tab: tap, double tap, long press after 0.6 s held, a swipe for a
  drag of 30 panel pixels), then ``board.touch.tap`` / ``double_tap`` /
  ``long_press`` / ``swipe``; the side button and a board's buttons
  (``board.buttons``, the micro:bit's ``button_a``/``button_b``, the DK's
  ``button_at`` for clicks on its picture) are held while the mouse is down,
  at least one slice; the phone's actions (``machine.phone``: ``notify``,
  ``incoming_call``, ``end_call``, ``music_info``/``music_state``,
  ``set_time``) connect the phone first when needed, as the window's keys do.
- The console pane: what the machine prints (``machine.console_listeners``:
  semihosting, ITM, the board's UART console) and, on a firmware with the
  Nordic UART, what the watch sends the phone (``phone.on_output``); typing
  goes to ``board.uart_send`` or ``phone.send``.
- Status, about four times a second: emulated time, the speed (emulated
  seconds per wall second, measured over at least 0.5 s including drawing
  and pacing, as the window measures it), backlight, motor, LEDs, buttons.

The page's Set time sends the browser's local wall-clock time (the watch
keeps local time), the one deliberate use of a host clock, as a user action.

Not modelled / limits: as the window (frontends/window.py): multi-touch and
finger-move reports are not sent (a drag is one swipe gesture on release),
a double click is a tap then a double tap, the CST816S adds its own 1 s to a
long press; the motor is shown, not felt.  Phone actions connect on demand,
which runs the machine until the watch advertises (up to 5 s of emulated
time).  One emulator serves every tab: they share one watch and one phone.
"""
from __future__ import annotations

import codecs
import json
import logging
import os
import queue
import time
from typing import Callable, Iterable, Optional

import numpy as np

from emu.clock import TICKS_PER_SECOND
from frontends.input import GestureTracker, phone_action
from frontends.pacing import FAST_FRAME_S, run_slice
from frontends.web.server import WebServer

log = logging.getLogger("frontends.web")

STATUS_EVERY_S = 0.25
SPEED_WINDOW_S = 0.5
MAX_INPUTS = 1000                # messages taken from the inbox between two slices
HISTORY_BYTES = 16384           # console output from before the view started, shown
MAX_TEXT = 4096                  # characters a console line or a phone field may have
MUSIC = ("The Emulators", "Cycle Accurate")


class BadMessage(ValueError):
    """A browser's message that does not fit the protocol (logged, ignored)."""


def _text(msg: dict, key: str, default: Optional[str] = None) -> str:
    v = msg.get(key, default)
    if not isinstance(v, str) or len(v) > MAX_TEXT:
        raise BadMessage(f"{key} must be text of at most {MAX_TEXT} characters")
    return v


def _coord(msg: dict, key: str, size: int) -> int:
    v = msg.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        raise BadMessage(f"{key} must be a number")
    return int(min(max(int(v), 0), size - 1))


class _Held:
    """A button held by one or more tabs: pressed when the first takes it,
    released when the last lets go, and down for at least one slice (a
    press and release between the same two slices would be unseen)."""

    def __init__(self, button):
        self.button = button
        self.holders: set = set()
        self.down = False
        self.slices = 0
        self.release_pending = False

    def hold(self, cid: int) -> None:
        if not self.down:
            self.button.press()
            self.down, self.slices = True, 0
        self.release_pending = False
        self.holders.add(cid)

    def let_go(self, cid: int) -> None:
        self.holders.discard(cid)
        if self.holders or not self.down:
            return
        if self.slices == 0:
            self.release_pending = True
        else:
            self.button.release()
            self.down = False

    def after_slice(self) -> None:
        self.slices += 1
        if self.release_pending and not self.holders:
            self.release_pending = False
            self.button.release()
            self.down = False


class _Tab:
    """What the emulator remembers of one browser tab."""

    def __init__(self):
        self.gestures = GestureTracker()
        self.board_button: Optional[int] = None     # pressed through the picture (DK)


def board_buttons(board) -> list:
    """[(label, button)] of the board's own buttons: the nRF52 DK's four, the
    micro:bit's A and B; the PineTime's side button is not one of them."""
    buttons = getattr(board, "buttons", None)
    if buttons is not None:
        return [(str(i + 1), b) for i, b in enumerate(buttons)]
    out = [(n.upper(), getattr(board, f"button_{n}")) for n in ("a", "b")
           if getattr(board, f"button_{n}", None) is not None]
    return out


class WebView:
    """One emulator shown to any number of browser tabs.  ``run()`` loops
    over ``frame()`` until :meth:`stop`, ``seconds`` of emulated time, or the
    end of the firmware; ``OSError`` from the constructor when the port
    cannot be had."""

    def __init__(self, machine, port: int = 0, host: str = "127.0.0.1", realtime: bool = True,
                 seconds: Optional[float] = None, pollers: Iterable[Callable[[], None]] = (),
                 gdb=None, scale: int = 2, title: Optional[str] = None,
                 wall_clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.machine = machine
        self.board = machine.board
        self.realtime = realtime
        self.paused = False
        self.pollers = list(pollers)
        self.gdb = gdb
        self.wall = wall_clock
        self.sleep = sleep
        self.closed = False
        self.stopped: Optional[str] = None
        self.result = None
        self.last_result = None
        self._end_tick = (None if seconds is None
                          else int(machine.clock.now) + int(round(seconds * TICKS_PER_SECOND)))
        self._tabs: dict = {}
        self._calls: queue.Queue = queue.Queue()
        self._screen = getattr(self.board, "screen", None)
        self._last_img: Optional[np.ndarray] = None
        self._console_in = codecs.getincrementaldecoder("utf-8")("replace")
        self._phone_in = codecs.getincrementaldecoder("utf-8")("replace")
        self._console_buf = bytearray()
        self._phone_buf = bytearray()
        self._msg_seen = 0
        self._playing = False
        self._warned: set = set()
        side = getattr(self.board, "button", None)
        self._buttons = board_buttons(self.board)
        if side is not None and any(side is b for _n, b in self._buttons):
            side = None                   # the micro:bit's and the DK's "button" is one of them
        self._side = _Held(side) if side is not None else None
        self._board_held = [_Held(b) for _n, b in self._buttons]
        self._status_at = -1.0
        self._anchor_wall = self.wall()
        self._anchor_emu = self._now()
        self._speed_mark = (self._anchor_wall, self._anchor_emu)
        self._speed = 0.0
        # what was printed before the view started is shown too (its tail)
        self._console_buf += bytes(getattr(machine, "console", b""))[-HISTORY_BYTES:]
        machine.console_listeners.append(self._console)
        phone = self.phone
        if phone is not None and hasattr(phone, "on_output"):
            self._phone_buf += bytes(getattr(phone, "output", b""))[-HISTORY_BYTES:]
            phone.on_output(self._phone_output)
        self.server = WebServer(host, port, self.describe(scale, title))
        self._flush_console()
        log.info("web: not modelled: multi-touch and finger-move reports (a drag is one "
                 "swipe on release), sound; one watch and one phone for every tab")
        self._publish_screen()
        self._publish_status(force=True)

    # ------------------------------------------------------------------
    @property
    def phone(self):
        return getattr(self.machine, "phone", None)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        return self.server.url

    def _now(self) -> int:
        return int(self.machine.clock.now)

    def describe(self, scale: int = 2, title: Optional[str] = None) -> dict:
        """The ``hello`` message: what the page should show for this board."""
        img = self._screen() if self._screen is not None else None
        image = getattr(self.machine, "image", None)
        return {
            "t": "hello",
            "board": getattr(self.machine, "board_name", "pinetime"),
            "firmware": title or os.path.basename(str(getattr(image, "path", "") or "")),
            "screen": None if img is None else {"width": int(img.shape[1]),
                                                "height": int(img.shape[0])},
            "touch": getattr(self.board, "touch", None) is not None,
            "side_button": self._side is not None,
            "buttons": [n for n, _b in self._buttons],
            "button_at": callable(getattr(self.board, "button_at", None)),
            "phone": self.phone is not None,
            "uart": callable(getattr(self.board, "uart_send", None)),
            "scale": int(scale),
            "realtime": self.realtime,
        }

    def note(self, text: str) -> None:
        """A line for every tab's log."""
        log.info("web: %s", text)
        self.server.send({"t": "log", "text": text}, keep=True)

    # ------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------
    def run(self):
        """Run until stopped; returns the RunResult that stopped the machine
        (exit, fault, lockup), or for ``seconds`` the last one, or None."""
        try:
            while not self.closed:
                self.frame()
        finally:
            self.close()
        return self.result if self.result is not None else self.last_result \
            if self._end_tick is not None else None

    def stop(self) -> None:
        """End ``run()`` at the next frame (from any thread)."""
        self.closed = True

    def call(self, fn: Callable, timeout: float = 10.0):
        """Run ``fn()`` in the emulator's thread between two slices and
        return its result (from another thread: tests, tools)."""
        box: queue.Queue = queue.Queue(1)
        self._calls.put((fn, box))
        ok, value = box.get(timeout=timeout)
        if not ok:
            raise value
        return value

    def set_paused(self, on: bool) -> None:
        """Stop (or go on with) the emulation; the page keeps being served.
        Call from the emulator's thread (a message, or :meth:`call`)."""
        if on != self.paused:
            self.paused = on
            self._reanchor()
            self.note("paused" if on else "running")
        self._publish_status(force=True)

    def set_fast(self, on: bool) -> None:
        """Flat out (True) or paced to the wall clock (False)."""
        if on == self.realtime:
            self.realtime = not on
            self._reanchor()
            self.note("fast: as fast as possible" if on else "real-time pacing")
        self._publish_status(force=True)

    def frame(self) -> None:
        """Take the browsers' input, run one frame of emulated time, publish."""
        w0, e0 = self.wall(), self._now()
        if self.paused or self.stopped is not None:
            self._between_slices()
            self.sleep(1 / 60)
            self._reanchor()
        elif self.realtime:
            target = self._anchor_emu + int((self.wall() - self._anchor_wall) * TICKS_PER_SECOND)
            ahead = self._now() - target
            if ahead > 0:
                self.sleep(min(ahead / TICKS_PER_SECOND, 0.1))
            elif -ahead > TICKS_PER_SECOND // 4:         # cannot keep up: don't race
                self._reanchor()
            self._between_slices()
            self._run_slice()
        else:
            while not self.closed:
                self._between_slices()
                self._run_slice()
                if self.stopped is not None or self.paused or self.wall() - w0 >= FAST_FRAME_S:
                    break
        if self._now() == e0 and not self.paused and self.stopped is None:
            self.sleep(1 / 120)           # halted by GDB: don't spin
            self._reanchor()
        self._collect_messages()
        self._flush_console()
        self._publish_screen()
        self._measure_speed()
        self._publish_status()

    def _reanchor(self) -> None:
        self._anchor_wall = self.wall()
        self._anchor_emu = self._now()

    def _run_slice(self) -> None:
        r, stopped, killed = run_slice(self.machine, self.gdb, self._now(), self._end_tick)
        if killed:
            self.closed = True
        if r is not None:
            self.last_result = r
        if stopped is not None:
            if r is not None:
                self.result = r
            self._stopped(stopped)
        for h in self._held():
            h.after_slice()
        if self._end_tick is not None and (self._now() >= self._end_tick
                                           or self.stopped is not None):
            self.closed = True

    def _stopped(self, why: str) -> None:
        self.stopped = why
        self.note(f"machine stopped: {why}")

    def _held(self) -> list:
        return ([self._side] if self._side is not None else []) + self._board_held

    def _between_slices(self) -> None:
        """What the browsers sent, in order; long presses due; pollers."""
        for _ in range(MAX_INPUTS):
            try:
                cid, msg, t = self.server.inbox.popleft()
            except IndexError:
                break
            try:
                self.handle(cid, msg, t)
            except BadMessage as e:
                key = (msg.get("t") if isinstance(msg, dict) else None, str(e))
                if key not in self._warned:
                    self._warned.add(key)
                    log.warning("web: a message from tab %d ignored: %s (%s)", cid,
                                json.dumps(msg)[:120], e)
        now = self.wall()
        for tab in list(self._tabs.values()):
            self._gestures(tab.gestures.poll(now))
        while True:
            try:
                fn, box = self._calls.get_nowait()
            except queue.Empty:
                break
            try:
                box.put((True, fn()))
            except Exception as e:        # noqa: BLE001 - handed to the caller
                box.put((False, e))
        for p in self.pollers:
            p()

    # ------------------------------------------------------------------
    # input
    # ------------------------------------------------------------------
    def handle(self, cid: int, msg: Optional[dict], t: float) -> None:
        """One message from tab ``cid`` (None: the tab left), received at
        host time ``t``.  :class:`BadMessage` when it does not fit."""
        if msg is None:                                   # the tab closed
            tab = self._tabs.pop(cid, None)
            for h in self._held():
                h.let_go(cid)
            if tab is not None and tab.board_button is not None:
                tab.board_button = None
            self._publish_status(force=True)              # one tab fewer
            return
        tab = self._tabs.setdefault(cid, _Tab())
        kind = msg.get("t")
        if kind == "join":
            self._publish_status(force=True)
            return
        if kind == "pointer":
            self._pointer(cid, tab, msg, t)
        elif kind == "swipe":
            d = msg.get("dir")
            if d not in ("up", "down", "left", "right"):
                raise BadMessage("dir must be up, down, left or right")
            self._gestures([("swipe", d)])
        elif kind == "button":
            if self._side is None:
                raise BadMessage("this board has no side button")
            (self._side.hold if msg.get("down") is True else self._side.let_go)(cid)
        elif kind == "board_button":
            i = msg.get("index")
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self._buttons):
                raise BadMessage(f"index must be 0..{len(self._buttons) - 1}")
            (self._board_held[i].hold if msg.get("down") is True
             else self._board_held[i].let_go)(cid)
        elif kind == "phone":
            self._phone_action(msg)
        elif kind == "console":
            self._console_input(msg)
        elif kind == "fast":
            self.set_fast(bool(msg.get("on")))
        elif kind == "pause":
            self.set_paused(bool(msg.get("on")))
        else:
            raise BadMessage(f"unknown message type {kind!r}")

    def _pointer(self, cid: int, tab: _Tab, msg: dict, t: float) -> None:
        shape = self._shape()
        if shape is None:
            raise BadMessage("this board has no screen")
        h, w = shape
        what = msg.get("kind")
        if what not in ("down", "move", "up"):
            raise BadMessage("kind must be down, move or up")
        x, y = _coord(msg, "x", w), _coord(msg, "y", h)
        if what == "down":
            at = getattr(self.board, "button_at", None)
            i = at(x, y) if callable(at) else None
            if i is not None and 0 <= i < len(self._board_held):
                tab.board_button = i
                self._board_held[i].hold(cid)
                return
            tab.gestures.down((x, y), t)
        elif what == "move":
            if tab.gestures.held:
                tab.gestures.motion((x, y))
        else:
            if tab.board_button is not None:
                self._board_held[tab.board_button].let_go(cid)
                tab.board_button = None
                return
            self._gestures(tab.gestures.up((x, y), t))

    def _shape(self):
        if self._last_img is not None:
            return self._last_img.shape[:2]
        return None

    def _gestures(self, gestures: list) -> None:
        touch = getattr(self.board, "touch", None)
        for g in gestures:
            if touch is None:
                self.note("(this board has no touch screen)")
                return
            if g[0] == "swipe":
                touch.swipe(g[1])
            else:
                getattr(touch, g[0])(g[1], g[2])

    def _phone_action(self, msg: dict) -> None:
        action = msg.get("action")
        if action == "notify":
            title, body = _text(msg, "title"), _text(msg, "body")
            self._phone_do(f"notification: {title}: {body}", lambda p: p.notify(title, body))
        elif action == "call":
            name, number = _text(msg, "name"), _text(msg, "number", "")
            self._phone_do(f"call from {name} ({number})",
                           lambda p: p.incoming_call(name, number))
        elif action == "end_call":
            self._phone_do("end call", lambda p: p.end_call())
        elif action == "music":
            artist, track = _text(msg, "artist", MUSIC[0]), _text(msg, "track", MUSIC[1])
            playing = msg.get("playing")
            playing = (not self._playing) if playing is None else bool(playing)

            def send(p):
                p.music_info(artist, track)
                p.music_state(playing)
                self._playing = playing
            self._phone_do(f"music: {artist} - {track}, {'playing' if playing else 'paused'}",
                           send)
        elif action == "set_time":
            unix = msg.get("unix")
            if isinstance(unix, bool) or not isinstance(unix, (int, float)) or \
                    not 0 <= unix < 2 ** 32:
                raise BadMessage("unix must be seconds since 1970 (the local wall-clock time)")
            unix = int(unix)
            shown = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(unix))
            self._phone_do(f"set time {shown}", lambda p: p.set_time(unix))
        elif action == "connect":
            self._phone_do("connected", lambda p: None)
        elif action == "disconnect":
            p = self._need_phone()
            if p is not None:
                try:
                    p.disconnect()
                    self.note("phone: disconnected")
                except Exception as e:    # noqa: BLE001 - shown in the log
                    self.note(f"phone: disconnect failed: {e}")
        else:
            raise BadMessage(f"unknown phone action {action!r}")

    def _need_phone(self):
        p = self.phone
        if p is None:
            self.note("no phone: this board has no Bluetooth phone (the PineTime has one)")
        return p

    def _phone_do(self, desc: str, fn: Callable) -> None:
        """One phone action, connecting first if needed; a failure is a log
        line, never an exception out of the loop."""
        p = self._need_phone()
        if p is None:
            return
        phone_action(p, desc, fn, self.note)
        self._publish_status(force=True)

    def _console_input(self, msg: dict) -> None:
        stream = msg.get("stream")
        data = _text(msg, "text").encode("utf-8")
        if stream == "uart":
            send = getattr(self.board, "uart_send", None)
            if not callable(send):
                raise BadMessage("this board has no UART console")
            send(data)
        elif stream == "phone":
            self._phone_do_quiet(lambda p: p.send(data))
        else:
            raise BadMessage("stream must be uart or phone")

    def _phone_do_quiet(self, fn: Callable) -> None:
        p = self._need_phone()
        if p is None:
            return
        try:
            if not getattr(p, "connected", True):
                self.note("phone: connecting...")
                p.connect()
                self.note("phone: connected")
            fn(p)
        except Exception as e:            # noqa: BLE001
            self.note(f"phone: {e}")

    # ------------------------------------------------------------------
    # output
    # ------------------------------------------------------------------
    def _console(self, data: bytes) -> None:
        self._console_buf += data

    def _phone_output(self, data: bytes) -> None:
        if not getattr(self, "_finished", False):      # the phone keeps its listeners
            self._phone_buf += data

    def _flush_console(self) -> None:
        for stream, buf, dec in (("uart", self._console_buf, self._console_in),
                                 ("phone", self._phone_buf, self._phone_in)):
            if buf:
                text = dec.decode(bytes(buf))
                del buf[:]
                if text:
                    self.server.send({"t": "console", "stream": stream, "text": text}, keep=True)

    def _collect_messages(self) -> None:
        p = self.phone
        msgs = getattr(p, "messages", None) if p is not None else None
        if not msgs or len(msgs) == self._msg_seen:
            return
        for m in msgs[self._msg_seen:]:
            self.note("watch -> " + (json.dumps(m, separators=(",", ":"))
                                     if not isinstance(m, str) else m))
        self._msg_seen = len(msgs)

    def _publish_screen(self) -> None:
        if self._screen is None:
            return
        img = np.asarray(self._screen(), dtype=np.uint8)
        if self._last_img is not None and np.array_equal(img, self._last_img):
            return
        self._last_img = img.copy()
        from emu.png import encode_png
        self.server.frame(encode_png(img))

    def _measure_speed(self) -> None:
        wall, emu = self.wall(), self._now()
        wall0, emu0 = self._speed_mark
        if wall - wall0 >= SPEED_WINDOW_S:
            self._speed = (emu - emu0) / TICKS_PER_SECOND / (wall - wall0)
            self._speed_mark = (wall, emu)

    def status(self) -> dict:
        b = self.board
        st = {"t": "status", "time": self._now() / TICKS_PER_SECOND,
              "speed": round(self._speed, 3), "realtime": self.realtime, "paused": self.paused,
              "stopped": self.stopped, "clients": self.server.client_count(),
              "frames": self.server.frames_sent}
        bl = getattr(b, "backlight", None)
        if bl is not None:
            st["backlight"] = int(bl.level)
        motor = getattr(b, "motor", None)
        if motor is not None:
            st["motor"] = bool(getattr(motor, "on", False))
        leds = getattr(b, "leds", None)
        if isinstance(leds, tuple):
            st["leds"] = [bool(x) for x in leds]
        if self._buttons:
            st["buttons"] = [bool(h.down) for h in self._board_held]
        if self._side is not None:
            st["side_button"] = bool(self._side.down)
        p = self.phone
        if p is not None:
            try:
                st["phone_connected"] = bool(p.connected)
            except Exception:             # noqa: BLE001 - a phone half set up
                st["phone_connected"] = False
        if self.gdb is not None and getattr(self.gdb, "halted", False):
            st["halted"] = True
        return st

    def _publish_status(self, force: bool = False) -> None:
        now = self.wall()
        if not force and now - self._status_at < STATUS_EVERY_S:
            return
        self._status_at = now
        self.server.send(self.status())

    def close(self) -> None:
        if getattr(self, "_finished", False):
            return
        self._finished = True
        try:
            self.machine.console_listeners.remove(self._console)
        except ValueError:
            pass
        self.server.close()


def run_web(machine, port: int = 0, host: str = "127.0.0.1", realtime: bool = True,
            seconds: Optional[float] = None, pollers: Iterable[Callable[[], None]] = (),
            gdb=None, scale: int = 2, on_ready: Optional[Callable[[WebView], None]] = None):
    """Serve ``machine`` on http://host:port/ and run it until stopped (or
    ``seconds`` of emulated time).  ``OSError`` (before the machine runs)
    when the port cannot be had.  Returns what :meth:`WebView.run` returns."""
    view = WebView(machine, port=port, host=host, realtime=realtime, seconds=seconds,
                   pollers=pollers, gdb=gdb, scale=scale)
    if on_ready is not None:
        on_ready(view)
    return view.run()
