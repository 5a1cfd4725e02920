"""The PineTime board: wiring, public API, and firmware driving the devices.

The firmware tests run small programs from firmware/tests/pinetime_*.c
through the real SPI0/TWI1/GPIO/GPIOTE models.
"""
import hashlib
import re

import numpy as np
import pytest

from conftest import assert_firmware_passed
from emu import Machine
from emu.board.pinetime import PineTime, WiringError
from emu.clock import TICKS_PER_MS
from emu.png import read_png

def bare_pinetime(**kw):
    kw.setdefault("flash_file", None)
    return Machine(None, board="pinetime", **kw)


def test_devices_are_wired_where_the_schematic_says():
    m = bare_pinetime()
    b, soc = m.board, m.soc
    assert (b.spi.sck, b.spi.mosi, b.spi.miso) == (2, 3, 4) and soc.buses.spi == [b.spi]
    assert [(d, p.number) for d, p in b.spi.devices] == [(b.display, 25), (b.flash, 5)]
    assert (b.i2c.scl, b.i2c.sda) == (7, 6) and soc.buses.i2c == [b.i2c]
    assert b.i2c.devices == {0x15: b.touch, 0x18: b.accel, 0x44: b.heart_rate}
    assert b.display.dc_pin is soc.pins[18] and b.display.rst_pin is soc.pins[26]
    assert soc.pins[28].level                  # touch INT idles high (pull-up)


def test_board_spi_reaches_display_through_pins():
    m = bare_pinetime()
    soc, b = m.soc, m.board
    pins = soc.pins
    for n in (14, 22, 23):
        pins[n].drive("test", False)           # backlight full
    pins[26].drive("test", True)
    pins[25].drive("test", False)              # LCD CS asserted
    bus = b.spi

    def cmd(c, data=b""):
        pins[18].drive("test", False); bus.transfer(c)
        pins[18].drive("test", True)
        for x in data:
            bus.transfer(x)
    cmd(0x11); cmd(0x3A, b"\x05"); cmd(0x29)
    cmd(0x2A, b"\x00\x0a\x00\x0a"); cmd(0x2B, b"\x00\x05\x00\x05"); cmd(0x2C, b"\xf8\x00")
    pins[25].drive("test", True)
    assert b.backlight.level == 3
    s = b.screen()
    assert s.shape == (240, 240, 3) and s.dtype == np.uint8
    # no INVON yet: this panel shows the complement (true colours need INVON)
    assert tuple(s[5, 10]) == (0, 255, 255) and (s == 255).sum() == 240 * 240 * 3 - 1
    cmd_cs = lambda c: (pins[25].drive("test", False), cmd(c), pins[25].drive("test", True))
    cmd_cs(0x21)
    s = b.screen()
    assert tuple(s[5, 10]) == (255, 0, 0) and s.sum() == 255
    # NOR is not selected (its CS not driven): nothing reached it
    assert b.flash.read(0, 4) == b"\xff" * 4


def test_screenshot_png_round_trip(tmp_path):
    m = bare_pinetime()
    m.board.display.mem[0:240, :, 1] = np.arange(240, dtype=np.uint8)[None, :]
    m.board.display.sleeping = False
    m.board.display.display_on = True
    m.board.display.inverted = True            # INVON: true colours on this panel
    for n in (14, 22, 23):
        m.soc.pins[n].drive("test", False)
    p = tmp_path / "shot.png"
    m.board.screenshot(str(p))
    assert np.array_equal(read_png(str(p)), m.board.screen())
    assert read_png(str(p))[3, 17, 1] == 17


def test_wiring_validation_rejects_two_drivers():
    m = bare_pinetime()
    m.soc.pins[13].drive("somebody", True)
    m.board.button.press()
    m.soc.pins[15].drive("gpio", True)        # button now drives P0.13 too
    with pytest.raises(WiringError, match="P0.13"):
        m.board.validate()


def test_flash_file_option_and_close(tmp_path):
    path = str(tmp_path / "nor.bin")
    m = Machine(None, board="pinetime", flash_file=path)
    assert m.board.flash_path == path
    m.board.flash.data[0:4] = b"abcd"
    m.board.flash.dirty = True
    m.board.close()
    m2 = Machine(None, board="pinetime", flash_file=path)
    assert m2.board.flash.read(0, 4) == b"abcd"


