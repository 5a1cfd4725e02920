"""CCM and AAR (emu/peripherals/ccm_aar.py, PS v1.4 sections 18 and 17).

The cipher against the Bluetooth Core specification's sample data (Vol 6
Part C 1 "Encryption sample data": the session key, the IVs and the
encrypted LL_START_ENC_RSP and data packets, www.bluetooth.com Core 5.4
"low-energy-controller/sample-data"; Vol 3 Part H 2.2.2's ah() sample), the
registers and timing at register level, and firmware/tests/periph_ccm_aar.c
driving both blocks as NimBLE's nRF52 PHY does (on both bus paths), with
companions that break one detail of the model and see the firmware fail.
"""
import pytest

from conftest import assert_firmware_passed, run_fw
from emu import Machine
from emu.peripherals import ccm_aar
from emu.peripherals.ccm_aar import (T_AAR_IRK, T_AAR_START, T_KSGEN, ah, ble_nonce,
                                     ccm_decrypt, ccm_encrypt)
from emu.soc.nrf52832 import Nrf52832
from helpers.periph import soc_with

US = 512
SLOT = 0x4000F000

# Core spec Vol 6 Part C 1
LTK = bytes.fromhex("4C68384139F574D836BCF34E9DFB01BF")          # MSO first
SKD = bytes.fromhex("0213243546576879" "ACBDCEDFE0F10213")      # SKDs || SKDm, MSO first
SK = bytes.fromhex("99AD1B5226A37E3E058E3B8E27C2C666")
# IV = IVm || IVs as the link layer sends them: IVm 0xBADCAB24, IVs 0xDEAFBABE, LSO first
IV = bytes.fromhex("24ABDCBA" "BEBAAFDE")
DATA1 = bytes.fromhex("1700636465666768696a6b6c6d6e6f7071313233343536373839 30".replace(" ", ""))
DATA2 = bytes.fromhex("17003736353433323130414243444546474849 4a4b4c4d4e4f5051".replace(" ", ""))
# (direction, counter, header, plaintext, payload + MIC on the air)
SAMPLES = [
    (1, 0, 0x0F, b"\x06", "9fcda7f448"),                       # LL_START_ENC_RSP1, central
    (0, 0, 0x07, b"\x06", "a34c13a415"),                       # LL_START_ENC_RSP2, peripheral
    (1, 1, 0x0E, DATA1, "7a70d66415226df26b17839a060405596bd6564f796b5b9ce6ff32f75a6d33"),
    (0, 1, 0x06, DATA2, "f38881e7bd94c9c369b9a66846dd4786aa8c39ce540d0dae3adcdf89b96088"),
]
# Core spec Vol 3 Part H 2.2.2 / Appendix D: ah(IRK, prand)
IRK = bytes.fromhex("EC0234A357C8AD05341010A60A397D9B")
PRAND, HASH = 0x708194, 0x0DFBAA


# -- the cipher ---------------------------------------------------------------------
def test_session_key_and_ah_samples():
    from emu.peripherals.ecb import aes128_ecb
    assert aes128_ecb(LTK, SKD) == SK        # the key byte order the CCM and ECB share
    assert ah(IRK, PRAND) == HASH


@pytest.mark.parametrize("direction,counter,header,plain,air", SAMPLES)
def test_core_spec_encrypted_packets(direction, counter, header, plain, air):
    nonce = ble_nonce(counter, direction, IV)
    assert ccm_encrypt(SK, nonce, header, plain).hex() == air
    assert ccm_decrypt(SK, nonce, header, bytes.fromhex(air)) == (plain, True)
    # NESN, SN and MD are not authenticated; the direction and counter are
    assert ccm_decrypt(SK, nonce, header ^ 0x1C, bytes.fromhex(air)) == (plain, True)
    assert not ccm_decrypt(SK, ble_nonce(counter, direction ^ 1, IV), header,
                           bytes.fromhex(air))[1]
    assert not ccm_decrypt(SK, ble_nonce(counter + 1, direction, IV), header,
                           bytes.fromhex(air))[1]


