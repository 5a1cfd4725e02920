"""A World's machines in processes of their own (``World(processes=True)``).

Each machine node is built and run in a worker process (``python -m
emu.worldproc``, joined by a socket pair: a fresh interpreter that does not
re-run the caller's script, so no ``if __name__ == "__main__"`` guard is
needed); the timeline (emu/timeline.py) stays in the calling process
with the host nodes (the phone) and sees each worker as a
:class:`RemoteSide`.  A round sends every worker what reached it and the
bound it may run to, all at once, and then collects what each sent, its
tick and its horizon: the workers run in parallel on the host's cores.

The results are the ones of one process, byte for byte: a round's runs do
not depend on one another, everything that crosses is routed in the same
fixed order, and a worker applies what reached it before it runs, as the
one-process timeline does (tests/machine/test_air_nodes.py compares
consoles and captures).  What pays: a round costs a message to and from
every worker (about 0.1 ms on this host), so processes pay when the nodes
run long between rounds (busy CPUs, rare packets) and cost when they trade
packets every few hundred microseconds (bench/bench_air.py measures both).

A remote node offers what crosses a pipe: its console and UART output,
its address, a screenshot (PNG bytes), its exit; its Machine stays in the
worker (``node.machine`` says so).  A worker that dies or fails to build
is one line (WorldError), never a hang.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Optional

from emu.timeline import Side


class WorldError(RuntimeError):
    """A worker process failed: one line saying which node and why."""


class RemoteResult:
    """A worker's RunResult, as it crossed the pipe."""

    def __init__(self, reason, time_ticks, cycles, exit_code, info):
        self.reason, self.time_ticks, self.cycles = reason, time_ticks, cycles
        self.exit_code, self.info = exit_code, info

    @property
    def ok(self) -> bool:
        return self.reason in ("deadline", "sleep", "off", "break") or (
            self.reason == "exit" and self.exit_code == 0)

    def __repr__(self) -> str:
        return f"RemoteResult({self.reason}, t={self.time_ticks / 512e6:.6f}s, " \
               f"exit={self.exit_code})"


def _result(r) -> Optional[tuple]:
    if r is None:
        return None
    return (r.reason, r.time_ticks, r.cycles, r.exit_code, dict(r.info))


def _worker(conn, spec: dict) -> None:
    """The worker's loop: build the machine, then answer step/call/close."""
    try:
        from emu.airspace import AirPort
        from emu.machine import Machine
        from emu.timeline import MachineSide
        m = Machine(spec["firmware"], **spec["options"])
        m.name = spec["name"]
        if spec["identity"] and hasattr(m.soc, "set_identity"):
            m.soc.set_identity(spec["name"])
        for addr, data in spec["preload"]:
            m.cpu.write_mem(addr, data)
        side = MachineSide(m, spec["name"], spec["ppb"])
        if m.air is not None:
            m.air.name = spec["name"]
            AirPort(side, m.air, spec["model"])
        addr = getattr(m.soc, "device_address", None)
        conn.send(("ok", side.now(), side.horizon(),
                   ":".join(f"{b:02x}" for b in reversed(addr)) if addr else None,
                   m.board_name, side.listening()))
    except Exception as e:                      # noqa: BLE001 - reported as one line
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    sent = 0
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        try:
            if msg[0] == "step":
                _kind, inbox, until = msg
                side.apply(inbox)
                side.step(until)
                console = bytes(m.console[sent:])
                sent = len(m.console)
                conn.send(("done", side.take(), side.now(), side.horizon(), console,
                           _result(side.stopped), _result(side.last), side.listening()))
            elif msg[0] == "call":
                conn.send(("value", _call(m, msg[1], msg[2:])))
            elif msg[0] == "close":
                m.close()
                conn.send(("closed",))
                break
        except Exception as e:                  # noqa: BLE001
            conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"))
            break
    conn.close()


def _call(m, what: str, args: tuple):
    if what == "uart":
        out = getattr(m.board, "uart_output", None)
        return bytes(out()) if out else b""
    if what == "screenshot":
        shot = getattr(m.board, "screenshot", None)
        if shot is None:
            return None
        import io
        buf = io.BytesIO()
        shot(buf)
        return buf.getvalue()
    if what == "cycles":
        return m.cpu.cycles
    raise ValueError(f"no remote call {what!r}")


class RemoteSide(Side):
    """A machine node in a worker process (see the module docstring)."""

    def __init__(self, spec: dict):
        super().__init__(spec["name"], spec["ppb"])
        mine, theirs = socket.socketpair()
        self.proc = subprocess.Popen([sys.executable, "-m", "emu.worldproc",
                                      str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                                     stdin=subprocess.DEVNULL)
        theirs.close()
        self.conn = Connection(mine.detach())
        self.conn.send(spec)
        self._pending: list = []
        self._stepping = False
        self.console = bytearray()
        self.console_listener = None          # fn(bytes) as the console grows
        reply = self._recv()
        _ok, self._now, self._horizon, self.address, self.board_name, self._listening = reply

    def _recv(self):
        try:
            if not self.conn.poll(600):
                raise WorldError(f"node {self.name}: its process did not answer in 600 s")
            reply = self.conn.recv()
        except (EOFError, OSError):
            code = self.proc.poll()
            raise WorldError(f"node {self.name}: its process ended"
                             f"{f' (exit status {code})' if code is not None else ''}") from None
        if reply[0] == "error":
            raise WorldError(f"node {self.name}: {reply[1].splitlines()[0]}")
        return reply

    @property
    def clock(self):
        raise AttributeError("a remote node's clock is in its own process")

    def now(self) -> int:
        return self._now

    def horizon(self) -> int:
        h = self._horizon
        for _msg, effect in self._pending:
            h = min(h, max(self.to_local(effect), self._now))
        return h

    def has_pending(self) -> bool:
        return bool(self._pending)

    def apply(self, messages: list) -> None:
        self._pending.extend(messages)

    def listening(self) -> bool:
        return self._listening

    def begin_step(self, until: int) -> None:
        self.conn.send(("step", self._pending, until))
        self._pending = []
        self._stepping = True

    def end_step(self) -> None:
        if not self._stepping:
            return
        self._stepping = False
        _done, out, self._now, self._horizon, console, stopped, last, self._listening = \
            self._recv()
        self.outbox.extend(out)
        self.console += console
        if console and self.console_listener is not None:
            self.console_listener(console)
        if stopped is not None:
            self.stopped = RemoteResult(*stopped)
        if last is not None:
            self.last = RemoteResult(*last)

    def step(self, until: int):
        self.begin_step(until)
        self.end_step()
        return self.last

    def call(self, what: str, *args):
        if self._pending:                      # what reached it first, as in one process
            self.begin_step(self._now)
            self.end_step()
        self.conn.send(("call", what, *args))
        return self._recv()[1]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.conn.send(("close",))
                if self.conn.poll(30):
                    self.conn.recv()
            except (OSError, EOFError):
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.conn.close()



def main(argv=None) -> int:
    """The worker: ``python -m emu.worldproc FD`` (FD: its end of the socket pair)."""
    argv = sys.argv[1:] if argv is None else argv
    conn = Connection(int(argv[0]))
    try:
        spec = conn.recv()
    except (EOFError, OSError):
        return 1
    _worker(conn, spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
