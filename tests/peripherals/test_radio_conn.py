"""A BLE connection on the emulated air between our own firmware as the
peripheral's link layer (firmware/tests/periph_radio_conn.c: RADIO, TIMER0
and PPI driven as a controller drives them) and the host-side central
(emu/phone/link.py) with its GATT client (emu/phone/gatt.py).  Companions break the
RADIO model or the central and see the firmware's checks fail."""
import re
import struct

import pytest

from conftest import assert_firmware_passed
from emu import Machine
from emu.air import US
from emu.phone.scanner import ADV_AA, fmt_addr
from emu.phone.link import LLID_CONT, LLID_CTRL, LLID_START, UNIT, LinkCentral, csa1_channels
from emu.phone.gatt import GattClient

WATCH = "c7:05:04:03:02:01"          # the firmware's AdvA
PING = b"ping from the phone, in two fragments"   # 4 + 37 bytes: 27 + 14 on the LL
UNUSED = (1, 17, 22, 34, 36)         # left out of the channel map: hop 9 reaches 36 in event 3
PARAMS = dict(interval=16, win_size=3, win_offset=2, window_delay=1000 * US, hop=9,
              chmap=((1 << 37) - 1) & ~sum(1 << c for c in UNUSED),
              access_address=0x71764129, crc_init=0x3F5A11, timeout=100)


def _run(fw, params=PARAMS, central=None, **kw):
    m = Machine(fw("periph_radio_conn"), board="nrf52832", **kw)
    link = LinkCentral(m.air, **params)
    gatt = GattClient(link)
    if central is not None:
        central(link)
    # the phone's L2CAP PDU is queued as the CONNECT_IND goes out
    link.on_state.append(lambda s: s == "connected" and link.send_l2cap(0x40, PING))
    link.connect(target=WATCH)
    r = m.run(ms=3000)
    return m, r, link, gatt


def _heard(text):
    """[(event, channel)] the firmware reports hearing the central on."""
    return [(int(n), int(c)) for n, c in
            re.findall(r"^PASS event (\d+): heard on channel (\d+)$", text, re.M)]


def _data_packets(m, link):
    return [p for p in m.air.log if p.aa == link.aa]


def _l2cap(entries, direction):
    """The L2CAP PDUs (header included) reassembled from link.packets one way."""
    out, cur, need = [], None, 0
    for _t, d, _ch, llid, _sn, _nesn, _md, payload in entries:
        if d != direction or llid == LLID_CTRL or not payload:
            continue
        if llid == LLID_START:
            cur, need = bytearray(payload), 4 + int.from_bytes(payload[:2], "little")
        elif cur is not None:
            cur += payload
        if cur is not None and len(cur) >= need:
            out.append(bytes(cur))
            cur = None
    return out


