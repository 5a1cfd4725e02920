"""Host ends of SEGGER RTT (emu/rtt.py): the terminal and TCP ports.

``pinetime-emu run FW --rtt`` prints up channel 0 on stdout (and the window
shows it in its console pane); bytes on stdin go to down channel 0.
``--rtt-port PORT[:CHANNEL]`` (repeatable) serves one channel per TCP port on
127.0.0.1, as OpenOCD's ``rtt server start PORT CHANNEL`` does: what the
firmware writes to up channel CHANNEL goes to the client, what the client
sends goes into down channel CHANNEL.  CHANNEL defaults to 0 (J-Link's RTT
telnet port, 19021, serves channel 0 the same way).  ``--rtt-address
SYMBOL|ADDR`` says where the control block is instead of looking for it.

Differences from a probe's servers, for determinism: the emulator drains
every up channel at every poll whether or not a client is connected (so a
run is the same with or without clients); bytes written before the first
client connects are kept (up to :data:`BACKLOG` bytes per port) and sent
when it connects, so the boot banner and the shell's first prompt are not
lost.  One client per port at a time (a second is refused); its bytes wait
in the host until the down ring has room.

The servers are pollers the run loop calls between slices; no thread touches
the machine.
"""
from __future__ import annotations

import argparse
import codecs
import logging
import sys
from typing import Optional

from frontends.bridge import TcpByteServer

log = logging.getLogger("frontends.rtt")
BACKLOG = 64 * 1024          # bytes kept per port for the first client
MAX_CHANNEL = 63


def rtt_port(s: str) -> tuple:
    """``PORT`` or ``PORT:CHANNEL`` -> (port, channel)."""
    port_s, _, chan_s = s.partition(":")
    try:
        port = int(port_s, 0)
        chan = int(chan_s, 0) if chan_s else 0
    except ValueError:
        raise argparse.ArgumentTypeError(f"not PORT or PORT:CHANNEL: {s!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {port_s}")
    if not 0 <= chan <= MAX_CHANNEL:
        raise argparse.ArgumentTypeError(f"RTT channel must be 0 to {MAX_CHANNEL}, not {chan_s}")
    return port, chan


def rtt_address(s: str):
    """A symbol name or a number (0x...) for ``--rtt-address``."""
    try:
        v = int(s, 0)
    except ValueError:
        if not s or not (s[0].isalpha() or s[0] in "_.$") or any(c.isspace() for c in s):
            raise argparse.ArgumentTypeError(f"not a symbol or an address: {s!r}") from None
        return s
    if not 0 <= v <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"not a 32-bit address: {s}")
    return v


class RttTcpServer(TcpByteServer):
    """One RTT channel on one TCP port (see the module docstring)."""

    def __init__(self, rtt, channel: int = 0, host: str = "127.0.0.1", port: int = 0):
        self.rtt = rtt
        self.channel = channel
        self.backlog: Optional[bytearray] = bytearray()   # until the first client
        super().__init__(host, port, f"RTT channel {channel}")
        rtt.listeners.append(self._from_rtt)

    def _from_rtt(self, channel: int, data: bytes) -> None:
        if channel != self.channel:
            return
        if self.backlog is not None:
            self.backlog += data
            del self.backlog[:-BACKLOG]
        else:
            self._from_watch(data)

    def _on_connect(self) -> None:
        if self.backlog is not None:
            self.tx_pending += self.backlog
            self.backlog = None

    def _forward(self) -> None:
        if self.rx_pending:
            self.rtt.write(bytes(self.rx_pending), self.channel)
            self.rx_pending.clear()

    def close(self) -> None:
        if self.client is not None:
            try:                          # what the last poll read still goes out
                self.client.setblocking(True)
                self.client.settimeout(1.0)
                self.client.sendall(self.tx_pending)
            except OSError:
                pass
        super().close()


class StdoutEcho:
    """Up channel ``channel`` to a text stream as it arrives (``--rtt``)."""

    def __init__(self, rtt, channel: int = 0, stream=None):
        self.channel = channel
        self.stream = stream
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        rtt.listeners.append(self._from_rtt)

    def _from_rtt(self, channel: int, data: bytes) -> None:
        if channel != self.channel:
            return
        out = self.stream if self.stream is not None else sys.stdout
        out.write(self._decode(data))      # a character split between polls stays whole
        out.flush()
