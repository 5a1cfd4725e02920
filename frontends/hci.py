"""``run --hci``: the emulated air as a Bluetooth LE controller for a real host.

``--hci tcp:PORT`` serves HCI in H4 framing on 127.0.0.1:PORT (one host at
a time; Bumble's ``tcp-client:127.0.0.1:PORT`` transport), ``--hci pty``
on a pseudo-terminal whose path is printed (BlueZ's ``btattach -P h4 -B
PATH``, Bumble's ``serial:PATH``).  The controller is emu/phone/controller.py;
this module carries its bytes and paces the machine.

Emulated time is held to wall time (it never runs ahead; it may fall
behind when the host machine is slow), as a real controller and a real
watch run: a host's timeouts, scan durations and connection supervision are
in wall time, and the watch must not advertise for a minute of emulated
time before the host has started.  When the host goes away the controller
is reset (scanning stops, a connection is dropped) and the next host starts
afresh.  Both are pollers of the run loop; no thread touches the machine.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Optional

from emu.clock import TICKS_PER_SECOND
from emu.phone.controller import HciController
from frontends.bridge import TcpByteServer

log = logging.getLogger("frontends.hci")


def parse_hci(value: str) -> tuple:
    """('tcp', port) or ('pty', None) from ``tcp:PORT`` or ``pty``; ValueError
    with a one-line reason otherwise."""
    if value == "pty":
        return ("pty", None)
    kind, _, rest = value.partition(":")
    if kind == "tcp" and rest:
        try:
            port = int(rest, 10)
        except ValueError:
            port = -1
        if 0 <= port <= 65535:
            return ("tcp", port)
        raise ValueError(f"not a TCP port: {rest!r}")
    raise ValueError(f"{value!r}: give tcp:PORT or pty")


class _Pacer:
    """Hold emulated time to wall time (from the first poll on)."""

    def __init__(self, machine):
        self.machine = machine
        self._origin: Optional[tuple] = None

    def pace(self) -> None:
        if self._origin is None:
            self._origin = (time.monotonic(), self.machine.clock.now)
        wall0, emu0 = self._origin
        ahead = (self.machine.clock.now - emu0) / TICKS_PER_SECOND - (time.monotonic() - wall0)
        if ahead > 0:
            time.sleep(min(ahead, 0.05))


class HciTcpServer(TcpByteServer):
    def __init__(self, machine, host: str = "127.0.0.1", port: int = 0):
        self.machine = machine
        self.controller = HciController(machine.air)
        self.controller.on_output.append(self._from_controller)
        self.pacer = _Pacer(machine)
        super().__init__(host, port, "HCI")

    def _from_controller(self, data: bytes) -> None:
        if self.client is not None:
            self.tx_pending += data

    def _forward(self) -> None:
        if self.rx_pending:
            data = bytes(self.rx_pending)
            self.rx_pending.clear()
            self.controller.feed(data)

    def _on_connect(self) -> None:
        self.controller.reset()

    def _on_disconnect(self) -> None:
        self.controller.reset()

    def poll(self) -> None:
        super().poll()
        self.pacer.pace()


class HciPty:
    """The controller on a pseudo-terminal (raw mode).  The host is taken to
    be attached once it has sent its first byte."""

    def __init__(self, machine):
        import tty
        self.machine = machine
        self.controller = HciController(machine.air)
        self.controller.on_output.append(self._from_controller)
        self.pacer = _Pacer(machine)
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self._slave)
        self._tx = bytearray()
        self._attached = False

    def _from_controller(self, data: bytes) -> None:
        if self._attached:
            self._tx += data

    def poll(self) -> None:
        try:
            while True:
                data = os.read(self.master, 4096)
                if not data:
                    break
                self._attached = True
                self.controller.feed(data)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:               # EIO: the host closed its end
            if self._attached:
                log.info("HCI pty: host gone (%s)", e)
                self._attached = False
                self.controller.reset()
            self._tx.clear()
        while self._tx:
            try:
                n = os.write(self.master, self._tx)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._tx.clear()
                break
            del self._tx[:n]
        self.pacer.pace()

    def close(self) -> None:
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass
