"""The emulated air as a Bluetooth LE controller for real hosts (``run --hci``,
emu/phone/controller.py, frontends/hci.py), proved with a host nobody here
wrote: Google's Bumble (PyPI ``bumble``), over its ``tcp-client`` transport.

On our own firmware (CI): firmware/tests/periph_radio_conn.c built to
advertise for a minute (periph_radio_conn_hci.elf) plays the peripheral's
link layer; Bumble scans, connects, sends an L2CAP PDU longer than one LL
packet, gets it echoed, and hears the firmware end the link; the firmware's
own checks of the central pass.  Companions break the controller's ACL
mapping and its flow control and see the exchange fail.  On the real images
(skipped with a message without them): bumble-scan hears InfiniTime,
bumble-gatt-dump lists its services, a Bumble script pairs with it and
writes the Current Time; wasp-os on Nordic's real S132 answers 6*7 over the
Nordic UART Service through Bumble.
"""
from __future__ import annotations

import asyncio
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

bumble = pytest.importorskip("bumble", reason="Bumble (PyPI bumble, in the test extras) "
                             "is not installed")
from bumble import hci  # noqa: E402
from bumble.device import Device  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

from emu import Machine  # noqa: E402
from emu.clock import TICKS_PER_MS  # noqa: E402
from emu.phone.controller import SUPPORTED, HciController, supported_commands  # noqa: E402
from helpers.paths import ROOT  # noqa: E402

CACHE = Path(os.path.expanduser("~/.cache/pinetime-emu"))
WATCH = "C7:05:04:03:02:01"            # periph_radio_conn's AdvA (random static)
PING = b"ping from a real host over HCI, in two LL packets"


class EmuThread(threading.Thread):
    """A machine with the HCI server, run by the loop `pinetime-emu run` uses
    (10 ms slices, pollers between), until the firmware ends or stop()."""

    def __init__(self, machine: Machine):
        super().__init__(daemon=True)
        from frontends.hci import HciTcpServer
        self.machine = machine
        self.server = HciTcpServer(machine, "127.0.0.1", 0)
        self.port = self.server.port
        self.result = None
        self._stop_flag = False

    def run(self) -> None:
        m = self.machine
        while not self._stop_flag:
            r = m.run(until_tick=m.clock.now + 10 * TICKS_PER_MS)
            self.server.poll()
            if r.reason != "deadline":
                self.result = r
                break
        for _ in range(20):                  # let the last bytes reach the host
            self.server.poll()
        self.server.close()

    def stop(self) -> None:
        self._stop_flag = True
        self.join(timeout=10)


async def _with_device(port: int, body):
    async with await open_transport(f"tcp-client:127.0.0.1:{port}") as (source, sink):
        device = Device.with_hci("bumble", hci.Address("F0:F1:F2:F3:F4:F5"), source, sink)
        await device.power_on()
        return await body(device)


def _phone_like():
    """Connection parameters as a phone asks them: a 5 s supervision timeout.
    Bumble's default is 720 ms, and InfiniTime, busy with its first boot or
    with P-256 while pairing, was seen to leave connection events unanswered
    for about 0.4 s here (not checked against a real watch)."""
    from bumble.device import ConnectionParametersPreferences
    return {hci.Phy.LE_1M: ConnectionParametersPreferences(supervision_timeout=5000)}


async def _scan_for(device, address: str, timeout: float = 10.0, active: bool = False):
    found = asyncio.get_running_loop().create_future()

    def on_adv(adv):
        if str(adv.address).startswith(address) and not found.done():
            found.set_result(adv)
    device.on("advertisement", on_adv)
    await device.start_scanning(active=active, filter_duplicates=True)
    try:
        return await asyncio.wait_for(found, timeout)
    finally:
        await device.stop_scanning()


async def _ping_session(device):
    adv = await _scan_for(device, WATCH)
    name = adv.data.get(0x09)
    conn = await device.connect(adv.address, timeout=10)
    echo = asyncio.get_running_loop().create_future()
    gone = asyncio.get_running_loop().create_future()
    device.l2cap_channel_manager.register_fixed_channel(
        0x40, lambda handle, pdu: echo.done() or echo.set_result(pdu))
    conn.on("disconnection", lambda reason: gone.done() or gone.set_result(reason))
    device.send_l2cap_pdu(conn.handle, 0x40, PING)
    got = await asyncio.wait_for(echo, 10)
    reason = await asyncio.wait_for(gone, 10)
    return name, got, reason


