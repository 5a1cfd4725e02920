"""Helpers for the web view's tests (tests/frontends/test_web*.py): a WebView running
in a thread of the test process, so a test can both talk to it as a browser
does and look at the machine (through ``view.call``, between two slices)."""
from __future__ import annotations

import contextlib
import io
import threading
import time

import numpy as np


@contextlib.contextmanager
def running_view(machine, **kw):
    """A WebView on a free port of 127.0.0.1, run in a thread; stopped after."""
    from frontends.web.view import WebView
    kw.setdefault("port", 0)
    view = WebView(machine, **kw)
    errors = []

    def loop():
        try:
            view.run()
        except BaseException as e:       # noqa: BLE001 - reported by the test
            errors.append(e)
    t = threading.Thread(target=loop, name="web-view-test", daemon=True)
    t.start()
    try:
        yield view
    finally:
        view.stop()
        t.join(20)
    assert not errors, errors
    assert not t.is_alive(), "the view's loop did not stop"


def ws_url(view) -> str:
    return f"ws://127.0.0.1:{view.port}/ws"


def decode_png(data: bytes) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def wait(cond, timeout: float = 10.0, what: str = "the condition", step: float = 0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def screen(view) -> np.ndarray:
    """The machine's screen, read between two slices."""
    return view.call(lambda: np.array(view.machine.board.screen(), dtype=np.uint8))


def console(view) -> str:
    return view.call(view.machine.console_text)


def pause(view) -> int:
    """Pause the emulation; returns the sequence number of the last frame,
    which then stays the screen (a frame is published after every step)."""
    view.call(lambda: view.set_paused(True))
    view.call(lambda: None)               # one more frame: the last screen is out
    return view.call(lambda: view.server.frames_sent)
