"""The GDB stub against hostile clients (issue 24): a client can get error
replies but never stop the stub.

Regression: `$Z0,-1,4` (or `$Z1,ffffffffffffffff,2`) answered E01 but kept a
half-made breakpoint, and when the client left, removing it raised UcError
out of the stub and the emulator exited with status 1.

Fuzz: seeded packets from the protocol's vocabulary with hostile numbers
('-1', '0x10', 64-bit and 40-digit values, empty, non-hex), binary X/vFlashWrite
payloads, vCont variants, bad checksums, unterminated and oversized packets,
Ctrl-C bytes and clients that vanish mid-packet.  After every case the stub
must still answer, hold no breakpoint outside the 32-bit space, and after a
disconnect hold none at all.  Before the fix this failed on the first
negative breakpoint address.
"""
from __future__ import annotations

import random
import socket
import time

import pytest

from conftest import free_port, served_run
from emu.clock import TICKS_PER_MS
from emu.machine import Machine
from frontends.gdbstub import GdbStub, _checksum
from helpers.fuzz import CaseTooSlow, time_bound

SEED = 24
CASES = 500
CASE_SECONDS = 5.0


def packet(data: bytes) -> bytes:
    return b"$" + data + b"#" + f"{_checksum(data):02x}".encode()


def read_reply(s: socket.socket, deadline: float) -> bytes:
    buf = b""
    while time.monotonic() < deadline:
        i = buf.find(b"$")
        j = buf.find(b"#", i)
        if i >= 0 and j >= 0 and len(buf) >= j + 3:
            return buf[i + 1:j]
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        if not data:
            break
        buf += data
    raise AssertionError(f"no reply; got {buf[:200]!r}")


@pytest.mark.parametrize("bad", [b"Z0,-1,4", b"Z1,ffffffffffffffff,2", b"Z0,fffffffe,2",
                                 b"Z0,0x100,2", b"Z2,-4,4", b"Z4,fffffffc,10"])
def test_bad_breakpoint_then_disconnect_leaves_the_emulator_running(fw, bad):
    port = free_port()
    with served_run(fw("pinetime_demo"), "--flash-file", "none", "--gdb", port):
        deadline = time.monotonic() + 30
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "the GDB stub never listened"
                time.sleep(0.1)
        s.sendall(packet(b"QStartNoAckMode"))
        assert read_reply(s, time.monotonic() + 10) == b"OK"
        s.sendall(packet(bad))
        assert read_reply(s, time.monotonic() + 10).startswith(b"E")
        s.close()                   # the stub removes every breakpoint: must not raise
        time.sleep(1.0)
        # it still serves: a new client is answered
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(packet(b"qC"))
        assert b"QC1" in read_reply(s, time.monotonic() + 10)
        s.close()
        time.sleep(0.3)
    # served_run: the run was alive at the end and SIGTERM ended it cleanly


def test_a_second_client_is_refused_while_one_is_attached(fw):
    m = Machine(fw("gdb_target"))
    stub = GdbStub(m, port=0)
    try:
        a = socket.create_connection(("127.0.0.1", stub.port), timeout=5)
        stub.poll(0.2)
        assert stub.conn is not None
        b = socket.create_connection(("127.0.0.1", stub.port), timeout=5)
        for _ in range(10):
            stub.poll(0.05)
        assert b.recv(100) == b"$E01#a6"
        assert b.recv(100) == b""          # closed: it does not sit in the listen queue
        a.sendall(packet(b"qC"))
        for _ in range(10):
            stub.poll(0.05)
        assert b"QC1" in a.recv(100)
        a.close()
        b.close()
    finally:
        stub.close()


# ---------------------------------------------------------------- fuzz
NUMBERS = ["0", "1", "2", "4", "-1", "0x10", " 1", "1_0", "", "zz", "+4", "ffffffff", "fffffffc",
           "fffffffe", "100000000", "ffffffffffffffff", "1" * 40, "20000000", "20001000",
           "2000fffc", "1000", "10000", "e000e010", "40000000", "8000", "3fff"]
MONITOR = ["help", "cycles", "status", "halt", "bogus", "", "reset " * 50]


def hexnum(rng):
    return rng.choice(NUMBERS)


def payload(rng) -> bytes:
    n = rng.choice([0, 1, 4, 16, 300])
    return bytes(rng.randrange(256) for _ in range(n))


