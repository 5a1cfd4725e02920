"""The nRF52 DK board (PCA10040): LEDs, buttons and the UART console as a
firmware sees them (firmware/tests/board_nrf52dk.c), its Python API, the CLI
console and --bridge per board, and its window (SDL's dummy video driver, as
tests/frontends/test_window.py)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import assert_firmware_passed, free_port
from emu import Machine
from emu.board import nrf52dk
from emu.devices import led as led_mod
from helpers.paths import BUILD


def boot(fw, **kw):
    m = Machine(fw("board_nrf52dk"), board="nrf52dk", **kw)
    assert m.run_until(lambda: b"dk ready\n" in m.board.uart_output(), timeout_ms=50), \
        m.console_text()
    return m


def test_wiring_table_is_the_pcas():
    assert nrf52dk.LED_PINS == (17, 18, 19, 20)
    assert nrf52dk.BUTTON_PINS == (13, 14, 15, 16)
    assert (nrf52dk.CONSOLE_TX, nrf52dk.CONSOLE_RX) == (6, 8)


def test_buttons_light_leds_and_the_console_reports(fw):
    m = boot(fw)
    b = m.board
    assert b.leds == (False, False, False, False)
    b.buttons[1].press()
    m.run(ms=2)
    assert b.leds == (False, True, False, False)
    b.buttons[3].press()
    m.run(ms=2)
    assert b.leds == (False, True, False, True)
    b.buttons[1].release()
    b.buttons[3].release()
    m.run(ms=2)
    assert b.leds == (False, False, False, False)
    b.uart_send(b"q")                              # typed on P0.08
    r = m.run(ms=20)
    assert_firmware_passed(m, r, min_passes=2)
    assert b.uart_output() == (b"dk ready\nbuttons .2..\nbuttons .2.4\nbuttons ....\nbye\n")
    assert "buttons .2.4" in m.console_text()      # the console also reaches machine.console


def test_button_hold_at_exact_emulated_times(fw):
    m = boot(fw)
    led = m.board.led[2]
    t0 = m.clock.now
    m.board.buttons[2].hold(ms=3, delay_ms=1)
    m.run(ms=10)
    on, off = led.toggles(since=t0)
    assert on - t0 >= 512_000 and off - on >= 3 * 512_000       # 1 ms, then 3 ms lit
    assert off - on < 3 * 512_000 + 512_000 // 10              # within the polling loop


def test_button_that_never_pulls_low_is_detected(fw, monkeypatch):
    """Companion: a button that does not drive its pin low lights nothing."""
    monkeypatch.setattr(led_mod.GroundButton, "_update", lambda self: None)
    m = boot(fw)
    m.board.buttons[0].press()
    m.run(ms=2)
    assert m.board.leds == (False, False, False, False)


def test_console_on_other_pins_is_not_heard(fw, monkeypatch):
    """Companion: the console is a device on P0.06/P0.08, not on the UART
    instance: wired to other pins, it hears nothing."""
    monkeypatch.setattr(nrf52dk.Nrf52dk, "CONSOLE_PINS", (9, 10))
    monkeypatch.setattr(nrf52dk, "CONSOLE_TX", 9)
    monkeypatch.setattr(nrf52dk, "CONSOLE_RX", 10)
    m = Machine(fw("board_nrf52dk"), board="nrf52dk")
    m.run(ms=10)
    assert m.board.uart_output() == b""
    assert bytes(m.soc.uart0.host_output) == b"dk ready\n"     # it did leave on P0.06


def test_screen_shows_leds_and_pressed_buttons(fw, tmp_path):
    m = boot(fw)
    dark = m.board.screen().copy()
    m.board.buttons[0].press()
    m.run(ms=2)
    lit = m.board.screen()
    x, y, w, h = nrf52dk.LED_BOXES[0]
    assert lit[y + h // 2, x + w // 2, 1] > 200 > dark[y + h // 2, x + w // 2, 1]
    bx, by, bw, bh = nrf52dk.BUTTON_BOXES[0]
    assert m.board.button_at(bx + 1, by + 1) == 0 and m.board.button_at(0, 0) is None
    assert (lit[by + bh // 2, bx + bw // 2] != dark[by + bh // 2, bx + bw // 2]).any()
    m.board.screenshot(str(tmp_path / "dk.png"))
    assert (tmp_path / "dk.png").stat().st_size > 100


def test_same_on_both_paths(fw):
    out = []
    for pure in (False, True):
        m = boot(fw, pure_python=pure)
        m.board.buttons[0].press()
        m.run(ms=3)
        out.append((m.cpu.cycles, m.clock.now, m.board.uart_output(), m.board.leds))
    assert out[0] == out[1]


# -- the command line: the console of each board --------------------------------
def _cli(*args, stdin=b""):
    return subprocess.run([sys.executable, "-m", "frontends.cli", "run", *args], input=stdin,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("board", ["nrf52dk", "nrf52832"])
def test_cli_prints_the_console_and_types_stdin(fw, board):
    p = _cli(fw("board_nrf52dk"), "--board", board, "--headless", "--seconds", "0.2",
             stdin=b"q")
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr.decode()
    assert "dk ready\n" in out and "PASS q received on P0.08" in out and "bye\n" in out


def test_cli_pinetime_prints_its_console_on_p0_11(fw):
    """The PineTime's console is on P0.11 (TX) / P0.30 (RX): the DK firmware's
    P0.06 is not heard there."""
    p = _cli(fw("board_nrf52dk"), "--board", "pinetime", "--headless", "--seconds", "0.05",
             "--flash-file", "none")
    assert p.returncode == 0, p.stderr.decode()
    assert "PASS buttons released" in p.stdout.decode()
    assert "dk ready" not in p.stdout.decode()


def test_cli_bridge_serves_the_dk_console_on_tcp(fw):
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "frontends.cli", "run", fw("board_nrf52dk"),
                          "--board", "nrf52dk", "--headless", "--seconds", "30",
                          "--bridge", str(port), "--console", "none"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline and p.poll() is None, p.stderr.read()
                time.sleep(0.1)
        with c:
            c.sendall(b"q")
            got = b""
            while b"bye\n" not in got and time.monotonic() < deadline:
                data = c.recv(4096)
                if not data:
                    break
                got += data
        assert b"bye\n" in got, got
    finally:
        p.kill()
        _out, err = p.communicate()
    assert f"UART console on 127.0.0.1:{port}".encode() in err, err


def test_cli_bridge_on_the_pinetime_is_still_the_ble_bridge(fw):
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "frontends.cli", "run", fw("board_nrf52dk"),
                          "--board", "pinetime", "--headless", "--seconds", "0.01",
                          "--flash-file", "none", "--bridge", str(port)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    _out, err = p.communicate(timeout=120)
    assert b"bridge listening on" in err and b"UART console on" not in err, err


# -- the window ------------------------------------------------------------------
@pytest.fixture
def window(fw):
    os.environ["SDL_VIDEODRIVER"] = "dummy"
    pygame = pytest.importorskip("pygame")
    from frontends.window import Window
    m = boot(fw)
    wall = [100.0]
    w = Window(m, scale=1, realtime=False, wall_clock=lambda: wall[0], sleep=lambda s: None)
    yield m, w, pygame
    w.close()


def test_window_keys_1_to_4_press_the_buttons(window):
    m, w, pygame = window
    w.handle_event(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_3, mod=0, unicode="3"))
    w._run_slice()
    assert m.board.buttons[2].pressed and m.board.leds[2]
    w.handle_event(pygame.event.Event(pygame.KEYUP, key=pygame.K_3, mod=0, unicode="3"))
    w._run_slice()
    assert not m.board.buttons[2].pressed and not m.board.leds[2]
    assert "LED1-4 ...." in w._status_text()


def test_window_click_on_a_drawn_button_holds_it(window):
    m, w, pygame = window
    L = w.layout
    bx, by, bw, bh = nrf52dk.BUTTON_BOXES[1]
    pos = (L.screen_x + bx + bw // 2, L.screen_y + by + bh // 2)
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=pos, button=1))
    w.handle_event(pygame.event.Event(pygame.MOUSEBUTTONUP, pos=pos, button=1))
    assert m.board.buttons[1].pressed          # a quick click lasts one slice at least
    w._run_slice()
    assert m.board.leds[1]
    w._run_slice()
    assert not m.board.buttons[1].pressed
    w.draw()
    grab = pygame.surfarray.array3d(w.surface).transpose(1, 0, 2)
    panel = grab[L.screen_y:L.screen_y + 240, L.screen_x:L.screen_x + 240]
    assert (panel == m.board.screen()).all()


def test_s132_application_without_a_softdevice_is_named(fw, caplog):
    """An nRF5 SDK application for S132 on the DK with no SoftDevice below it
    would stop silently at its first SVC: the machine says what to pass."""
    import logging

    from emu import Machine
    from pathlib import Path
    app = next(Path(fw("cpu_svc")).parent.glob("s132/*.elf"))
    with caplog.at_level(logging.WARNING, logger="emu.machine"):
        Machine(str(app), board="nrf52dk")
    assert any("--softdevice-hex" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="emu.machine"):
        Machine(str(app), board="pinetime", flash_file=None)      # S132 emulated there
    assert not any("--softdevice-hex" in r.getMessage() for r in caplog.records)


def test_softdevice_hex_accepted_on_the_dk(tmp_path):
    """The DK is an nRF52832: --softdevice-hex is not refused for it (here the
    file does not exist, and that is what the one line says)."""
    import subprocess
    import sys
    fwdir = BUILD
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", str(fwdir / "cpu_svc.elf"),
                        "--board", "nrf52dk", "--softdevice-hex", str(tmp_path / "none.hex"),
                        "--headless", "--seconds", "0.01"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "runs on the nRF52832" not in r.stderr, r.stderr
    assert "none.hex" in r.stderr and "Traceback" not in r.stderr
