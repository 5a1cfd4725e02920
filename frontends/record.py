"""Recording the screen as the firmware drew it: an animated GIF or PNG (APNG).

``pinetime-emu run FIRMWARE --record out.gif`` (or ``.png``), or
``rec = Recorder(machine, "out.gif")`` ... ``rec.close()``.

A frame is taken when the ST7789 has been sent something that changes what
it shows (pixels, sleep, display on/off, inversion, scrolling) and chip
select is released: the frames the firmware actually sent, each shown for
the emulated time until the next one.  Frames closer than ``min_interval_ms``
(default 20 ms: 50 frames per emulated second) are merged: the frame keeps
the time its first part arrived and shows the panel after the last, so a
firmware that pushes a frame in many small windows makes one frame per
interval; identical consecutive frames are merged too.  Written with Pillow when the recording
is closed: GIF (256 colours per frame, durations in 10 ms steps) or APNG
(exact pixels, millisecond durations), atomically (emu/outputs.py).

A change of the backlight's level makes a frame too (the level is applied
to each frame as it is taken).
"""
from __future__ import annotations

import io

import numpy as np

from emu.clock import TICKS_PER_MS
from emu.outputs import atomic_write


class RecordError(Exception):
    """The recording cannot be made (one-line message)."""


class Recorder:
    def __init__(self, machine, path: str, min_interval_ms: float = 20.0,
                 max_frames: int = 20000):
        if not path.lower().endswith((".gif", ".png", ".apng")):
            raise RecordError(f"{path}: the recording is written as .gif or .png (APNG)")
        display = getattr(machine.board, "display", None)
        if display is None or not hasattr(display, "frame_listeners"):
            raise RecordError(f"the {machine.board_name} board has no screen to record")
        self.m = machine
        self.path = path
        self.display = display
        self.min_ticks = int(min_interval_ms * TICKS_PER_MS)
        self.max_frames = max_frames
        self.frames: list = []             # (tick, image)
        self.dropped = 0
        self._add(machine.clock.now)
        display.frame_listeners.append(self._frame)
        backlight = getattr(machine.board, "backlight", None)
        if backlight is not None and hasattr(backlight, "listeners"):
            backlight.listeners.append(lambda _level: self._frame())
        self.closed = False

    def _add(self, now: int) -> None:
        img = self.m.board.screen()
        if self.frames and np.array_equal(self.frames[-1][1], img):
            return
        if self.frames and now - self.frames[-1][0] < self.min_ticks:
            self.frames[-1] = (self.frames[-1][0], img)     # merged into the open frame
            if len(self.frames) > 1 and np.array_equal(self.frames[-2][1], img):
                self.frames.pop()            # it came back to what was shown: no frame
            return
        if len(self.frames) >= self.max_frames:
            self.dropped += 1
            return
        self.frames.append((now, img))

    def _frame(self) -> None:
        self._add(self.m.clock.now)

    def close(self) -> str:
        """Write the file; returns its path."""
        if self.closed:
            return self.path
        self.closed = True
        try:
            self.display.frame_listeners.remove(self._frame)
        except ValueError:
            pass
        from PIL import Image
        end = max(self.m.clock.now, self.frames[-1][0] + TICKS_PER_MS)
        images, durations = [], []
        for i, (t, img) in enumerate(self.frames):
            nxt = self.frames[i + 1][0] if i + 1 < len(self.frames) else end
            images.append(Image.fromarray(img, "RGB"))
            durations.append(max(1, round((nxt - t) / TICKS_PER_MS)))
        fmt = "GIF" if self.path.lower().endswith(".gif") else "PNG"
        buf = io.BytesIO()
        images[0].save(buf, format=fmt, save_all=True, append_images=images[1:],
                       duration=durations, loop=0)
        atomic_write(self.path, buf.getbuffer())     # whole, or the previous file kept
        return self.path
