"""Real wasp-os (S132 app at 0x26000) over the emulated SoftDevice and phone.

Needs wasp-os images built by hand (never committed):

* ``$PINETIME_EMU_WASP_IMAGE`` or ``~/.cache/pinetime-emu/wasp-os/upstream/micropython.elf``:
  unmodified wasp-os master.
* ``$PINETIME_EMU_WASP_PHONE_IMAGE`` or ``~/.cache/pinetime-emu/wasp-os/phone/micropython.elf``:
  wasp-os with the phone-app patch from the project's seeds and the music
  player in its quick ring (see docs/firmware.md, "Real wasp-os").

Each group is skipped with a message when its image is absent.  The slow part
(first boot, which formats the NOR flash) runs once per module; every test
starts from a snapshot of the booted watch, so tests do not depend on each
other's order.

What the first boot shows (and what a real watch does too, since it is the
firmware's own heap): right after the format the MicroPython heap is so
fragmented that the REPL's parser cannot get its 512-byte block, so the first
line typed answers ``MemoryError``.  A Ctrl-D soft reset (or any reboot)
clears it; the fixture does that, as a user would.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from emu import Machine

CACHE = Path.home() / ".cache" / "pinetime-emu" / "wasp-os"


def _find(env: str, sub: str) -> str:
    p = os.environ.get(env) or str(CACHE / sub / "micropython.elf")
    if not Path(p).exists():
        pytest.skip(f"no wasp-os image: set {env} or build one into {CACHE / sub} "
                    "(docs/firmware.md, 'Real wasp-os')")
    return p


def lit(m, x0, y0, x1, y1, threshold=64) -> int:
    """Number of pixels in the box whose brightest channel exceeds threshold."""
    return int((m.board.screen()[y0:y1, x0:x1].max(axis=2) > threshold).sum())


def prompt(m, timeout_ms=3000):
    p = m.phone
    start = len(p.output)
    p.send(b"\r")
    assert p.wait_for(b">>> ", start=start, timeout_ms=timeout_ms), bytes(p.output[-200:])


# --------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def first_boot(tmp_path_factory):
    """Power on with an erased NOR flash: wasp-os formats it and shows its clock."""
    m = Machine(_find("PINETIME_EMU_WASP_IMAGE", "upstream"), flash_file=None)
    m.run(seconds=5.0)
    d = tmp_path_factory.mktemp("wasp")
    snap = str(d / "first-boot.snap")
    m.save_snapshot(snap)
    return {"machine": m, "snap": snap, "dir": d}


@pytest.fixture(scope="module")
def console_snap(first_boot):
    """Connected over BLE after a Ctrl-D soft reset, at a fresh '>>> '."""
    m = Machine.from_snapshot(first_boot["snap"])
    p = m.phone
    p.connect()
    start = len(p.output)
    p.send(b"\x04")                          # soft reset: the SoftDevice restarts
    assert m.run_until(lambda: not p.central.connected, timeout_ms=3000), \
        "Ctrl-D did not restart the SoftDevice (the link should drop)"
    assert b"MPY: soft r" in bytes(p.output[start:])
    p.connect(timeout_ms=8000)               # advertising again: reconnect, like wasptool
    start = len(p.output)
    assert p.wait_for(b">>> ", start=start, timeout_ms=8000), bytes(p.output[start:])
    snap = str(first_boot["dir"] / "console.snap")
    m.save_snapshot(snap)
    return snap


@pytest.fixture
def watch(console_snap):
    return Machine.from_snapshot(console_snap)


@pytest.fixture(scope="module")
def phone_snap(first_boot):
    """The phone-app build booting from the NOR flash the first boot formatted."""
    image = _find("PINETIME_EMU_WASP_PHONE_IMAGE", "phone")
    nor = first_boot["dir"] / "nor.bin"
    m0 = Machine.from_snapshot(first_boot["snap"])
    nor.write_bytes(bytes(m0.board.flash.data))
    m = Machine(image, flash_file=str(nor))
    m.run(seconds=4.0)
    m.phone.connect()
    prompt(m)
    snap = str(first_boot["dir"] / "phone.snap")
    m.save_snapshot(snap)
    return snap


@pytest.fixture
def phone_watch(phone_snap):
    return Machine.from_snapshot(phone_snap)


# --------------------------------------------------------------------- boot
def test_first_boot_shows_the_clock_face(first_boot):
    m = first_boot["machine"]
    assert m.softdevice.advertising
    assert lit(m, 0, 60, 240, 150) > 2000, "no big clock digits"
    assert lit(m, 0, 170, 240, 205) > 300, "no date line"
    assert lit(m, 0, 0, 240, 60) < 2000 and lit(m, 0, 205, 240, 240) == 0


def test_first_boot_formatted_the_nor_flash(first_boot):
    data = bytes(first_boot["machine"].board.flash.data[:8192])
    assert b"littlefs" in data


def test_swi2_priority_set_by_enable(first_boot):
    m = first_boot["machine"]
    assert m.cpu.prio[16 + 22] == 0xC0 & m.cpu.prio_mask


# --------------------------------------------------------------------- REPL
def test_repl_arithmetic(watch):
    assert watch.phone.repl("1+1", timeout_ms=3000).strip() == "2"


def test_long_output_arrives_complete(watch):
    out = watch.phone.repl("print('ab'*200)", timeout_ms=10000)
    assert out.strip() == "ab" * 200


def test_ctrl_c_interrupts_a_loop(watch):
    p = watch.phone
    start = len(p.output)
    p.send(b"while True: pass\r\r")
    watch.run(seconds=0.5)
    assert b">>> " not in bytes(p.output[start + 10:]), "the loop did not run"
    p.send(b"\x03")
    assert p.wait_for(b"KeyboardInterrupt", start=start, timeout_ms=2000)
    assert p.wait_for(b">>> ", start=start + 10, timeout_ms=2000)
    assert p.repl("6*7", timeout_ms=3000).strip() == "42"


# --------------------------------------------------------------------- Gadgetbridge
def test_notification_vibrates_and_shows(watch):
    m, p = watch, watch.phone
    before = m.board.motor.on_time_ticks()
    p.notify("Alice", "Lunch at noon?")
    p.flush()
    m.run(seconds=1.0)
    on_ms = (m.board.motor.on_time_ticks() - before) / 512_000
    assert 20 <= on_ms <= 100, f"motor ran {on_ms:.1f} ms"
    assert "Lunch at noon?" in p.repl("wasp.system.notifications", timeout_ms=3000)
    m.board.touch.swipe("down")             # the clock face opens the notification
    m.run(seconds=1.0)
    assert lit(m, 0, 0, 240, 26) > 100, "title row empty"
    assert lit(m, 0, 44, 240, 70) > 200, "body row empty"
    assert lit(m, 0, 120, 240, 240) == 0


def test_button_hold_lets_the_watchdog_reset_and_time_survives(watch):
    m, p = watch, watch.phone
    p.set_time(1764772920)                   # 2025-12-03 14:42:00
    p.flush()
    m.run(seconds=0.3)
    assert "(2025, 12, 3, 14, 42," in p.repl("watch.rtc.get_localtime()", timeout_ms=3000)
    resets = m.resets
    pressed_at = m.time
    m.board.button.press()
    assert m.run_until(lambda: m.resets > resets, timeout_ms=7000), "no watchdog reset"
    held = m.time - pressed_at
    m.board.button.release()                 # let go once it reboots (else: safe mode)
    assert 4.5 <= held <= 6.5, f"reset after {held:.2f} s of holding"
    m.run(seconds=4.0)
    assert lit(m, 0, 60, 240, 150) > 2000, "no clock face after the reset"
    p.connect(timeout_ms=5000)
    prompt(m)
    now = p.repl("watch.rtc.get_localtime()[:6]", timeout_ms=3000).strip()
    y, mo, d, hh, mm, ss = (int(v) for v in now.strip("()").split(","))
    assert (y, mo, d, hh, mm) == (2025, 12, 3, 14, 42)
    assert 4 <= ss <= 20, now


# --------------------------------------------------------------------- phone-app build
def test_music_info_shows_in_the_music_app(phone_watch):
    m, p = phone_watch, phone_watch.phone
    p.music_info("Queen", "Bohemian Rhapsody", "A Night at the Opera")
    p.music_state(True)
    p.flush()
    for _ in range(3):                       # clock -> stopwatch -> heart -> music
        m.board.touch.swipe("left")
        m.run(seconds=0.8)
    assert p.repl("wasp.system.app.NAME", timeout_ms=3000).strip() == "'Music'"
    assert lit(m, 0, 10, 240, 40) > 100, "artist row empty"
    assert lit(m, 0, 170, 240, 240) > 200, "track rows empty"


def _ring(m, name, number):
    before = len(m.board.motor.timeline)
    m.phone.incoming_call(name, number)
    m.phone.flush()
    m.run(seconds=3.0)
    starts = [t for t, on in m.board.motor.timeline[before:] if on]
    assert len(starts) >= 2, "the call does not vibrate"
    assert lit(m, 0, 10, 240, 40) > 100, "number row empty"
    assert lit(m, 0, 165, 240, 195) > 50, "name row empty"
    assert lit(m, 24, 84, 96, 156) > 200 and lit(m, 144, 84, 216, 156) > 200, "no buttons"


def test_incoming_call_answer_sends_accept(phone_watch):
    m = phone_watch
    _ring(m, "Ann", "555-0100")
    n = len(m.phone.messages)
    m.board.touch.tap(60, 120)
    assert m.run_until(lambda: len(m.phone.messages) > n, timeout_ms=3000)
    assert m.phone.messages[n] == {"t": "call", "n": "ACCEPT"}


def test_incoming_call_hang_up_sends_reject(phone_watch):
    m = phone_watch
    _ring(m, "Bob", "555-0199")
    n = len(m.phone.messages)
    m.board.touch.tap(180, 120)
    assert m.run_until(lambda: len(m.phone.messages) > n, timeout_ms=3000)
    assert m.phone.messages[n] == {"t": "call", "n": "REJECT"}


def test_release_dfu_package_is_the_same_application():
    """The DFU package the wasp-os Makefile makes (what releases ship) loads
    as the same application bytes at 0x26000 as the build's .bin."""
    from emu.loader import load_firmware
    elf = Path(_find("PINETIME_EMU_WASP_IMAGE", "upstream"))
    dfu, binf = elf.with_name("micropython-dfu.zip"), elf.with_name("micropython.bin")
    if not dfu.exists() or not binf.exists():
        pytest.skip(f"no {dfu.name} / {binf.name} next to {elf} (the build's "
                    "build-pinetime/micropython.zip and its firmware.bin, renamed)")
    img = load_firmware(str(dfu))
    assert img.format == "dfu" and img.vector_table == 0x26000
    assert img.segments == [(0x26000, binf.read_bytes())]


