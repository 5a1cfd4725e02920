"""The JSON-lines bridge for firmware with its own Bluetooth stack
(frontends/gattbridge.py) and ``pinetime-emu phone`` against it, without a real
watch: malformed lines get one error line each and never stop the emulator,
Gadgetbridge messages are translated, commands wait for the link; the CLI
recognises the bridge from its greeting, prints values and errors, and
refuses InfiniTime-only verbs on a wasp-os bridge with one line."""
import json
import socket
import threading

import pytest

from emu import Machine
from frontends.bridge import phone_client_main
from frontends.gattbridge import GattBridge
from emu.phone.gattphone import GattPhone


def _bridge(fw):
    m = Machine(fw("pinetime_demo"))         # has a RADIO, never advertises
    out = []
    gb = GattBridge(GattPhone(m), lambda data: out.append(data))
    return m, gb, out


def _lines(out):
    return [json.loads(x) for x in b"".join(out).decode().splitlines()]


def test_greeting_and_malformed_lines(fw):
    m, gb, out = _bridge(fw)
    assert _lines(out) == [{"bridge": "gatt", "device": "InfiniTime"}]
    gb.feed(b"not json\n{\"op\": \"fly\", \"id\": 7}\n[1, 2]\n\xff\xfe\n")
    gb.feed(b'{"op": "set_time", "unix": "noon"}\nGB({"t": "weather"})\n')
    gb.feed(b'{"op": "write", "uuid": "2a46", "hex": "zz"}\n' + b"x" * 10000 + b"\n")
    replies = _lines(out)[1:]
    assert len(replies) == 8 and all(r["ok"] is False for r in replies), replies
    assert "unknown op 'fly'" in replies[1]["error"] and replies[1]["id"] == 7
    assert "seconds since 1970" in replies[4]["error"]
    assert "weather" in replies[5]["error"]
    assert gb.waiting == []
    m.run(ms=10)                                   # the emulator is unharmed


def test_commands_wait_for_the_link_and_gadgetbridge_lines_translate(fw):
    m, gb, out = _bridge(fw)
    gb.feed(b'\x10GB({"t":"notify","id":1,"src":"Messages","title":"Hi","body":"there"})\n')
    gb.feed(b'{"op": "battery", "id": 2}\n')
    assert [op for _, op, _ in gb.waiting] == ["notify", "battery"]
    assert len(_lines(out)) == 1                   # no answer yet: not connected
    m.run(ms=50)
    gb.poll()
    assert gb.gp.link.state == "initiating"        # still scanning for the watch


class _FakeBridge:
    """A TCP server playing the JSON-lines bridge with canned answers."""

    def __init__(self, answer=None, greet=True):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.got = []
        self.answer, self.greet = answer, greet
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()

    def _serve(self):
        c, _ = self.sock.accept()
        with c:
            if self.greet:
                c.sendall(b'{"bridge": "gatt", "device": "InfiniTime"}\n'
                          b'{"event": "connected", "services": 14}\n')
            c.settimeout(10)
            buf = b""
            while b"\n" not in buf:
                d = c.recv(4096)
                if not d:
                    return
                buf += d
            cmd = json.loads(buf.split(b"\n")[0])
            self.got.append(cmd)
            if self.answer is not None:
                c.sendall((json.dumps(dict(self.answer, id=cmd.get("id"))) + "\n").encode())


def test_cli_prints_values_and_errors(capsys):
    b = _FakeBridge({"op": "battery", "ok": True, "value": 42})
    assert phone_client_main(["--port", str(b.port), "--battery"]) == 0
    assert capsys.readouterr().out.strip() == "42%"
    assert b.got[0]["op"] == "battery"
    b = _FakeBridge({"op": "read", "ok": False, "error": "read 2a19: invalid handle"})
    assert phone_client_main(["--port", str(b.port), "--read", "2a19"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "pinetime-emu phone: error: read 2a19: invalid handle"
    b = _FakeBridge({"op": "set_time", "ok": True})
    assert phone_client_main(["--port", str(b.port), "--set-time", "1809869820"]) == 0
    assert b.got[0] == {"op": "set_time", "unix": 1809869820, "id": 1}


def test_cli_refuses_infinitime_verbs_on_a_wasp_bridge(capsys):
    b = _FakeBridge(greet=False)
    assert phone_client_main(["--port", str(b.port), "--steps"]) == 2
    err = capsys.readouterr().err
    assert "Nordic UART Service (wasp-os)" in err and "PineDFU" in err and "Traceback" not in err


@pytest.mark.parametrize("args", [["--set-time", "tomorrow"], ["--set-time", "-1"],
                                  ["--music-state", "loud"]])
def test_cli_bad_arguments(args, capsys):
    with pytest.raises(SystemExit) as e:
        phone_client_main(["--port", "1", *args])
    assert e.value.code == 2
