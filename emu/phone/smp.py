"""LE Secure Connections pairing for the host-side central (Core spec Vol 3 Part H).

The phone pairs as initiator over L2CAP CID 6 of emu/phone/link.py:
Pairing Request (bonding, Secure Connections, IO capability
NoInputNoOutput, so the method is Just Works), P-256 public keys,
the responder's confirm, the nonces, DHKey checks, then the LTK from f5
starts link-layer encryption (LL_ENC_REQ; emu/phone/link.py encrypts with
AES-CCM from then on).  ``f4``, ``f5`` and ``f6`` take and return values
in the little-endian byte order of the PDUs; tests check them against the
spec's sample data.

Everything random (the private key, the nonce, SKDm and IVm) comes from a
seed, so a run is the same every time.

Not modelled: legacy pairing (InfiniTime's NimBLE is built without it),
passkey entry, numeric comparison and OOB (the phone has no input or
output), key distribution (no keys are asked for: the LTK of Secure
Connections is derived on both sides), signing and privacy keys.
"""
from __future__ import annotations

import hashlib
from typing import Optional

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import algorithms

from emu.phone.link import CID_SMP, aes_e   # noqa: F401 (aes_e: SMP's c1/s1 and tests)

PAIRING_REQUEST, PAIRING_RESPONSE, PAIRING_CONFIRM, PAIRING_RANDOM = 0x01, 0x02, 0x03, 0x04
PAIRING_FAILED, PAIRING_PUBLIC_KEY, PAIRING_DHKEY_CHECK = 0x05, 0x0C, 0x0D
IO_NO_INPUT_NO_OUTPUT = 0x03
AUTH_BONDING, AUTH_MITM, AUTH_SC = 0x01, 0x04, 0x08
SALT = bytes.fromhex("6C888391AAF5A53860370BDB5A6083BE")
FAIL_REASONS = {0x01: "passkey entry failed", 0x02: "OOB not available",
                0x03: "authentication requirements", 0x04: "confirm value failed",
                0x05: "pairing not supported", 0x06: "encryption key size",
                0x07: "command not supported", 0x08: "unspecified reason",
                0x09: "repeated attempts", 0x0A: "invalid parameters",
                0x0B: "DHKey check failed", 0x0C: "numeric comparison failed"}


def _r(b: bytes) -> bytes:
    return bytes(reversed(b))


def aes_cmac(key: bytes, msg: bytes) -> bytes:
    c = cmac.CMAC(algorithms.AES(key))
    c.update(msg)
    return c.finalize()


def f4(u: bytes, v: bytes, x: bytes, z: int) -> bytes:
    return _r(aes_cmac(_r(x), _r(u) + _r(v) + bytes([z])))


def f5(w: bytes, n1: bytes, n2: bytes, a1t: int, a1: bytes, a2t: int, a2: bytes):
    """(MacKey, LTK)"""
    t = aes_cmac(SALT, _r(w))
    tail = b"btle" + _r(n1) + _r(n2) + bytes([a1t]) + _r(a1) + bytes([a2t]) + _r(a2) + b"\x01\x00"
    return _r(aes_cmac(t, b"\x00" + tail)), _r(aes_cmac(t, b"\x01" + tail))


def f6(w: bytes, n1: bytes, n2: bytes, r: bytes, iocap: bytes, a1t: int, a1: bytes,
       a2t: int, a2: bytes) -> bytes:
    return _r(aes_cmac(_r(w), _r(n1) + _r(n2) + _r(r) + _r(iocap) + bytes([a1t]) + _r(a1)
                       + bytes([a2t]) + _r(a2)))


class SmpError(Exception):
    pass


