"""Host ends of a board's UART console: stdin/stdout and a raw TCP port.

Used by ``pinetime-emu run`` for a board's UART console: the terminal wired
to its pins (``board.console``, emu/devices/terminal.py; ``board.uart_send(data)``).  Both are pollers
called by the run loop between slices; no thread touches the machine.

* :class:`StdinConsole`: bytes typed on stdin go to the UART.  On a
  terminal, for a board whose console is the way in (``take_terminal``:
  the micro:bit, the nRF52 DK), stdin is put in raw mode (Ctrl-C, Ctrl-D,
  Ctrl-E reach the firmware, as with a serial terminal) and Ctrl-] quits;
  emulated time is paced to real time so the REPL behaves like the device.
  On other boards (the PineTime, the bare chip) a terminal on stdin is
  left alone.  With stdin a pipe or a file, the bytes are sent as they are
  read and EOF changes nothing.  The firmware's output reaches stdout
  through the machine console.
* :class:`UartTcpServer`: one TCP client at a time (a second one is
  refused); its bytes go to the UART and the UART's output goes back to it.
  It is the PineTime bridge's server (frontends.bridge.TcpByteServer) with the
  UART in place of the Bluetooth UART.

Not modelled: flow control (bytes queue in the host link; a firmware that
falls behind loses them as the real UART would, with OVERRUN).
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time

from frontends.bridge import TcpByteServer

log = logging.getLogger("frontends.serial_console")
QUIT_KEY = 0x1D            # Ctrl-]


class StdinConsole:
    """``send``: where the bytes go (default: the board's UART; the CLI's
    ``--rtt`` gives RTT's down channel 0)."""

    def __init__(self, machine, stream=None, take_terminal: bool = True, send=None):
        self.machine = machine
        self.board = machine.board
        self.send = send if send is not None else self.board.uart_send
        self.stream = stream if stream is not None else sys.stdin
        self.fd = self.stream.fileno()
        tty = os.isatty(self.fd)
        self.interactive = tty and take_terminal
        self._saved = None
        self._pending: list = []
        self._lock = threading.Lock()
        self._start_wall = time.monotonic()
        self._start_emu = machine.clock.now
        self._thread = None
        self._eof = tty and not take_terminal    # a terminal this board's console leaves alone
        if self.interactive:
            import termios
            import tty
            self._saved = termios.tcgetattr(self.fd)
            tty.setraw(self.fd)
            sys.stderr.write("pinetime-emu: console on this terminal; Ctrl-] quits\r\n")
            self._thread = threading.Thread(target=self._reader, daemon=True)
            self._thread.start()

    def _reader(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._pending.append(data)

    def _drain(self) -> list:
        """A pipe or file: what it holds now, read at the poll (not by a
        thread), so bytes already written reach the firmware at the first
        poll however fast emulated time runs."""
        import select
        out = []
        while not self._eof:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0)
                if not ready:
                    break
                data = os.read(self.fd, 4096)
            except (OSError, ValueError):
                data = b""
            if not data:
                self._eof = True
                break
            out.append(data)
        return out

    def poll(self) -> None:
        with self._lock:
            chunks, self._pending = self._pending, []
        if self._thread is None:
            chunks += self._drain()
        for data in chunks:
            if self.interactive and QUIT_KEY in data:
                data = data[:data.index(QUIT_KEY)]
                self.machine.halt_requested = True
                self.machine.cpu.request_stop()
            if data:
                self.send(data)
        if self.interactive:
            from emu.clock import TICKS_PER_SECOND
            ahead = (self.machine.clock.now - self._start_emu) / TICKS_PER_SECOND - (
                time.monotonic() - self._start_wall)
            if ahead > 0:
                time.sleep(min(ahead, 0.05))

    def close(self) -> None:
        if self._saved is not None:
            import termios
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None


class UartTcpServer(TcpByteServer):
    """A board's UART console on TCP (``--bridge PORT`` on the micro:bit, the
    nRF52 DK and the bare nRF52832): what the client sends is typed into the
    console, what the firmware transmits to it comes back."""

    def __init__(self, machine, host: str = "127.0.0.1", port: int = 0):
        self.machine = machine
        self.board = machine.board
        super().__init__(host, port, "UART console")
        self.board.console.on_output(self._from_board)

    def _from_board(self, b: int) -> None:
        self._from_watch(bytes((b,)))

    def _forward(self) -> None:
        if self.rx_pending:
            self.board.uart_send(bytes(self.rx_pending))
            self.rx_pending.clear()
