"""frontends.testbench: waits in emulated time, with failures that say what was seen."""
from __future__ import annotations

import numpy as np
import pytest

from emu import Machine
from emu.clock import TICKS_PER_MS, TICKS_PER_SECOND
from frontends.testbench import (BoardFeatureMissing, ExpectationFailed, compare_png, read_png,
                           screen, wait_for_pin, wait_for_symbol, wait_for_text, write_png)


def test_wait_for_text_returns_when_text_appears(fw):
    m = Machine(fw("cpu_exceptions"), board="nrf52832")
    t = wait_for_text(m, "PASS cpuid", timeout_ms=100)
    assert "PASS cpuid" in m.console_text()
    assert 0 < t < 0.1
    assert t == m.clock.now / TICKS_PER_SECOND


def test_wait_for_text_timeout_reports_console_and_time(fw):
    m = Machine(fw("cpu_exceptions"), board="nrf52832")
    with pytest.raises(ExpectationFailed) as ei:
        wait_for_text(m, "no such text", timeout_ms=50)
    e = ei.value
    assert "no such text" in e.what
    # the firmware ran to completion first: the failure shows the console and the exit
    assert "PASS ICER clears" in e.seen and "exit code 0" in e.seen
    assert "t=" in str(e)


def test_wait_for_symbol_stops_at_function(fw):
    m = Machine(fw("gdb_target"), board="nrf52832")
    t = wait_for_symbol(m, "fmath", timeout_ms=50)
    # fmath runs after bump() in the first iteration: counter was bumped exactly once
    counter = m.cpu.read32(m.symbol("counter"))
    assert counter == 1
    assert 0 < t <= m.time
    # the hook is removed: running on reaches the end of the program
    r = m.run(ms=100)
    assert r.reason == "exit" and r.exit_code == 0


def test_wait_for_symbol_unknown_and_never_reached(fw):
    m = Machine(fw("cpu_exceptions"), board="nrf52832")
    with pytest.raises(ExpectationFailed, match="no symbol"):
        wait_for_symbol(m, "does_not_exist", timeout_ms=1)
    with pytest.raises(ExpectationFailed) as ei:
        wait_for_symbol(m, "HardFault_Handler", timeout_ms=20)
    assert "PC=" in ei.value.seen


def test_wait_for_pin_sees_level_change_at_scheduled_time(fw):
    m = Machine(fw("pinetime_demo"), board="nrf52832")
    pin = m.soc.pins[17]
    ev = m.clock.event("test-drive", lambda: pin.drive("test", True))
    ev.schedule_at(5 * TICKS_PER_MS)
    with pytest.raises(ExpectationFailed) as ei:
        wait_for_pin(m, 17, 1, timeout_ms=4)      # one ms short of the drive
    assert "P0.17 = 0" in ei.value.seen
    t = wait_for_pin(m, 17, 1, timeout_ms=10)
    assert t == pytest.approx(0.005, abs=0.0011)


def test_screen_missing_on_bare_board_is_clear(fw):
    m = Machine(fw("cpu_exceptions"), board="nrf52832")
    with pytest.raises(BoardFeatureMissing, match="screen"):
        screen(m)


def test_png_round_trip_and_compare(tmp_path):
    img = np.zeros((20, 30, 3), dtype=np.uint8)
    img[5:10, 3:8] = (255, 0, 0)
    img[0, 0] = (1, 2, 3)
    p = tmp_path / "a.png"
    write_png(str(p), img)
    assert np.array_equal(read_png(str(p)), img)
    assert compare_png(img, str(p))
    other = img.copy()
    other[12, 20] = (0, 0, 10)
    d = compare_png(other, str(p))
    assert not d and d.differing == 1 and d.bbox == (20, 12, 1, 1)
    assert "(20,12)" in d.summary and "#00000a" in d.summary
    assert compare_png(other, str(p), tolerance=10)
    assert compare_png(other, str(p), masks=[(18, 10, 5, 5)])
    assert not compare_png(img[:10], str(p))
    assert "cannot read" in compare_png(img, str(tmp_path / "missing.png")).summary


def test_motor_on_follows_active_low_pin(fw):
    from frontends.testbench import motor_on
    m = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    assert motor_on(m) is False
    m.soc.pins[16].drive("test", False)        # P0.16 low: motor on (active low)
    assert motor_on(m) is True
    m.soc.pins[16].drive("test", True)
    assert motor_on(m) is False


def test_device_missing_on_bare_board(fw):
    from frontends.testbench import device, motor_on
    m = Machine(fw("cpu_exceptions"), board="nrf52832")
    with pytest.raises(BoardFeatureMissing, match="no touch"):
        device(m, "touch")
    with pytest.raises(BoardFeatureMissing, match="no motor"):
        motor_on(m)


def test_touch_tap_pulses_int_low_for_half_a_ms(fw):
    m = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    m.run(ms=1)
    m.soc.pins[28].set_pull(True)               # as firmware does with PIN_CNF pull-up
    m.board.touch.tap(120, 120, delay_ms=2)
    t0 = m.time
    t_low = wait_for_pin(m, 28, 0, timeout_ms=5)
    t_high = wait_for_pin(m, 28, 1, timeout_ms=5)
    assert t_low - t0 == pytest.approx(0.002, abs=1e-6)
    assert t_high - t_low == pytest.approx(0.0005, abs=1e-6)


def test_wait_for_pixel_sees_seconds_bar_grow(fw):
    """The demo redraws its seconds bar (x=20.., y=200..209) on each 1 Hz SysTick."""
    from frontends.testbench import screen_region_equals, wait_for_pixel
    ref = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    ref.run(ms=300)
    grey = tuple(int(v) for v in screen(ref)[205, 25])
    ref.run(ms=1300)                             # past the first second
    lit = tuple(int(v) for v in screen(ref)[205, 25])
    assert lit != grey
    m = Machine(fw("pinetime_demo"), board="pinetime", flash_file=None)
    t_start = wait_for_text(m, "pinetime demo running", timeout_ms=500)   # SysTick starts now
    with pytest.raises(ExpectationFailed) as ei:
        wait_for_pixel(m, 25, 205, lit, timeout_ms=900)    # 0.1 s before the first tick
    assert ei.value.seen == "#%02x%02x%02x" % grey
    t = wait_for_pixel(m, 25, 205, lit, timeout_ms=1000)
    # the first 1 Hz tick plus the time to send the bar over SPI (a few ms)
    assert 1.0 <= t - t_start < 1.02
    assert screen_region_equals(m, 20, 200, 10, 10, lit)
    assert not screen_region_equals(m, 20, 200, 10, 10, grey)
