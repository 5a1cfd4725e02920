"""Debian's micro:bit MicroPython (package firmware-microbit-micropython:
the unmodified MicroPython 1.9.2 hex for the micro:bit v1), as the tests
run it."""
from __future__ import annotations

MICROBIT_HEX = "/usr/share/firmware-microbit-micropython/firmware.hex"


def microbit_typed(typed: bytes, ms: float):
    """MicroPython booted to its prompt, ``typed`` sent to its REPL over the
    UART, then run for ``ms`` emulated ms: the machine."""
    from emu import Machine
    m = Machine(MICROBIT_HEX, board="microbit")
    assert m.run_until(lambda: m.console.endswith(b">>> "), timeout_ms=5000)
    m.board.uart_send(typed)
    m.run(ms=ms)
    return m
