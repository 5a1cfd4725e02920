"""firmware/tests/periph_radio.c on the emulated air with the host-side
scanner as its peer (tests/peripherals/test_radio.py; the RADIO's STATE read
in C, tests/soc/test_state_reads_in_c.py)."""
from __future__ import annotations

from emu import Machine
from emu.air import US, Packet, channel_freq, crc24
from emu.phone.scanner import ADV_AA, ADV_CRCINIT, Scanner


def radio_run(fw, **kw):
    """The firmware run 50 ms past its LISTEN38, a packet with a bad CRC sent
    to it on channel 38 meanwhile: (machine, result, scanner)."""
    m = Machine(fw("periph_radio"), board="nrf52832", **kw)
    sc = Scanner(m.air)
    assert m.run_until(lambda: "LISTEN38" in m.console_text(), timeout_ms=200)
    # a packet with a bad CRC on channel 38, 100 us from now
    start = m.clock.now + 100 * US
    pdu = bytes([0x42, 6]) + bytes(6)
    m.air.send(Packet(start, start + (1 + 4 + 8 + 3) * 8 * US, channel_freq(38), 3, ADV_AA, pdu,
                      crc24(pdu, ADV_CRCINIT) ^ 1, 38 | 0x40, "test"))
    r = m.run(ms=50)
    return m, r, sc


def leave_right_after_terminate(monkeypatch) -> None:
    """The emulated central as it was before issue 48, for the companions:
    gone right after acknowledging LL_TERMINATE_IND in the same connection
    event (Nordic's S132 no longer listens then, so it never hears it)."""
    import emu.phone.link as blelink
    orig = blelink.LinkCentral._control

    def at_once(self, c):
        orig(self, c)
        if c[:1] == bytes([blelink.LL_TERMINATE_IND]):
            self._closing_event = self._event_count - 1
    monkeypatch.setattr(blelink.LinkCentral, "_control", at_once)
