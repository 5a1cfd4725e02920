"""CCM (AES-CCM for BLE packets) and AAR (accelerated address resolver).

nRF52832 Product Specification v1.4, sections 18 "CCM - AES CCM mode
encryption" and 17 "AAR - Accelerated address resolver".  Both blocks sit
in slot 0x4000F000 and share its registers and IRQ 15 (PS 15.2
"Peripherals with shared ID"): ENABLE (+0x500) selects CCM (2) or AAR (3),
0 disables both.  As for the serial slots (emu/peripherals/serial.py) a
register written under one block is what the other reads at the same
offset (MODE is NIRK, CNFPTR is IRKPTR, OUTPTR is ADDRPTR), so drivers must
configure the block they enable, as the PS asks.  The slot forwards PPI
tasks (fixed channels 23-25: RADIO BCMATCH -> AAR START, READY -> CCM
KSGEN, ADDRESS -> CCM CRYPT) and events to the enabled block.

CCM.  KSGEN reads the CCM data structure at CNFPTR (EasyDMA): KEY (bytes
0-15, in the order the ECB takes its key: the key as the Bluetooth
specification writes it, most significant octet first), PKTCTR (bytes
16-20, the 39-bit packet counter least significant octet first; bit 7 of
byte 20 and bytes 21-23 ignored), the direction bit (byte 24, bit 0) and
the IV (bytes 25-32); ENDKSGEN follows T_KSGEN later.  CRYPT then reads
the packet at INPTR, laid out as the RADIO keeps a BLE packet in RAM
(S0 = header, LENGTH, the S1 byte "RFU", payload), and writes OUTPTR:

* encryption (MODE bit 0 = 0): header, length + 4, RFU, the encrypted
  payload and its 4-octet MIC;
* decryption (MODE bit 0 = 1): header, length - 4, RFU, the plaintext (also
  when the MIC fails, as the counter mode produces it); MICSTATUS = 1 when
  the MIC checks, 0 when it does not.

The cipher is Bluetooth's AES-CCM (Core specification Vol 6 Part E 2.1-2.3,
through the ``cryptography`` package's AESCCM): the 13-octet nonce is the
packet counter (5 octets, least significant first) with the direction bit
as bit 7 of the fifth octet, then the 8-octet IV; the additional data is
the header byte masked with 0xE3 (NESN, SN, MD cleared); the MIC has 4
octets.  A packet with an empty payload passes through without a MIC
(decrypting one leaves MICSTATUS 0: NimBLE and Zephyr ignore it for empty
packets).  MODE.LENGTH Default takes 5 bits of the length byte, Extended
all 8.  SHORTS bit 0: ENDKSGEN -> CRYPT.  A CRYPT while the key stream is
still being generated starts when it is ready.

Timing.  ENDKSGEN T_KSGEN = 3 x T_ECB (21.6 us) after KSGEN: the three
counter blocks of a 27-octet payload (A0 for the MIC, A1, A2), whatever
MODE.LENGTH says.  ENDCRYPT comes as long after CRYPT as the RADIO takes to
move the header, length and payload (MIC included) at MODE.DATARATE: 8 us
an octet at 1 Mbit, 4 us at 2 Mbit.  On silicon, decryption runs alongside
the RADIO: CRYPT comes from RADIO ADDRESS through PPI and the CCM decrypts
the bytes as EasyDMA stores them, finishing after the packet.  Our RADIO
writes the whole received packet to RAM at ADDRESS, so the CCM reads and
decrypts it at CRYPT, writes OUTPTR at once, and sets MICSTATUS and
ENDCRYPT as the radio finishes the payload (before its END, which waits
for the CRC).  When encrypting, OUTPTR is likewise written at CRYPT: the
packet is complete before the RADIO's START reads it (it reads the whole
packet at once), as on-the-fly encryption keeps ahead of the radio.
STOP abandons a KSGEN or CRYPT in progress (no event; OUTPTR may already
hold the packet).  ERROR: a pointer outside Data RAM, or a CRYPT with no
key stream generated since reset (logged once).

AAR.  START reads NIRK IRKs (16 octets each, in the ECB key's order) at
IRKPTR and the 6-octet address at ADDRPTR + 3: ADDRPTR points at the packet
(header, length, RFU, then AdvA, least significant octet first, as NimBLE
sets it).  For IRK 0, 1, ... it compares the address's hash (its low 24
bits) with ah(IRK, prand) (Core specification Vol 3 Part H 2.2.2: the low
24 bits of AES-128(IRK, 104 zero bits || prand)).  After
T_AAR_START + T_AAR_IRK per IRK tried (the PS's 1 us + n x t_AAR with
t_AAR = 6 us; the search stops at the first match), a match sets STATUS to
its index and gives RESOLVED then END; no match gives NOTRESOLVED then END
(STATUS unchanged).  NIRK above 16 uses 16 (logged).  STOP abandons a
resolution (no event).  A pointer outside Data RAM is logged once and the
address does not resolve.

Not modelled: the key stream and scratch areas (SCRATCHPTR is stored, not
written); the AES core shared with the ECB (no ERRORECB on a conflict);
the byte-by-byte race with the RADIO (the CCM never falls behind, so no
ERROR for it); the prand's address-type bits (the AAR hashes whatever
address is there); TASKS_RATEOVERRIDE (+0x00C), MAXPACKETSIZE (+0x518)
and RATEOVERRIDE (+0x51C), nRF52840 registers the nRF52832 lacks (stored,
logged once).
"""
from __future__ import annotations