def test_button_and_battery_api():
    m = bare_pinetime()
    b = m.board
    b.battery.voltage = 3.7
    b.battery.charging = True
    assert b.battery.voltage == 3.7 and not m.soc.pins[12].level
    b.button.press()
    assert b.button.pressed and not m.soc.pins[13].level    # BUTTON_EN not driven yet
    m.soc.pins[15].drive("test", True)
    assert m.soc.pins[13].level
    b.heart_rate.bpm = 90
    assert b.heart_rate.bpm == 90


# ---------------------------------------------------------------- firmware
def pattern_565(w, h):
    y, x = np.mgrid[0:h, 0:w].astype(np.uint32)
    v = (x * 1031 + y * 7919 + ((x ^ y) << 11)) & 0xFFFF
    r5, g6, b5 = v >> 11, (v >> 5) & 0x3F, v & 0x1F
    return np.stack([(r5 << 3) | (r5 >> 2), (g6 << 2) | (g6 >> 4), (b5 << 3) | (b5 >> 2)],
                    axis=-1).astype(np.uint8)


def test_firmware_display_pattern_pixel_exact(fw, tmp_path):
    m = Machine(fw("pinetime_display"), board="pinetime", flash_file=None)
    r = m.run(ms=3000)
    assert_firmware_passed(m, r, min_passes=2)
    # the PineTime panel shows true colours with INVON: cleared RAM 0xFFFF is white
    want = np.full((240, 240, 3), 255, np.uint8)
    want[60:60 + 48, 40:40 + 64] = pattern_565(64, 48)
    path = tmp_path / "screen.png"
    m.board.screenshot(str(path))
    got = read_png(str(path))
    assert np.array_equal(got, want), f"{np.argwhere((got != want).any(-1))[:5]}"


def test_firmware_touch_gestures(fw):
    m = Machine(fw("pinetime_touch"), board="pinetime", flash_file=None)
    assert m.run_until(lambda: "READY" in m.console_text(), timeout_ms=500)
    m.board.touch.tap(120, 200, delay_ms=5)
    m.board.touch.swipe("up", delay_ms=20)
    m.board.touch.long_press(30, 40, delay_ms=30)
    r = m.run(ms=2000)
    assert_firmware_passed(m, r, min_passes=5)
    touches = re.findall(r"TOUCH (\d+) (\d+) (\d+)", m.console_text())
    assert touches == [("5", "120", "200"), ("2", "120", "40"), ("12", "30", "40")]


def test_firmware_flash_survives_restart(fw, tmp_path):
    path = str(tmp_path / "nor.bin")
    m = Machine(fw("pinetime_flash"), board="pinetime", flash_file=path)
    r = m.run(ms=1000)
    assert "BOOT1" in m.console_text()
    assert_firmware_passed(m, r, min_passes=6)
    m.board.close()
    m2 = Machine(fw("pinetime_flash"), board="pinetime", flash_file=path)
    r2 = m2.run(ms=1000)
    assert "BOOT2" in m2.console_text()
    assert_firmware_passed(m2, r2, min_passes=2)


def test_firmware_reads_steps_and_heart_rate(fw):
    m = Machine(fw("pinetime_sensors"), board="pinetime", flash_file=None, bpm=84)
    assert m.run_until(lambda: "READY" in m.console_text(), timeout_ms=2000)
    m.board.accel.walk(321)
    r = m.run(ms=12000)
    assert_firmware_passed(m, r, min_passes=4)
    text = m.console_text()
    assert re.search(r"STEPS (\d+)", text).group(1) == "321"
    assert abs(int(re.search(r"BPM (\d+)", text).group(1)) - 84) <= 12


def test_firmware_display_is_deterministic(fw):
    runs = []
    for _ in range(2):
        m = Machine(fw("pinetime_display"), board="pinetime", flash_file=None)
        r = m.run(ms=3000)
        runs.append((r.reason, r.cycles, r.time_ticks,
                     hashlib.sha256(m.board.screen().tobytes()).hexdigest()))
    assert runs[0] == runs[1]


def test_machine_close_saves_flash_and_battery_reaches_saadc(tmp_path):
    path = str(tmp_path / "nor.bin")
    m = Machine(None, board="pinetime", flash_file=path)
    m.board.flash.data[8:10] = b"ok"
    m.board.flash.dirty = True
    m.close()
    assert open(path, "rb").read(10)[8:] == b"ok"
    m.board.battery.voltage = 3.9
    assert m.soc.peripherals["saadc"].inputs[7] == pytest.approx(1.95)
