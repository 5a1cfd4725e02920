"""Several chips on one air (emu/world.py, emu/airspace.py), with our own
firmware on the bare RADIO: air_beacon.c sends BLE advertisements,
air_listener.c prints what it hears with CRCSTATUS and RSSISAMPLE,
air_ponger.c answers every packet TIFS after its end.

* reception at the RSSI that the distance gives (log-distance path loss);
* a collision when two senders overlap at equal power, capture when one
  is 10 dB stronger; a packet below the sensitivity is not heard;
* random loss at a set rate, the same for the same seed;
* an answer from another chip arrives exactly TIFS (150 us) after the
  request's last bit: the timeline lets no chip run past a moment where
  another could reach it (companions: a horizon that claims too much, a
  sender that does not stop at its START);
* the same results whatever the order the nodes run in and whatever a cap
  on the rounds; crystal offsets stretch the time between nodes;
* the pcap of a run decodes in Debian's tshark.
"""
from __future__ import annotations

import math
import re
import shutil
import struct
import subprocess

import pytest

from emu.airspace import AirModel, AirPort
from emu.clock import TICKS_PER_US
from emu.peripherals.radio import Radio
from emu.world import World

RX = re.compile(r"RX 0x0000([0-9a-f]{4}) n=(\d+) crc=([01]) rssi=(\d+)")


def uicr(node, *words):
    node.machine.cpu.write_mem(0x10001080, b"".join(struct.pack("<I", w) for w in words))


def heard(node):
    """[(AdvA's first two bytes, counter, crc ok, RSSISAMPLE)] the listener printed."""
    return [(a, int(n), c == "1", int(r)) for a, n, c, r in RX.findall(node.console_text())]


def beacon_and_listener(fw, distance=3.0, ms=120, seed=1, air=None, beacon=(), **run):
    w = World(seed=seed, air=air)
    b = w.add(fw("air_beacon"), name="beacon", board="nrf52832", position=(0, 0))
    if beacon:
        uicr(b, *beacon)
    ls = w.add(fw("air_listener"), name="listener", board="nrf52832", position=(distance, 0))
    w.run(ms=ms, **run)
    return w, b, ls


def expected_rssi(txpower_dbm, d, n=2.0):
    return round(-(txpower_dbm - (40.05 + 10 * n * math.log10(max(d, 0.1)))))


@pytest.mark.parametrize("distance", [0.05, 0.5, 3.0, 10.0, 40.0])
def test_reception_at_the_rssi_the_distance_gives(fw, distance):
    w, b, ls = beacon_and_listener(fw, distance)
    got = heard(ls)
    assert len(got) == 12 and [n for _a, n, _c, _r in got] == list(range(12)), got
    assert all(ok for _a, _n, ok, _r in got)
    assert {r for *_x, r in got} == {expected_rssi(0, distance)}
    # the AdvA is the beacon's own FICR.DEVICEADDR, from its name
    adva = b.machine.soc.device_address
    assert got[0][0] == f"{adva[0]:02x}{adva[1]:02x}"
    assert b.address == ":".join(f"{x:02x}" for x in reversed(adva))
    assert "SENT" not in b.console_text()            # 20 packets take 200 ms


def test_txpower_register_and_sensitivity(fw):
    """TXPOWER -40 dBm (0xD8): 5 m away the packets arrive at -94 dBm and are
    heard; 20 m away at -106 dBm, below the -96 dBm sensitivity, and the
    listener hears nothing (no ADDRESS, no END)."""
    _w, _b, near = beacon_and_listener(fw, 5.0, beacon=(10000, 20, 0xD8))
    got = heard(near)
    assert len(got) == 12 and {r for *_x, r in got} == {expected_rssi(-40, 5.0)} == {94}
    _w, _b, far = beacon_and_listener(fw, 20.0, beacon=(10000, 20, 0xD8))
    assert heard(far) == [] and "RX" not in far.console_text()
    # an ideal air knows no distance: -60 dBm everywhere
    _w, _b, ideal = beacon_and_listener(fw, 20.0, beacon=(10000, 20, 0xD8),
                                        air=AirModel.ideal())
    assert {r for *_x, r in heard(ideal)} == {60}


