"""Zephyr 3.1.0 samples, unmodified, on the boards they were built for.

The images are built by hand (shared ZEPHYR-BUILD.md) into
``$PINETIME_EMU_ZEPHYR_DIR/<board>/<sample>/zephyr.elf`` (default
``~/.cache/pinetime-emu/zephyr``); each test skips with a message naming
the file it needs when the image is absent.  What they check is what the
sample's README says a board shows on its console and LEDs: hello_world's
greeting, blinky's LED1 toggling every second of emulated time,
synchronization's two threads taking turns, philosophers' six threads.
"""
from __future__ import annotations

import subprocess
import sys

from emu.clock import TICKS_PER_MS, TICKS_PER_SECOND
from helpers.zephyr import boot, image


def test_hello_world_on_the_dk():
    m = boot("nrf52dk_nrf52832", "hello_world", "nrf52dk")
    assert m.run_until(lambda: b"Hello World! nrf52dk_nrf52832\r\n" in m.board.uart_output(),
                       timeout_ms=1000), m.console_text()
    assert m.board.uart_output().startswith(b"*** Booting Zephyr OS build zephyr-v3.1.0")


def test_hello_world_same_on_both_paths():
    out = []
    for pure in (False, True):
        m = boot("nrf52dk_nrf52832", "hello_world", "nrf52dk", pure_python=pure)
        m.run(ms=300)
        out.append((m.cpu.cycles, m.clock.now, m.board.uart_output()))
    assert out[0] == out[1] and b"Hello World!" in out[0][2]


def test_hello_world_on_the_bare_chip_follows_its_uart_pins():
    m = boot("nrf52dk_nrf52832", "hello_world", "nrf52832")
    m.run(ms=400)
    assert b"Hello World! nrf52dk_nrf52832" in m.board.uart_output()


def test_hello_world_from_the_command_line():
    p = subprocess.run([sys.executable, "-m", "frontends.cli", "run",
                        image("nrf52dk_nrf52832", "hello_world"), "--board", "nrf52dk",
                        "--headless", "--seconds", "0.5"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert "Hello World! nrf52dk_nrf52832" in p.stdout.decode()


def test_blinky_toggles_led1_every_second():
    m = boot("nrf52dk_nrf52832", "blinky", "nrf52dk")
    m.run(seconds=4.5)
    led1 = m.board.led[0]
    ticks = [t for t, _on in led1.timeline]
    # configured on (GPIO_OUTPUT_ACTIVE), toggled at once, then every k_msleep(1000)
    periods = [b - a for a, b in zip(ticks[1:], ticks[2:])]
    assert len(periods) >= 3, led1.timeline
    for p in periods:          # 1 s of RTC ticks plus the loop's few microseconds
        assert TICKS_PER_SECOND <= p < TICKS_PER_SECOND + TICKS_PER_MS // 10, periods
    assert [on for _t, on in led1.timeline[1:5]] == [False, True, False, True]
    assert m.board.leds[1:] == (False, False, False)


def test_synchronization_threads_take_turns():
    m = boot("nrf52dk_nrf52832", "synchronization", "nrf52dk")
    m.run(seconds=2.5)
    lines = m.board.uart_output().decode().splitlines()[1:]
    who = [l.split(":")[0] for l in lines if "Hello World from cpu 0 on nrf52dk_nrf52832!" in l]
    assert len(who) >= 4 and who[:4] == ["thread_a", "thread_b", "thread_a", "thread_b"], lines


def test_philosophers_print_their_states():
    m = boot("nrf52dk_nrf52832", "philosophers", "nrf52dk")
    m.run(seconds=3)
    text = m.board.uart_output().decode("utf-8", "replace")
    for n in range(6):
        assert f"Philosopher {n}" in text, text[-2000:]
    assert "EATING" in text and "THINKING" in text


def test_hello_world_on_the_pinetime_console():
    """Zephyr's pinetime_devkit0 console: UART0 TX P0.11, RX P0.30."""
    m = boot("pinetime_devkit0", "hello_world", "pinetime")
    assert m.run_until(lambda: b"Hello World! pinetime_devkit0\r\n" in m.board.uart_output(),
                       timeout_ms=1000), m.console_text()