def test_nonce_layout():
    n = ble_nonce((1 << 39) - 2, 1, IV)
    assert n == bytes([0xFE, 0xFF, 0xFF, 0xFF, 0xFF]) + IV    # counter 39 bits, direction bit 7
    assert ble_nonce(1 << 39, 0, IV)[:5] == bytes(5)          # the 40th bit is not the counter's


# -- register level -----------------------------------------------------------------
CNF, IN, OUT, BACK = 0x20001000, 0x20001100, 0x20001200, 0x20001300


def _soc_ccm(direction=1, counter=0):
    soc, s = soc_with("ccm_aar")
    soc.cpu.write_mem(CNF, SK + counter.to_bytes(8, "little") + bytes([direction]) + IV)
    for off, v in ((0x500, 2), (0x508, CNF), (0x50C, IN), (0x510, OUT)):
        s.write(off, v)
    return soc, s


def test_encrypt_with_shortcut_timing_and_interrupt():
    soc, s = _soc_ccm()
    soc.cpu.write_mem(IN, bytes([0x0F, 1, 0, 6]))
    s.write(0x504, 1 << 24)                      # encryption, 1 Mbit, extended length
    s.write(0x200, 1)                            # SHORTS ENDKSGEN_CRYPT
    s.write(0x304, 2)                            # INTENSET ENDCRYPT
    t0 = soc.clock.now
    s.write(0x000, 1)                            # KSGEN
    soc.clock.advance_to(t0 + T_KSGEN - 1)       # one tick short of the key stream
    assert s.read(0x100) == 0
    soc.clock.advance_to(t0 + T_KSGEN)
    assert s.read(0x100) == 1 and s.read(0x104) == 0
    # the packet is in RAM from CRYPT on (a RADIO START may read it now)
    assert bytes(soc.cpu.read_mem(OUT, 8)).hex() == "0f05009fcda7f448"
    end = t0 + T_KSGEN + (2 + 5) * 8 * US        # header, length, payload, MIC at 1 Mbit
    soc.clock.advance_to(end - 1)
    assert s.read(0x104) == 0 and not (soc.cpu.irq_level >> 15) & 1
    soc.clock.advance_to(end)
    assert s.read(0x104) == 1 and (soc.cpu.irq_level >> 15) & 1
    s.write(0x104, 0)                            # clearing the event drops the line
    assert not (soc.cpu.irq_level >> 15) & 1


def test_decrypt_by_radio_address_through_ppi():
    """NimBLE's receive path: KSGEN by the CPU, CRYPT from RADIO ADDRESS
    through the PPI's fixed channel 25; MICSTATUS; a tampered packet."""
    soc, s = _soc_ccm(direction=1, counter=1)
    soc.cpu.write_mem(IN, bytes([0x0E, 31, 0]) + bytes.fromhex(SAMPLES[2][4]))
    s.write(0x504, (1 << 24) | (1 << 16) | 1)    # decryption at 2 Mbit
    s.write(0x510, BACK)
    soc.peripherals["ppi"].write(0x504, 1 << 25)   # CHENSET: ADDRESS -> CRYPT
    s.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + 80 * US)
    assert s.read(0x100) == 1
    t = soc.clock.now
    soc.peripherals["radio"].fire(0x104)         # EVENTS_ADDRESS
    assert bytes(soc.cpu.read_mem(BACK, 3 + 27)) == bytes([0x0E, 27, 0]) + DATA1
    soc.clock.advance_to(t + (2 + 31) * 4 * US - 1)
    assert s.read(0x104) == 0 and s.read(0x400) == 0   # MICSTATUS comes with ENDCRYPT
    soc.clock.advance_to(t + (2 + 31) * 4 * US)
    assert s.read(0x104) == 1 and s.read(0x400) == 1
    soc.cpu.write_mem(IN + 3 + 30, b"\x00")      # a MIC octet changed
    s.write(0x104, 0)
    s.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + 80 * US)
    soc.peripherals["radio"].fire(0x104)
    soc.clock.advance_to(soc.clock.now + 300 * US)
    assert s.read(0x104) == 1 and s.read(0x400) == 0
    assert bytes(soc.cpu.read_mem(BACK + 3, 27)) == DATA1  # the plaintext all the same