def _two_senders(fw, other_at, start2, air=None, seed=1):
    w = World(seed=seed, air=air)
    a = w.add(fw("air_beacon"), name="a", board="nrf52832", position=(0, 0))
    c = w.add(fw("air_beacon"), name="c", board="nrf52832", position=other_at)
    uicr(c, 10000, 20, 0, start2)
    ls = w.add(fw("air_listener"), name="l", board="nrf52832", position=(3, 0))
    w.run(ms=60)
    return heard(ls), a, c


def test_two_senders_overlapping_collide_and_the_stronger_captures(fw):
    # equal power (both 3 m away), same start: every packet fails its CRC
    got, a, _c = _two_senders(fw, (6, 0), 1000)
    assert len(got) == 6 and not any(ok for _a, _n, ok, _r in got), got
    # 27 m away the other arrives 19 dB weaker: the near one is captured
    got, a, _c = _two_senders(fw, (30, 0), 1000)
    assert len(got) == 6 and all(ok for _a, _n, ok, _r in got), got
    adva = a.machine.soc.device_address
    assert {x for x, *_r in got} == {f"{adva[0]:02x}{adva[1]:02x}"}
    # overlapping by half a packet at equal power: still a collision
    got, *_x = _two_senders(fw, (6, 0), 1100)
    assert got and not any(ok for _a, _n, ok, _r in got)
    # 300 us apart (a packet lasts 216 us): no overlap, both heard intact
    got, *_x = _two_senders(fw, (6, 0), 1300)
    assert len(got) == 12 and all(ok for _a, _n, ok, _r in got), got
    # collisions switched off: the first packet is heard intact
    got, *_x = _two_senders(fw, (6, 0), 1000, air=AirModel(collisions=False))
    assert len(got) == 6 and all(ok for _a, _n, ok, _r in got)


def test_random_loss_is_seeded(fw):
    def losses(seed):
        _w, _b, ls = beacon_and_listener(fw, 3.0, ms=205, seed=seed,
                                         air=AirModel(loss=0.4))
        got = heard(ls)
        assert len(got) == 20
        return [n for _a, n, ok, _r in got if not ok]
    first = losses(7)
    assert 2 <= len(first) <= 16, first                # 40 % of 20, give or take
    assert losses(7) == first
    assert losses(8) != first


def ping(fw, order=None, longest_round=None, ppm=0.0, count=5):
    w = World(seed=3)
    a = w.add(fw("air_beacon"), name="a", board="nrf52832", position=(0, 0), ppm=ppm)
    uicr(a, 10000, count, 0, 1000, 1)
    p = w.add(fw("air_ponger"), name="p", board="nrf52832", position=(3, 0))
    if order is not None:
        w.timeline.run(ms=10 * count + 10, order=[w.node(n).side for n in order],
                       longest_round=longest_round)
    else:
        w.run(ms=10 * count + 10, longest_round=longest_round)
    return w, a, p


def test_an_answer_from_another_chip_comes_exactly_tifs_later(fw):
    w, a, p = ping(fw)
    pongs = re.findall(r"PONG n=(\d+) crc=1 tifs=(\d+)", a.console_text())
    assert [int(n) for n, _t in pongs] == list(range(5)), a.console_text()
    assert {int(t) for _n, t in pongs} == {150}
    assert p.console_text().count("crc=1") == 5
    starts = [(t.sender, t.start) for t in w.log]
    assert [s for s, _t in starts] == ["a", "p"] * 5
    for (_s1, t1), (_s2, t2) in zip(starts[::2], starts[1::2]):
        req = next(t for t in w.log if t.start == t1)
        assert t2 - req.end == 150 * TICKS_PER_US


@pytest.mark.parametrize("order,cap_us", [(("p", "a"), None), (("a", "p"), 7), (("p", "a"), 1)])
def test_the_same_results_whatever_the_order_and_the_rounds(fw, order, cap_us):
    ref_w, ref_a, ref_p = ping(fw)
    w, a, p = ping(fw, order, cap_us and cap_us * TICKS_PER_US)
    assert a.console_text() == ref_a.console_text()
    assert p.console_text() == ref_p.console_text()
    assert [(t.start, t.sender, t.packet) for t in w.log] == \
        [(t.start, t.sender, t.packet) for t in ref_w.log]
    assert (a.machine.cpu.cycles, p.machine.cpu.cycles) == \
        (ref_a.machine.cpu.cycles, ref_p.machine.cpu.cycles)
    if cap_us:
        assert w.timeline.rounds > ref_w.timeline.rounds


