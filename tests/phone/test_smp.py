"""emu/phone/smp.py's Secure Connections functions against the Core spec's sample
data (Vol 3 Part H, Appendix D; the values in the little-endian byte order
of the PDUs, as NimBLE's own tests write them), and the pairing's failure
paths without a watch."""
from emu.phone.smp import aes_e, f4, f5, f6

U = bytes.fromhex("e69d350e480103ccdbfdf4ac1191f4efb9a5f9e9a7832c5e2cbe97f2d203b020")
V = bytes.fromhex("fdc57ff449dd4f6bfb7c9df1c29acb592ae7d4eefbfc0a909abbf6323d8b1855")
N1 = bytes.fromhex("abae2b71ecb2ffff3e7377d15484cbd5")
N2 = bytes.fromhex("cfc43dfff78365216e5fa725cce7e8a6")
W = bytes.fromhex("98a6bf73f3348d86f166f8b4136b79999b7d390aa610103405adc857a33402ec")
A1 = bytes.fromhex("cebf37371256")
A2 = bytes.fromhex("c1cf2d7013a7")


def test_f4():
    assert f4(U, V, N1, 0) == bytes.fromhex("2d8774a9bea1edf11cbda907f116c9f2")


def test_f5():
    mackey, ltk = f5(W, N1, N2, 0, A1, 0, A2)
    assert mackey == bytes.fromhex("206e63ce206a3ffd024a08a176f16529")
    assert ltk == bytes.fromhex("380a7594b522059823cdd76911798669")


def test_f6():
    r = bytes.fromhex("c80f2d0cd242da0854bb53b43b34a312")
    mackey = bytes.fromhex("206e63ce206a3ffd024a08a176f16529")
    assert f6(mackey, N1, N2, r, bytes([2, 1, 1]), 0, A1, 0, A2) == \
        bytes.fromhex("618f95da090b6cd2c5e8d09c9873c4e3")


def test_the_functions_depend_on_every_input():
    """Companion: swapping the nonces or the addresses changes the results."""
    assert f4(U, V, N2, 0) != f4(U, V, N1, 0)
    assert f4(U, V, N1, 1) != f4(U, V, N1, 0)
    assert f5(W, N2, N1, 0, A1, 0, A2) != f5(W, N1, N2, 0, A1, 0, A2)
    assert f5(W, N1, N2, 1, A1, 0, A2) != f5(W, N1, N2, 0, A1, 0, A2)


def test_e_is_aes_in_the_spec_byte_order():
    # FIPS-197 C.1 with key and data given least significant octet first
    key = bytes.fromhex("000102030405060708090a0b0c0d0e0f")[::-1]
    pt = bytes.fromhex("00112233445566778899aabbccddeeff")[::-1]
    assert aes_e(key, pt) == bytes.fromhex("69c4e0d86a7b0430d8cdb78070b4c55a")[::-1]


class _Link:
    """Just enough of emu.phone.link.LinkCentral to drive a Pairing."""
    def __init__(self):
        self.sent, self.on_state, self.on_encryption = [], [], []
        self.on_smp = None
        self.connected = True
        self.address, self.peer_bytes, self.peer_random = bytes(6), bytes(6), True

    def send_l2cap(self, cid, data):
        self.sent.append((cid, bytes(data)))

    def start_encryption(self, ltk, seed):
        self.ltk = ltk


def test_pairing_stops_cleanly_on_refusal_and_on_a_bad_confirm():
    from emu.phone.smp import Pairing
    link = _Link()
    p = Pairing(link)
    p.start()
    assert link.sent[0] == (6, bytes([1, 3, 0, 0x09, 16, 0, 0]))
    link.on_smp(bytes([5, 5]))
    assert p.done and "pairing not supported" in p.error
    # a watch whose confirm value does not match its nonce
    link = _Link()
    p = Pairing(link)
    p.start()
    link.on_smp(bytes([2, 0, 0, 0x0D, 16, 0, 0]))
    assert link.sent[-1][1][0] == 0x0C                         # our public key went out
    from cryptography.hazmat.primitives.asymmetric import ec
    k = ec.derive_private_key(12345, ec.SECP256R1()).public_key().public_numbers()
    link.on_smp(bytes([0x0C]) + k.x.to_bytes(32, "little") + k.y.to_bytes(32, "little"))
    link.on_smp(bytes([3]) + bytes(16))                        # a wrong confirm
    link.on_smp(bytes([4]) + bytes(range(16)))
    assert p.done and "confirm" in p.error and link.sent[-1][1] == bytes([5, 4])
    # a public key not on the curve is refused with invalid parameters
    link = _Link()
    p = Pairing(link)
    p.start()
    link.on_smp(bytes([2, 0, 0, 0x0D, 16, 0, 0]))
    link.on_smp(bytes([0x0C]) + bytes(64))
    assert p.done and "P-256" in p.error and link.sent[-1][1] == bytes([5, 0x0A])