def test_errors_stop_and_empty_packets():
    soc, s = _soc_ccm()
    s.write(0x004, 1)                            # CRYPT with no key stream
    assert s.read(0x108) == 1
    s.write(0x108, 0)
    s.write(0x000, 1)
    s.write(0x008, 1)                            # STOP during KSGEN: no event ever
    soc.clock.advance_to(soc.clock.now + 100 * US)
    assert s.read(0x100) == 0 and s.read(0x108) == 0
    soc.cpu.write_mem(IN, bytes([0x01, 0, 0]))
    s.write(0x504, 0)                            # encryption, default length
    s.write(0x200, 1)
    s.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + T_KSGEN + 2 * 8 * US)
    assert s.read(0x104) == 1 and bytes(soc.cpu.read_mem(OUT, 3)) == bytes([1, 0, 0])
    s.write(0x50C, 0x1000)                       # flash: EasyDMA cannot read it
    s.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + 100 * US)
    assert s.read(0x108) == 1


def test_shared_registers_and_enable():
    soc = Nrf52832()
    s = soc.peripherals["ccm_aar"]
    assert s.read(0x504) == 1                    # MODE/NIRK reset value, both disabled
    s.write(0x500, 2)
    s.write(0x504, 0x01010001)
    s.write(0x50C, 0x20000040)
    s.write(0x500, 3)                            # AAR: the same register file
    assert s.read(0x500) == 3 and s.read(0x504) == 1 and s.read(0x508) == 0
    assert soc.bus.register_name(SLOT + 0x504) == "ccm_aar.AAR NIRK"
    s.write(0x500, 0)
    s.write(0x000, 1)                            # a task while disabled: ignored
    assert s.read(0x100) == 0
    s.write(0x500, 6)                            # ENABLE is two bits: 6 selects the CCM
    assert s.active is s.variants[2] and s.read(0x500) == 2
    assert s.read(0x50C) == 0x20000040           # INPTR kept while the AAR had the slot


def test_aar_resolves_at_index_and_timing():
    soc = Nrf52832()
    s = soc.peripherals["ccm_aar"]
    irks = bytes(range(16)) + bytes(range(16, 32)) + IRK
    addr = HASH.to_bytes(3, "little") + PRAND.to_bytes(3, "little")
    soc.cpu.write_mem(0x20002000, irks)
    soc.cpu.write_mem(0x20002100, bytes([0x40, 6, 0]) + addr)
    for off, v in ((0x500, 3), (0x504, 3), (0x508, 0x20002000), (0x510, 0x20002100),
                   (0x304, 7)):
        s.write(off, v)
    t0 = soc.clock.now
    s.write(0x000, 1)                            # START
    soc.clock.advance_to(t0 + T_AAR_START + 3 * T_AAR_IRK - 1)   # one tick short of IRK 2
    assert s.read(0x100) == 0
    soc.clock.advance_to(t0 + T_AAR_START + 3 * T_AAR_IRK)
    assert (s.read(0x100), s.read(0x104), s.read(0x108), s.read(0x400)) == (1, 1, 0, 2)
    assert (soc.cpu.irq_level >> 15) & 1
    s.write(0x100, 0)
    s.write(0x104, 0)
    soc.cpu.write_mem(0x20002100 + 3, bytes([addr[0] ^ 1]))
    s.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + T_AAR_START + 3 * T_AAR_IRK)
    assert (s.read(0x100), s.read(0x104), s.read(0x108), s.read(0x400)) == (1, 0, 1, 2)


def test_model_state_round_trip_mid_operation():
    soc, s = _soc_ccm()
    soc.cpu.write_mem(IN, bytes([0x0F, 1, 0, 6]))
    s.write(0x504, 1 << 24)
    s.write(0x200, 1)
    s.write(0x000, 1)
    soc.clock.advance_to(soc.clock.now + T_KSGEN)   # CRYPT running, ENDCRYPT pending
    st = s.save_state()
    soc2 = Nrf52832()
    soc2.clock.advance_to(soc.clock.now)
    soc2.cpu.write_mem(0x20000000, bytes(soc.cpu.read_mem(0x20000000, 0x4000)))
    s2 = soc2.peripherals["ccm_aar"]
    s2.load_state(st)
    assert s2.active is s2.variants[2] and s2.read(0x100) == 1
    soc.clock.advance_to(soc.clock.now + 7 * 8 * US)
    soc2.clock.advance_to(soc2.clock.now + 7 * 8 * US)
    assert s.read(0x104) == s2.read(0x104) == 1


