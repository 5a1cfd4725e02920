"""Real wasp-os on the REAL S132 v6.1.1 SoftDevice (not the emulated API).

``Machine(app, softdevice_hex=...)`` programs Nordic's SoftDevice hex (the MBR
at 0, the SoftDevice from 0x1000) with the application and boots from the
MBR; the application's SVCs reach the SoftDevice's own handler, and its link
layer drives the RADIO, TIMER0, RTC0, PPI, CCM/AAR and ECB models, with the
phone on the emulated air (emu.phone.scanner.Scanner, emu.phone.gattphone.GattPhone).

Needs two files that are never committed:

* the wasp-os image, as for tests/firmware/test_wasp.py (``$PINETIME_EMU_WASP_IMAGE``
  or ``~/.cache/pinetime-emu/wasp-os/upstream/micropython.elf``);
* the SoftDevice: ``$PINETIME_EMU_S132_HEX`` or
  ``~/.cache/pinetime-emu/s132/s132_nrf52_6.1.1_softdevice.hex`` (from
  Nordic's S132 v6.1.1 download, or wasp-os's
  ``bootloader/lib/softdevice/s132_nrf52_6.1.1/``).

Skipped with a message when either is absent.  The first boot formats the NOR
flash; its ``main.py`` then stops with ``MemoryError`` (the firmware's own
fragmented heap, see tests/firmware/test_wasp.py: here the 512-byte block fails a
little earlier, while registering the default apps), so the watch is booted a
second time from the formatted flash, as a user would reboot it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from emu import Machine
from emu.phone.scanner import Scanner
from helpers.wasp import s132_hex, wasp_image

CACHE = Path.home() / ".cache" / "pinetime-emu"
NUS_RX = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
NUS_TX = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"


def _files() -> tuple:
    return wasp_image(), s132_hex()


def lit(m, x0, y0, x1, y1, threshold=64) -> int:
    return int((m.board.screen()[y0:y1, x0:x1].max(axis=2) > threshold).sum())


@pytest.fixture(scope="module")
def first_boot(tmp_path_factory):
    """Power on with an erased NOR flash and a scanner listening."""
    app, sd = _files()
    m = Machine(app, softdevice_hex=sd, flash_file=None)
    sc = Scanner(m.air)
    r = m.run(seconds=4.0)
    d = tmp_path_factory.mktemp("wasp-s132")
    nor = d / "nor.bin"
    nor.write_bytes(bytes(m.board.flash.data))
    return {"machine": m, "result": r, "scanner": sc, "nor": nor, "files": (app, sd)}


def _boot(first_boot, tmp_path, seconds: float) -> Machine:
    app, sd = first_boot["files"]
    nor = tmp_path / "nor.bin"
    nor.write_bytes(first_boot["nor"].read_bytes())
    m = Machine(app, softdevice_hex=sd, flash_file=str(nor))
    m.run(seconds=seconds)
    return m


@pytest.fixture(scope="module")
def watch(first_boot, tmp_path_factory):
    """The second boot, from the formatted flash: the clock face."""
    return _boot(first_boot, tmp_path_factory.mktemp("wasp-s132-boot"), 4.5)


def test_loader_boots_from_the_mbr(first_boot):
    m = first_boot["machine"]
    assert m.vector_table == 0
    assert not hasattr(m, "softdevice") and m.phone.sd is None     # no emulated API
    assert m.image.word_at(0x3004) == 0x51B1E5DB                        # SoftDevice info
    assert first_boot["result"].reason == "deadline", first_boot["result"]


def test_softdevice_advertises_for_wasp_os(first_boot):
    """sd_softdevice_enable, sd_ble_enable, the GATT table and advertising all
    succeeded inside the real SoftDevice: its link layer advertises on the
    three channels and answers the scanner's SCAN_REQ."""
    sc = first_boot["scanner"]
    devs = [d for d in sc.devices.values() if d.name == "PineTime"]
    assert devs, {a: (d.pdu_type, d.name) for a, d in sc.devices.items()}
    d = devs[0]
    assert d.pdu_type == "ADV_IND" and d.channels == {37, 38, 39}
    assert d.adverts >= 30 and d.responses >= 1