def test_a_horizon_that_claims_too_much_is_seen(fw, monkeypatch):
    """Companion: a radio that says it cannot send for 2 ms lets the other
    chip run past the answer, which reaches it in its past: refused."""
    monkeypatch.setattr(Radio, "earliest_tx", lambda self, b: b + 2000 * TICKS_PER_US)
    with pytest.raises(RuntimeError, match="reached .* after its first bit"):
        ping(fw)


def test_a_sender_that_does_not_stop_at_its_start_is_seen(fw, monkeypatch):
    """Companion: the sender runs on past its packet's START (and past its
    RXEN, where a chip whose receiver turns on stops) to the bound it was
    given; its receiver's answer then reaches it in its past."""
    monkeypatch.setattr(AirPort, "emit", lambda self, air, p, tx: self.side.emit(
        "air", tuple(p), tx))
    monkeypatch.setattr(AirPort, "listening", lambda self: None)
    with pytest.raises(RuntimeError, match="reached .* after its first bit"):
        ping(fw)


def test_a_chip_whose_receiver_is_off_runs_ahead_and_stops_when_it_listens(fw):
    """The listener turns its receiver on only after 30 ms (air_listener's
    UICR START word): until then nothing on the air can reach it, and it
    runs ahead of the beacon in a round; the packets it missed are on the
    air for RSSI and collisions, and it hears the ones after, as alone."""
    w = World(seed=1)
    w.add(fw("air_beacon"), name="b", board="nrf52832")
    ls = w.add(fw("air_listener"), name="l", board="nrf52832", position=(2, 0),
               preload=[(0x10001080, struct.pack("<2I", 100000, 30000))])
    w.run(ms=80)
    got = heard(ls)
    assert [n for _a, n, _c, _r in got] == [3, 4, 5, 6, 7], ls.console_text()
    assert w.timeline.rounds < 40


def test_a_crystal_offset_stretches_time_between_nodes(fw):
    """The beacon's crystal runs 500 ppm fast: its 10 000 us period lasts
    9 995 us of the air's time; the answer still comes TIFS after the
    request as the beacon measures it, within a tick per microsecond."""
    w, a, _p = ping(fw, ppm=500.0)
    reqs = [t for t in w.log if t.sender == "a"]
    gaps = {b.start - x.start for x, b in zip(reqs, reqs[1:])}
    want = 10000 * TICKS_PER_US * 10 ** 9 // (10 ** 9 + 500_000)
    assert all(abs(g - want) <= 1 for g in gaps), (gaps, want)
    assert re.findall(r"tifs=(\d+)", a.console_text()) == ["150"] * 5


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed "
                    "(apt install tshark)")