# -- firmware -------------------------------------------------------------------------
FW = "periph_ccm_aar"


@pytest.mark.parametrize("pure", [False, True])
def test_firmware_drives_ccm_and_aar_like_nimble(fw, pure):
    m, r = run_fw(fw(FW), 20, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=40)


def test_firmware_same_on_both_paths(fw):
    a, _ = run_fw(fw(FW), 20)
    b, _ = run_fw(fw(FW), 20, pure_python=True)
    assert (a.cpu.cycles, a.clock.now, a.console_text()) == \
        (b.cpu.cycles, b.clock.now, b.console_text())


def test_snapshot_with_encryption_in_flight(fw, tmp_path):
    from helpers.snapshot import continue_and_compare
    m = Machine(fw("periph_ccm_aar"), board="nrf52832", flash_file=None)
    ccm = m.soc.peripherals["ccm_aar"].variants[2]
    assert m.run_until(lambda: ccm._crypt_ev.pending, timeout_ms=5, poll_ms=0.002)
    r = continue_and_compare(m, str(tmp_path / "ccm.snap"), ms=3)   # both run to the end
    text = r.console_text()
    assert r.exit_code == 0 and "FAIL" not in text and text.count("PASS ") >= 40, text


def _fails(fw):
    m, _ = run_fw(fw(FW), 20)
    return [line for line in m.console_text().splitlines() if line.startswith("FAIL")]


def test_direction_bit_elsewhere_is_detected(fw, monkeypatch):
    """Companion: the direction bit as bit 0 of the fifth nonce octet."""
    def wrong(counter, direction, iv):
        n = bytearray((counter & ((1 << 39) - 1)).to_bytes(5, "little"))
        n[4] |= direction & 1
        return bytes(n) + bytes(iv)
    monkeypatch.setattr(ccm_aar, "ble_nonce", wrong)
    fails = _fails(fw)
    assert any("spec LL_START_ENC_RSP1" in f for f in fails), fails
    assert not any("tampered" in f for f in fails)   # its own round trips still check


def test_unmasked_header_is_detected(fw, monkeypatch):
    """Companion: NESN/SN/MD authenticated (no 0xE3 mask): the sample's header
    0x0F has NESN and SN set."""
    monkeypatch.setattr(ccm_aar, "AAD_MASK", 0xFF)
    fails = _fails(fw)
    assert any("spec LL_START_ENC_RSP1" in f for f in fails), fails


def test_address_read_at_addrptr_is_detected(fw, monkeypatch):
    """Companion: the AAR reading AdvA at ADDRPTR instead of ADDRPTR + 3."""
    monkeypatch.setattr(ccm_aar, "ADDR_OFFSET", 0)
    fails = _fails(fw)
    assert any("RESOLVED" in f for f in fails) and any("STATUS = IRK index 2" in f
                                                       for f in fails), fails


def test_hash_byte_order_is_detected(fw, monkeypatch):
    """Companion: the hash compared most significant octet first."""
    monkeypatch.setattr(ccm_aar, "ah", lambda irk, prand: int.from_bytes(
        ah(irk, prand).to_bytes(3, "big"), "little"))
    fails = _fails(fw)
    assert any("STATUS = IRK index 2" in f for f in fails), fails


def test_softdevice_guard_stays_when_the_ccm_is_enabled(fw, caplog):
    """CCM/AAR is a SoftDevice-protected slot: its write guard (emu/softdevice/
    soc.py) must survive ENABLE rebinding the slot to the CCM."""
    import logging

    import emu.softdevice as sdm
    from helpers.softdevice import enable
    m = Machine(fw("sd_soc"), board="nrf52832")
    sd = sdm.attach(m)
    enable(m, sd)
    caplog.set_level(logging.WARNING, logger="emu.softdevice")
    m.cpu.write32(SLOT + 0x500, 2)              # ENABLE = CCM, through the guard
    m.cpu.write32(SLOT + 0x504, 0)              # MODE: still through the guard
    s = m.soc.peripherals["ccm_aar"]
    assert s.active is s.variants[2] and s.read(0x504) == 0
    msgs = [r.getMessage() for r in caplog.records if "CCM/AAR" in r.getMessage()]
    assert len(msgs) == 2 and "+0x500" in msgs[0] and "+0x504" in msgs[1], msgs


