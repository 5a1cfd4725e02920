"""Real InfiniTime 1.16 on the emulated PineTime: the watch face, the
launcher and the stopwatch, notifications and quick settings, the button
and the screen timeout, ten emulated minutes of keeping time, and its
Bluetooth advertising (NimBLE driving the RADIO) heard by the emulated
phone's scanner.

The image is not in any registry: ``$PINETIME_EMU_INFINITIME_IMAGE`` or the
newest ``pinetime-app-*.out`` in ``~/.cache/pinetime-emu/infinitime/``
(built by hand as the shared INFINITIME-BUILD.md says); without one every
test here is skipped with that message.
"""

from emu import Machine
from emu.phone.scanner import Scanner, parse_ad
from helpers.infinitime import colour, face_drawn, infinitime_image, lit
from helpers.paths import EXAMPLES


def _boot(seconds: float = 3.0, **kw):
    m = Machine(infinitime_image(), flash_file=None, **kw)
    r = m.run(seconds=seconds)
    assert r.ok, f"{r} {r.info}"
    return m


def press(m, ms=100):
    m.board.button.press()
    m.run(ms=ms)
    m.board.button.release()


def settle(m, seconds=1.0):
    r = m.run(seconds=seconds)
    assert r.ok, f"{r} {r.info}"
    assert m.cpu._ipsr == 0 or m.cpu._ipsr >= 11, "stuck in a fault handler"


def test_boots_to_the_face_and_advertises_its_name():
    m = Machine(infinitime_image(), flash_file=None)
    sc = Scanner(m.air)
    settle(m, 3.0)
    assert face_drawn(m)
    assert m.board.backlight.level > 0
    # the emulated phone heard ADV_IND on the three channels and asked for
    # the scan response, which carries the name
    devs = [d for d in sc.devices.values() if d.name == "InfiniTime"]
    assert len(devs) == 1, sc.devices
    d = devs[0]
    assert d.pdu_type == "ADV_IND" and d.channels == {37, 38, 39} and d.responses >= 1
    ad = dict(parse_ad(d.adv_data))
    assert ad[0x01] == b"\x06"                       # LE general discoverable, no BR/EDR
    assert ad[0x03] == bytes.fromhex("0d18")         # 16-bit UUID list: Heart Rate (0x180D)
    assert len(ad[0x07]) == 16                       # a 128-bit service UUID


def test_advertising_is_deterministic():
    logs = []
    for _ in range(2):
        m = Machine(infinitime_image(), flash_file=None)
        Scanner(m.air)
        settle(m, 1.5)
        logs.append([tuple(p) for p in m.air.log])
    assert logs[0] and logs[0] == logs[1]


def test_launcher_stopwatch_and_back():
    m = _boot()
    m.board.touch.swipe("up")
    settle(m)
    tiles = [lit(m, 10 + 78 * c, 40 + 95 * r, 80 + 78 * c, 120 + 95 * r, 30)
             for r in range(2) for c in range(3)]
    assert all(t > 1500 for t in tiles), tiles      # six app tiles
    m.board.touch.tap(45, 80)                        # the stopwatch
    settle(m)
    play = colour(m, 130, 170, 230, 230)
    assert play[2] > 120 and play[2] > 2 * play[0], play   # the blue start button
    before = m.board.screen()[0:100].copy()
    m.board.touch.tap(180, 200)                      # start
    settle(m, 2.0)
    m.board.touch.tap(180, 200)                      # pause
    settle(m, 0.5)
    after = m.board.screen()[0:100].copy()
    assert (before != after).any(), "the digits did not move"
    stop = colour(m, 10, 170, 110, 230)
    assert stop[0] > 120 and stop[0] > 2 * stop[2], stop   # paused: the red stop button
    frames = set()                                   # paused, the time blinks
    for _ in range(10):
        m.run(ms=100)
        frames.add(m.board.screen()[0:100].tobytes())
    assert after.tobytes() in frames and len(frames) <= 2, "paused, the digits still moved"
    press(m)                                         # back to the launcher
    settle(m)
    assert not face_drawn(m)
    press(m)                                         # and to the face
    settle(m)
    assert face_drawn(m)


