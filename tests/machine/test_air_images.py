"""Real firmware on one air (emu/world.py), each node its own unmodified
image: Zephyr's Bluetooth samples on nRF52 DKs (their own link layer on
the RADIO, TIMERs, PPI, CCM, AAR and ECB), InfiniTime (NimBLE) and
wasp-os on the real S132, and the phone of emu/phone as a node.

Images are never committed: tests/helpers (zephyr, infinitime, wasp) find
them (Zephyr's built as the shared ZEPHYR-BUILD.md says, InfiniTime's as
INFINITIME-BUILD.md, wasp-os and Nordic's S132 as docs/firmware.md); each
test skips with the path it needs when one is absent.
"""
from __future__ import annotations

import calendar
import re

from emu.world import World
from helpers.infinitime import infinitime_image as infinitime
from helpers.wasp import s132_hex, wasp_image
from helpers.zephyr import image

LL_ENC_REQ, LL_START_ENC_REQ = 0x03, 0x05


def zephyr(name: str) -> str:
    return image("nrf52dk_nrf52832", name)


def wasp_s132() -> tuple:
    return wasp_image(), s132_hex()


def uart(node) -> str:
    return node.machine.board.uart_output().decode(errors="replace")


def test_central_hr_connects_to_peripheral_hr_and_prints_notifications(tmp_path):
    w = World(seed=1)
    c = w.add(zephyr("central_hr"), name="central", position=(0, 0))
    p = w.add(zephyr("peripheral_hr"), name="peripheral", position=(2, 0))
    cap = w.pcap(tmp_path / "hr.pcap")
    w.run(seconds=3)
    out_c, out_p = uart(c), uart(p)
    # central_hr prints what it found, with the RSSI 2 m of air give a 0 dBm sender
    found = re.search(r"\[DEVICE\]: (\S+) \(random\), AD evt type 0, AD data len \d+, "
                      r"RSSI (-\d+)", out_c)
    assert found, out_c
    assert found.group(1).lower() == p.address and int(found.group(2)) == -46
    assert f"Connected: {p.address.upper()}" in out_c
    assert out_c.count("[NOTIFICATION] data") >= 2, out_c
    assert "HRS notifications enabled" in out_p
    # two identities: each chip's own FICR address
    assert c.address != p.address
    cap.close()
    kinds = [(t.sender, t.packet.aa == 0x8E89BED6) for t in w.log]
    assert ("central", True) in kinds and ("central", False) in kinds \
        and ("peripheral", False) in kinds


def test_a_zephyr_central_pairs_and_the_link_is_encrypted():
    """central_multilink_smp (L2 on connect: Just Works pairing, then
    encryption) with peripheral_hids: 30 cm apart (the central connects only
    above -35 dBm)."""
    w = World(seed=2)
    c = w.add(zephyr("central_multilink_smp"), name="central", position=(0, 0))
    p = w.add(zephyr("peripheral_hids"), name="hids", position=(0.3, 0))
    done = re.compile(r"Security changed: \S+ \(random\) level \d")
    assert w.run_until(lambda: done.search(uart(c)) and done.search(uart(p)),
                       timeout_ms=40_000), (uart(c), uart(p))
    assert re.search(r"Device found: \S+ \(random\) \(RSSI -30\)", uart(c))
    assert re.search(r"Security changed: \S+ \(random\) level 2", uart(c)), uart(c)
    assert re.search(r"Security changed: \S+ \(random\) level 2", uart(p)), uart(p)
    # on the air: LL_ENC_REQ, LL_START_ENC_REQ, then payloads carry a 4-byte MIC
    data = [t for t in w.log if t.packet.aa != 0x8E89BED6]
    ctrl = [(i, t.packet.pdu[2]) for i, t in enumerate(data)
            if t.packet.pdu[0] & 3 == 3 and len(t.packet.pdu) > 2]
    ops = [op for _i, op in ctrl]
    assert LL_ENC_REQ in ops and LL_START_ENC_REQ in ops, ops
    start = next(i for i, op in ctrl if op == LL_START_ENC_REQ)
    after = [t.packet.pdu for t in data[start + 1:] if t.packet.pdu[1] > 0]
    assert after and all(pdu[1] >= 5 for pdu in after)     # payload + MIC


