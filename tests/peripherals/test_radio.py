"""The RADIO at the packet level (emu/peripherals/radio.py) on the emulated air
(emu/air.py), driven by firmware/tests/periph_radio.c the way a BLE
controller drives it, with the host-side scanner (emu/phone/scanner.py) as its peer."""
import pytest

from conftest import assert_firmware_passed
from emu.air import crc24
from emu.phone.scanner import parse_ad
from helpers.radio import radio_run


@pytest.mark.parametrize("pure", [False, True])
def test_radio_advertises_receives_and_answers(fw, pure):
    m, r, sc = radio_run(fw, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=20)
    dev = sc.devices["c6:55:44:33:22:11"]
    assert dev.pdu_type == "ADV_IND" and dev.adverts == 1 and dev.channels == {37}
    assert parse_ad(dev.adv_data) == [(0x01, b"\x06")]
    assert dev.name == "emu" and dev.responses == 1          # the SCAN_RSP came back
    kinds = [(p.sender, p.channel, p.pdu[0] & 0xF) for p in m.air.log]
    assert kinds == [("watch", 37, 0), ("scanner", 37, 3), ("watch", 37, 4), ("test", 38, 2)]


def test_radio_runs_are_deterministic(fw):
    a, _, _ = radio_run(fw)
    b, _, _ = radio_run(fw)
    assert [tuple(p) for p in a.air.log] == [tuple(p) for p in b.air.log]
    assert (a.cpu.cycles, a.clock.now) == (b.cpu.cycles, b.clock.now)


def test_radio_without_tifs_is_detected(fw, monkeypatch):
    """Companion: a radio that answers as soon as it has ramped up (no TIFS)
    fails the firmware's TIFS check."""
    from emu.peripherals import radio
    orig = radio.Radio._enable

    def no_tifs(self, tx):
        self._short_enable = False
        orig(self, tx)
    monkeypatch.setattr(radio.Radio, "_enable", no_tifs)
    m, r, _ = radio_run(fw)
    assert "FAIL TIFS request end to response start" in m.console_text()


def test_radio_with_a_wrong_crc_is_detected(fw, monkeypatch):
    """Companion: a receiver computing the CRC over the wrong bytes rejects
    the peer's SCAN_REQ."""
    from emu.peripherals import radio
    monkeypatch.setattr(radio, "crc24", lambda data, init, poly=0x65B, nbits=24:
                        crc24(data[1:], init, poly, nbits))
    m, r, sc = radio_run(fw)
    text = m.console_text()
    assert "FAIL CRCSTATUS ok" in text


def test_radio_silent_when_disabled_twice_is_detected(fw, monkeypatch):
    """Companion: a radio that ignores DISABLE in the Disabled state (no
    DISABLED event) fails the firmware's check; drivers waiting for that
    event (the S132 SoftDevice) would wait forever."""
    from emu.peripherals import radio
    orig = radio.Radio.task_DISABLE

    def silent(self):
        if self.state != radio.DISABLED:
            orig(self)
    monkeypatch.setattr(radio.Radio, "task_DISABLE", silent)
    m, r, _ = radio_run(fw)
    assert "FAIL DISABLED when already disabled" in m.console_text()


def _heard(fw, monkeypatch, log=None):
    from emu import Machine
    from emu.phone.scanner import Scanner
    if log is not None:
        monkeypatch.setattr(Scanner, "PDU_LOG", log)
    m = Machine(fw("air_beacon"), board="nrf52832")
    sc = Scanner(m.air)
    m.run(ms=1500)
    return sc


def test_the_scanner_keeps_the_latest_pdus_only(fw, monkeypatch):
    """A day of advertising must not hold every PDU heard in memory (issue
    45's soak): ``pdus`` keeps the last PDU_LOG, the devices still count
    every advert."""
    full = _heard(fw, monkeypatch)
    assert len(full.pdus) > 6
    sc = _heard(fw, monkeypatch, log=4)
    assert len(sc.pdus) == 4 and list(sc.pdus) == list(full.pdus)[-4:]
    assert [d.adverts for d in sc.devices.values()] == [d.adverts for d in full.devices.values()]
