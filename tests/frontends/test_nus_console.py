"""`pinetime-emu nus-console`: pynus's behaviour, checked against a fake
bridge (a TCP server in the test) with the console on a pseudo-terminal, as
wasptool runs it under pexpect.  No firmware needed."""
from __future__ import annotations

import os
import pty
import select
import socket
import subprocess
import sys
import time

import pytest

from helpers.paths import ROOT


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "frontends.cli", *args], capture_output=True,
                          text=True, timeout=30, cwd=ROOT, **kw)


class Pty:
    """The console on a pseudo-terminal, like pexpect.spawn."""

    def __init__(self, *args):
        self.master, slave = pty.openpty()
        self.p = subprocess.Popen([sys.executable, "-m", "frontends.cli", "nus-console", *args],
                                  stdin=slave, stdout=slave, stderr=slave, cwd=ROOT,
                                  start_new_session=True)
        os.close(slave)
        self.got = b""

    def expect(self, want: bytes, timeout: float = 10.0) -> bytes:
        end = time.monotonic() + timeout
        while want not in self.got:
            r, _, _ = select.select([self.master], [], [], max(0, end - time.monotonic()))
            if not r:
                raise AssertionError(f"no {want!r} within {timeout} s; got {self.got!r}")
            try:
                data = os.read(self.master, 4096)
            except OSError:
                data = b""
            if not data:
                raise AssertionError(f"EOF before {want!r}; got {self.got!r}")
            self.got += data
        return self.got

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> int:
        try:
            return self.p.wait(timeout=10)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait()
            os.close(self.master)


@pytest.fixture
def server():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    ls.settimeout(10)
    yield ls
    ls.close()


def _recv(conn, n: int, timeout: float = 10.0) -> bytes:
    conn.settimeout(timeout)
    got = b""
    while len(got) < n:
        data = conn.recv(4096)
        if not data:
            break
        got += data
    return got


def test_behaves_as_pynus(server):
    port = server.getsockname()[1]
    c = Pty("--port", str(port), "--device", "PineTime")
    try:
        conn, _ = server.accept()
        with conn:
            # what wasptool waits for: r'Connect.*\(([0-9A-F:]*)\)' and the Ctrl-X hint
            c.expect(b"Exit console using Ctrl-X.")
            assert b"Connected to PineTime (C1:D0:ED:C0:FF:EE)." in c.got
            # typed: Enter (\n from pexpect's sendline) goes as \r; Ctrl-C and the
            # paste-mode keys go as they are
            c.send(b"\x03")
            assert _recv(conn, 1) == b"\x03"
            c.send(b"print(6*7)\n")
            assert _recv(conn, 11) == b"print(6*7)\r"
            c.send(b"\x05a=1\n\x04")
            assert _recv(conn, 6) == b"\x05a=1\r\x04"
            # shown: the watch's \n as \r\n (the REPL's \r\n arrives as \r\r\n)
            conn.sendall(b"print(6*7)\r\n42\r\n>>> ")
            c.expect(b">>> ")
            assert c.got.endswith(b"print(6*7)\r\r\n42\r\r\n>>> ")
            # bytes that are not UTF-8 do not stop it
            conn.sendall(b"\xff\xfe ok\n")
            c.expect(b" ok\r\n")
            c.send(b"\x18")                   # Ctrl-X quits
            assert c.close() == 0
            assert _recv(conn, 1) == b""      # and hangs up
    finally:
        if c.p.poll() is None:
            c.close()


def test_lost_connection(server):
    c = Pty("--port", str(server.getsockname()[1]))
    try:
        conn, _ = server.accept()
        c.expect(b"Ctrl-X.")
        conn.close()
        c.expect(b"lost connection")
        assert c.close() == 1
    finally:
        if c.p.poll() is None:
            c.close()


def test_pipe(server):
    """stdin a pipe (not a terminal): its lines are typed, and what the watch
    sends is printed until it has been quiet for --quiet seconds."""
    port = server.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "frontends.cli", "nus-console", "--port",
                          str(port), "--quiet", "0.5"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    conn, _ = server.accept()
    with conn:
        p.stdin.write(b"1+2\n")
        p.stdin.close()
        assert _recv(conn, 4) == b"1+2\r"
        conn.sendall(b"1+2\r\n3\r\n>>> ")
        p.stdin = None                         # closed above: nothing more to send
        out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    assert out.endswith(b"1+2\r\r\n3\r\r\n>>> ")


def test_refuses_a_gatt_bridge(server):
    """InfiniTime's bridge speaks JSON lines: there is no UART to be a console on."""
    c = Pty("--port", str(server.getsockname()[1]))
    try:
        conn, _ = server.accept()
        with conn:
            conn.sendall(b'{"bridge": "gatt"}\n')
            c.expect(b"no Nordic UART")
            assert c.close() == 2
    finally:
        if c.p.poll() is None:
            c.close()


@pytest.mark.parametrize("args,said", [
    (["--port", "0"], "not a TCP port"),
    (["--port", "x"], "not a number"),
    (["--address", "nope"], "not a Bluetooth address"),
    (["--quiet", "nan"], "0 to 3600"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_options(args, said):
    r = _cli("nus-console", *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and said in r.stderr and "Traceback" not in r.stderr


def test_no_bridge_is_one_line():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                  # nothing listens there now
    r = _cli("nus-console", "--port", str(port))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and f"cannot connect to 127.0.0.1:{port}" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