def test_native_and_pure_python_paths_agree_on_wasp():
    """Issue 13: the pure-Python fallback behaves exactly like the native helpers
    (ops in C, Cells, register access, the flash guard, the SPI streaming pixels
    to the display) on real firmware: the first 1.6 emulated seconds of a boot
    from blank flash (the screen cleared, then the first lit pixels) give the
    same cycles, time, screen, console, pins, accesses and NOR contents."""
    path = _find("PINETIME_EMU_WASP_IMAGE", "upstream")
    runs = []
    for pure in (False, True):
        m = Machine(path, flash_file=None, pure_python=pure)
        assert m.soc.bus.native == (not pure)
        m.run(seconds=1.6)
        runs.append({"cycles": m.cpu.cycles, "now": m.clock.now,
                     "screen": m.board.screen().tobytes(), "console": m.console_text(),
                     "phone": bytes(m.phone.output), "pins": [p.level for p in m.soc.pins],
                     "accesses": m.soc.bus.accesses,
                     "flash_writes_dropped": m.cpu.ignored_flash_writes,
                     "nor": bytes(m.board.flash.data)})
    native, pure = runs
    assert native["cycles"] > 10_000_000 and native["accesses"] > 1_000_000
    assert sum(native["screen"]) > 0, "nothing drawn yet: the comparison would be weak"
    for k in native:
        assert native[k] == pure[k], f"{k} differs between the native and pure-Python paths"
