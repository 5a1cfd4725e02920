"""TCP bridge: a socket client is the phone; bytes go to NUS RX, TX comes back."""
from __future__ import annotations

import socket

from emu import Machine
import emu.softdevice as sdm
from emu.bridge import BridgeServer


def _machine(fw):
    m = Machine(fw("sd_nus"), board="nrf52832")
    sdm.attach(m)
    return m


def _pump(m, bridge, sock, want: bytes, slices: int = 400) -> bytes:
    got = b""
    for _ in range(slices):
        bridge.poll()
        m.run(ms=5)
        bridge.poll()
        try:
            got += sock.recv(4096)
        except BlockingIOError:
            pass
        if len(got) >= len(want):
            break
    return got


def test_bridge_echo_and_disconnect(fw):
    m = _machine(fw)
    bridge = BridgeServer(m, port=0)
    try:
        s = socket.create_connection(("127.0.0.1", bridge.port))
        s.setblocking(False)
        msg = b"hello over the bridge, longer than one 20-byte write!"
        s.sendall(msg)
        assert _pump(m, bridge, s, msg) == msg
        assert m.softdevice.connected
        s.close()
        for _ in range(20):
            bridge.poll()
            m.run(ms=5)
        assert not m.softdevice.connected
        assert "PASS disconnect reason remote user" in m.console_text()
    finally:
        bridge.close()


def test_bridge_garbage_and_second_client(fw):
    m = _machine(fw)
    bridge = BridgeServer(m, port=0)
    try:
        s = socket.create_connection(("127.0.0.1", bridge.port))
        s.setblocking(False)
        junk = bytes(range(256)) * 4
        s.sendall(junk)
        s2 = socket.create_connection(("127.0.0.1", bridge.port))
        got = _pump(m, bridge, s, junk, slices=1500)
        assert got == junk                     # the echo firmware returns every byte
        s2.settimeout(1.0)
        assert s2.recv(10) == b""               # refused: one phone at a time
        s.close(); s2.close()
    finally:
        bridge.close()
