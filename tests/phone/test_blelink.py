"""The phone's link layer (emu/phone/link.py) without a watch: channel selection
#1, the LL encryption start against the Core spec's sample data (Vol 6 Part
C 1: the same LTK, SKD and IV give the same session key and the same bytes
on the air), and a MIC that does not check ending the link."""
from emu.air import Air, Packet, channel_freq, crc24
from emu.phone.link import (LL_ENC_RSP, LL_START_ENC_REQ, UNIT, LinkCentral, csa1_channels)
from emu.clock import Clock

LTK = bytes.fromhex("4C68384139F574D836BCF34E9DFB01BF")[::-1]      # little endian
SKDM = bytes.fromhex("ACBDCEDFE0F10213")[::-1]
SKDS = bytes.fromhex("0213243546576879")[::-1]
IVM, IVS = bytes.fromhex("24ABDCBA"), bytes.fromhex("BEBAAFDE")     # as sent (LSO first)


def test_csa1_hops_and_remaps():
    # every channel used: (last + hop) mod 37
    assert csa1_channels(7, (1 << 37) - 1, 6) == [7, 14, 21, 28, 35, 5]
    # channel 14 unused: it is remapped to used[14 % 36] = 15
    chm = ((1 << 37) - 1) & ~(1 << 14)
    assert csa1_channels(7, chm, 3) == [7, 15, 21]
    assert csa1_channels(7, chm, 2, start=2) == [21, 28]


def _link():
    link = LinkCentral(Air(Clock()))
    link.state = "connected"
    link._channel = 5
    link._in_event = True
    return link


def _watch_packet(link, llid, sn, nesn, payload):
    pdu = bytes([llid | (nesn << 2) | (sn << 3), len(payload)]) + payload
    return Packet(0, 100, channel_freq(5), 3, link.aa, pdu, crc24(pdu, link.crc_init),
                  5 | 0x40, "watch")


def _event(link, llid, sn, nesn, payload):
    """One connection event: our packet, then the watch's answer."""
    link._in_event = True
    link._send(link.clock.now)
    sent = link._cur
    link._data(_watch_packet(link, llid, sn, nesn, payload))
    return sent


def _start(link, last_rsp: str):
    link.start_encryption(LTK, SKDM + IVM)
    req = _event(link, 3, 0, 1, bytes([LL_ENC_RSP]) + SKDS + IVS)   # acks our LL_ENC_REQ
    assert req[1] == bytes([0x03]) + bytes(10) + SKDM + IVM          # in clear
    _event(link, 3, 1, 0, bytes([LL_START_ENC_REQ]))                 # in clear
    return _event(link, 3, 0, 1, bytes.fromhex(last_rsp))


def test_encryption_start_matches_the_core_spec_sample():
    link = _link()
    results = []
    link.on_encryption.append(lambda ok, why: results.append(ok))
    rsp = _start(link, "a34c13a415")
    # our LL_START_ENC_RSP is the sample's "LL_START_ENC_RSP1" on the air, and
    # the watch's ("LL_START_ENC_RSP2") decrypts
    assert rsp[0] == 3 and rsp[1] == bytes.fromhex("9fcda7f448")
    assert link.air.log[-1].pdu[2:] == bytes.fromhex("9fcda7f448")
    assert results == [True] and link.encrypted
    assert link.packets[-1][7] == b"\x06"


def test_a_bad_mic_ends_the_link():
    """Companion: the watch's packet with one byte changed fails its MIC."""
    link = _link()
    _start(link, "a34c13a416")
    assert link.state == "lost" and link.reason == "MIC failure" and not link.encrypted


def test_a_gatt_request_without_answer_drops_the_link(fw):
    """A watch that never answers an ATT request: ``wait`` gives up, the link
    is dropped (the bearer is unusable after a transaction timeout) and the
    queued procedure fails instead of waiting behind it for ever."""
    import pytest
    from emu import Machine
    from emu.phone.gatt import GattClient, GattError
    m = Machine(fw("pinetime_demo"))
    link = LinkCentral(m.air)
    gatt = GattClient(link)
    link.state = "connected"                  # a link to a watch that is not there
    link._anchor0 = link._last_heard = m.clock.now + UNIT
    link._ev.schedule_at(link._anchor0 - UNIT // 2)
    first = gatt.start(gatt._exchange_mtu(), "mtu")
    queued = gatt.start(gatt._exchange_mtu(), "queued")
    with pytest.raises(GattError, match="link was dropped"):
        gatt.wait(m, first, timeout_ms=100)
    assert link.state in ("lost", "closed") and queued.done and "link" in queued.error