from emu.clock import us
from emu.peripherals.base import RO, NrfPeripheral, Peripheral, Reg
from emu.peripherals.ecb import T_ECB, aes128_ecb
from emu.peripherals.serial import SerialMux

ENABLE = 0x500
# CCM
T_KSGEN_TASK, T_CRYPT_TASK, T_STOP_TASK = 0x000, 0x004, 0x008
E_ENDKSGEN, E_ENDCRYPT, E_ERROR = 0x100, 0x104, 0x108
MICSTATUS, MODE, CNFPTR, INPTR, OUTPTR, SCRATCHPTR = 0x400, 0x504, 0x508, 0x50C, 0x510, 0x514
# AAR (the same offsets, other names)
T_START_TASK = 0x000
E_END, E_RESOLVED, E_NOTRESOLVED = 0x100, 0x104, 0x108
STATUS, NIRK, IRKPTR, ADDRPTR = 0x400, 0x504, 0x508, 0x510

T_KSGEN = 3 * T_ECB                # three AES blocks of key stream
T_AAR_START = us(1)
T_AAR_IRK = us(6)                  # t_AAR: per IRK tried
BYTE_TICKS = {0: us(8), 1: us(4)}  # MODE.DATARATE: 1 Mbit, 2 Mbit

CCM_DATA_LEN = 33                  # KEY 16, PKTCTR 8, direction 1, IV 8
MIC_LEN = 4
AAD_MASK = 0xE3                    # header without NESN, SN, MD
ADDR_OFFSET = 3                    # AdvA after S0, LENGTH and S1 in RAM
NOT_IN_NRF52832 = {0x00C: "TASKS_RATEOVERRIDE", 0x518: "MAXPACKETSIZE",
                   0x51C: "RATEOVERRIDE"}


# -- Bluetooth's cryptographic functions ------------------------------------------
def ble_nonce(counter: int, direction: int, iv: bytes) -> bytes:
    """The CCM nonce (Core spec Vol 6 Part E 2.1): 39-bit packet counter, least
    significant octet first, the direction bit as bit 7 of its fifth octet,
    then the 8-octet IV."""
    n = bytearray((counter & ((1 << 39) - 1)).to_bytes(5, "little"))
    n[4] |= (direction & 1) << 7
    return bytes(n) + bytes(iv)


def ble_aad(header: int) -> bytes:
    """The additional authenticated data: the data channel PDU header's first
    octet with NESN, SN and MD masked (Core spec Vol 6 Part E 2.2)."""
    return bytes([header & AAD_MASK])


def ccm_encrypt(key: bytes, nonce: bytes, header: int, payload: bytes) -> bytes:
    """The encrypted payload followed by its 4-octet MIC."""
    from cryptography.hazmat.primitives.ciphers.aead import AESCCM
    return AESCCM(bytes(key), tag_length=MIC_LEN).encrypt(bytes(nonce), bytes(payload),
                                                         ble_aad(header))