class Pairing:
    """One pairing as initiator on ``link`` (an emu.phone.link.LinkCentral):
    ``start()``, then the machine runs until ``done`` (``error`` says why it
    failed; ``ltk`` is the key and the link is encrypted when it worked)."""

    def __init__(self, link, seed: bytes = b"pinetime-emu phone"):
        self.link = link
        self.seed = seed
        self.done = False
        self.error: Optional[str] = None
        self.ltk: Optional[bytes] = None
        self.step = "idle"
        link.on_smp = self._smp
        link.on_state.append(self._state)
        link.on_encryption.append(self._encrypted)
        h = hashlib.sha256(seed + b"/key").digest()
        self._key = ec.derive_private_key(int.from_bytes(h, "big") % (2 ** 255) + 1,
                                          ec.SECP256R1())
        pub = self._key.public_key().public_numbers()
        self.pkx, self.pky = pub.x.to_bytes(32, "little"), pub.y.to_bytes(32, "little")
        self.na = hashlib.sha256(seed + b"/na").digest()[:16]

    def start(self) -> None:
        self.preq = bytes([PAIRING_REQUEST, IO_NO_INPUT_NO_OUTPUT, 0, AUTH_BONDING | AUTH_SC,
                           16, 0, 0])
        self.step = "request"
        self.link.send_l2cap(CID_SMP, self.preq)

    def _fail(self, why: str, reason: Optional[int] = None) -> None:
        if reason is not None and self.link.connected:
            self.link.send_l2cap(CID_SMP, bytes([PAIRING_FAILED, reason]))
        self.done, self.error, self.step = True, why, "failed"

    def _state(self, state: str) -> None:
        if state != "connected" and not self.done:
            self._fail(f"link {state}")

    def _encrypted(self, ok: bool, why: str) -> None:
        if self.step == "encrypting":
            if ok:
                self.done, self.step = True, "paired"
            else:
                self._fail(why)

    def _smp(self, pdu: bytes) -> None:
        if self.done or not pdu:
            return
        code = pdu[0]
        if code == PAIRING_FAILED:
            r = pdu[1] if len(pdu) > 1 else 0
            return self._fail(f"the watch refused: {FAIL_REASONS.get(r, hex(r))}")
        if code == PAIRING_RESPONSE and self.step == "request" and len(pdu) == 7:
            self.pres = bytes(pdu)
            if not pdu[3] & AUTH_SC:
                return self._fail("the watch offers legacy pairing only (not modelled)", 0x05)
            self.step = "public key"
            self.link.send_l2cap(CID_SMP, bytes([PAIRING_PUBLIC_KEY]) + self.pkx + self.pky)
        elif code == PAIRING_PUBLIC_KEY and self.step == "public key" and len(pdu) == 65:
            self.pbx, pby = bytes(pdu[1:33]), bytes(pdu[33:65])
            try:
                peer = ec.EllipticCurvePublicNumbers(int.from_bytes(self.pbx, "little"),
                                                     int.from_bytes(pby, "little"),
                                                     ec.SECP256R1()).public_key()
            except ValueError:
                return self._fail("the watch's public key is not on P-256", 0x0A)
            self.dhkey = _r(self._key.exchange(ec.ECDH(), peer))
            self.step = "confirm"
        elif code == PAIRING_CONFIRM and self.step == "confirm" and len(pdu) == 17:
            self.cb = bytes(pdu[1:17])
            self.step = "random"
            self.link.send_l2cap(CID_SMP, bytes([PAIRING_RANDOM]) + self.na)
        elif code == PAIRING_RANDOM and self.step == "random" and len(pdu) == 17:
            nb = bytes(pdu[1:17])
            if f4(self.pbx, self.pkx, nb, 0) != self.cb:
                return self._fail("the watch's confirm value does not match", 0x04)
            link = self.link
            a1t, a1 = 1, link.address
            a2t, a2 = (1 if link.peer_random else 0), link.peer_bytes
            self.mackey, self.ltk = f5(self.dhkey, self.na, nb, a1t, a1, a2t, a2)
            zero = bytes(16)
            iocap_a = bytes([self.preq[1], self.preq[2], self.preq[3]])
            iocap_b = bytes([self.pres[1], self.pres[2], self.pres[3]])
            ea = f6(self.mackey, self.na, nb, zero, iocap_a, a1t, a1, a2t, a2)
            self._eb = f6(self.mackey, nb, self.na, zero, iocap_b, a2t, a2, a1t, a1)
            self.step = "dhkey check"
            link.send_l2cap(CID_SMP, bytes([PAIRING_DHKEY_CHECK]) + ea)
        elif code == PAIRING_DHKEY_CHECK and self.step == "dhkey check" and len(pdu) == 17:
            if bytes(pdu[1:17]) != self._eb:
                return self._fail("the watch's DHKey check does not match", 0x0B)
            self.step = "encrypting"
            self.link.start_encryption(self.ltk, hashlib.sha256(self.seed + b"/skd").digest())
        elif code in (PAIRING_REQUEST, 0x0B):       # Security Request from the watch: ignore
            pass
        else:
            self._fail(f"unexpected SMP PDU {pdu[:1].hex()} in step {self.step}", 0x08)


__all__ = ["Pairing", "SmpError", "f4", "f5", "f6", "aes_e", "aes_cmac"]