def command(rng) -> bytes:
    h = lambda: hexnum(rng).encode()            # noqa: E731
    c = rng.randrange(30)
    if c == 0:
        return b"?"
    if c == 1:
        return b"g"
    if c == 2:
        return b"G" + payload(rng).hex().encode()
    if c == 3:
        return b"p" + h()
    if c == 4:
        return b"P" + h() + b"=" + payload(rng)[:8].hex().encode()
    if c == 5:
        return b"m" + h() + b"," + h()
    if c == 6:
        data = payload(rng)
        return b"M" + h() + b"," + rng.choice([h(), b"%x" % len(data)]) + b":" + data.hex().encode()
    if c == 7:
        data = payload(rng)
        esc = data.replace(b"}", b"}]").replace(b"#", b"}\x03").replace(b"$", b"}\x04").replace(
            b"*", b"}\x0a")
        return b"X" + h() + b"," + rng.choice([h(), b"%x" % len(data)]) + b":" + esc
    if c in (7, 8, 9, 10):
        return rng.choice([b"Z", b"z"]) + rng.choice([b"0", b"1", b"2", b"3", b"4", b"5",
                                                      b"-1", b""]) + b"," + h() + b"," + h()
    if c == 11:
        return rng.choice([b"c", b"s", b"C05", b"S05"]) + rng.choice([b"", h()])
    if c in (12, 13):
        return b"vCont" + rng.choice([b"?", b";c", b";s", b";C05", b";S05:1", b";t", b";r0,10",
                                      b";", b";c:1;s", b";s:-1", b";x", b";c:" + h()])
    if c == 14:
        return b"qSupported:multiprocess+;swbreak+;xmlRegisters=arm"
    if c == 15:
        return b"qXfer:features:read:target.xml:" + h() + b"," + h()
    if c == 16:
        return b"qXfer:memory-map:read::" + h() + b"," + h()
    if c == 17:
        return b"qRcmd," + rng.choice(MONITOR).encode().hex().encode()
    if c == 18:
        return b"qRcmd," + rng.choice([b"zz", b"1", b"", payload(rng)])
    if c == 19:
        return b"vFlashErase:" + h() + b"," + h()
    if c == 20:
        return b"vFlashWrite:" + h() + b":" + payload(rng)
    if c == 21:
        return rng.choice([b"vFlashDone", b"qC", b"qAttached", b"qfThreadInfo", b"Hg0", b"T1",
                           b"vMustReplyEmpty", b"qTStatus", b"!", b"R00", b"i", b"bc"])
    if c == 22:
        return b"D"
    return payload(rng)                           # anything at all


def frame(rng, data: bytes) -> bytes:
    f = rng.random()
    if f < 0.7:
        return packet(data)
    if f < 0.8:
        return b"$" + data + b"#" + rng.choice([b"00", b"zz", b"-1", b"", b"1"])
    if f < 0.85:
        return b"$" + data                       # never terminated
    if f < 0.9:
        return b"$" + b"m" * 70000               # oversized
    if f < 0.95:
        return b"\x03" + packet(data)            # Ctrl-C first
    return payload(rng) + packet(data)           # junk before it


class Client:
    def __init__(self, stub):
        self.s = socket.create_connection(("127.0.0.1", stub.port), timeout=5)
        self.s.setblocking(False)
        for _ in range(20):
            stub.poll(0.01)
            if stub.conn is not None:
                return
        raise AssertionError("the stub did not accept")

    def drain(self) -> bytes:
        out = b""
        while True:
            try:
                d = self.s.recv(1 << 20)
            except BlockingIOError:
                return out
            except OSError:
                return out
            if not d:
                return out
            out += d


def serve_a_little(stub, m, rounds: int = 4) -> None:
    for _ in range(rounds):
        stub.poll(0.002)
        if not stub.halted and stub.exited is None and not stub.killed and stub.conn:
            stub.run_machine(m.clock.now + TICKS_PER_MS)


def alive(stub, m, client) -> None:
    """The stub answers qC (after a Ctrl-C if the target runs)."""
    client.drain()
    if not stub.halted and stub.exited is None:
        client.s.sendall(b"\x03")
        serve_a_little(stub, m)
    got = b""
    for _attempt in range(3):         # as GDB does, send again after a NAK ('-')
        client.s.sendall(packet(b"qC"))
        for _ in range(100):
            serve_a_little(stub, m, 1)
            got += client.drain()
            if b"QC1" in got:
                return
    raise AssertionError(f"the stub stopped answering: {got[-200:]!r}")


@pytest.mark.timeout(120, method="thread")
def test_fuzz_gdb_packets(fw):
    rng = random.Random(SEED)
    m = Machine(fw("gdb_target"))
    stub = GdbStub(m, port=0)
    problems = []
    try:
        client = Client(stub)
        for case in range(CASES):
            try:
                with time_bound(CASE_SECONDS, f"case {case}"):
                    blob = b"".join(frame(rng, command(rng)) for _ in range(rng.randrange(1, 4)))
                    if case % 50 == 49:                  # start the firmware again
                        blob += packet(b"qRcmd," + b"reset".hex().encode())
                    if rng.random() < 0.05:              # gone mid-packet
                        client.s.sendall(blob[:len(blob) // 2])
                        client.s.close()
                        serve_a_little(stub, m, 8)
                        assert stub.conn is None, "the stub missed the disconnect"
                        assert not stub.breakpoints and not stub.watchpoints, \
                            "breakpoints outlived their client"
                        client = Client(stub)
                        continue
                    client.s.setblocking(True)
                    client.s.sendall(blob)
                    client.s.setblocking(False)
                    serve_a_little(stub, m)
                    if stub.killed or stub.conn is None:     # D: a new client
                        stub.killed = False
                        serve_a_little(stub, m)
                        client = Client(stub)
                    bad = [a for a in stub.breakpoints if not 0 <= a <= 0xFFFFFFFC]
                    assert not bad, f"breakpoints kept at {bad}"
                    alive(stub, m, client)
            except (CaseTooSlow, Exception) as e:    # anything the stub let out
                problems.append(f"case {case}: {type(e).__name__}: {str(e)[:200]}")
                if len(problems) > 5:
                    break
                stub.close()
                m = Machine(fw("gdb_target"))
                stub = GdbStub(m, port=0)
                client = Client(stub)
    finally:
        stub.close()
    assert not problems, f"seed {SEED}:\n" + "\n".join(problems)