def ccm_decrypt(key: bytes, nonce: bytes, header: int, data: bytes) -> tuple:
    """(plaintext, MIC ok) for an encrypted payload with its MIC.  The
    plaintext is the counter-mode decryption, produced even when the MIC
    fails (the CCM writes it out all the same)."""
    if len(data) < MIC_LEN:
        return b"", False
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    body = bytes(data[:-MIC_LEN])
    a1 = bytes([1]) + bytes(nonce) + (1).to_bytes(2, "big")   # CTR block A1 (L = 2)
    dec = Cipher(algorithms.AES(bytes(key)), modes.CTR(a1)).decryptor()
    plain = dec.update(body) + dec.finalize()
    return plain, ccm_encrypt(key, nonce, header, plain) == bytes(data)


def ah(irk: bytes, prand: int) -> int:
    """The random address hash function (Core spec Vol 3 Part H 2.2.2): the low
    24 bits of AES-128 under ``irk`` (in the ECB key's order) of 104 zero
    bits followed by the 24-bit ``prand``."""
    ct = aes128_ecb(bytes(irk), bytes(13) + (prand & 0xFFFFFF).to_bytes(3, "big"))
    return int.from_bytes(ct[13:16], "big")


def _dma(p: NrfPeripheral, ptr: int, n: int) -> bool:
    """EasyDMA reaches [ptr, ptr + n) (Data RAM only)."""
    soc = p.soc
    return soc.RAM_BASE <= ptr and ptr + n <= soc.RAM_BASE + soc.RAM_SIZE


