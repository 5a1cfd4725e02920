"""TCP bridge to the watch's Bluetooth UART: `pinetime-emu run FW --bridge PORT`.

A client connecting to 127.0.0.1:PORT is the phone connecting over BLE
(GAP CONNECTED, NUS discovery, TX notifications enabled); its bytes are
written to the NUS RX characteristic (paced like a phone, 20 bytes per
connection event); TX notifications are sent back to it; closing the socket
disconnects the phone.  One client at a time; more are refused.

The emulator loop calls :meth:`BridgeServer.poll` at slice boundaries (every
few ms of emulated time).  Sockets are non-blocking and no thread touches the
machine.  Socket errors and garbage input only drop the client.

``phone_client_main(argv)`` is the ``pinetime-emu phone`` subcommand: connect
to a running bridge and send Gadgetbridge messages or REPL lines.

Not modelled: several simultaneous phones.
"""
from __future__ import annotations

import argparse
import json
import logging
import select
import socket
import sys
from typing import Optional

log = logging.getLogger("emu.bridge")
MAX_PENDING = 64 * 1024     # RX bytes buffered from the client before reading pauses


class TcpByteServer:
    """One TCP client at a time on host:port, as a raw byte stream; a second
    client is refused.  :meth:`poll` (called by the emulator loop between
    slices) accepts, reads what the client sent into ``rx_pending`` (reading
    pauses at MAX_PENDING), lets the subclass :meth:`_forward` it, and writes
    ``tx_pending`` back.  Any socket error drops the client, never the
    emulator.  Subclasses hook :meth:`_on_connect` and :meth:`_on_disconnect`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, what: str = "bridge"):
        self.what = what
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(1)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.client: Optional[socket.socket] = None
        self.rx_pending = bytearray()     # from the client, not yet taken by the watch
        self.tx_pending = bytearray()     # from the watch, waiting for the socket
        log.info("%s listening on %s:%d", what, host, self.port)

    def poll(self) -> None:
        try:
            self._accept()
            if self.client is not None:
                self._read()
                self._forward()
                self._write()
        except Exception as e:          # never let the network break the emulator
            log.warning("%s: %s; dropping client", self.what, e)
            self._drop()

    def close(self) -> None:
        self._drop()
        self.listener.close()

    def _accept(self) -> None:
        try:
            conn, addr = self.listener.accept()
        except BlockingIOError:
            return
        if self.client is not None:
            conn.close()
            return
        conn.setblocking(False)
        self.client = conn
        self.rx_pending.clear()
        self.tx_pending.clear()
        log.info("%s: client connected from %s:%d", self.what, *addr)
        self._on_connect()

    def _read(self) -> None:
        while len(self.rx_pending) < MAX_PENDING:
            try:
                data = self.client.recv(4096)
            except BlockingIOError:
                return
            if not data:
                log.info("%s: client disconnected", self.what)
                self._drop()
                return
            self.rx_pending += data

    def _forward(self) -> None:
        """Hand rx_pending to the watch (subclasses)."""

    def _write(self) -> None:
        while self.tx_pending and self.client is not None:
            try:
                n = self.client.send(self.tx_pending)
            except BlockingIOError:
                return
            del self.tx_pending[:n]

    def _from_watch(self, data) -> None:
        if self.client is not None:
            self.tx_pending += data

    def _drop(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            except OSError:
                pass
            self.client = None
            self._on_disconnect()
        self.tx_pending.clear()

    def _on_connect(self) -> None:
        pass

    def _on_disconnect(self) -> None:
        pass


class BridgeServer(TcpByteServer):
    """The watch's Nordic UART Service: a client is the phone connecting."""

    def __init__(self, machine, host: str = "127.0.0.1", port: int = 0):
        self.machine = machine
        self.phone = machine.phone
        super().__init__(host, port, "bridge")
        self.phone.on_output(self._from_watch)

    def _forward(self) -> None:
        ph = self.phone
        if not ph.central.connected:
            if ph.central.can_connect():
                ph.central.connect(mtu=247)
                ph.nus.discover()
            return
        if ph.nus.rx_handle is None:
            return
        if self.rx_pending and ph.central.writes_pending < 4:
            chunk = bytes(self.rx_pending[:80])
            del self.rx_pending[:80]
            ph.nus.send(chunk)

    def _on_disconnect(self) -> None:
        if self.phone.central.connected:
            self.phone.disconnect()


def _gb_json(s: str) -> dict:
    try:
        msg = json.loads(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON ({e})") from None
    if not isinstance(msg, dict):
        raise argparse.ArgumentTypeError("not a JSON object ({...})")
    return msg


def _wait_seconds(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not 0 <= v <= 3600:          # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be 0 to 3600 seconds, not {s}")
    return v


def _remote_port(s: str) -> int:
    try:
        v = int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not 1 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {s}")
    return v


def phone_client_main(argv=None) -> int:
    """pinetime-emu phone [--port N] (--gb JSON | --notify T B | --call NAME NUM | --repl LINE)"""
    from emu.cli import EXIT_GUEST, EXIT_OK, EXIT_USAGE, ArgumentParser
    ap = ArgumentParser(prog="pinetime-emu phone",
                        description="Send one Gadgetbridge message or REPL line to a running "
                                    "'pinetime-emu run FIRMWARE --bridge PORT' and print what "
                                    "the watch sends back.")
    ap.add_argument("--host", default="127.0.0.1", help="bridge address (127.0.0.1)")
    ap.add_argument("--port", type=_remote_port, default=7878, help="bridge port (7878)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--gb", type=_gb_json, metavar="JSON",
                      help="raw Gadgetbridge JSON object, e.g. '{\"t\":\"find\",\"n\":true}'")
    what.add_argument("--notify", nargs=2, metavar=("TITLE", "BODY"), help="a notification")
    what.add_argument("--call", nargs=2, metavar=("NAME", "NUMBER"), help="an incoming call")
    what.add_argument("--repl", metavar="LINE", help="a line for the watch's Python REPL")
    ap.add_argument("--wait", type=_wait_seconds, default=1.0, metavar="S",
                    help="seconds to print replies (default 1)")
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if a.gb is not None:
        msg = a.gb
    elif a.notify:
        msg = {"t": "notify", "id": 1, "src": "Messages", "title": a.notify[0], "body": a.notify[1]}
    elif a.call:
        msg = {"t": "call", "cmd": "incoming", "name": a.call[0], "number": a.call[1]}
    else:
        msg = None
    payload = (b"\x10GB(" + json.dumps(msg, separators=(",", ":")).encode() + b")\n") \
        if msg is not None else ((a.repl or "").encode() + b"\r")
    try:
        s = socket.create_connection((a.host, a.port), timeout=5)
    except OSError as e:
        print(f"pinetime-emu phone: error: cannot connect to {a.host}:{a.port} "
              f"({e.strerror or e}); is 'pinetime-emu run FIRMWARE --bridge {a.port}' "
              "running?", file=sys.stderr)
        return EXIT_USAGE
    with s:
        try:
            s.sendall(payload)
            s.setblocking(False)
            end_polls = int(a.wait / 0.05)
            for _ in range(end_polls):      # a CLI tool on the host, not emulation code
                r, _, _ = select.select([s], [], [], 0.05)
                if r:
                    data = s.recv(4096)
                    if not data:
                        break
                    sys.stdout.write(data.decode("utf-8", "replace"))
                    sys.stdout.flush()
        except OSError as e:
            print(f"pinetime-emu phone: error: connection to {a.host}:{a.port} lost "
                  f"({e.strerror or e})", file=sys.stderr)
            return EXIT_GUEST
    return EXIT_OK
