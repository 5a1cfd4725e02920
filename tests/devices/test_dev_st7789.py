"""ST7789 through a SpiBus with real CS/DC/RST pins (no SoC)."""
import numpy as np
import pytest

from emu.devices.st7789 import St7789
from helpers.devices import SpiRig


def rgb565(r, g, b):
    v = ((r >> 3) << 11) | ((g >> 2) << 5) | (b >> 3)
    return bytes([v >> 8, v & 0xFF])


def expand565(r, g, b):
    r5, g6, b5 = r >> 3, g >> 2, b >> 3
    return ((r5 << 3) | (r5 >> 2), (g6 << 2) | (g6 >> 4), (b5 << 3) | (b5 >> 2))


@pytest.fixture
def rig():
    r = SpiRig(lambda s: St7789(s.dc, s.rst))
    r.rst.drive("host", True)
    r.lcd(0x11)                      # SLPOUT
    r.lcd(0x3A, b"\x05")             # COLMOD 16-bit
    r.lcd(0x36, b"\x00")             # MADCTL
    r.lcd(0x29)                      # DISPON
    return r


def window(rig, x0, x1, y0, y1):
    rig.lcd(0x2A, bytes([x0 >> 8, x0 & 255, x1 >> 8, x1 & 255]))
    rig.lcd(0x2B, bytes([y0 >> 8, y0 & 255, y1 >> 8, y1 & 255]))


def shows_nothing(img) -> bool:
    """Nothing of the panel's memory: only the backlight's glow (full level
    here: the rig has no backlight pins)."""
    from emu.devices.st7789 import BACKLIGHT_GLOW
    return bool((img == BACKLIGHT_GLOW * 3).all())


def test_backlight_glows_through_a_panel_that_shows_nothing():
    """A firmware that only blinks the backlight (Zephyr's blinky on the
    PineTime) is seen: grey per level while the panel is off, black when the
    backlight is off."""
    from emu.devices.st7789 import BACKLIGHT_GLOW
    level = [0]
    r = SpiRig(lambda s: St7789(s.dc, s.rst, backlight=lambda: level[0]))
    r.rst.drive("host", True)
    assert not r.dev.screen().any()
    level[0] = 1
    assert (r.dev.screen() == BACKLIGHT_GLOW).all()
    level[0] = 3
    assert (r.dev.screen() == 3 * BACKLIGHT_GLOW).all()


def test_off_until_dispon_and_black_in_reset():
    r = SpiRig(lambda s: St7789(s.dc, s.rst))
    r.rst.drive("host", True)
    r.lcd(0x2C, rgb565(255, 255, 255) * 100)
    assert shows_nothing(r.dev.screen())           # asleep after reset
    r.lcd(0x11)
    r.lcd(0x29)
    assert r.dev.screen().any()
    r.rst.drive("host", False)                # hardware reset asserted
    assert shows_nothing(r.dev.screen())
    r.rst.drive("host", True)                 # reset released: asleep, display off
    assert r.dev.sleeping and not r.dev.display_on


def test_full_frame_rgb565_pattern(rig):
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, (240, 240, 3), dtype=np.uint8)
    r5, g6, b5 = img[..., 0] >> 3, img[..., 1] >> 2, img[..., 2] >> 3
    v = (r5.astype(np.uint16) << 11) | (g6.astype(np.uint16) << 5) | b5
    data = np.stack([v >> 8, v & 0xFF], axis=-1).astype(np.uint8).tobytes()
    window(rig, 0, 239, 0, 239)
    rig.lcd(0x2C, data)
    want = np.stack([(r5 << 3) | (r5 >> 2), (g6 << 2) | (g6 >> 4), (b5 << 3) | (b5 >> 2)], axis=-1)
    assert np.array_equal(rig.dev.screen(), want.astype(np.uint8))


def test_caset_raset_window_wraps_to_start(rig):
    window(rig, 10, 12, 20, 21)               # 3x2 window = 6 pixels
    red, green = rgb565(255, 0, 0), rgb565(0, 255, 0)
    rig.lcd(0x2C, red * 6 + green * 2)        # 8 pixels: last two wrap to (10,20),(11,20)
    s = rig.dev.screen()
    assert tuple(s[20, 10]) == expand565(0, 255, 0)
    assert tuple(s[20, 11]) == expand565(0, 255, 0)
    assert tuple(s[20, 12]) == expand565(255, 0, 0)
    assert tuple(s[21, 10]) == expand565(255, 0, 0)
    assert not s[22, 10].any() and not s[20, 13].any()


def test_ramwrc_continues_and_split_bytes_across_transactions(rig):
    window(rig, 0, 3, 0, 0)
    white = rgb565(255, 255, 255)
    rig.lcd(0x2C, white[:1])                  # half a pixel, then CS high
    rig.lcd(0x3C, white[1:] + rgb565(0, 0, 255))
    s = rig.dev.screen()
    assert tuple(s[0, 0]) == (255, 255, 255)
    assert tuple(s[0, 1]) == (0, 0, 255)
    assert not s[0, 2].any()


def test_rgb666(rig):
    rig.lcd(0x3A, b"\x66")
    window(rig, 5, 5, 5, 5)
    rig.lcd(0x2C, bytes([0xFC, 0x80, 0x04]))
    assert tuple(rig.dev.screen()[5, 5]) == (0xFF, 0x82, 0x04)


def test_madctl_mx_mv_rotation(rig):
    rig.lcd(0x36, b"\x60")                    # MX|MV: 90 degrees
    window(rig, 0, 0, 0, 0)
    rig.lcd(0x2C, rgb565(255, 255, 255))
    # logical (col 0, row 0) -> exchange -> (col 0, row 0) -> MX -> col 239
    assert tuple(rig.dev.screen()[0, 239]) == (255, 255, 255)
    window(rig, 5, 5, 0, 0)                   # logical column 5 -> physical row 5
    rig.lcd(0x2C, rgb565(255, 0, 0))
    assert tuple(rig.dev.screen()[5, 239]) == expand565(255, 0, 0)


