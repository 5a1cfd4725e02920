"""The emulated phone connects to real InfiniTime over the air: NimBLE's own
controller drives the RADIO, the host-side central (emu/phone/link.py) sends
CONNECT_IND and runs the connection, the GATT client (emu/phone/gatt.py) talks to
InfiniTime's services the way Gadgetbridge does (emu/phone/gattphone.py): the
Current Time Service, Alert Notification, battery, steps, music and the
call buttons; and the same through ``--bridge`` from another process.

Skipped without the InfiniTime image (see tests/firmware/test_infinitime.py).
"""
import calendar
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import free_port, served_run

from emu import Machine
from emu.phone.gattphone import CTS_CURRENT_TIME, STEP_COUNT
from helpers.infinitime import colour, face_drawn, infinitime_image, lit
from helpers.paths import EXAMPLES

# 2027-05-09 13:37:00 UTC, a Sunday
WHEN = calendar.timegm((2027, 5, 9, 13, 37, 0, 0, 0, 0))


def _connected(**kw):
    m = Machine(infinitime_image(), flash_file=None, **kw)
    m.phone.connect()
    assert m.phone.radio_firmware and m.phone.connected
    assert m.phone.gatt.link.peer_name == "InfiniTime"
    return m


def test_connects_discovers_and_sets_the_time():
    m = _connected()
    gp = m.phone.gatt
    uuids = {s.uuid[4:8] for s in gp.gatt.services}
    assert {"1805", "1811", "180f", "180a"} <= uuids, uuids      # CTS, ANS, battery, device info
    assert gp.firmware_version() == "1.16.1"
    m.run(seconds=0.5)
    assert face_drawn(m)
    before = m.board.screen()[85:195].copy()
    m.phone.set_time(WHEN)
    # the watch's clock, read back through the same characteristic
    v = gp._do(gp.gatt.read(CTS_CURRENT_TIME), "read time")
    year, mon, day, hh, mm = int.from_bytes(v[:2], "little"), v[2], v[3], v[4], v[5]
    assert (year, mon, day, hh, mm) == (2027, 5, 9, 13, 37), v.hex()
    m.run(seconds=1)
    after = m.board.screen()[85:195]
    assert face_drawn(m)
    changed = (np.abs(after.astype(int) - before.astype(int)).max(axis=2) > 64)
    assert changed[:70].sum() > 500 and changed[85:110].sum() > 200, \
        "the face's time and date did not change"


def test_notification_appears_and_the_motor_runs():
    m = _connected()
    m.run(seconds=0.5)
    motor = m.board.motor
    before = len(motor.timeline)
    at = m.clock.now
    m.phone.notify("Hello", "from the phone")
    m.run(seconds=1)
    title = colour(m, 0, 15, 150, 40)
    assert title[0] > 1.5 * title[2] and lit(m, 0, 15, 150, 40, 100) > 150, title   # orange
    assert lit(m, 0, 60, 240, 90, 100) > 300, "no body text"
    ons = [t for t, on in motor.timeline[before:] if on and t >= at]
    assert ons, "the motor did not run"


def test_battery_steps_and_the_call_buttons():
    m = _connected()
    assert m.phone.steps() == 0
    m.board.accel.walk(1234)
    m.run(seconds=1)
    assert m.phone.steps() == 1234
    m.board.accel.walk(66)
    m.run(seconds=1)
    assert m.phone.gatt._do(m.phone.gatt.gatt.read(STEP_COUNT), "steps")[:4] == \
        (1300).to_bytes(4, "little")
    full = m.phone.battery()
    low = Machine(infinitime_image(), flash_file=None)
    low.board.battery.voltage = 3.55
    low.phone.connect()
    assert 0 <= low.phone.battery() < full <= 100
    # a call: InfiniTime shows its buttons and notifies the phone of the answer
    m.phone.incoming_call("Bob", "555")
    m.run(seconds=1)
    assert lit(m, 0, 15, 150, 40, 100) > 50                  # the caller's name
    green = colour(m, 5, 170, 70, 230)
    assert green[1] > 2 * green[0], green                    # the accept button
    for _ in range(3):          # the first touch of a popped-up notification only wakes it
        m.board.touch.tap(38, 200)
        m.run(ms=500)
        if m.phone.gatt.call_responses:
            break
    assert m.phone.gatt.call_responses == ["answer"]


def test_the_link_is_deterministic():
    def run():
        m = _connected()
        m.phone.notify("a", "b")
        m.phone.battery()
        m.run(seconds=0.5)
        link = m.phone.gatt.link
        return [tuple(p) for p in m.air.log], list(link.packets), m.cpu.cycles, m.clock.now
    a, b = run(), run()
    assert a[0] == b[0] and a[1] == b[1] and a[2:] == b[2:]
    kinds = {p[3] for p in a[1]}
    assert kinds == {1, 2, 3}             # empty/continuation, L2CAP starts, LL control


def test_disconnect_and_reconnect():
    m = _connected()
    link = m.phone.gatt.link
    m.phone.disconnect()                   # the window's K key: machine.phone goes over the air
    assert not m.phone.connected
    assert link.state == "closed" and "phone" in link.reason
    m.run(seconds=1.5)                     # InfiniTime advertises again
    m.phone.gatt.connect()
    assert m.phone.battery() > 0