def _ping(fw):
    emu = EmuThread(Machine(fw("periph_radio_conn_hci"), board="nrf52832"))
    emu.start()
    try:
        return asyncio.run(asyncio.wait_for(_with_device(emu.port, _ping_session), 40)), emu
    finally:
        emu.stop()


def test_bumble_scans_connects_and_exchanges_data_with_our_firmware(fw):
    (name, echoed, reason), emu = _ping(fw)
    assert name in (b"emu-conn", "emu-conn")
    assert echoed == PING                   # 4 + 49 bytes: 27 + 26 on the LL, both ways
    assert reason == hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR   # the firmware's 0x13
    assert emu.result is not None and emu.result.reason == "exit" and emu.machine.exit_code == 0
    text = emu.machine.console_text()
    assert "FAIL" not in text and "PASS L2CAP PDU from the central reassembled" in text


def test_controller_with_acl_boundaries_swapped_fails(fw, monkeypatch):
    """Companion: continuing fragments sent as starts: the firmware's L2CAP
    reassembly never completes and the echo never comes."""
    import emu.phone.controller as ctl
    monkeypatch.setattr(ctl, "LLID_START", ctl.LLID_CONT)
    with pytest.raises((asyncio.TimeoutError, TimeoutError)):
        _ping(fw)


def test_controller_without_completed_packets_stalls_the_host(fw, monkeypatch):
    """Companion: no Number Of Completed Packets events: Bumble's flow control
    runs out of buffers and the watch never gets the whole PDU."""
    monkeypatch.setattr(HciController, "_completed", lambda self, n: None)
    monkeypatch.setattr("emu.phone.controller.ACL_BUFFERS", 1)
    with pytest.raises((asyncio.TimeoutError, TimeoutError)):
        _ping(fw)


def test_supported_commands_match_the_spec_table_bumble_uses():
    """Our (octet, bit) per command against Bumble's own copy of the spec's
    table; every command we claim is one we answer."""
    field = int.from_bytes(supported_commands(), "little")
    for op in SUPPORTED:
        assert hci.HCI_SUPPORTED_COMMANDS_MASKS[op] & field, hex(op)
        assert op in HciController._COMMANDS, hex(op)
    claimed = {op for op, mask in hci.HCI_SUPPORTED_COMMANDS_MASKS.items() if mask & field}
    assert claimed == set(SUPPORTED)


def test_commands_unknown_malformed_and_garbage(fw):
    m = Machine(fw("periph_radio_conn_hci"), board="nrf52832")
    c = HciController(m.air)
    out = []
    c.on_output.append(out.append)
    c.feed(bytes([1, 0x03, 0x0C, 0]))                        # Reset
    assert out.pop(0) == bytes([4, 0x0E, 4, 1, 0x03, 0x0C, 0])
    c.feed(bytes([1, 0x34, 0x12, 1, 0]))                     # no such command
    assert out.pop(0)[-1] == 0x01                            # Unknown HCI Command
    c.feed(bytes([1, 0x0C, 0x20]))                           # Set Scan Enable, in pieces
    assert out == []
    c.feed(bytes([1, 5]))                                    # ... with too few parameters
    assert out.pop(0)[-1] == 0x12                            # Invalid HCI Parameters
    c.feed(bytes([2, 0x01, 0x00, 3, 0, 1, 2, 3]))            # ACL with no connection: dropped
    assert out == []
    c.feed(b"\x77garbage")                                   # not H4
    assert out.pop(0) == bytes([4, 0x10, 1, 1])              # Hardware Error
    c.feed(bytes([1, 0x09, 0x10, 0]))                        # and the stream goes on
    assert out.pop(0)[7:] == c.bd_addr