def test_madctl_bgr_and_my(rig):
    rig.lcd(0x36, b"\x88")                    # MY | BGR
    window(rig, 0, 0, 319 - 3, 319 - 3)       # MY mirrors over 320 lines -> row 3
    rig.lcd(0x2C, rgb565(255, 0, 0))
    assert tuple(rig.dev.screen()[3, 0]) == expand565(0, 0, 255)


def test_vertical_scrolling_offset(rig):
    window(rig, 0, 0, 0, 319)
    rig.lcd(0x2C, b"".join(rgb565(i % 256, 0, 0) for i in range(320)))
    rig.lcd(0x33, bytes([0, 0, 320 >> 8, 320 & 255, 0, 0]))   # whole memory scrolls
    rig.lcd(0x37, bytes([0, 100]))
    s = rig.dev.screen()
    assert s[0, 0, 0] == expand565(100, 0, 0)[0]
    assert s[239, 0, 0] == expand565(339 % 320, 0, 0)[0]     # line 19 after wrap
    rig.lcd(0x37, bytes([1, 0x30]))            # 304: display line 20 -> memory 4
    assert rig.dev.screen()[20, 0, 0] == expand565(4, 0, 0)[0]
    rig.lcd(0x13)                              # NORON leaves scroll mode
    assert rig.dev.screen()[0, 0, 0] == 0


def test_inversion_and_backlight_dimming():
    level = [3]
    r = SpiRig(lambda s: St7789(s.dc, s.rst, backlight=lambda: level[0]))
    r.rst.drive("host", True)
    r.lcd(0x11); r.lcd(0x3A, b"\x05"); r.lcd(0x29)
    window(r, 0, 0, 0, 0)
    r.lcd(0x2C, rgb565(255, 255, 255))
    assert tuple(r.dev.screen()[0, 0]) == (255, 255, 255)
    level[0] = 1
    assert tuple(r.dev.screen()[0, 0]) == (85, 85, 85)
    level[0] = 0
    assert not r.dev.screen().any()            # backlight off: black
    level[0] = 3
    r.lcd(0x21)
    assert tuple(r.dev.screen()[0, 0]) == (0, 0, 0) and tuple(r.dev.screen()[1, 1]) == (255, 255, 255)


def test_rddid_returns_id(rig):
    assert rig.lcd(0x04, b"\x00\x00\x00") == bytes([0x85, 0x85, 0x52])


def test_swreset_restores_defaults(rig):
    rig.lcd(0x36, b"\x60")
    rig.lcd(0x01)
    assert rig.dev.madctl == 0 and rig.dev.sleeping and not rig.dev.display_on


def _random_lcd_session(seed, streamed):
    """Seeded commands and parameters (windows, MADCTL, COLMOD, scrolling,
    RDDID, pixels) sent byte by byte, or, where the ST7789 is
    stream_ready(), handed over in chunks with stream() as the native SPI
    master does.  Returns the answers read and the panel's state."""
    import random
    rnd, chunks = random.Random(seed), random.Random(seed + 1000)
    r = SpiRig(lambda s: St7789(s.dc, s.rst))
    r.rst.drive("host", True)
    got = []
    cmds = [0x2A, 0x2B, 0x2C, 0x2C, 0x3C, 0x36, 0x3A, 0x33, 0x37, 0x04, 0x11, 0x29, 0x21]
    for _ in range(120):
        c = rnd.choice(cmds)
        params = bytes(rnd.randrange(256) for _ in range(rnd.choice((0, 1, 2, 4, 6, 37, 600))))
        if c in (0x2A, 0x2B) and rnd.random() < 0.7:
            a = rnd.randrange(200)
            params = bytes([0, a, 0, a + rnd.randrange(40)])
        r.cs.drive("host", False)
        r.dc.drive("host", False)
        got.append(r.bus.transfer(c))
        r.dc.drive("host", True)
        i = 0
        while i < len(params):
            if streamed and r.bus.streamable() is True:
                n = min(len(params) - i, chunks.choice((1, 3, 4096)))
                r.bus.stream(params[i:i + n])
                got.extend([0xFF] * n)
                i += n
            else:
                got.append(r.bus.transfer(params[i]))
                i += 1
        r.cs.drive("host", True)
    d = r.dev
    return bytes(got), (d.screen().tobytes(), d.mem.tobytes(), d.xs, d.xe, d.ys, d.ye,
                        d.madctl, d.colmod, d.ssa, d.scrolling, d.tfa, d.vsa, d.commands)


@pytest.mark.parametrize("seed", range(4))
def test_stream_is_transfer_of_each_byte(seed):
    """What the native SPI master streams to the display (parameters and
    pixels, whenever D/C is high and nothing is to be read back) leaves it
    exactly as byte-by-byte transfers do, with the same answers."""
    assert _random_lcd_session(seed, True) == _random_lcd_session(seed, False)


def test_stream_that_drops_parameters_is_seen(monkeypatch):
    """Companion: a stream that loses a command's parameters (pixels kept)
    leaves the panel in another state."""
    from emu.devices import st7789
    orig = St7789.stream

    def pixels_only(self, data):
        if self._cmd in (st7789.RAMWR, st7789.RAMWRC):
            orig(self, data)
    monkeypatch.setattr(St7789, "stream", pixels_only)
    assert any(_random_lcd_session(s, True) != _random_lcd_session(s, False) for s in range(4))
