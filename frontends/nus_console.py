"""``pinetime-emu nus-console``: pynus for the emulator.

wasp-os's ``tools/wasptool`` drives a watch through ``tools/pynus/pynus.py``,
a console on the Nordic UART Service over BlueZ, which it spawns under
pexpect.  This is that console for a running ``pinetime-emu run FIRMWARE
--bridge PORT`` (the bridge is the watch's NUS as a raw TCP byte stream), and
it behaves as pynus does (github.com/wasp-os/pynus, the commit wasp-os pins):

* it prints ``Connected to NAME (ADDRESS).`` and ``Exit console using
  Ctrl-X.`` (wasptool waits for both);
* a terminal on stdin is put in raw mode; what is typed goes to the watch
  with ``\\n`` sent as ``\\r`` (the REPL's Enter), Ctrl-C and the paste-mode
  keys (Ctrl-E, Ctrl-D) as they are;
* what the watch sends is shown with ``\\n`` as ``\\r\\n`` (so the REPL's
  ``\\r\\n`` arrives as ``\\r\\r\\n``, which wasptool expects);
* Ctrl-X quits.

pynus takes no options at that commit; wasptool passes ``--device NAME`` or
``--address ADDR`` when it is given ``--device``: both are accepted, and
shown in the ``Connected`` line (there is one watch on a bridge).  Unlike
pynus, stdin may also be a pipe: its lines are typed in, and after its end
the console prints what the watch sends until it has been quiet for
``--quiet`` seconds.

Exit status: 0 after Ctrl-X (or a pipe's end); 1 when the bridge closes the
connection ("lost connection", as pynus says); 2 bad input (an option, no
bridge on HOST:PORT, a bridge with no Nordic UART), one line on stderr.
"""
from __future__ import annotations

import argparse
import os
import re
import select
import signal
import socket
import sys

from frontends.common import (EXIT_GUEST, EXIT_OK, EXIT_USAGE, ArgumentParser, remote_port,
                              wait_seconds)

CTRL_X = b"\x18"
# the emulated nRF52832's FICR DEVICEADDR (emu/soc/nrf52832.py), as BlueZ prints it
DEFAULT_ADDRESS = "C1:D0:ED:C0:FF:EE"
DEFAULT_NAME = "PineTime"
GATT_GREETING = b'{"bridge": "gatt"'     # frontends/gattbridge.py: no UART to reach


def _address(s: str) -> str:
    if not re.fullmatch(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}", s):
        raise argparse.ArgumentTypeError(f"not a Bluetooth address (XX:XX:XX:XX:XX:XX): {s!r}")
    return s.upper()      # wasptool looks for [0-9A-F:] between the brackets






def build_parser() -> ArgumentParser:
    ap = ArgumentParser(prog="pinetime-emu nus-console",
                        description="A console on the watch's Nordic UART Service through a "
                                    "running 'pinetime-emu run FIRMWARE --bridge PORT', "
                                    "behaving as wasp-os's pynus (tools/pynus/pynus.py), so "
                                    "wasp-os's tools/wasptool can drive the emulator.  "
                                    "Ctrl-X quits.")
    ap.add_argument("--host", default="127.0.0.1", help="bridge address (127.0.0.1)")
    ap.add_argument("--port", type=remote_port, default=None,
                    help="bridge port (7878, or $PINETIME_EMU_BRIDGE_PORT)")
    ap.add_argument("--device", metavar="NAME", default=None,
                    help="the watch's name, as wasptool --device passes it (shown only: "
                         "there is one watch on a bridge)")
    ap.add_argument("--address", type=_address, metavar="ADDR", default=None,
                    help="the watch's address, as wasptool --device passes it (shown only)")
    ap.add_argument("--wait", type=wait_seconds, default=0.0, metavar="S",
                    help="no bridge yet: try again for up to S seconds, printing "
                         "'Scanning...' as pynus does (0: fail at once)")
    ap.add_argument("--quiet", type=wait_seconds, default=1.0, metavar="S",
                    help="stdin a pipe: after its end, wait until the watch has been quiet "
                         "for S seconds (1)")
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    port = a.port
    if port is None:
        env = os.environ.get("PINETIME_EMU_BRIDGE_PORT", "7878")
        try:
            port = remote_port(env)
        except argparse.ArgumentTypeError as e:
            return _fail(f"PINETIME_EMU_BRIDGE_PORT: {e}")
    import time
    end = time.monotonic() + a.wait           # a host tool: the host's clock
    scanning = False
    while True:
        try:
            s = socket.create_connection((a.host, port), timeout=5)
            break
        except OSError as e:
            if time.monotonic() >= end:
                return _fail(f"cannot connect to {a.host}:{port} ({e.strerror or e}); is "
                             f"'pinetime-emu run FIRMWARE --bridge {port}' running?")
            if not scanning:
                scanning = True
                print("Scanning...", flush=True)
            time.sleep(0.2)
    with s:
        s.setblocking(False)
        banner = [f"Connected to {a.device or DEFAULT_NAME} ({a.address or DEFAULT_ADDRESS}).",
                  "Exit console using Ctrl-X."]
        return Console(s, quiet=a.quiet).run(banner)