def test_cli_refuses_bad_hci_options(tmp_path, capsys, fw):
    from frontends.cli import main
    elf = str(fw("periph_radio_conn_hci"))
    for argv, msg in ((["--hci", "udp:1"], "tcp:PORT or pty"),
                      (["--hci", "tcp:99999"], "not a TCP port"),
                      (["--hci", "tcp:7000", "--bridge", "7001"], "give one")):
        assert main(["run", elf, "--board", "nrf52832", "--headless", *argv]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err
    assert main(["run", str(fw("cpu_exceptions")), "--board", "microbit", "--headless",
                 "--hci", "pty"]) == 2


# ---------------------------------------------------------------------------- real images
def _infinitime():
    img = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if img is None:
        cands = sorted((CACHE / "infinitime").glob("pinetime-app-*.out"))
        img = str(cands[-1]) if cands else None
    if img is None or not Path(img).exists():
        pytest.skip("no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or put "
                    f"pinetime-app-*.out into {CACHE / 'infinitime'} (docs/firmware.md)")
    return img


def _serve(image, **kw):
    port_file = []
    proc = subprocess.Popen([sys.executable, "-m", "frontends.cli", "run", image, "--headless",
                             "--hci", "tcp:0", "--flash-file", "none", *kw.get("extra", [])],
                            cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    for line in proc.stderr:
        if "HCI controller (H4) on 127.0.0.1:" in line:
            port_file.append(int(line.rsplit(":", 1)[1]))
            break
    assert port_file, "the emulator printed no HCI port"
    return proc, port_file[0]


def _bumble_app(name, *args, timeout=30):
    exe = Path(sys.executable).parent / name
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_bumble_apps_scan_and_dump_infinitime():
    proc, port = _serve(_infinitime())
    try:
        try:
            scan = _bumble_app("bumble-scan", f"tcp-client:127.0.0.1:{port}", timeout=8)
            out = scan.stdout
        except subprocess.TimeoutExpired as e:      # bumble-scan scans until stopped
            out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        assert "InfiniTime" in out, out[-2000:]
        import re
        addr = re.search(r"([0-9A-F]{2}(?::[0-9A-F]{2}){5})", out.split(">>> ", 1)[1]).group(1)
        dump = _bumble_app("bumble-gatt-dump", f"tcp-client:127.0.0.1:{port}", addr,
                           timeout=60)
        assert dump.returncode == 0, dump.stdout[-2000:] + dump.stderr[-2000:]
        for uuid in ("1805", "180A", "180F"):        # time, device information, battery
            assert uuid in dump.stdout.upper(), dump.stdout[-3000:]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_bumble_pairs_with_infinitime_and_writes_the_time():
    image = _infinitime()
    m = Machine(image, flash_file=None)
    m.run(seconds=5)          # booted (its first boot formats the NOR), as a watch on a desk
    emu = EmuThread(m)
    emu.start()
    when = (2027, 5, 9, 13, 37, 0)

    async def session(device):
        adv = await _scan_for(device, "", timeout=15, active=True)
        assert "InfiniTime" in str(adv.data.get(0x09)), adv.data
        conn = await device.connect(adv.address, timeout=15,
                                    connection_parameters_preferences=_phone_like())
        await conn.pair()
        assert conn.is_encrypted
        from bumble.device import Peer
        peer = Peer(conn)
        await peer.discover_services()
        cts = [c for s in peer.services for c in await s.discover_characteristics()
               if c.uuid == bumble.core.UUID.from_16_bits(0x2A2B)]
        assert cts, "no Current Time characteristic"
        value = struct.pack("<HBBBBBBBB", when[0], *when[1:], 7, 0, 1)
        await cts[0].write_value(value, with_response=True)
        await conn.update_parameters(50.0, 50.0, 0, 6000.0)    # ms: LE Connection Update
        await asyncio.sleep(1.0)
        assert conn.parameters.connection_interval == 50.0, conn.parameters
        back = await cts[0].read_value()                       # on the new timing
        await conn.disconnect()
        return bytes(back)

    try:
        back = asyncio.run(asyncio.wait_for(_with_device(emu.port, session), 90))
    finally:
        emu.stop()
    import datetime
    got = datetime.datetime(*struct.unpack_from("<HBBBBB", back))
    assert 0 <= (got - datetime.datetime(*when)).total_seconds() <= 10, got   # it keeps time


def _wasp_s132():
    app = os.environ.get("PINETIME_EMU_WASP_IMAGE",
                         str(CACHE / "wasp-os" / "upstream" / "micropython.elf"))
    sd = os.environ.get("PINETIME_EMU_S132_HEX",
                        str(CACHE / "s132" / "s132_nrf52_6.1.1_softdevice.hex"))
    if not (Path(app).exists() and Path(sd).exists()):
        pytest.skip("needs the wasp-os image and Nordic's S132 .hex (PINETIME_EMU_WASP_IMAGE, "
                    "PINETIME_EMU_S132_HEX; docs/firmware.md)")
    return app, sd


def test_bumble_scan_hears_wasp_os_on_the_real_s132():
    app, sd = _wasp_s132()
    proc, port = _serve(app, extra=["--softdevice-hex", sd])
    try:
        try:
            out = _bumble_app("bumble-scan", f"tcp-client:127.0.0.1:{port}", timeout=6).stdout
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        assert "PineTime" in out, out[-2000:]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_wasp_os_on_the_real_s132_answers_over_bumble():
    app, sd = _wasp_s132()
    m = Machine(app, softdevice_hex=sd, flash_file=None)
    m.run(seconds=6)                      # first boot formats the NOR; then a reboot
    m.system_reset()
    m.run(seconds=6)                      # to the clock face, with the REPL idle
    emu = EmuThread(m)
    emu.start()
    nus_rx = bumble.core.UUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")
    nus_tx = bumble.core.UUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")

    async def session(device):
        adv = await _scan_for(device, "", timeout=20, active=True)
        conn = await device.connect(adv.address, timeout=15,
                                    connection_parameters_preferences=_phone_like())
        from bumble.device import Peer
        peer = Peer(conn)
        await peer.discover_services()
        chars = [c for s in peer.services for c in await s.discover_characteristics()]
        rx = next(c for c in chars if c.uuid == nus_rx)
        tx = next(c for c in chars if c.uuid == nus_tx)
        got = bytearray()
        await tx.subscribe(lambda value: got.extend(value))
        await rx.write_value(b"\r", with_response=True)         # a fresh prompt
        await asyncio.sleep(0.5)
        await rx.write_value(b"6*7\r", with_response=True)
        for _ in range(100):
            if b"42" in got:
                break
            await asyncio.sleep(0.1)
        await conn.disconnect()
        return bytes(got)

    try:
        got = asyncio.run(asyncio.wait_for(_with_device(emu.port, session), 90))
    finally:
        emu.stop()
    assert b"42" in got, got


# ---------------------------------------------------------------------------- a scripted host
def _cmd(op: int, params: bytes = b"") -> bytes:
    return bytes([1]) + struct.pack("<HB", op, len(params)) + params


def _scripted_session(fw, update=None):
    """A host written out packet by packet, fed at emulated times (no wall
    clock anywhere): scan, connect, send an L2CAP PDU, optionally update the
    connection, until the firmware ends.  Returns (H4 output, the machine)."""
    m = Machine(fw("periph_radio_conn_hci"), board="nrf52832")
    c = HciController(m.air)
    out = []
    c.on_output.append(out.append)

    def step(ms=10):
        return m.run(ms=ms)

    def wait(pred, ms=3000):
        for _ in range(ms // 10):
            if any(pred(p) for p in out):
                return next(p for p in out if pred(p))
            if step().reason != "deadline":
                break
        raise AssertionError(f"not seen in {ms} ms; got {[p.hex() for p in out[-5:]]}")

    c.feed(_cmd(0x0C03))
    c.feed(_cmd(0x0C01, struct.pack("<Q", 0x3DBFF807FFFBFFFF)))   # LE Meta events on
    c.feed(_cmd(0x200B, bytes([0]) + struct.pack("<HH", 16, 16) + bytes([1, 0])))
    c.feed(_cmd(0x200C, bytes([1, 1])))
    report = wait(lambda p: p[:4] == bytes([4, 0x3E, p[2], 2]))
    assert report[7:13] == bytes.fromhex("010203040506")[:5] + b"\xc7"
    c.feed(_cmd(0x200C, bytes([0, 0])))
    c.feed(_cmd(0x200D, struct.pack("<HHBB", 16, 16, 0, 1) + report[7:13] + bytes([1])
                + struct.pack("<HHHHHH", 24, 24, 0, 100, 0, 0)))
    wait(lambda p: p[:4] == bytes([4, 0x3E, 19, 1]))          # LE Connection Complete
    pdu = struct.pack("<HH", len(PING), 0x40) + PING
    c.feed(bytes([2]) + struct.pack("<HH", 0x0001, 27) + pdu[:27])
    c.feed(bytes([2]) + struct.pack("<HH", 0x1001, len(pdu) - 27) + pdu[27:])
    if update is not None:
        c.feed(_cmd(0x2013, struct.pack("<HHHHHHH", 1, update, update, 0, 200, 0, 0)))
        wait(lambda p: p[:4] == bytes([4, 0x3E, 10, 3]))       # Connection Update Complete
    for _ in range(600):
        if step().reason != "deadline":
            break
    return out, m, c


def test_a_scripted_host_is_deterministic_and_gets_its_echo(fw):
    """Fed at emulated times, the controller is deterministic: the same
    bytes to the host, the same air and cycles, twice; the echo comes back as
    two ACL packets with the right boundaries, each of ours is completed."""
    out1, m1, _ = _scripted_session(fw)
    out2, m2, _ = _scripted_session(fw)
    assert out1 == out2 and m1.cpu.cycles == m2.cpu.cycles
    assert [p.pdu for p in m1.air.log] == [p.pdu for p in m2.air.log]
    acl = [p for p in out1 if p[0] == 2]
    assert [struct.unpack_from("<H", p, 1)[0] >> 12 for p in acl[-2:]] == [0b10, 0b01]
    echo = b"".join(p[5:] for p in acl[-2:])
    assert echo[4:] == PING
    completed = sum(struct.unpack_from("<H", p, 6)[0] for p in out1 if p[:2] == b"\x04\x13")
    assert completed == 2
    assert any(p[:2] == b"\x04\x05" and p[-1] == 0x13 for p in out1)    # the watch ended it
    assert m1.exit_code == 0


def test_connection_update_moves_the_central_to_the_new_interval(fw):
    """LE Connection Update: LL_CONNECTION_UPDATE_IND with an instant six
    events ahead, Connection Update Complete at the instant, and from there
    the central's packets 40 x 1.25 ms apart (they were 24 x 1.25 ms).  (Our
    test firmware does not follow updates, so the link then times out.)"""
    from emu.phone.link import UNIT, LL_CONNECTION_UPDATE_IND
    out, m, c = _scripted_session(fw, update=40)
    link = c.link
    upd = [p for p in link.packets if p[1] == ">" and p[3] == 3 and p[7][:1] ==
           bytes([LL_CONNECTION_UPDATE_IND])]
    assert len(upd) == 1
    _op, win_size, offset, interval, latency, timeout, instant = struct.unpack(
        "<BBHHHHH", upd[0][7])
    assert (win_size, interval, latency, timeout) == (1, 40, 0, 200)
    starts = sorted({p[0] for p in link.packets if p[1] == ">"})
    event_starts = [t for i, t in enumerate(starts) if i == 0 or t - starts[i - 1] > 2 * UNIT]
    gaps = [b - a for a, b in zip(event_starts, event_starts[1:])]
    assert 24 * UNIT in gaps and 40 * UNIT in gaps
    assert gaps.index(40 * UNIT) > gaps.index(24 * UNIT)
    ev = next(p for p in out if p[:4] == bytes([4, 0x3E, 10, 3]))
    assert struct.unpack_from("<HHH", ev, 7) == (40, 0, 200)


def test_hci_on_a_pty(fw, tmp_path):
    """--hci pty: the path is printed, and a host that opens it gets H4."""
    import select
    proc = subprocess.Popen([sys.executable, "-m", "frontends.cli", "run",
                             str(fw("periph_radio_conn_hci")), "--board", "nrf52832",
                             "--headless", "--seconds", "20", "--hci", "pty"], cwd=ROOT,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        line = proc.stderr.readline()
        assert "HCI controller (H4) on /dev/" in line, line
        path = line.rsplit(" ", 1)[1].strip()
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        try:
            os.write(fd, bytes([1, 0x09, 0x10, 0]))              # Read BD_ADDR
            got = b""
            while len(got) < 13:
                r, _, _ = select.select([fd], [], [], 10)
                assert r, f"no answer on {path}: {got.hex()}"
                got += os.read(fd, 64)
            assert got[:7] == bytes([4, 0x0E, 10, 1, 0x09, 0x10, 0])
        finally:
            os.close(fd)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
