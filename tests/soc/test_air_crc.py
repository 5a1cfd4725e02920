"""emu.air.crc24 (a byte at a time through a table) gives the bit-serial
CRC's value for every length, polynomial, preset and data; the companion
shows the check would catch a table fed in the wrong bit order."""
import random

import pytest

from emu import air


def _cases():
    rnd = random.Random(7)
    for _ in range(400):
        nbits = rnd.choice([8, 16, 24])
        poly = rnd.choice([0x00065B, 0x1021, 0x07, rnd.getrandbits(nbits)])
        yield (bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 40))),
               rnd.getrandbits(24), poly, nbits)
    yield (bytes(range(256)), 0x555555, 0x00065B, 24)           # advertising preset


def test_table_crc_equals_bit_serial():
    for data, init, poly, nbits in _cases():
        assert air.crc24(data, init, poly, nbits) == air._crc_bits(data, init, poly, nbits)


def test_known_ble_crc():
    # an ADV_IND as NimBLE sends it; the value is the bit-serial one
    pdu = bytes.fromhex("4006c0ffee123456020106")
    assert air.crc24(pdu, 0x555555) == air._crc_bits(pdu, 0x555555, 0x00065B, 24)


def test_wrong_bit_order_is_detected(monkeypatch):
    monkeypatch.setattr(air, "_REV8", bytes(range(256)))
    with pytest.raises(AssertionError):
        test_table_crc_equals_bit_serial()