def test_an_observer_sees_infinitime_and_wasp_os_at_rssis_that_follow_their_places():
    app, sd = wasp_s132()
    seen = []
    for it_at, wasp_at in (((1, 0), (0, 4)), ((0, 8), (2, 0))):
        w = World(seed=1)
        o = w.add(zephyr("observer"), name="observer", position=(0, 0))
        it = w.add(infinitime(), name="infinitime", position=it_at, flash_file=None)
        wa = w.add(app, name="wasp", position=wasp_at, flash_file=None, softdevice_hex=sd)
        w.run(seconds=2.5)
        out = uart(o)
        rssi = {}
        for addr, r in re.findall(r"Device found: (\S+) \(random\) \(RSSI (-\d+)\)", out):
            rssi[addr.lower()] = int(r)
        assert it.address in rssi and wa.address in rssi, out
        seen.append((rssi[it.address], rssi[wa.address]))
    # 0 dBm senders: -40 dBm at 1 m, -52 at 4 m, -58 at 8 m, -46 at 2 m
    assert seen == [(-40, -52), (-58, -46)]


def test_two_watches_and_one_phone_each_gets_its_own_data():
    from emu.phone.gattphone import CTS_CURRENT_TIME, GattPhone
    w = World(seed=4)
    left = w.add(infinitime(), name="left", position=(-1, 0), flash_file=None)
    right = w.add(infinitime(), name="right", position=(1, 0), flash_file=None)
    phone = w.add_phone("phone", position=(0, 0.5))
    w.run(seconds=1)
    times = {"left": (2027, 5, 9, 13, 37), "right": (2030, 1, 2, 3, 4)}
    motors = {n: len(w.node(n).machine.board.motor.timeline) for n in times}

    def buzzed(node):              # ticks the motor ran since then
        tl = node.machine.board.motor.timeline[motors[node.name]:]
        return sum(t1 - t0 for (t0, on), (t1, _off) in zip(tl, tl[1:]) if on)
    for node in (left, right):
        gp = GattPhone(phone, address=node.address)
        gp.connect()
        assert gp.link.peer == node.address
        y, mo, d, h, mi = times[node.name]
        gp.set_time(calendar.timegm((y, mo, d, h, mi, 0, 0, 0, 0)))
        if node is left:
            gp.notify("Hello", "left only")
            w.run(seconds=1)
        v = gp._do(gp.gatt.read(CTS_CURRENT_TIME), "read time")
        assert (int.from_bytes(v[:2], "little"), v[2], v[3], v[4], v[5]) == times[node.name]
        gp.disconnect()
    # the notification ran the left watch's motor, not the right one's
    assert buzzed(left) > 10 * 512_000 and buzzed(right) == 0


def test_window_widening_holds_a_link_within_the_clocks_accuracy_and_not_beyond():
    """Crystal offsets: with the sensor's clock 300 ppm fast, Zephyr's link
    layer widens its receive windows and the link holds (a notification a
    second); 1000 ppm off, past what the two ends' sleep clock accuracies
    promise, its windows miss the central and the link drops."""
    counts = {}
    for ppm in (300.0, 1000.0):
        w = World(seed=1)
        c = w.add(zephyr("central_hr"), name="central", position=(0, 0))
        w.add(zephyr("peripheral_hr"), name="sensor", position=(2, 0), ppm=ppm)
        w.run(seconds=12)
        out = uart(c)
        counts[ppm] = (out.count("[NOTIFICATION]"), out.count("Disconnected"))
    assert counts[300.0][0] >= 10 and counts[300.0][1] == 0, counts
    assert counts[1000.0][1] >= 1 and counts[1000.0][0] < 5, counts
