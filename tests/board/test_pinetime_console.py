"""The PineTime's UART console where Zephyr's PineTime board keeps it (TX
P0.11, RX P0.30): output on the board's console, input typed into it, from
the Python API and from the command line (firmware/tests/pinetime_console.c)."""
import subprocess
import sys


def test_console_both_ways(fw):
    from emu import Machine
    m = Machine(fw("pinetime_console"), board="pinetime", flash_file=None)
    assert m.run_until(lambda: b"console ready\n" in m.board.uart_output(), timeout_ms=100)
    m.board.uart_send(b"hello, watch.")
    r = m.run(ms=100)
    assert r.reason == "exit" and r.exit_code == 0
    assert m.board.uart_output() == b"console ready\nHELLO, WATCH.\n"


def test_other_pins_are_not_the_console(fw):
    """Companion: on the DK (console on P0.06/P0.08) the same firmware's
    bytes go to pins nothing listens to, and typed bytes never reach it."""
    from emu import Machine
    m = Machine(fw("pinetime_console"), board="nrf52dk")
    m.board.uart_send(b"x.")
    r = m.run(ms=100)
    assert m.board.uart_output() == b"" and r.reason != "exit"


def test_stdin_and_stdout_on_the_command_line(fw):
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_console"),
                        "--board", "pinetime", "--headless", "--seconds", "1",
                        "--flash-file", "none", "--console", "stdout"],
                       input="typed.", capture_output=True, text=True, timeout=60)
    assert "console ready" in r.stdout and "TYPED." in r.stdout, r.stdout + r.stderr