def test_real_infinitime_encrypted_link_through_the_ccm(monkeypatch):
    """End to end: the phone's central (emu/phone/link.py, its own AES-CCM) pairs
    with real InfiniTime, whose NimBLE encrypts and decrypts every packet
    through this CCM (KSGEN by the CPU, CRYPT from RADIO ADDRESS through PPI
    channel 25 on receive; KSGEN -> CRYPT by SHORTS on transmit); GATT reads
    work over the encrypted link and every non-empty packet's MIC checks.
    Skipped without the InfiniTime image."""
    from helpers.infinitime import infinitime_image
    image = infinitime_image()
    seen = {"encrypt": 0, "mic ok": 0, "mic failed": 0}
    crypt = ccm_aar.Ccm._crypt

    def counting(self):
        crypt(self)
        if not self.values[0x504] & 1:
            seen["encrypt"] += 1
        elif self._mic == 1:
            seen["mic ok"] += 1
        elif self.soc.cpu.read_mem(self.values[0x50C] + 1, 1)[0]:
            seen["mic failed"] += 1
    monkeypatch.setattr(ccm_aar.Ccm, "_crypt", counting)
    m = Machine(image, flash_file=None)
    m.phone.connect()
    gp = m.phone.gatt
    assert len(gp.pair()) == 16
    assert gp.firmware_version() == "1.16.1" and m.phone.battery() == 66
    assert seen["encrypt"] > 0 and seen["mic ok"] > 0 and seen["mic failed"] == 0, seen


# -- the bus keeps an op table per ENABLE value ---------------------------------------
def _switch_and_write(fw, pure, break_select=False):
    """AAR, CCM, AAR again, writing the offset both use (0x508: AAR IRKPTR,
    CCM CNFPTR) each time; returns the values and the offsets resolved."""
    from emu.peripherals.ccm_aar import CcmAar
    m = Machine(fw("periph_ccm_aar"), board="nrf52832", pure_python=pure)
    mux = m.soc.peripherals["ccm_aar"]
    if break_select:
        mux.on_ops_select = lambda key: None      # keeps the table of the last ENABLE
    resolved = []
    orig = CcmAar.write_op

    def counting(self, offset):
        resolved.append((self.enable, offset))
        return orig(self, offset)
    CcmAar.write_op = counting
    try:
        for enable, value in ((3, 0x20001000), (2, 0x20002000), (3, 0x20003000),
                              (2, 0x20004000)):
            m.cpu.write32(SLOT + 0x500, enable)
            m.cpu.write32(SLOT + 0x508, value)
    finally:
        CcmAar.write_op = orig
    return mux.variants[3].values[0x508], mux.variants[2].values[0x508], resolved


@pytest.mark.parametrize("pure", [False, True])
def test_ops_per_enable_value_resolved_once_and_kept_apart(fw, pure):
    """NimBLE switches CCM/AAR between AAR and off ~170 times an emulated
    second: the bus keeps the ops resolved under each ENABLE value (Slot.select
    in C, its Python twin) instead of resolving every offset again, and an
    op resolved under one value never serves another."""
    aar, ccm, resolved = _switch_and_write(fw, pure)
    assert (aar, ccm) == (0x20003000, 0x20004000)
    assert resolved.count((3, 0x508)) == 1 and resolved.count((2, 0x508)) == 1, resolved


@pytest.mark.parametrize("pure", [False, True])
def test_one_table_for_every_enable_value_mixes_the_blocks(fw, pure):
    """Companion: without the switch of tables, the CCM's CNFPTR write goes
    through the op resolved for the AAR's IRKPTR."""
    aar, ccm, _ = _switch_and_write(fw, pure, break_select=True)
    assert (aar, ccm) != (0x20003000, 0x20004000)
