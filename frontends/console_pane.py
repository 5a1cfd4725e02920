"""The window's RTT console pane: up channel 0 as text, keys into down channel 0.

    pane = ConsolePane(machine.rtt)      # the window makes one when RTT is on
    pane.key("`", "`")                   # focus: keys now go to the firmware
    pane.draw(pygame, surface, (x, y, w, h))

The text is what the firmware writes to RTT up channel 0 (emu/rtt.py calls
the pane as it reads, at the probe's polls in emulated time), as a terminal
shows it: lines end at ``\\n``, ``\\r`` goes back to the start of the line,
backspace takes a character back, and ANSI escape sequences (a shell's
colours and cursor moves) are dropped.  The last :data:`MAX_LINES` lines are
kept.  The backquote key gives the pane the keyboard; then every key is sent
as a terminal sends it (Enter as CR LF, Backspace as DEL, Tab, Ctrl-letters
as control bytes) until Escape gives the keyboard back to the watch.

Not modelled: a terminal's cursor addressing (a shell's line editing shows
as its final text only) and colours.
"""
from __future__ import annotations

import codecs
import re

MAX_LINES = 500
WIDTH = 440                 # pixels the pane adds to the window
FOCUS_KEY = "`"
_CSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|[@-Z\\-_])")
KEYS = {"return": b"\r\n", "enter": b"\r\n", "backspace": b"\x7f", "tab": b"\t",
        "delete": b"\x1b[3~", "up": b"\x1b[A", "down": b"\x1b[B", "right": b"\x1b[C",
        "left": b"\x1b[D", "home": b"\x1b[H", "end": b"\x1b[F"}


class ConsolePane:
    def __init__(self, rtt, channel: int = 0, width: int = WIDTH):
        self.rtt = rtt
        self.channel = channel
        self.width = width
        self.lines: list = [""]
        self.focused = False
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        self._pending = ""                  # an escape sequence cut between polls
        self._cr = False                    # the last character was a CR
        self.sent = bytearray()             # what the keyboard sent (for the tests)
        rtt.listeners.append(self._from_rtt)

    # -- text from the firmware -----------------------------------------
    def _from_rtt(self, channel: int, data: bytes) -> None:
        if channel == self.channel:
            self.feed(data)

    def feed(self, data: bytes) -> None:
        text = self._pending + self._decode(data)
        cut = text.rfind("\x1b")
        if cut >= 0 and not _CSI.match(text, cut) and len(text) - cut < 16:
            text, self._pending = text[:cut], text[cut:]     # the rest comes next poll
        else:
            self._pending = ""
        text = _CSI.sub("", text)
        line = self.lines[-1]
        for ch in text:
            if self._cr and ch != "\n":
                line = ""                     # a lone CR: the line is written again
            self._cr = False
            if ch == "\n":
                self.lines[-1] = line
                self.lines.append("")
                line = ""
            elif ch == "\r":
                self._cr = True               # CR LF ends the line; CR alone restarts it
            elif ch in "\b\x7f":
                line = line[:-1]
            elif ch == "\t":
                line += " " * (8 - len(line) % 8)
            elif ch >= " ":
                line += ch
        self.lines[-1] = line
        del self.lines[:-MAX_LINES]

    def text(self) -> str:
        return "\n".join(self.lines)

    # -- keys to the firmware -------------------------------------------
    def key(self, name: str, text: str) -> bool:
        """A key the window got: True if the pane took it."""
        if not self.focused:
            if name == FOCUS_KEY or text == FOCUS_KEY:
                self.focused = True
                return True
            return False
        if name == "escape":
            self.focused = False
            return True
        data = KEYS.get(name.lower())
        if data is None and text:
            data = text.encode("utf-8")       # printable, or a Ctrl-letter's control byte
        if data:
            self.sent += data
            self.rtt.write(data, self.channel)
        return True

    # -- drawing ------------------------------------------------------------
    def draw(self, pg, surface, rect, font=None) -> None:
        x, y, w, h = rect
        pg.draw.rect(surface, (18, 20, 24), rect)
        pg.draw.rect(surface, (200, 60, 40) if self.focused else (70, 74, 84), rect, 2)
        if font is None:
            font = _mono(pg)
        lh = font.get_linesize()
        title = ("RTT channel 0 — typing (Esc: back to the watch)" if self.focused
                 else "RTT channel 0 — ` to type")
        if not self.rtt.found:
            title += "  (no control block yet)"
        surface.blit(font.render(title, True, (160, 160, 170)), (x + 8, y + 6))
        rows = max(1, (h - lh - 16) // lh)
        cols = max(10, (w - 16) // max(1, font.size("M")[0]))
        shown = []
        for line in self.lines[-rows:]:
            shown.append(line[-cols:] if len(line) > cols else line)
        yy = y + 10 + lh
        for line in shown:
            surface.blit(font.render(line, True, (220, 220, 210)), (x + 8, yy))
            yy += lh


def _mono(pg):
    try:
        return pg.font.SysFont("dejavusansmono,liberationmono,monospace", 13)
    except Exception:   # noqa: BLE001 - no system fonts: pygame's own
        return pg.font.Font(None, 16)
