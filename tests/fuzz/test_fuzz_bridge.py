"""The --bridge servers and the phone client against hostile peers (issue 24).

The emulator must keep running and serving whatever clients do: bytes of
every value, bursts, many clients at once, clients that connect and never
read, clients that vanish mid-line or reset the connection.  The GATT
bridge (InfiniTime's JSON lines) answers every line, however malformed,
with one line.  `pinetime-emu phone` against a peer that is not a bridge,
or answers garbage, gives one line and exits.

Before the fixes: a client that never read made the server buffer the
watch's output without bound; an exception while the phone disconnected
escaped the server's clean-up; JSON nested thousands deep, a huge category
or an empty value from the watch escaped the GATT bridge's error replies; a
peer that streamed without a line end or a prompt grew the phone client's
buffers until its timeout; the watch's multi-line error texts gave several
lines on stderr.
"""
from __future__ import annotations

import json
import logging
import random
import socket
import struct
import sys
import time

import pytest

import emu.softdevice as sdm
from emu import Machine
from frontends import bridge as bridge_mod
from frontends.bridge import BridgeServer
from helpers.fuzz import CaseTooSlow, time_bound

SEED = 24


def echo_machine(fw):
    m = Machine(fw("sd_nus"), board="nrf52832")     # echoes every NUS byte back
    sdm.attach(m)
    return m


def pump(m, bridge, rounds=4):
    for _ in range(rounds):
        bridge.poll()
        r = m.run(ms=5)
        assert r.reason not in ("lockup", "fault"), r
    bridge.poll()


def recv_all(s) -> bytes:
    out = b""
    while True:
        try:
            d = s.recv(65536)
        except (BlockingIOError, socket.timeout):
            return out
        except OSError:
            return out
        if not d:
            return out
        out += d


def serving(m, bridge) -> None:
    """A fresh client is taken as the phone (the echo firmware ends after its
    first disconnect, so this is how a later client knows it is served)."""
    s = socket.create_connection(("127.0.0.1", bridge.port), timeout=5)
    try:
        for _ in range(200):
            pump(m, bridge, 1)
            if bridge.client is not None:
                s.sendall(b"still serving")
                pump(m, bridge, 2)
                assert bridge.client is not None
                return
        raise AssertionError("a fresh client was never taken")
    finally:
        s.close()
        pump(m, bridge, 2)


def echo(m, bridge, s, msg: bytes, seconds: float = 20.0) -> bytes:
    s.sendall(msg)
    got = b""
    deadline = time.monotonic() + seconds
    while msg not in got and time.monotonic() < deadline:
        pump(m, bridge, 1)
        got += recv_all(s)
    return got


def only_socket_errors(caplog) -> None:
    """The server drops clients on socket errors; anything else is a defect it hid."""
    for r in caplog.records:
        if r.name == "frontends.bridge" and "dropping client" in r.getMessage():
            err = r.args[1] if isinstance(r.args, tuple) and len(r.args) > 1 else None
            assert isinstance(err, OSError), r.getMessage()


def test_a_client_that_never_reads_is_dropped_and_the_server_goes_on(fw, caplog):
    m = echo_machine(fw)
    bridge = BridgeServer(m, port=0)
    try:
        lazy = socket.create_connection(("127.0.0.1", bridge.port))
        pump(m, bridge)
        assert bridge.client is not None
        for _ in range(40):                       # the watch talks; nobody reads
            bridge._from_watch(b"x" * 65536)
        assert len(bridge.tx_pending) <= bridge_mod.MAX_UNREAD
        with caplog.at_level(logging.WARNING, logger="frontends.bridge"):
            pump(m, bridge)
        assert bridge.client is None and "unread" in caplog.text
        lazy.close()
        serving(m, bridge)
    finally:
        bridge.close()


def test_an_error_while_the_phone_disconnects_does_not_escape(fw, monkeypatch):
    m = echo_machine(fw)
    bridge = BridgeServer(m, port=0)
    try:
        s = socket.create_connection(("127.0.0.1", bridge.port))
        s.setblocking(False)
        s.sendall(b"hello")
        for _ in range(100):
            pump(m, bridge, 1)
            if m.softdevice.connected:
                break

        def broken():
            raise RuntimeError("the link layer is confused")
        monkeypatch.setattr(bridge.phone, "disconnect", broken)
        s.close()
        pump(m, bridge, 30)                       # the link ends once the watch is quiet
        assert bridge.client is None and not bridge.closing
        s = socket.create_connection(("127.0.0.1", bridge.port))
        pump(m, bridge)
        assert bridge.client is not None
        bridge.close()                            # raised RuntimeError out of close()
        s.close()
    finally:
        bridge.close()


