"""Sitronix ST7789(V) display controller driving a 240x240 panel (PineTime LCD).

Per the ST7789V datasheet (v1.6): 4-line serial interface, the D/C pin is
sampled on every byte (low = command, high = parameter/data).  Frame memory
is 240 columns x 320 lines; the 240x240 panel shows display lines 0..239.

Modelled: SWRESET 01, RDDID 04 (3 ID bytes 85 85 52), SLPIN 10 / SLPOUT 11,
NORON 13 (leaves scroll mode), INVOFF 20 / INVON 21, DISPOFF 28 / DISPON 29,
CASET 2A / RASET 2B with write-pointer wrap-around inside the window,
RAMWR 2C / RAMWRC 3C, VSCRDEF 33 / VSCSAD 37 (vertical scrolling over the
320-line memory), MADCTL 36 (MY, MX, MV, ML, RGB/BGR), COLMOD 3A (16-bit
RGB565 big-endian, 18-bit RGB666), hardware reset pin (active low).
Pixel data is buffered and converted in bulk with numpy.  ``panel_inverted``
describes a panel that shows true colours only with INVON (the PineTime's).

Not modelled: 12-bit colour (COLMOD 3), read-back of frame memory (RAMRD),
partial mode (PTLON/PTLAR), tearing effect line, gamma/porch/power
commands (accepted and ignored), command timing (5 ms after reset, 120 ms
after SLPOUT), refresh-order effects of ML/MH, idle mode.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

import numpy as np

log = logging.getLogger("emu.dev.st7789")

WIDTH, HEIGHT = 240, 240
BACKLIGHT_GLOW = 24    # grey per backlight level through a panel showing nothing
MEM_COLS, MEM_LINES = 240, 320
ID_BYTES = (0x85, 0x85, 0x52)

SWRESET, RDDID, SLPIN, SLPOUT, NORON = 0x01, 0x04, 0x10, 0x11, 0x13
INVOFF, INVON, DISPOFF, DISPON = 0x20, 0x21, 0x28, 0x29
CASET, RASET, RAMWR, RAMWRC = 0x2A, 0x2B, 0x2C, 0x3C
VSCRDEF, MADCTL, VSCSAD, COLMOD = 0x33, 0x36, 0x37, 0x3A
IGNORED = {0x00, 0x26, 0xB0, 0xB2, 0xB7, 0xBB, 0xC0, 0xC2, 0xC3, 0xC4, 0xC6, 0xD0, 0xE0, 0xE1,
           0x35, 0x34, 0x38, 0x39, 0x51, 0x53, 0x55, 0xE7}

MY, MX, MV, ML, BGR = 0x80, 0x40, 0x20, 0x10, 0x08


class St7789:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_changed", "_cmd", "_logged", "_params", "_pend", "_ptr", "_read", "bfa",
                "colmod", "commands", "display_on", "in_reset", "inverted", "madctl", "mem",
                "name", "panel_inverted", "scrolling", "selected", "sleeping", "ssa", "tfa",
                "vsa", "xe", "xs", "ye", "ys")
    STRUCTURE = ("backlight", "dc_pin", "frame_listeners", "power_listeners", "rst_pin")
    def __init__(self, dc_pin, rst_pin=None, backlight: Optional[Callable[[], int]] = None,
                 name: str = "lcd", panel_inverted: bool = False):
        self.name = name
        # an IPS panel that needs INVON for true colours (the PineTime's does:
        # wasp-os and InfiniTime both send INVON at init)
        self.panel_inverted = panel_inverted
        self.dc_pin = dc_pin
        self.rst_pin = rst_pin
        self.backlight = backlight          # () -> level 0..3, or None (full)
        self.mem = np.zeros((MEM_LINES, MEM_COLS, 3), dtype=np.uint8)
        self.commands: list = []            # every command byte seen (for tests/tracing)
        self._logged: set = set()
        self.selected = False
        self.in_reset = False
        # fn() after the firmware changed what the panel shows (pixels or a
        # state command) and released chip select: a frame (frontends/record.py)
        self.frame_listeners: list = []
        # fn() after sleep, display on/off or reset change (emu/power.py)
        self.power_listeners: list = []
        self._changed = False
        if rst_pin is not None:
            rst_pin.on_change(self._rst_changed)
        self.reset()

    # ------------------------------------------------------------------ API
    def reset(self) -> None:
        """Hardware/software reset: registers to defaults; memory kept."""
        self._flush()
        self.sleeping = True
        self.display_on = False
        self.inverted = False
        self.madctl = 0
        self.colmod = 0x66
        self.xs, self.xe = 0, MEM_COLS - 1
        self.ys, self.ye = 0, MEM_LINES - 1
        self.tfa, self.vsa, self.bfa = 0, MEM_LINES, 0
        self.ssa = 0
        self.scrolling = False
        self._cmd: Optional[int] = None
        self._params = bytearray()
        self._pend = bytearray()
        self._ptr = 0                         # linear index inside the window
        self._read: list = []

    def screen(self) -> np.ndarray:
        """The visible 240x240 RGB image: black with the backlight off; while the
        panel is off, asleep or in reset, the backlight's glow through it
        (BACKLIGHT_GLOW grey per level: an IPS panel showing nothing is not
        quite black when lit, and a firmware that only blinks the backlight
        shows it)."""
        self._flush()
        level = 3 if self.backlight is None else int(self.backlight())
        if level <= 0:
            return np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
        if self.in_reset or self.sleeping or not self.display_on:
            return np.full((HEIGHT, WIDTH, 3), BACKLIGHT_GLOW * level, dtype=np.uint8)
        img = self.mem[self._visible_lines()]
        if self.inverted != self.panel_inverted:
            img = 255 - img
        if level < 3:
            img = (img.astype(np.uint16) * level // 3).astype(np.uint8)
        return np.ascontiguousarray(img)

    # ------------------------------------------------------ SPI contract
    def select(self, selected: bool) -> None:
        self.selected = selected
        if not selected:
            self._flush()
            if self._changed and self.frame_listeners:
                self._changed = False
                for fn in list(self.frame_listeners):
                    fn()

    def transfer(self, byte: int) -> int:
        out = self._read.pop(0) if self._read else 0xFF
        if self.in_reset:
            return 0xFF
        if not self.dc_pin.level:
            self._command(byte)
        elif self._cmd == RAMWR or self._cmd == RAMWRC:
            self._pend.append(byte)
            if len(self._pend) >= 1 << 17:
                self._flush()
        elif self._cmd is not None:
            self._param(byte)
        return out

    def stream_ready(self) -> bool:
        """Bytes now are data answered 0xFF (D/C high, not in reset, nothing
        to read back): pixels in RAMWR/RAMWRC, a command's parameters
        otherwise; ``stream`` may take them in bulk.  (D/C is a GPIO pin:
        changing it ends a stream first.)"""
        return not self.in_reset and bool(self.dc_pin.level) and not self._read

    def stream(self, data: bytes) -> None:
        """transfer() of each byte, for bytes sent while stream_ready()."""
        if self._cmd == RAMWR or self._cmd == RAMWRC:
            self._pend += data
            if len(self._pend) >= 1 << 17:
                self._flush()
        elif self._cmd is not None:
            for b in data:
                self._param(b)

    # ------------------------------------------------------------ commands
    def _command(self, c: int) -> None:
        self._flush()
        self.commands.append(c)
        self._cmd = c
        self._params = bytearray()
        self._read = []
        if c in (SWRESET, SLPIN, SLPOUT, NORON, INVOFF, INVON, DISPOFF, DISPON, VSCSAD):
            self._changed = True        # what the panel shows may change
        if c == SWRESET:
            self.reset()
        elif c == RDDID:
            self._read = list(ID_BYTES)
        elif c == SLPIN:
            self.sleeping = True
        elif c == SLPOUT:
            self.sleeping = False
        elif c == NORON:
            self.scrolling = False
        elif c == INVOFF:
            self.inverted = False
        elif c == INVON:
            self.inverted = True
        elif c == DISPOFF:
            self.display_on = False
        elif c == DISPON:
            self.display_on = True
        elif c == RAMWR:
            self._ptr = 0
        elif c in (RAMWRC, CASET, RASET, VSCRDEF, VSCSAD, MADCTL, COLMOD):
            pass
        elif c not in IGNORED and c not in self._logged:
            self._logged.add(c)
            log.info("%s: command %#04x not modelled (ignored)", self.name, c)
        if c in (SWRESET, SLPIN, SLPOUT, DISPOFF, DISPON):
            for fn in self.power_listeners:
                fn()

    def _param(self, b: int) -> None:
        p = self._params
        p.append(b)
        c, n = self._cmd, len(p)
        if c == MADCTL and n == 1:
            self.madctl = b
        elif c == COLMOD and n == 1:
            self.colmod = b
            if b & 7 not in (5, 6) and "colmod" not in self._logged:
                self._logged.add("colmod")
                log.warning("%s: COLMOD %#04x (12-bit) not modelled; treated as 16-bit", self.name, b)
        elif c == CASET and n == 4:
            self.xs, self.xe = (p[0] << 8) | p[1], (p[2] << 8) | p[3]
        elif c == RASET and n == 4:
            self.ys, self.ye = (p[0] << 8) | p[1], (p[2] << 8) | p[3]
        elif c == VSCRDEF and n == 6:
            tfa, vsa, bfa = (p[0] << 8) | p[1], (p[2] << 8) | p[3], (p[4] << 8) | p[5]
            if tfa + vsa + bfa == MEM_LINES:
                self.tfa, self.vsa, self.bfa = tfa, vsa, bfa
            else:
                log.warning("%s: VSCRDEF %d+%d+%d != 320 ignored", self.name, tfa, vsa, bfa)
        elif c == VSCSAD and n == 2:
            self.ssa = ((p[0] << 8) | p[1]) % MEM_LINES
            self.scrolling = True

    # -------------------------------------------------------------- pixels
    def _bytes_per_pixel(self) -> int:
        return 3 if self.colmod & 7 == 6 else 2

    def _flush(self) -> None:
        pend = getattr(self, "_pend", None)
        if not pend:
            return
        bpp = self._bytes_per_pixel()
        n = len(pend) // bpp
        if n == 0:
            return
        raw = np.frombuffer(bytes(pend[:n * bpp]), dtype=np.uint8)
        del pend[:n * bpp]
        if bpp == 2:
            v = raw.reshape(n, 2).astype(np.uint16)
            w = (v[:, 0] << 8) | v[:, 1]
            r5, g6, b5 = (w >> 11) & 0x1F, (w >> 5) & 0x3F, w & 0x1F
            rgb = np.stack([(r5 << 3) | (r5 >> 2), (g6 << 2) | (g6 >> 4), (b5 << 3) | (b5 >> 2)],
                           axis=1).astype(np.uint8)
        else:
            v = raw.reshape(n, 3) & 0xFC
            rgb = (v | (v >> 6)).astype(np.uint8)
        if self.madctl & BGR:
            rgb = rgb[:, ::-1]
        self._store(rgb)

    def _store(self, rgb: np.ndarray) -> None:
        mv = bool(self.madctl & MV)
        cmax, rmax = (MEM_LINES, MEM_COLS) if mv else (MEM_COLS, MEM_LINES)
        xs, xe, ys, ye = self.xs, self.xe, self.ys, self.ye
        if xs > xe or ys > ye or xe >= cmax or ye >= rmax:
            xe, ye = min(xe, cmax - 1), min(ye, rmax - 1)
            if xs > xe or ys > ye:
                if "window" not in self._logged:
                    self._logged.add("window")
                    log.warning("%s: invalid CASET/RASET window; pixels dropped", self.name)
                return
        w, h = xe - xs + 1, ye - ys + 1
        n = len(rgb)
        idx = (self._ptr + np.arange(n)) % (w * h)
        self._ptr = (self._ptr + n) % (w * h)
        col = xs + idx % w
        row = ys + idx // w
        if mv:
            col, row = row, col              # exchange first, then mirror
        if self.madctl & MX:
            col = MEM_COLS - 1 - col
        if self.madctl & MY:
            row = MEM_LINES - 1 - row
        self.mem[row, col] = rgb
        self._changed = True

    def _visible_lines(self) -> np.ndarray:
        n = np.arange(HEIGHT)
        if not self.scrolling:
            return n
        tfa, vsa = self.tfa, self.vsa
        out = n.copy()
        mid = (n >= tfa) & (n < tfa + vsa)
        if vsa:
            out[mid] = tfa + (n[mid] - tfa + self.ssa - tfa) % vsa
        return out

    def _rst_changed(self, level: bool) -> None:
        low = self.rst_pin.driven_low()
        if low and not self.in_reset:
            self.in_reset = True
            self.reset()
        elif not low and self.in_reset:
            self.in_reset = False
            self.reset()
        else:
            return
        for fn in self.power_listeners:
            fn()

    # --------------------------------------------------------------- state
    def save_state(self) -> dict:
        self._flush()
        return {k: getattr(self, k) for k in (
            "sleeping", "display_on", "inverted", "madctl", "colmod", "xs", "xe", "ys", "ye",
            "tfa", "vsa", "bfa", "ssa", "scrolling", "_cmd", "_ptr", "in_reset")} | {
            "mem": self.mem.tobytes(), "_params": bytes(self._params), "_pend": bytes(self._pend)}

    def load_state(self, st: dict) -> None:
        for k, v in st.items():
            if k == "mem":
                self.mem = np.frombuffer(v, dtype=np.uint8).reshape(MEM_LINES, MEM_COLS, 3).copy()
            elif k in ("_params", "_pend"):
                setattr(self, k, bytearray(v))
            else:
                setattr(self, k, v)