def test_notifications_and_quick_settings():
    m = _boot()
    m.board.touch.swipe("down")
    settle(m)
    title = colour(m, 0, 15, 150, 40)
    assert title[0] > 1.5 * title[2] and lit(m, 0, 15, 150, 40, 100) > 200, title   # orange
    m.board.touch.swipe("up")
    settle(m)
    assert face_drawn(m)
    m.board.touch.swipe("right")
    settle(m)
    bell = colour(m, 10, 150, 105, 230)
    assert bell[1] > 80 and bell[1] > 2 * bell[0], bell     # the green notifications tile
    level = m.board.backlight.level
    m.board.touch.tap(57, 77)                        # brightness steps up
    settle(m)
    assert m.board.backlight.level != level, "the brightness tile did nothing"
    m.board.touch.swipe("left")
    settle(m)
    assert face_drawn(m)


def test_button_sleeps_and_wakes_and_the_screen_times_out():
    m = _boot()
    press(m)
    settle(m)
    assert not m.board.screen().any() and m.board.backlight.level == 0
    press(m)
    settle(m)
    assert face_drawn(m) and m.board.backlight.level > 0
    t_on = m.time
    while m.board.backlight.level > 0 and m.time < t_on + 60:
        m.run(seconds=0.5)
    assert m.board.backlight.level == 0, "the screen never timed out"
    assert 5 <= m.time - t_on <= 40, m.time - t_on


def _minute_rollover(m, around: float) -> float:
    """Wake the screen just before ``around`` and return the emulated time
    (0.1 s steps) at which the face's digits change."""
    m.run(seconds=max(0.0, around - 1.6 - m.time))
    press(m)
    settle(m, 0.4)
    assert face_drawn(m)
    last = m.board.screen()[85:155].copy()
    while m.time < around + 1.5:
        m.run(ms=100)
        now = m.board.screen()[85:155]
        if (now != last).any():
            return m.time
        last = now.copy()
    raise AssertionError(f"the minute did not roll over near {around} s")


def test_ten_idle_minutes_keep_time():
    """No fault over ten emulated minutes of the idle face (screen mostly
    off), and the displayed minute rolls over every 60 s to the tenth of a
    second: the clock neither drifts nor stops."""
    m = _boot(1.0)
    first = _minute_rollover(m, 60.0)
    assert 58.5 <= first <= 61.5, first
    last = _minute_rollover(m, first + 540.0)
    assert abs((last - first) - 540.0) <= 0.15, (first, last)
    r = m.run(seconds=1)
    assert r.ok and m.resets == 0


def test_tour_scenario_passes(tmp_path):
    """examples/scenarios/infinitime_tour.yaml through ``pinetime-emu test``."""
    import shutil
    import subprocess
    import sys
    image = infinitime_image()
    scen = EXAMPLES / "scenarios"
    shutil.copy(scen / "infinitime_tour.yaml", tmp_path / "tour.yaml")
    exe = shutil.which("pinetime-emu")
    cmd = ([exe] if exe else [sys.executable, "-m", "frontends.cli"]) + [
        "test", "tour.yaml", "--firmware", image, "--junit", "junit.xml"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scenario InfiniTime tour: PASSED" in r.stdout
    assert 'failures="0"' in (tmp_path / "junit.xml").read_text()
    from frontends.testbench import read_png
    img = read_png(str(tmp_path / "out" / "infinitime_quick_settings.png"))
    assert (img.max(axis=2) > 64).sum() > 5000


def test_settings_survive_a_reboot_through_the_flash_file(tmp_path):
    """Brightness stepped up in quick settings is saved by littlefs on the
    NOR when the screen closes; a new machine on the same --flash-file boots
    with it (and the first boot had formatted the filesystem)."""
    path = str(tmp_path / "nor.bin")
    m = Machine(infinitime_image(), flash_file=path)
    settle(m, 3.0)
    level = m.board.backlight.level
    m.board.touch.swipe("right")
    settle(m)
    m.board.touch.tap(57, 77)                        # brightness steps
    settle(m)
    changed = m.board.backlight.level
    assert changed != level
    press(m)                                         # leaving quick settings saves
    settle(m, 2.0)
    m.board.close()
    m2 = Machine(infinitime_image(), flash_file=path)
    settle(m2, 3.0)
    assert face_drawn(m2)
    assert m2.board.backlight.level == changed