def test_many_clients_at_once(fw):
    m = echo_machine(fw)
    bridge = BridgeServer(m, port=0)
    try:
        first = socket.create_connection(("127.0.0.1", bridge.port))
        first.setblocking(False)
        pump(m, bridge)
        others = []
        for _ in range(20):
            o = socket.socket()
            o.setblocking(False)
            o.connect_ex(("127.0.0.1", bridge.port))
            others.append(o)
        # the phone is served while the others are refused (one phone at a time)
        assert b"ping" in echo(m, bridge, first, b"ping")
        deadline = time.monotonic() + 30
        refused = set()
        while len(refused) < len(others) and time.monotonic() < deadline:
            pump(m, bridge, 1)
            for i, o in enumerate(others):
                try:
                    if o.recv(10) == b"":
                        refused.add(i)
                except BlockingIOError:
                    pass
                except OSError:
                    refused.add(i)
        assert len(refused) == len(others)
        assert b"pong" in echo(m, bridge, first, b"pong")
        for o in others:
            o.close()
        first.close()
    finally:
        bridge.close()


PAYLOADS = [b"\x00" * 100, b"\xff" * 100, bytes(range(256)), b"\x10GB({\"t\":\"notify\"})\n",
            b"\x03\x04\x05", b"\r\n" * 50, b"GB(" + b"[" * 5000 + b")\n", "é\u202e".encode(),
            b"x" * 70000]