def test_phone_cli_against_the_bridge(tmp_path):
    image = infinitime_image()
    port = free_port()
    with served_run(image, "--bridge", port):
        def phone(*args):
            return subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port",
                                   str(port), *args], capture_output=True, text=True,
                                  timeout=120)
        deadline = time.monotonic() + 60
        while True:
            r = phone("--battery")
            if r.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert r.returncode == 0 and r.stdout.strip().endswith("%"), r.stdout + r.stderr
        assert 0 < int(r.stdout.strip()[:-1]) <= 100
        r = phone("--set-time", str(WHEN))
        assert r.returncode == 0, r.stderr
        r = phone("--read", "2a2b")
        assert r.returncode == 0 and r.stdout.strip().startswith("eb070509" + "0d25"), r.stdout
        r = phone("--notify", "Hi", "there")
        assert r.returncode == 0, r.stderr
        r = phone("--steps")
        assert r.returncode == 0 and r.stdout.strip() == "0", r.stdout + r.stderr
        r = phone("--firmware-version")
        assert r.returncode == 0 and r.stdout.strip() == "1.16.1"
        r = phone("--eval", "1+1")             # wasp-os's REPL verbs: one clear line
        assert r.returncode == 2 and "no REPL" in r.stderr and "Traceback" not in r.stderr
        r = phone("--write", "2a46", "zz")
        assert r.returncode == 2 and "hex" in r.stderr and "Traceback" not in r.stderr
        r = phone("--read", "1234")            # no such characteristic: the watch's answer
        assert r.returncode == 1 and "no characteristic" in r.stderr


def test_phone_scenario_passes(tmp_path):
    """examples/scenarios/infinitime_phone.yaml through ``pinetime-emu test``."""
    import shutil
    image = infinitime_image()
    scen = EXAMPLES / "scenarios"
    shutil.copy(scen / "infinitime_phone.yaml", tmp_path / "phone.yaml")
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "test", "phone.yaml", "--firmware",
                        image], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0 and "PASSED" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "out" / "infinitime_phone_call.png").exists()


def test_uart_steps_say_there_is_no_uart():
    from emu.phone import PhoneError
    m = _connected()
    with pytest.raises(PhoneError, match="no UART"):
        m.phone.repl("1+1")
    with pytest.raises(PhoneError, match="end-of-call"):
        m.phone.end_call()


def _pair():
    m = _connected()
    gp = m.phone.gatt
    ltk = gp.pair()
    assert gp.link.encrypted and len(ltk) == 16
    return m, gp, ltk


def test_pairing_encrypts_the_link_and_the_bond_is_kept():
    m, gp, ltk = _pair()
    n = len(m.air.log)
    assert m.phone.battery() > 0                       # GATT over the encrypted link
    m.phone.notify("Secret", "over CCM")
    m.run(seconds=1)
    assert lit(m, 0, 15, 150, 40, 100) > 150            # shown: NimBLE decrypted it
    ours = [p for p in m.air.log[n:] if p.aa == gp.link.aa and len(p.pdu) > 2]
    plain = b"Secret\0over CCM"
    assert ours and all(plain not in p.pdu for p in ours)   # only ciphertext on the air
    assert any(plain in bytes(q[7]) for q in gp.link.packets)   # and it was sent
    # the watch bonded: after a reconnection the same key encrypts without pairing
    gp.disconnect()
    m.run(seconds=1.5)
    gp.connect()
    assert not gp.link.encrypted
    gp.encrypt(ltk)
    assert gp.link.encrypted and m.phone.steps() == 0


def test_pairing_with_a_wrong_nonce_direction_fails(monkeypatch):
    """Companion: a central whose CCM nonce has the direction bit of the
    other side: NimBLE cannot check our first encrypted packet's MIC and the
    link ends; the pairing reports it."""
    from emu.phone import link as blelink
    from emu.phone.gatt import GattError
    orig = blelink._nonce
    monkeypatch.setattr(blelink, "_nonce", lambda c, master, iv: orig(c, 1 - master, iv))
    m = _connected()
    with pytest.raises(GattError, match="pairing"):
        m.phone.gatt.pair(timeout_ms=5000)
    assert not m.phone.gatt.link.encrypted


def test_music_app_shows_the_track_and_its_buttons_reach_the_phone():
    m = _connected()
    m.phone.music_info("The Band", "A Song", "Album")
    m.board.touch.swipe("up")                        # the launcher
    m.run(ms=800)
    m.board.touch.tap(200, 175)                      # the music app
    m.run(seconds=1)
    assert m.phone.gatt.music_events == ["open"]     # InfiniTime tells the phone it opened
    assert lit(m, 10, 95, 200, 150) > 300            # track and artist drawn
    before = m.board.screen()[95:150].copy()
    m.phone.music_info("Other Band", "Another Song")  # and redrawn when they change
    m.run(seconds=1)
    assert (np.abs(m.board.screen()[95:150].astype(int) - before).max(axis=2) > 64).sum() > 200
    for _ in range(3):                               # play (a first touch may only wake it)
        m.board.touch.tap(120, 200)
        m.run(ms=500)
        if len(m.phone.gatt.music_events) > 1:
            break
    assert m.phone.gatt.music_events[1:] == ["play"]


def test_snapshot_while_connected_then_connect_again(tmp_path):
    m = _connected()
    m.save_snapshot(str(tmp_path / "conn.snap"))
    m2 = Machine.from_snapshot(str(tmp_path / "conn.snap"))
    m2.phone.connect()               # NimBLE times the old link out, advertises again
    assert m2.phone.battery() == m.phone.battery()