@pytest.mark.parametrize("pure", [False, True])
def test_peripheral_link_layer_follows_the_central(fw, pure):
    m, r, link, gatt = _run(fw, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=60)
    text = m.console_text()

    # the CONNECT_IND as the firmware read it
    p = PARAMS
    assert f"InitA {fmt_addr(link.address)} random" in text
    assert (f"LLData AA 0x{p['access_address']:08x} CRCInit 0x{p['crc_init']:06x} "
            f"WinSize {p['win_size']} WinOffset {p['win_offset']} Interval {p['interval']} "
            f"Latency 0 Timeout {p['timeout']} ChM 0x{p['chmap']:010x} Hop {p['hop']} SCA 0"
            ) in text

    # the firmware's own channel selection #1 is the central's, remapping included
    heard = _heard(text)
    assert len(heard) >= 12
    assert [n for n, _ in heard] == list(range(len(heard)))
    want = csa1_channels(p["hop"], p["chmap"], len(heard))
    assert [c for _, c in heard] == want
    assert any(c in UNUSED for c in csa1_channels(p["hop"], (1 << 37) - 1, len(heard)))

    # on the air: ADV_IND, CONNECT_IND T_IFS after it, then data channel packets
    adv, ci = m.air.log[0], m.air.log[1]
    assert (adv.sender, adv.channel, adv.aa, adv.pdu[0] & 0xF) == ("watch", 37, ADV_AA, 0)
    assert (ci.sender, ci.channel, ci.pdu[0] & 0xF) == ("central", 37, 5)
    assert ci.start - adv.end == 150 * US
    data = _data_packets(m, link)
    assert len(data) == len(m.air.log) - 2
    anchor0 = data[0].start
    window = ci.end + UNIT + p["win_offset"] * UNIT
    assert window <= anchor0 <= window + p["win_size"] * UNIT
    period = p["interval"] * UNIT
    events = sorted({(q.start - anchor0) // period for q in data})
    assert events == list(range(len(events))) and len(events) >= 13
    every = csa1_channels(p["hop"], p["chmap"], len(events))
    for q in data:
        assert q.channel == every[(q.start - anchor0) // period], q
    # every watch packet answers T_IFS after the central's, and the central's
    # further packets in an event come T_IFS after the watch's
    for a, b in zip(data, data[1:]):
        if b.sender == "watch":
            assert a.sender == "central" and b.start - a.end == 150 * US
        elif (b.start - anchor0) // period == (a.start - anchor0) // period:
            assert a.sender == "watch" and b.start - a.end == 150 * US

    # what went over the link
    assert [(h, v, k) for _t, h, v, k in gatt.notifications] == [(0x10, b"hello", "notify")]
    assert link.remote_version == (9, 0xFFFF, 0x1234)   # what periph_radio_conn.c sends
    assert "central LL_VERSION_IND: VersNr 11 CompId 0xffff SubVersNr 0x0000" in text
    assert f"L2CAP CID 0x0040, {len(PING)} bytes in 2 fragments" in text
    assert PING.decode() in text
    sent = [(llid, pl) for _t, d, _c, llid, _s, _n, _m, pl in link.packets if d == ">" and pl]
    frags = [(llid, pl) for llid, pl in sent if llid != LLID_CTRL]
    assert [llid for llid, _ in frags] == [LLID_START, LLID_CONT]
    assert [len(pl) for _, pl in frags] == [27, 4 + len(PING) - 27]
    assert _l2cap(link.packets, "<") == [bytes.fromhex("080004001b1000") + b"hello",
                                         struct.pack("<HH", len(PING), 0x40) + PING]
    ctrl = [(d, pl[0]) for _t, d, _c, llid, _s, _n, _m, pl in link.packets if llid == LLID_CTRL]
    assert ctrl == [("<", 0x0C), (">", 0x0C), ("<", 0x0E), (">", 0x09), ("<", 0x02)]

    # the watch ended the link; the central's last packet acknowledged it
    assert link.state == "closed"
    assert link.reason == "terminated by the watch (reason 0x13)"
    last_watch = [e for e in link.packets if e[1] == "<"][-1]
    assert last_watch[3] == LLID_CTRL and last_watch[7] == b"\x02\x13"
    final = link.packets[-1]
    assert final[1] == ">" and final[5] != last_watch[4]      # NESN moved past its SN
    assert [q.start for q in data if q.sender == "central"][-1] == final[0]   # then silence


def test_peripheral_with_the_central_defaults(fw):
    """All 37 channels, WinOffset 0, interval 30 ms: the same exchange."""
    m, r, link, gatt = _run(fw, params={})
    assert_firmware_passed(m, r, min_passes=60)
    heard = _heard(m.console_text())
    assert [c for _, c in heard] == csa1_channels(link.hop, link.chmap, len(heard))
    assert [v for _t, _h, v, _k in gatt.notifications] == [b"hello"]
    assert link.reason == "terminated by the watch (reason 0x13)"


def _s132_termination(fw, central=None):
    m = Machine(fw("periph_radio_conn_s132term"), board="nrf52832")
    link = LinkCentral(m.air, **PARAMS)
    GattClient(link)
    if central is not None:
        central(link)
    link.on_state.append(lambda s: s == "connected" and link.send_l2cap(0x40, PING))
    link.connect(target=WATCH)
    return m, m.run(ms=3000), link


def _event_of(link, tick):
    return (tick - link.packets[0][0] + UNIT) // (PARAMS["interval"] * UNIT)


def test_termination_acknowledged_in_the_next_event(fw):
    """Issue 48: Nordic's S132 sends LL_TERMINATE_IND with MD set and stops
    listening for the rest of that event (wasp-os's bootloader then waits
    for the disconnection before its last flash write).  The central's
    packet T_IFS later goes unheard; it acknowledges again at the next
    anchor, and only then leaves (as Zephyr's controller does: one more
    event after the one that brought LL_TERMINATE_IND)."""
    m, r, link = _s132_termination(fw)
    assert_firmware_passed(m, r, min_passes=60)
    assert link.state == "closed" and link.reason == "terminated by the watch (reason 0x13)"
    term = [e for e in link.packets if e[1] == "<" and e[3] == LLID_CTRL and e[7] == b"\x02\x13"]
    assert term and term[0][6] == 1                          # MD set, as the S132 sends it
    after = [e for e in link.packets if e[0] > term[0][0]]
    assert [e[1] for e in after] == [">", ">"]               # nothing heard from the watch
    assert _event_of(link, after[0][0]) == _event_of(link, term[0][0])      # T_IFS later
    assert _event_of(link, after[1][0]) == _event_of(link, term[0][0]) + 1  # next anchor
    assert all(e[5] != term[0][4] for e in after)            # both acknowledge it


def test_central_leaving_at_once_after_termination_is_detected(fw, monkeypatch):
    """Companion: a central that leaves right after its acknowledgement in
    the same event (the model before issue 48) leaves the S132-like
    watch unacknowledged, as the real S132 was: its link layer goes on
    until its events run out."""
    from helpers.radio import leave_right_after_terminate
    leave_right_after_terminate(monkeypatch)
    m, r, link = _s132_termination(fw)
    assert link.state == "closed"
    assert "FAIL LL_TERMINATE_IND acknowledged" in m.console_text()
    assert r.exit_code != 0


def test_connection_runs_are_deterministic(fw):
    a, ra, _, _ = _run(fw)
    b, rb, _, _ = _run(fw)
    assert [tuple(p) for p in a.air.log] == [tuple(p) for p in b.air.log]
    assert (a.cpu.cycles, a.clock.now, a.console_text()) == (b.cpu.cycles, b.clock.now,
                                                             b.console_text())
    assert ra.exit_code == rb.exit_code == 0


def test_lost_packets_are_sent_again_and_not_delivered_twice(fw):
    """The central misses the watch's first data packet (LL_VERSION_IND, and
    the ack of the phone's first fragment) and its first notification, as
    if their CRC failed: the watch sends both again with the same SN, and
    drops the central's repeated fragment."""
    dropped = []

    def lossy(link):
        misses = [lambda p: True, lambda p: b"hello" in p.pdu]
        orig = link._data

        def data(p):
            for i, miss in enumerate(misses):
                if miss(p):
                    del misses[i]
                    dropped.append(p)
                    link._in_event = False     # as after a bad CRC: the event ends
                    return
            orig(p)
        link._data = data

    m, r, link, gatt = _run(fw, central=lossy)
    assert_firmware_passed(m, r, min_passes=60)
    assert len(dropped) == 2
    watch = [q for q in _data_packets(m, link) if q.sender == "watch"]
    for lost in dropped:
        again = [q for q in watch if q.pdu[2:] == lost.pdu[2:]]
        assert len(again) == 2, lost          # sent again ...
        assert len({(q.pdu[0] >> 3) & 1 for q in again}) == 1    # ... with the same SN
    ping_starts = [e for e in link.packets if e[1] == ">" and e[3] == LLID_START]
    assert len(ping_starts) == 2              # the central repeated its unacknowledged fragment
    text = m.console_text()
    assert text.count(f"L2CAP CID 0x0040, {len(PING)} bytes in 2 fragments") == 1
    assert [v for _t, _h, v, _k in gatt.notifications] == [b"hello"]
    assert link.reason == "terminated by the watch (reason 0x13)"


def test_central_hopping_wrongly_is_detected(fw, monkeypatch):
    """Companion: a central that leaves out the remapping of channel
    selection #1 hops to an unused channel where the firmware does not
    listen: the first such event is not heard."""
    import emu.phone.link as blelink
    monkeypatch.setattr(blelink, "csa1_channels", lambda hop, chmap, count, start=0: [
        ((start + i + 1) * hop) % 37 for i in range(count)])
    m, r, link, _ = _run(fw)
    text = m.console_text()
    right = csa1_channels(PARAMS["hop"], PARAMS["chmap"], 40)
    first = next(n for n in range(40) if (n + 1) * PARAMS["hop"] % 37 in UNUSED)
    assert first == 3
    for n in range(first):
        assert f"PASS event {n}: heard on channel {right[n]}" in text
    assert f"FAIL event {first}: heard on channel {right[first]}\n" in text
    assert r.exit_code != 0


def test_radio_without_tifs_is_detected(fw, monkeypatch):
    """Companion: a RADIO that answers as soon as it has ramped up (no TIFS
    after the DISABLED_TXEN shortcut) fails the firmware's T_IFS check."""
    from emu.peripherals import radio
    orig = radio.Radio._enable

    def no_tifs(self, tx):
        self._short_enable = False
        orig(self, tx)
    monkeypatch.setattr(radio.Radio, "_enable", no_tifs)
    m, r, _, _ = _run(fw)
    text = m.console_text()
    assert "PASS event 0: heard on channel" in text
    got = re.search(r"^FAIL event 0: answered T_IFS after \(us\) (\d+)$", text, re.M)
    assert got and int(got.group(1)) < 150
    assert r.exit_code != 0


def test_radio_crc_ignoring_crcinit_is_detected(fw, monkeypatch):
    """Companion: a RADIO whose CRC always starts from the advertising preset
    (0x555555) instead of CRCINIT: the CONNECT_IND still checks, the
    connection's packets do not."""
    from emu.air import crc24
    from emu.peripherals import radio
    monkeypatch.setattr(radio, "crc24", lambda data, init, poly=0x65B, nbits=24:
                        crc24(data, 0x555555, poly, nbits))
    m, r, link, gatt = _run(fw)
    text = m.console_text()
    assert "PASS CONNECT_IND CRC ok" in text
    assert "FAIL event 0: CRC ok, packets 1" in text
    assert "FAIL connection established" in text
    assert not gatt.notifications
    assert r.exit_code != 0


def test_snapshot_mid_connection_leaves_the_phone_out(fw, tmp_path):
    """The phone's central is a host device: a snapshot taken mid-connection
    saves the watch, not the phone (no error about its clock event or its
    objects); the restored watch hears nobody at its next anchors."""
    m = Machine(fw("periph_radio_conn"), board="nrf52832")
    link = LinkCentral(m.air, **PARAMS)
    GattClient(link)
    link.on_state.append(lambda s: s == "connected" and link.send_l2cap(0x40, PING))
    link.connect(target=WATCH)
    assert m.run_until(lambda: link.connected and len(link.packets) > 6, timeout_ms=1000)
    m.save_snapshot(str(tmp_path / "mid.snap"))
    assert link.connected                              # the saving machine goes on
    m2 = Machine.from_snapshot(str(tmp_path / "mid.snap"))
    assert m2.clock.now == m.clock.now and m2.cpu.cycles == m.cpu.cycles
    assert not any(n.startswith("host.") for n in m2.clock.events)
    m2.run(ms=3000)
    assert "FAIL" in m2.console_text()                 # the watch lost its central
    m.run(ms=3000)
    assert link.state == "closed"                      # while the original finishes


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_chen_bus_ops_change_nothing_on_a_connection(fw, monkeypatch, pure):
    """The PPI's CHENSET/CHENCLR as bus ops (emu/peripherals/ppi.py) against
    the model's writes: the same packets at the same ticks and the same
    cycles over a whole connection (the firmware switches its RXEN and
    timeout channels every event)."""
    from emu.peripherals.ppi import Ppi
    out = []
    for lazy in (True, False):
        with monkeypatch.context() as mp:
            mp.setattr(Ppi, "lazy_chen", lazy)
            m, r, link, _gatt = _run(fw, pure_python=pure)
        assert_firmware_passed(m, r, min_passes=60)
        st = m.soc.bus.access_stats().get((0x4001F000, 0x504), (0, 0, 0, 0))
        assert (st[2] > 0) == lazy and (st[3] > 0) != lazy
        out.append((m.cpu.cycles, m.clock.now, m.console_text(),
                    [(p.start, p.freq, p.pdu) for p in m.air.log]))
    assert out[0] == out[1]


def _conn_fingerprint(fw, monkeypatch, sleep_fast, pure=False, patch=None):
    from emu.cpu import cortexm
    with monkeypatch.context() as mp:
        mp.setattr(cortexm.CortexM, "fast_sleep", sleep_fast)
        mp.setattr(cortexm.CortexM, "native_loop", False)   # the hook is the Python loop's
        if patch is not None:
            mp.setattr(cortexm.CortexM, *patch)
        m, r, link, _gatt = _run(fw, pure_python=pure)
    return m, r, (m.cpu.cycles, m.clock.now, m.console_text(),
                  [(p.start, p.freq, p.pdu) for p in m.air.log])


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_sleeps_in_the_hook_change_nothing_on_a_connection(fw, monkeypatch, pure):
    """WFE sleeps carried out in the invalid-instruction hook (run loop's
    sleep, wake-up and entry without ending the slice; the firmware sleeps
    between every radio event with SEVONPEND) against slices that end at
    each sleep: the same packets at the same ticks, the same cycles."""
    m, r, fast = _conn_fingerprint(fw, monkeypatch, True, pure)
    _m, _r, slow = _conn_fingerprint(fw, monkeypatch, False, pure)
    assert_firmware_passed(m, r, min_passes=60)
    assert m.cpu.sleeps_in_hook > 20 and _m.cpu.sleeps_in_hook == 0
    assert fast == slow


def test_sleep_in_the_hook_returning_to_the_wfe_is_detected(fw, monkeypatch):
    """Companion: a sleep in the hook that resumes at the WFE itself (the
    interrupt's frame returning there, or the wake-up going on there) sleeps
    again where the firmware went on: another machine, or a failed run."""
    from emu.cpu import cortexm
    real = cortexm.CortexM._sleep_in_hook

    def at_the_wfe(self, uc, resume):
        return real(self, uc, resume - 2)
    _m, _r, slow = _conn_fingerprint(fw, monkeypatch, False)
    m, r, broken = _conn_fingerprint(fw, monkeypatch, True, patch=("_sleep_in_hook", at_the_wfe))
    assert m.cpu.sleeps_in_hook > 0
    assert broken != slow


def test_the_central_keeps_the_latest_packets_only(fw, monkeypatch):
    """A day's connection must not hold every packet in memory (issue 45's
    soak): ``packets`` keeps the last PACKET_LOG, ``packet_count`` counts
    them all; the kept ones are the same entries, the latest."""
    _m, _r, full, _g = _run(fw)
    assert len(full.packets) == full.packet_count > 12
    monkeypatch.setattr(LinkCentral, "PACKET_LOG", 8)
    _m, _r, link, _g = _run(fw)
    assert link.packet_count == full.packet_count and len(link.packets) == 8
    assert list(link.packets) == list(full.packets)[-8:]