def test_second_boot_shows_the_clock_face(watch):
    assert watch.soc.peripherals["radio"].air is watch.air
    assert lit(watch, 0, 60, 240, 160) > 2000           # the big digits
    assert lit(watch, 200, 0, 240, 40) > 50             # the battery icon


def test_gattphone_connects_and_the_repl_answers(watch):
    from emu.phone.gattphone import GattPhone
    ph = GattPhone(watch, name="PineTime")
    ph.connect(timeout_ms=5000)
    assert ph.gatt.characteristic(NUS_RX) and ph.gatt.characteristic(NUS_TX).cccd
    got = bytearray()
    tx = ph.gatt.characteristic(NUS_TX).value_handle
    ph.gatt.listeners.append(lambda h, v: got.extend(v) if h == tx else None)
    ph.gatt.wait(watch, ph.gatt.start(ph.gatt.subscribe(NUS_TX), "subscribe"), 3000)
    for chunk in (b"\x03", b"print(6*7)\r"):
        ph.gatt.wait(watch, ph.gatt.start(ph.gatt.write(NUS_RX, chunk, response=False),
                                          "write"), 3000)
    assert watch.run_until(lambda: b"\r\n42" in got, timeout_ms=3000), bytes(got)
    assert lit(watch, 0, 0, 30, 30) > 10                # wasp-os shows the BLE icon


def test_real_softdevice_runs_are_deterministic(first_boot, tmp_path):
    runs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        runs.append(_boot(first_boot, tmp_path / name, 1.0))    # advertising from 0.26 s
    a, b = runs
    assert a.air.log
    assert (a.cpu.cycles, a.clock.now) == (b.cpu.cycles, b.clock.now)
    assert (a.board.screen() == b.board.screen()).all()
    assert [tuple(p) for p in a.air.log] == [tuple(p) for p in b.air.log]


def test_machine_phone_reaches_the_real_softdevice(first_boot, tmp_path):
    """machine.phone (emu/phone/airnus.py: NUS over the air) as with the emulated
    API: connect, the REPL, wasptool's eval, a Gadgetbridge notification."""
    m = _boot(first_boot, tmp_path, 4.5)
    m.phone.connect(timeout_ms=5000)
    assert m.phone.connected and not m.phone.radio_firmware     # its NUS, not InfiniTime's
    assert m.phone.repl("6*7", timeout_ms=5000).strip() == "42"
    assert m.phone.wasp.repl("1+2").strip() == "3"
    m.phone.notify("Ann", "Lunch?")
    assert m.phone.flush(timeout_ms=5000)
    m.run(seconds=1)
    assert m.phone.repl("len(wasp.system.notifications)", timeout_ms=5000).strip() == "1"
    # every RX write went over the air as a Write Request on the connection
    link = m.phone.central.gp.link
    assert link.connected and any(p[1] == ">" and p[7][4:5] == b"\x12" for p in link.packets)


def test_bridge_serves_the_real_softdevices_uart(first_boot, tmp_path):
    """``run --softdevice-hex ... --bridge``: a client's bytes reach the
    REPL over the air and the answer comes back (the bridge polled in
    process, as the run loop does between slices)."""
    import socket
    from frontends.bridge import BridgeServer
    m = _boot(first_boot, tmp_path, 3.0)
    b = BridgeServer(m)
    c = socket.create_connection(("127.0.0.1", b.port))
    c.setblocking(False)
    got = bytearray()
    try:
        for i in range(200):
            m.run(ms=20)
            b.poll()
            if i == 60:
                c.sendall(b"6*7\r")
            try:
                got += c.recv(4096)
            except BlockingIOError:
                pass
            if b"42\r\n" in got:
                break
    finally:
        c.close()
        b.close()
    assert b"42\r\n" in got, bytes(got)
