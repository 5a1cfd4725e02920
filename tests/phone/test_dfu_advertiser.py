"""A watch in DFU mode found from what it advertises (issue 48): with
Nordic's real SoftDevice the bridge serves ``phone --dfu`` when the watch's
latest ADV_IND lists the legacy DFU service (wasp-os's bootloader,
"PineDFU"), and not once it advertises something else."""
import struct

from emu import Machine
from emu.air import US, Packet, channel_freq, crc24
from emu.phone.dfu import DFU_SERVICE
from emu.phone.scanner import ADV_AA, ADV_CRCINIT, ad_uuids, parse_ad, recent_advertiser

WATCH = bytes.fromhex("0102030405c6")          # c6:05:04:03:02:01 on the air, little endian
DFU_UUID = bytes.fromhex("23d1bcea5f782315deef121230150000")     # 00001530-1212-efde-...
NUS_UUID = bytes.fromhex("9ecadc240ee5a9e093f3a3b50100406e")


def _adv(air, ad: bytes, good_crc=True):
    pdu = bytes([0x40, 6 + len(ad)]) + WATCH + ad       # ADV_IND, TxAdd random
    start = air.clock.now + 10 * US
    crc = crc24(pdu, ADV_CRCINIT) ^ (0 if good_crc else 1)
    air.send(Packet(start, start + (len(pdu) + 8) * 8 * US, channel_freq(37), 3, ADV_AA,
                    pdu, crc, 37 | 0x40, "watch"))


def _ad(name: bytes, uuid: bytes) -> bytes:
    return bytes([2, 1, 6, len(name) + 1, 9]) + name + bytes([17, 6]) + uuid


def test_watch_advertising_the_dfu_service_is_found(fw):
    m = Machine(fw("pinetime_demo"))
    assert ad_uuids(parse_ad(_ad(b"PineDFU", DFU_UUID))) == [DFU_SERVICE]
    assert ad_uuids([(3, b"\x0d\x18\x0f\x18")]) == [
        "0000180d-0000-1000-8000-00805f9b34fb", "0000180f-0000-1000-8000-00805f9b34fb"]
    assert recent_advertiser(m.air, DFU_SERVICE) is None
    _adv(m.air, _ad(b"PineDFU", DFU_UUID))
    m.run(ms=1)
    assert recent_advertiser(m.air, DFU_SERVICE) == ("c6:05:04:03:02:01", "PineDFU")
    _adv(m.air, _ad(b"PineTime", NUS_UUID))        # the application it started
    m.run(ms=1)
    assert recent_advertiser(m.air, DFU_SERVICE) is None


def test_stale_or_broken_adverts_do_not_count(fw):
    """Companion: a DFU advert with a bad CRC, or older than the window."""
    m = Machine(fw("pinetime_demo"))
    _adv(m.air, _ad(b"PineDFU", DFU_UUID), good_crc=False)
    m.run(ms=1)
    assert recent_advertiser(m.air, DFU_SERVICE) is None
    _adv(m.air, _ad(b"PineDFU", DFU_UUID))
    m.run(ms=3000)
    assert recent_advertiser(m.air, DFU_SERVICE) is None
    assert recent_advertiser(m.air, DFU_SERVICE, within=4_000_000 * US) is not None