def test_the_pcap_of_a_run_decodes_in_tshark(fw, tmp_path):
    w = World(seed=1)
    a = w.add(fw("air_beacon"), name="a", board="nrf52832", position=(0, 0))
    uicr(a, 10000, 3, 0, 1000, 1)
    w.add(fw("air_ponger"), name="p", board="nrf52832", position=(4, 0))
    cap = w.pcap(tmp_path / "air.pcap", position=(0, 2))
    w.run(ms=40)
    cap.close()
    assert cap.packets == 6 and cap.error is None
    r = subprocess.run(["tshark", "-r", str(tmp_path / "air.pcap"), "-T", "fields",
                        "-e", "btle_rf.channel", "-e", "btle_rf.signal_dbm",
                        "-e", "btle.advertising_header.pdu_type",
                        "-e", "btcommon.eir_ad.entry.device_name", "-e", "btle.crc",
                        "-e", "frame.time_epoch"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert len(rows) == 6
    assert {row[0] for row in rows} == {"0"}                     # RF channel 0: 2402 MHz
    # the sniffer 2 m from the beacon, sqrt(20) m from the ponger
    assert [row[1] for row in rows] == ["-46", "-53"] * 3
    assert {row[2] for row in rows} == {"0x02"}                  # ADV_NONCONN_IND
    assert {row[3] for row in rows} == {"emu"}
    t0 = float(rows[0][5])
    assert abs(t0 - w.log[0].start / 512e6) < 1e-6


def test_one_process_and_several_give_the_same_bytes(fw, tmp_path):
    """The same world run in one process and with each machine in a process
    of its own (emu/worldproc.py): byte-identical pcap and consoles."""
    runs = []
    for procs in (False, True):
        with World(seed=5, processes=procs, air=AirModel(loss=0.2)) as w:
            w.add(fw("air_beacon"), name="a", board="nrf52832", position=(0, 0),
                  preload=[(0x10001080, struct.pack("<5I", 10000, 4, 0, 1000, 1))])
            w.add(fw("air_ponger"), name="p", board="nrf52832", position=(3, 0))
            w.add(fw("air_listener"), name="l", board="nrf52832", position=(1, 1),
                  preload=[(0x10001080, struct.pack("<I", 45000))])
            cap = w.pcap(tmp_path / f"{procs}.pcap")
            res = w.run(ms=50)
            cap.close()
            runs.append(({n: w.node(n).console_text() for n in "apl"},
                         (tmp_path / f"{procs}.pcap").read_bytes(),
                         {n: (r.reason, r.time_ticks, r.exit_code) for n, r in res.items()},
                         w.timeline.rounds))
    (one, pcap1, res1, rounds1), (several, pcap2, res2, rounds2) = runs
    assert "PONG n=3 crc=1 tifs=150" in one["a"] and "DONE ok=" in one["l"]
    assert "crc=0" in one["l"]                        # some lost at 20 %
    assert several == one and pcap2 == pcap1 and res2 == res1 and rounds2 == rounds1
    assert res1["l"] == ("exit", res1["l"][1], 0)


def test_a_node_that_cannot_be_built_is_one_line(tmp_path):
    from emu.worldproc import WorldError
    bad = tmp_path / "bad.elf"
    bad.write_bytes(b"\x7fELF nonsense")
    with World(processes=True) as w:
        with pytest.raises(WorldError, match=r"^node x: FirmwareError: .*bad\.elf"):
            w.add(str(bad), name="x", board="nrf52832")
    with World() as w:
        with pytest.raises(TypeError, match="give a firmware path"):
            World(processes=True).add(object(), name="y")
        with pytest.raises(ValueError, match="a node's name"):
            w.add(str(bad), name="no spaces")
        with pytest.raises(ValueError, match="a position"):
            w.add_phone(position=(float("nan"), 0))


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed "
                    "(apt install tshark)")
def test_one_chip_and_its_phone_captured_connect_ind_and_data_pdus_decode(fw, tmp_path):
    """``run --pcap``: our link-layer firmware (periph_radio_conn.c) and the
    phone's central (emu/phone/link.py) on one machine's air; tshark sees
    the advertising name, the CONNECT_IND and the data channel's L2CAP
    packets, each way, with valid CRCs (the firmware checks the link and
    answers on channel 0x40)."""
    from emu.phone.link import LinkCentral
    from emu.pcap import MachineCapture
    from emu import Machine
    m = Machine(fw("periph_radio_conn"), board="nrf52832")
    cap = MachineCapture(m, tmp_path / "conn.pcap")
    link = LinkCentral(m.air, interval=16, win_size=3, win_offset=2, timeout=100)
    link.on_state.append(lambda s: s == "connected" and link.send_l2cap(0x40, b"ping" * 5))
    link.connect(target="c7:05:04:03:02:01")
    m.run(ms=300)
    cap.close()
    assert cap.error is None and cap.packets > 10, m.console_text()
    r = subprocess.run(["tshark", "-r", str(tmp_path / "conn.pcap"), "-T", "fields",
                        "-e", "btle.advertising_header.pdu_type", "-e", "btle.data_header.llid",
                        "-e", "btle.crc.incorrect", "-e", "_ws.col.Source",
                        "-e", "btl2cap.cid"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert any(row[0] == "0x05" for row in rows)                  # CONNECT_IND
    assert any(row[0] == "0x00" for row in rows)                  # ADV_IND
    assert not any(row[2] for row in rows)                        # no CRC marked incorrect
    l2 = [row for row in rows if row[4] == "0x0040"]
    # the phone's L2CAP PDU and the firmware's answer, each way (the CONNECT_IND's
    # sender is the central: its packets are flagged central to peripheral)
    assert {row[3].split("_")[0] for row in l2} == {"Master", "Slave"}