def _fail(msg: str) -> int:
    print(f"pinetime-emu nus-console: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


class _Hangup(Exception):
    pass


class Console:
    """The terminal loop: stdin to the socket, the socket to stdout."""

    def __init__(self, sock, stdin_fd: int = None, stdout_fd: int = None, quiet: float = 1.0):
        self.sock = sock
        self.fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
        self.out = sys.stdout.fileno() if stdout_fd is None else stdout_fd
        self.quiet = quiet
        self.first = True        # nothing received yet (the GATT bridge's greeting?)

    def run(self, banner=()) -> int:
        """The banner is printed once the terminal is raw (pynus prints it
        before: a Ctrl-C typed right after it could still be taken by the
        terminal as an interrupt), with the \r\n a cooked terminal gives."""
        tty = os.isatty(self.fd)
        old = None
        if tty:
            import termios
            import tty as _tty
            old = termios.tcgetattr(self.fd)
            _tty.setraw(self.fd)
        if banner:
            _write_all(self.out, "".join(f"{line}\r\n" if tty else f"{line}\n"
                                         for line in banner).encode())
        handlers = {}

        def hangup(*_):
            raise _Hangup()
        for n in (signal.SIGHUP, signal.SIGTERM):
            try:
                handlers[n] = signal.signal(n, hangup)
            except ValueError:       # not the main thread (tests)
                pass
        try:
            return self._loop(tty)
        except _Hangup:
            return EXIT_OK
        finally:
            for n, h in handlers.items():
                signal.signal(n, h)
            if old is not None:
                import termios
                termios.tcsetattr(self.fd, termios.TCSADRAIN, old)

    def _say(self, msg: str, tty: bool) -> None:
        sys.stderr.write(msg + ("\r\n" if tty else "\n"))
        sys.stderr.flush()

    def _loop(self, tty: bool) -> int:
        inputs = [self.sock, self.fd]
        while True:
            stdin_open = self.fd in inputs
            r, _, _ = select.select(inputs, [], [], None if stdin_open else self.quiet)
            if not r:
                return EXIT_OK           # a pipe ended and the watch has been quiet
            if self.sock in r:
                try:
                    data = self.sock.recv(4096)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    self._say("lost connection", tty)
                    return EXIT_GUEST
                if data:
                    if self.first:
                        self.first = False
                        if data.startswith(GATT_GREETING):
                            self._say("pinetime-emu nus-console: error: this watch's firmware "
                                      "has its own Bluetooth stack (InfiniTime): no Nordic UART "
                                      "console; use 'pinetime-emu phone'", tty)
                            return EXIT_USAGE
                    _write_all(self.out, data.replace(b"\n", b"\r\n"))
            if self.fd in r:
                try:
                    data = os.read(self.fd, 1024)
                except OSError:          # the pty's other side closed (wasptool ended)
                    data = b""
                if not data:
                    if tty:
                        return EXIT_OK   # the terminal went away
                    inputs.remove(self.fd)
                    continue
                quit_ = CTRL_X in data
                if quit_:
                    data = data[:data.index(CTRL_X)]
                try:
                    if data:
                        self.sock.setblocking(True)
                        try:
                            self.sock.sendall(data.replace(b"\n", b"\r"))
                        finally:
                            self.sock.setblocking(False)
                except OSError:
                    self._say("lost connection", tty)
                    return EXIT_GUEST
                if quit_:
                    return EXIT_OK


def _write_all(fd: int, data: bytes) -> None:
    while data:
        n = os.write(fd, data)
        data = data[n:]
