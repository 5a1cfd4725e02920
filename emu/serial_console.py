"""Host ends of a board's UART console: stdin/stdout and a raw TCP port.

Used by ``pinetime-emu run`` for boards with a UART console (the micro:bit:
``board.uart_send(data)`` and ``board.uart.on_tx(fn)``).  Both are pollers
called by the run loop between slices; no thread touches the machine.

* :class:`StdinConsole`: bytes typed on stdin go to the UART.  On a
  terminal, stdin is put in raw mode (Ctrl-C, Ctrl-D, Ctrl-E reach the
  firmware, as with a serial terminal) and Ctrl-] quits; emulated time is
  paced to real time so the REPL behaves like the device.  With stdin a
  pipe, the bytes are sent as they are read and EOF changes nothing.  The
  firmware's output reaches stdout through the machine console.
* :class:`UartTcpServer`: one TCP client at a time; its bytes go to the
  UART and the UART's output goes back to it (like ``--bridge`` for the
  PineTime's Bluetooth UART).

Not modelled: flow control (bytes queue in the host link; a firmware that
falls behind loses them as the real UART would, with OVERRUN).
"""
from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from typing import Optional

log = logging.getLogger("emu.serial_console")
QUIT_KEY = 0x1D            # Ctrl-]


class StdinConsole:
    def __init__(self, machine, stream=None):
        self.machine = machine
        self.board = machine.board
        self.stream = stream if stream is not None else sys.stdin
        self.fd = self.stream.fileno()
        self.interactive = os.isatty(self.fd)
        self._saved = None
        self._pending: list = []
        self._lock = threading.Lock()
        self._start_wall = time.monotonic()
        self._start_emu = machine.clock.now
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

    def poll(self) -> None:
        with self._lock:
            chunks, self._pending = self._pending, []
        for data in chunks:
            if self.interactive and QUIT_KEY in data:
                data = data[:data.index(QUIT_KEY)]
                self.machine.halt_requested = True
                self.machine.cpu.request_stop()
            if data:
                self.board.uart_send(data)
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


class UartTcpServer:
    def __init__(self, machine, host: str = "127.0.0.1", port: int = 0):
        self.machine = machine
        self.board = machine.board
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(1)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.client: Optional[socket.socket] = None
        self.tx_pending = bytearray()
        self.board.uart.on_tx(self._from_board)

    def _from_board(self, b: int) -> None:
        if self.client is not None:
            self.tx_pending.append(b)

    def poll(self) -> None:
        try:
            if self.client is None:
                try:
                    c, _ = self.listener.accept()
                except BlockingIOError:
                    return
                c.setblocking(False)
                self.client = c
            try:
                data = self.client.recv(4096)
                if not data:
                    self._drop()
                    return
                self.board.uart_send(data)
            except BlockingIOError:
                pass
            if self.tx_pending:
                n = self.client.send(bytes(self.tx_pending))
                del self.tx_pending[:n]
        except (OSError, BlockingIOError) as e:
            log.info("UART TCP client: %s; dropping it", e)
            self._drop()

    def _drop(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            except OSError:
                pass
        self.client = None
        self.tx_pending.clear()

    def close(self) -> None:
        self._drop()
        self.listener.close()