# -- CCM ----------------------------------------------------------------------------
class Ccm(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_crypt_ev", "_crypt_waiting", "_ks", "_ks_ev", "_ks_next", "_mic")
    STRUCTURE = ("mux",)
    NAME = "CCM"
    HAS_INTEN = False       # INTENSET/INTENCLR only
    TASKS = {T_KSGEN_TASK: "KSGEN", T_CRYPT_TASK: "CRYPT", T_STOP_TASK: "STOP"}
    EVENTS = {E_ENDKSGEN: "ENDKSGEN", E_ENDCRYPT: "ENDCRYPT", E_ERROR: "ERROR"}
    SHORTS = {0: (E_ENDKSGEN, T_CRYPT_TASK)}
    REGISTERS = [
        Reg(MICSTATUS, "MICSTATUS", 0, RO, mask=1),
        Reg(ENABLE, "ENABLE", 0, mask=0x3),
        Reg(MODE, "MODE", 1, mask=0x01010001),
        Reg(CNFPTR, "CNFPTR"),
        Reg(INPTR, "INPTR"),
        Reg(OUTPTR, "OUTPTR"),
        Reg(SCRATCHPTR, "SCRATCHPTR"),
    ]

    def __init__(self, soc, base: int, name=None, irq=None):
        n = name or "ccm"
        self._ks_ev = soc.clock.event(f"{n}.endksgen", self._on_endksgen)
        self._crypt_ev = soc.clock.event(f"{n}.endcrypt", self._on_endcrypt)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._ks = None               # (key, nonce) of the last finished KSGEN
        self._ks_next = None          # ... of the KSGEN in progress
        self._crypt_waiting = False   # CRYPT arrived during KSGEN
        self._mic = None              # MICSTATUS to set at ENDCRYPT (decryption)
        self._ks_ev.cancel()
        self._crypt_ev.cancel()

    def disable(self) -> None:
        """ENABLE no longer selects the CCM: an operation in progress stops."""
        if self._busy():
            self.log_once("disabled-busy", "CCM disabled during KSGEN/CRYPT: abandoned")
        self._abandon()

    # -- tasks ------------------------------------------------------------------
    def task_KSGEN(self) -> None:
        ptr = self.values[CNFPTR]
        if not _dma(self, ptr, CCM_DATA_LEN):
            self._error("cnf", "CNFPTR %#x is not in Data RAM: ERROR", ptr)
            return
        d = bytes(self.soc.cpu.read_mem(ptr, CCM_DATA_LEN))
        counter = int.from_bytes(d[16:21], "little")
        self._ks_next = (d[:16], ble_nonce(counter, d[24] & 1, d[25:33]))
        self._ks_ev.schedule_in(T_KSGEN)

    def task_CRYPT(self) -> None:
        if self._ks_ev.pending:
            self.log_once("early", "CRYPT before ENDKSGEN: starts when the key stream is ready")
            self._crypt_waiting = True
            return
        self._crypt()

    def task_STOP(self) -> None:
        self._abandon()

    # -- events -----------------------------------------------------------------
    def _on_endksgen(self) -> None:
        self._ks, self._ks_next = self._ks_next, None
        waiting, self._crypt_waiting = self._crypt_waiting, False
        self.fire(E_ENDKSGEN)                  # SHORTS: ENDKSGEN -> CRYPT
        if waiting and not self._crypt_ev.pending:
            self._crypt()

    def _on_endcrypt(self) -> None:
        if self._mic is not None:
            self.values[MICSTATUS] = self._mic
            self._mic = None
        self.fire(E_ENDCRYPT)

    # -- helpers ----------------------------------------------------------------
    def _crypt(self) -> None:
        if self._ks is None:
            self._error("noks", "CRYPT with no key stream generated (KSGEN): ERROR")
            return
        key, nonce = self._ks
        mode = self.values[MODE]
        decrypt = mode & 1
        lmask = 0xFF if (mode >> 24) & 1 else 0x1F
        inp, outp = self.values[INPTR], self.values[OUTPTR]
        if not _dma(self, inp, 3):
            self._error("in", "INPTR %#x is not in Data RAM: ERROR", inp)
            return
        hdr, lbyte, rfu = self.soc.cpu.read_mem(inp, 3)
        n = lbyte & lmask
        if not _dma(self, inp, 3 + n):
            self._error("in", "INPTR %#x is not in Data RAM: ERROR", inp)
            return
        body = bytes(self.soc.cpu.read_mem(inp + 3, n))
        mic = None
        if not decrypt:
            out = ccm_encrypt(key, nonce, hdr, body) if n else b""
            on_air = len(out)
        else:
            on_air = n
            if n == 0:
                out, mic = b"", 0
            else:
                if n < MIC_LEN:
                    self.log_once("short", "decrypting %d octets: shorter than the MIC", n)
                out, ok = ccm_decrypt(key, nonce, hdr, body)
                mic = 1 if ok else 0
        packet = bytes([hdr, (lbyte & ~lmask & 0xFF) | (len(out) & lmask), rfu]) + out
        if not _dma(self, outp, len(packet)):
            self._error("out", "OUTPTR %#x is not in Data RAM: ERROR", outp)
            return
        self.soc.cpu.write_mem(outp, packet)
        self._mic = mic
        self._crypt_ev.schedule_in((2 + on_air) * BYTE_TICKS[(mode >> 16) & 1])

    def _busy(self) -> bool:
        return self._ks_ev.pending or self._crypt_ev.pending or self._crypt_waiting

    def _abandon(self) -> None:
        self._ks_ev.cancel()
        self._crypt_ev.cancel()
        self._ks_next = None
        self._crypt_waiting = False
        self._mic = None

    def _error(self, key: str, msg: str, *args) -> None:
        self.log_once(("error", key), msg, *args)
        self.fire(E_ERROR)

    def write_other(self, offset: int, value: int) -> None:
        name = NOT_IN_NRF52832.get(offset)
        if name is not None:
            self.log_once(("w", offset), "%s (+%#05x) is an nRF52840 register, not on the "
                          "nRF52832: %#x stored, no effect", name, offset, value)
            self.extra[offset] = value
            return
        super().write_other(offset, value)

    # -- state ------------------------------------------------------------------
    def save_model_state(self) -> dict:
        return {"ks": self._ks, "ks_next": self._ks_next, "waiting": self._crypt_waiting,
                "mic": self._mic, "ks_when": self._ks_ev.when,
                "crypt_when": self._crypt_ev.when}

    def load_model_state(self, s: dict) -> None:
        def pair(t):
            return (bytes(t[0]), bytes(t[1])) if t else None
        self._ks, self._ks_next = pair(s.get("ks")), pair(s.get("ks_next"))
        self._crypt_waiting = bool(s.get("waiting", False))
        self._mic = s.get("mic")
        self._ks_ev.cancel()
        self._crypt_ev.cancel()
        if s.get("ks_when") is not None:
            self._ks_ev.schedule_at(s["ks_when"])
        if s.get("crypt_when") is not None:
            self._crypt_ev.schedule_at(s["crypt_when"])


# -- AAR ----------------------------------------------------------------------------
class Aar(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev", "_match")
    STRUCTURE = ("mux",)
    NAME = "AAR"
    HAS_INTEN = False       # INTENSET/INTENCLR only
    TASKS = {T_START_TASK: "START", T_STOP_TASK: "STOP"}
    EVENTS = {E_END: "END", E_RESOLVED: "RESOLVED", E_NOTRESOLVED: "NOTRESOLVED"}
    REGISTERS = [
        Reg(STATUS, "STATUS", 0, RO, mask=0xF),
        Reg(ENABLE, "ENABLE", 0, mask=0x3),
        Reg(NIRK, "NIRK", 1, mask=0x1F),
        Reg(IRKPTR, "IRKPTR"),
        Reg(ADDRPTR, "ADDRPTR"),
        Reg(SCRATCHPTR, "SCRATCHPTR"),
    ]

    def __init__(self, soc, base: int, name=None, irq=None):
        self._ev = soc.clock.event(f"{name or 'aar'}.end", self._on_end)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._match = None            # index of the resolving IRK, None if none
        self._ev.cancel()

    def disable(self) -> None:
        if self._ev.pending:
            self.log_once("disabled-busy", "AAR disabled during a resolution: abandoned")
        self._ev.cancel()
        self._match = None

    def task_START(self) -> None:
        n = self.values[NIRK]
        if n > 16:
            self.log_once("nirk", "NIRK = %d: the AAR holds 16 IRKs, uses 16", n)
            n = 16
        irkptr, addr = self.values[IRKPTR], self.values[ADDRPTR] + ADDR_OFFSET
        self._match = None
        tried = n
        if not (_dma(self, irkptr, 16 * n) and _dma(self, addr, 6)):
            self.log_once("ptr", "IRKPTR %#x / ADDRPTR %#x not in Data RAM: NOTRESOLVED",
                          irkptr, addr - ADDR_OFFSET)
        else:
            irks = bytes(self.soc.cpu.read_mem(irkptr, 16 * n))
            a = bytes(self.soc.cpu.read_mem(addr, 6))
            hash_, prand = int.from_bytes(a[:3], "little"), int.from_bytes(a[3:], "little")
            for i in range(n):
                if ah(irks[16 * i:16 * i + 16], prand) == hash_:
                    self._match, tried = i, i + 1
                    break
        self._ev.schedule_in(T_AAR_START + tried * T_AAR_IRK)

    def task_STOP(self) -> None:
        self._ev.cancel()
        self._match = None

    def _on_end(self) -> None:
        m, self._match = self._match, None
        if m is not None:
            self.values[STATUS] = m
            self.fire(E_RESOLVED)
        else:
            self.fire(E_NOTRESOLVED)
        self.fire(E_END)

    def save_model_state(self) -> dict:
        return {"match": self._match, "when": self._ev.when}

    def load_model_state(self, s: dict) -> None:
        self._match = s.get("match")
        self._ev.cancel()
        if s.get("when") is not None:
            self._ev.schedule_at(s["when"])


# -- the slot -----------------------------------------------------------------------
class CcmAar(SerialMux):
    """Slot 0x4000F000: the CCM (ENABLE=2) or the AAR (ENABLE=3), sharing the
    registers as the serial slots do (the ENABLE/shared-storage logic is
    SerialMux's)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()

    NAME = "CCM_AAR"

    def __init__(self, soc, base: int, name=None):
        Peripheral.__init__(self, soc, base, name)
        self.irq = (base >> 12) & 0xFF
        # the blocks' events reach the slot's event_listeners (PPI): SerialMux.adopt
        self.adopt({val: cls(soc, base, f"{self.name}.{cls.NAME.lower()}", self.irq)
                    for val, cls in self._variant_classes().items()})
        self.reset()

    def _variant_classes(self) -> dict:
        return {2: Ccm, 3: Aar}

    def reset(self) -> None:
        super().reset()
        # the shared registers read their reset values while both are disabled
        # (MODE = NIRK = 1: the two blocks agree)
        for v in getattr(self, "variants", {}).values():
            for off, r in v._regs.items():
                if off != ENABLE:
                    self.shared.setdefault(off, r.reset)

    def _set_enable(self, value: int) -> None:
        # A write wrapper installed on the slot (the SoftDevice's guard of
        # CCM/AAR) stays in place when ENABLE rebinds the enabled block's methods.
        w = vars(self).get("write")
        wrapped = w is not None and getattr(w, "__self__", None) is not self
        super()._set_enable(value & 0x3)       # ENABLE is a 2-bit field
        if wrapped:
            self.write = w
            self.ops_changed()

    def write_op(self, offset: int):
        w = vars(self).get("write")
        if w is not None and getattr(w, "__self__", None) is not self:
            return None                        # every write through the wrapper
        return super().write_op(offset)