@pytest.mark.timeout(180, method="thread")
def test_fuzz_nus_bridge(fw, caplog):
    """120 seeded steps of connecting, bursts, half-open and vanishing clients."""
    rng = random.Random(SEED)
    m = echo_machine(fw)
    bridge = BridgeServer(m, port=0)
    clients = []
    caplog.set_level(logging.WARNING, logger="frontends.bridge")
    try:
        for case in range(120):
            with time_bound(10.0, f"case {case}"):
                act = rng.random()
                if act < 0.25 or not clients:
                    c = socket.create_connection(("127.0.0.1", bridge.port), timeout=5)
                    c.setblocking(False)
                    clients.append(c)
                elif act < 0.6:
                    c = rng.choice(clients)
                    data = rng.choice(PAYLOADS) if rng.random() < 0.5 else bytes(
                        rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
                    try:
                        c.send(data)
                    except OSError:
                        pass
                elif act < 0.7:                        # reads what came (some never do)
                    recv_all(rng.choice(clients))
                elif act < 0.8:                        # gone mid-line
                    c = clients.pop(rng.randrange(len(clients)))
                    try:
                        c.send(b"half a li")
                    except OSError:
                        pass
                    c.close()
                elif act < 0.9:                        # reset, not closed
                    c = clients.pop(rng.randrange(len(clients)))
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    c.close()
                else:                                  # no more writes, still reading
                    try:
                        rng.choice(clients).shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                pump(m, bridge, rng.randrange(1, 6))
        for c in clients:
            c.close()
        pump(m, bridge)
        serving(m, bridge)
        only_socket_errors(caplog)
    finally:
        bridge.close()


# ---------------------------------------------------------------- the GATT bridge
class FakeTask:
    def __init__(self, result=b"\x42", error=None):
        self.done, self.result, self.error, self.callbacks = True, result, error, []


class FakeGatt:
    services = [1, 2]

    def __init__(self, rng):
        self.rng = rng

    def start(self, gen, op):
        return FakeTask(result=self.rng.choice([b"", b"\x42", b"\xff" * 4, b"\xc3("]),
                        error=self.rng.choice([None, None, "Read Not Permitted\nsecond line"]))

    def read(self, u):
        return iter(())

    def write(self, u, v):
        return iter(())


class FakeGattPhone:
    def __init__(self, rng):
        self.name = "InfiniTime"
        self.music_events, self.call_responses = [], []
        self.link = type("L", (), {"state": "connected", "connected": True, "peer": "aa:bb",
                                   "reason": None, "disconnect": lambda self: None})()
        self.gatt = FakeGatt(rng)

    def start_connect(self):
        pass

    def start_discovery(self):
        return FakeTask()


LINE_PARTS = ['{"op": "battery"}', '{"op": "set_time", "unix": 1e400}', '{"op": "notify", '
              '"title": 1, "body": []}', '{"op": "call", "name": "a", "number": "b", "category": '
              '1e400}', '{"op": "call", "name": "a", "number": "b", "category": 99999}',
              '{"op": "read", "uuid": "zz"}', '{"op": "write", "uuid": "2a46", "hex": "0g"}',
              '{"op": "steps"}', '{"op": "firmware"}', '{"op": "music", "artist": "\\ud800"}',
              '{"op": "music_state", "playing": "yes"}', '[1, 2]', '"text"', 'null', '{',
              '{"op": null, "id": {"deep": [1]}}', 'GB({"t": "notify", "title": "x"})',
              'GB({"t": "call", "cmd": "incoming"})', 'GB({"t": "weather"})', 'GB(', '\x10GB(1)',
              '[' * 5000 + ']' * 5000, '{"op": "battery", "id": ' + '[' * 3000 + ']' * 3000 + '}',
              '\xff\xfe', '{"op": "read", "uuid": "' + 'a' * 5000 + '"}']


@pytest.mark.timeout(60, method="thread")
def test_fuzz_gatt_bridge_lines():
    """600 seeded lines: each is answered by exactly one JSON line with "ok"."""
    from frontends.gattbridge import GattBridge
    rng = random.Random(SEED)
    out = bytearray()
    gb = GattBridge(FakeGattPhone(rng), out.extend)
    gb.poll()
    out.clear()
    problems = []
    for case in range(600):
        line = rng.choice(LINE_PARTS)
        if rng.random() < 0.3:                          # damaged
            at = rng.randrange(len(line) + 1)
            line = line[:at] + rng.choice(['"', '}', '\\', '\x00', ' ', 'é']) + line[at + 1:]
        raw = line.encode("utf-8", "surrogateescape" if "\udcff" in line else "surrogatepass")
        out.clear()
        try:
            with time_bound(5.0, f"case {case}"):
                gb.feed(raw + rng.choice([b"\n", b"\r\n", b"\r"]))
                gb.poll()
        except (CaseTooSlow, Exception) as e:
            problems.append(f"case {case} {line[:60]!r}: {type(e).__name__}: {e}")
            continue
        replies = [json.loads(l) for l in bytes(out).decode().splitlines() if l.strip()]
        answers = [r for r in replies if "ok" in r]
        if raw.strip(b" \x00") and len(answers) != 1:
            problems.append(f"case {case} {line[:60]!r}: {len(answers)} answers: {replies}")
    assert not problems, f"seed {SEED}:\n" + "\n".join(problems[:10])


# ---------------------------------------------------------------- the phone client
def fake_bridge(behaviour: str):
    """A listening socket whose clients get ``behaviour``; returns (port, stop)."""
    from helpers.fakeserver import serve_clients

    def handle(c, stop):
        if behaviour == "garbage":
            c.sendall(bytes(range(256)) * 64)
        elif behaviour == "gatt-garbage":
            c.sendall(b'{"bridge": "gatt"}\n' + b"\xff\xfe{not json\n" * 50
                      + b'{"ok": false, "error": "two\\nlines"}\n')
        elif behaviour == "gatt-flood":
            c.sendall(b'{"bridge": "gatt"}\n')
            while not stop.is_set():
                c.sendall(b"y" * 65536)
        elif behaviour == "brace-flood":
            while not stop.is_set():
                c.sendall(b"{" * 65536)
        elif behaviour == "flood":
            while not stop.is_set():
                c.sendall(b"z" * 65536)
        elif behaviour == "close":
            pass
        elif behaviour == "error-prompt":
            c.sendall(b">>> ")
            c.settimeout(1.0)
            c.recv(100)
            c.sendall(b"\r\nValueError: multi\nline\r\n>>> ")
            time.sleep(0.5)
    return serve_clients(handle)


PHONE_ARGS = [["--repl", "1"], ["--eval", "1+1"], ["--battery"], ["--steps"],
              ["--gb", '{"t": "find"}'], ["--upload", "/dev/null"], ["--reset"],
              ["--memfree"], ["--read", "2a19"], ["--write", "2a46", "zz"], ["--notify", "a", "b"]]


@pytest.mark.timeout(180, method="thread")
def test_fuzz_phone_client_against_hostile_peers(capfd):
    """24 seeded (arguments, peer) pairs: exit 0, 1 or 2, one line on error, in time."""
    rng = random.Random(SEED)
    problems = []
    behaviours = ["garbage", "gatt-garbage", "gatt-flood", "brace-flood", "flood", "close",
                  "error-prompt"]
    for case in range(24):
        behaviour = behaviours[case % len(behaviours)]
        args = rng.choice(PHONE_ARGS)
        port, stop = fake_bridge(behaviour)
        argv = ["--port", str(port), "--wait", "0.2", "--timeout", "1", *args]
        try:
            with time_bound(25.0, f"case {case}"):
                try:
                    rc = bridge_mod.phone_client_main(argv)
                except SystemExit as e:
                    rc = e.code
        except (CaseTooSlow, Exception) as e:
            problems.append(f"case {case} {behaviour} {args}: {type(e).__name__}: {e}")
            continue
        finally:
            stop.set()
        err = capfd.readouterr().err
        if rc not in (0, 1, 2) or (rc != 0 and len(err.strip().splitlines()) != 1) \
                or "Traceback" in err:
            problems.append(f"case {case} {behaviour} {args}: exit {rc}, stderr {err[:300]!r}")
    assert not problems, f"seed {SEED}:\n" + "\n".join(problems)
