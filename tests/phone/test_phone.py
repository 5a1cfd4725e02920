"""machine.phone over the echo firmware: what Gadgetbridge writes, byte for byte,
comes back through TX notifications, and JSON lines are parsed into messages."""
from __future__ import annotations

import json

from emu import Machine
import emu.softdevice as sdm


def _phone(fw):
    m = Machine(fw("sd_nus"), board="nrf52832")
    sdm.attach(m)
    m.phone.connect(timeout_ms=100)
    return m, m.phone


def test_send_gb_wire_format_and_messages(fw):
    m, ph = _phone(fw)
    seen = []
    ph.on_output(seen.append)
    ph.notify("Alice", "hi there")
    ph.flush()
    assert m.run_until(lambda: ph.output.endswith(b")\n"), timeout_ms=3000)
    wire = bytes(ph.output)
    assert wire.startswith(b"\x10GB({") and wire.endswith(b"})\n")
    msg = json.loads(wire[4:-2])
    assert msg == {"t": "notify", "id": 1, "src": "Messages", "title": "Alice", "body": "hi there"}
    assert b"".join(seen) == wire
    # a JSON line from the watch becomes a message (the echo firmware returns it)
    ph.send(b'{"t":"call", "n":"ACCEPT"}\n')
    assert m.run_until(lambda: ph.messages and ph.messages[-1].get("n") == "ACCEPT",
                       timeout_ms=3000)
    assert ph.messages[-1] == {"t": "call", "n": "ACCEPT"}


def test_set_time_and_call_formats(fw):
    m, ph = _phone(fw)
    ph.set_time(1583020800)             # 2020-03-01 00:00:00 UTC
    ph.incoming_call("Bob", "+123")
    ph.flush()
    assert m.run_until(lambda: ph.output.count(b"\n") >= 1 and b"Bob" in ph.output,
                       timeout_ms=5000)
    out = bytes(ph.output)
    assert b"watch.rtc.set_localtime((2020, 3, 1, 0, 0, 0, 6, 61))\r" in out   # wasptool's 8-tuple
    gb = out[out.index(b"\x10GB("):]
    assert json.loads(gb[4:gb.index(b")\n")]) == {"t": "call", "cmd": "incoming", "name": "Bob",
                                                  "number": "+123"}


def test_disconnect_and_reconnect_refused_when_not_advertising(fw):
    m, ph = _phone(fw)
    assert ph.connected
    ph.disconnect()
    m.run(ms=50)
    assert not ph.connected and not m.softdevice.connected
    import pytest
    from emu.phone import PhoneError
    with pytest.raises(PhoneError):     # the test firmware does not restart advertising
        ph.connect(timeout_ms=50)
