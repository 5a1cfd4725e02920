"""The emulated S132 SoC library (emu/softdevice/soc.py): firmware/tests/sd_soc.c
calls every SVC as nRF5 SDK code does; the Python tests below drive the SVC
entry directly for corner cases (BUSY, FORBIDDEN, INVALID_ADDR, lengths,
NOT_ENABLED, the rand pool's fill rate, System OFF) and check determinism
and the resource-rule log."""
from __future__ import annotations

import logging
import re
import struct

import pytest
from conftest import assert_firmware_passed

from emu import Machine
from emu.clock import us
from emu.peripherals.nvmc import T_ERASEPAGE, T_WRITE
import emu.softdevice as sdm
from emu.softdevice import soc
from helpers.softdevice import call, enable

SCRATCH = 0x20008000          # RAM the Python tests use for SVC arguments
PAGE = 0x7F                   # last flash page


def _run_sd_soc(fw, seed=None):
    m = Machine(fw("sd_soc"), board="nrf52832")
    sd = sdm.attach(m)
    if seed is not None:
        m.soc.peripherals["rng"].seed = seed
        m.power_on()
    r = m.run(ms=400)
    return m, sd, r


def _rand_line(m) -> str:
    lines = [l for l in m.console_text().splitlines() if l.startswith("RAND ")]
    assert len(lines) == 1, m.console_text()
    return lines[0]


def test_sd_soc_firmware(fw, caplog):
    caplog.set_level(logging.WARNING, logger="emu.softdevice")
    m, sd, r = _run_sd_soc(fw)
    assert_firmware_passed(m, r, min_passes=110)
    assert m.resets == 1 and "BOOT2 DONE" in m.console_text()
    msgs = [rec.getMessage() for rec in caplog.records]
    # the app's write to NVMC CONFIG and its enabling of RTC0's IRQ are logged, with the symbol
    assert any("NVMC +0x504" in s and "(main+" in s and "HardFault on silicon" in s
               for s in msgs), msgs
    assert any("IRQ 11" in s and "NRF_ERROR_SOC_NVIC_INTERRUPT_NOT_AVAILABLE" in s
               for s in msgs), msgs
    # once each: the guard is not repeated per access
    assert sum("NVMC +0x504" in s for s in msgs) == 1


def test_rand_bytes_are_deterministic(fw):
    m1, _, r1 = _run_sd_soc(fw)
    m2, _, r2 = _run_sd_soc(fw)
    assert r1.ok and r2.ok
    assert _rand_line(m1) == _rand_line(m2)
    assert m1.clock.now == m2.clock.now
    m3, _, r3 = _run_sd_soc(fw, seed=1234)      # another machine seed: other bytes
    assert r3.ok
    assert _rand_line(m3) != _rand_line(m1)


# ---------------------------------------------------------------------------
# SVC-level corner cases (the CPU is not run; time is advanced on the clock)
# ---------------------------------------------------------------------------
@pytest.fixture
def sdm_machine(fw):
    m = Machine(fw("sd_soc"), board="nrf52832")
    sd = sdm.attach(m)
    return m, sd


def flash_word(m, addr: int) -> int:
    return struct.unpack("<I", m.cpu.read_mem(addr, 4))[0]


def test_not_enabled_range(sdm_machine):
    m, sd = sdm_machine
    for num in range(0x2C, 0x4D):               # SOC_SVC_BASE_NOT_AVAILABLE .. sd_temp_get
        assert call(m, sd, num, SCRATCH, 0, 0, 0) == soc.NRF_ERROR_SOFTDEVICE_NOT_ENABLED, \
            sdm.svc_name(num)
    # 0x20-0x2B are available with the SoftDevice disabled
    assert call(m, sd, 0x20, SCRATCH) == 0
    assert call(m, sd, 0x27, 0, SCRATCH) == 0
    enable(m, sd)
    assert call(m, sd, 0x2C, SCRATCH) == 0       # sd_mutex_new
    assert call(m, sd, 0x48, 0) == sdm.NRF_ERROR_NOT_SUPPORTED   # radio timeslot API


def test_flash_busy_then_event_after_erase_time(sdm_machine):
    m, sd = sdm_machine
    enable(m, sd)
    addr = PAGE * 4096
    m.cpu.write_mem(addr, b"\0" * 4)
    t0 = m.clock.now
    assert call(m, sd, 0x28, PAGE) == 0
    assert call(m, sd, 0x28, PAGE) == soc.NRF_ERROR_BUSY
    m.cpu.write_mem(SCRATCH, struct.pack("<I", 0x11223344))
    assert call(m, sd, 0x29, addr, SCRATCH, 1) == soc.NRF_ERROR_BUSY
    # one tick short of the NVMC page erase time: nothing yet
    m.clock.advance_to(t0 + T_ERASEPAGE - 1)
    assert flash_word(m, addr) == 0 and not sd.soc_events
    m.clock.advance_to(t0 + T_ERASEPAGE)
    assert flash_word(m, addr) == 0xFFFFFFFF
    assert list(sd.soc_events) == [soc.NRF_EVT_FLASH_OPERATION_SUCCESS]
    assert m.cpu.pending >> (16 + sdm.SD_EVT_IRQ) & 1          # SWI2 pended
    # the write reads its source when it is performed (the API's warning)
    t1 = m.clock.now
    assert call(m, sd, 0x29, addr, SCRATCH, 1) == 0
    assert m.cpu.read32(0x4001E400) == 0                     # NVMC READY: busy
    m.cpu.write_mem(SCRATCH, struct.pack("<I", 0x0F0F0F0F))
    m.clock.advance_to(t1 + T_WRITE - 1)
    assert flash_word(m, addr) == 0xFFFFFFFF
    m.clock.advance_to(t1 + T_WRITE)
    assert flash_word(m, addr) == 0x0F0F0F0F
    assert len(sd.soc_events) == 2
    # the NVMC's READY read 0 for exactly that window
    assert m.soc.peripherals["nvmc"].busy_until == t1 + T_WRITE


def test_flash_argument_errors(sdm_machine):
    m, sd = sdm_machine
    enable(m, sd)
    E = soc
    assert call(m, sd, 0x28, 0x25) == E.NRF_ERROR_FORBIDDEN          # last SoftDevice page
    assert call(m, sd, 0x28, 128) == E.NRF_ERROR_INVALID_ADDR        # past 512 KiB
    assert call(m, sd, 0x29, 0x25FFC, SCRATCH, 1) == E.NRF_ERROR_FORBIDDEN
    assert call(m, sd, 0x29, 0x7F001, SCRATCH, 1) == E.NRF_ERROR_INVALID_ADDR
    assert call(m, sd, 0x29, 0x7F000, SCRATCH + 2, 1) == E.NRF_ERROR_INVALID_ADDR
    assert call(m, sd, 0x29, 0x7FFFC, SCRATCH, 2) == E.NRF_ERROR_INVALID_ADDR   # runs off the end
    assert call(m, sd, 0x29, 0x7F000, SCRATCH, 0) == E.NRF_ERROR_INVALID_LENGTH
    assert call(m, sd, 0x29, 0x70000, SCRATCH, 1025) == E.NRF_ERROR_INVALID_LENGTH
    assert sd.flash_op is None                                      # none of those started
    assert call(m, sd, 0x29, 0x26000, SCRATCH, 1024) == 0            # first app page, full page


def test_flash_disabled_is_synchronous_without_event(sdm_machine):
    m, sd = sdm_machine
    m.cpu.write_mem(SCRATCH, struct.pack("<II", 0xA5A5A5A5, 0xFFFF0000))
    assert call(m, sd, 0x28, PAGE) == 0
    assert call(m, sd, 0x29, PAGE * 4096, SCRATCH, 2) == 0
    assert flash_word(m, PAGE * 4096) == 0xA5A5A5A5
    assert flash_word(m, PAGE * 4096 + 4) == 0xFFFF0000
    assert not sd.soc_events and sd.flash_op is None


def test_rand_pool_fills_at_rng_rate(sdm_machine):
    m, sd = sdm_machine
    enable(m, sd)
    t0 = m.clock.now
    assert call(m, sd, 0x31, SCRATCH, 1) == soc.NRF_ERROR_SOC_RAND_NOT_ENOUGH_VALUES
    m.clock.advance_to(t0 + 10 * soc.T_RAND_BYTE - 1)     # one tick short of 10 bytes
    assert call(m, sd, 0x30, SCRATCH) == 0 and m.cpu.read_mem(SCRATCH, 1)[0] == 9
    m.clock.advance_to(t0 + 10 * soc.T_RAND_BYTE)
    assert call(m, sd, 0x31, SCRATCH, 11) == soc.NRF_ERROR_SOC_RAND_NOT_ENOUGH_VALUES
    assert call(m, sd, 0x31, SCRATCH, 10) == 0
    assert call(m, sd, 0x30, SCRATCH) == 0 and m.cpu.read_mem(SCRATCH, 1)[0] == 0
    m.clock.advance_to(m.clock.now + us(10_000))                 # capped at the capacity
    assert call(m, sd, 0x30, SCRATCH) == 0
    assert m.cpu.read_mem(SCRATCH, 1)[0] == soc.RAND_POOL_CAPACITY


def test_power_system_off(sdm_machine):
    m, sd = sdm_machine
    enable(m, sd)
    call(m, sd, 0x33)
    assert m.system_off and m.soc.peripherals["clock_power"].system_off


def test_guards_only_while_enabled(sdm_machine):
    m, sd = sdm_machine
    nvmc = m.soc.peripherals["nvmc"]
    rtc1 = m.soc.peripherals["rtc1"]
    assert "write" not in vars(nvmc)                # disabled: the bus calls the model directly
    enable(m, sd)
    assert "write" in vars(nvmc) and "write_word" in vars(m.soc.scs)
    assert "write" not in vars(rtc1)                # RTC1 is the application's
    state = sd.save_state()
    assert call(m, sd, 0x11) == 0                   # sd_softdevice_disable
    assert "write" not in vars(nvmc) and "write_word" not in vars(m.soc.scs)
    sd.load_state(state)                            # a snapshot of an enabled SoftDevice
    assert "write" in vars(nvmc)
    m.system_reset()                                # the SoftDevice resets with the chip
    assert not sd.enabled and "write" not in vars(nvmc)


def test_protected_write_logged_and_performed(sdm_machine, caplog):
    m, sd = sdm_machine
    enable(m, sd)
    caplog.set_level(logging.WARNING, logger="emu.softdevice")
    m.cpu.write32(0x4000051C, 0x42)                  # POWER.GPREGRET directly
    m.cpu.write32(0x4000051C, 0x43)
    assert m.soc.peripherals["clock_power"].values[0x51C] == 0x43
    msgs = [r.getMessage() for r in caplog.records if "CLOCK/POWER/BPROT +0x51c" in r.getMessage()]
    assert len(msgs) == 1 and re.search(r"at pc 0x[0-9a-f]{8}", msgs[0])


# ---------------------------------------------------------------------------
# the firmware notices when the emulator gets it wrong
# ---------------------------------------------------------------------------
def _fails(fw) -> list:
    m, _sd, r = _run_sd_soc(fw)
    return [l for l in m.console_text().splitlines() if l.startswith("FAIL ")]


def test_synchronous_flash_while_enabled_is_detected(fw, monkeypatch):
    """A flash call that completes at once (no erase time, no BUSY) fails the timing checks."""
    def at_once(self, op):
        self._flash_do(op)
        self.post_soc_event(soc.NRF_EVT_FLASH_OPERATION_SUCCESS)
        return soc.NRF_SUCCESS
    monkeypatch.setattr(soc.SocLibrary, "_flash_start", at_once)
    fails = _fails(fw)
    assert any("BUSY" in l for l in fails) and any("not erased yet" in l for l in fails), fails


def test_app_evt_wait_returning_at_once_is_detected(fw, monkeypatch):
    """sd_app_evt_wait as a no-op: the disabled-pending-interrupt check fails."""
    monkeypatch.setattr(soc.SocLibrary, "_sd_app_evt_wait", lambda self, *a: soc.NRF_SUCCESS)
    fails = _fails(fw)
    assert any("does not wake" in l for l in fails), fails


def test_wrong_ecb_byte_order_is_detected(fw, monkeypatch):
    import emu.peripherals.ecb as ecb
    real = ecb.aes128_ecb
    monkeypatch.setattr(ecb, "aes128_ecb", lambda k, b: real(k[::-1], b))
    fails = _fails(fw)
    assert any("FIPS-197" in l for l in fails), fails


def test_reset_reason_not_kept_is_detected(fw, monkeypatch):
    monkeypatch.setattr(soc.SocLibrary, "_sd_power_reset_reason_get",
                        lambda self, p, *a: (self._wr(p, bytes(4)), 0)[1])
    fails = _fails(fw)
    assert any("RESETREAS.SREQ" in l for l in fails), fails


def test_strict_protected_write_calls_the_fault_handler(fw, caplog):
    """strict: the app's write to NVMC CONFIG is not performed; the SoftDevice's
    HardFault handler calls the app's fault handler with NRF_FAULT_ID_APP_MEMACC
    and the peripheral ID (NVMC = 30) as info."""
    m = Machine(fw("sd_soc"), board="nrf52832")
    sd = sdm.attach(m)
    sd.strict = True
    r = m.run(ms=100)
    assert r.reason == "exit" and r.exit_code == 0x77, m.console_text()
    assert "SDFAULT 0x00001001 0x0000001e IPSR 0x00000003" in m.console_text()
    assert m.soc.peripherals["nvmc"].values[0x504] == 0       # not written (it was 0 anyway)
    assert "softdevice_enable" in m.console_text()             # got that far, no further
    assert "PASS ppi_channel_assign 3" not in m.console_text()


@pytest.mark.parametrize("offset", [0x304, 0x308, 0x140, 0x540], ids=hex)
def test_protected_write_through_a_bus_op_is_guarded(sdm_machine, caplog, offset):
    """RTC0 and TIMER0 have bus ops for INTENSET/INTENCLR and events (emu/soc/
    ops.py); with the SoftDevice's guard installed they must go through it
    too (before, RTC0's ops went around the guard: no log, and with strict
    no fault)."""
    m, sd = sdm_machine
    enable(m, sd)
    caplog.set_level(logging.WARNING, logger="emu.softdevice")
    for base, label in ((0x4000B000, "RTC0"), (0x40008000, "TIMER0")):
        m.cpu.write32(base + offset, 0)
        m.cpu.write32(base + offset, 0)
        msgs = [r.getMessage() for r in caplog.records
                if f"{label} +{offset:#x}" in r.getMessage()]
        assert len(msgs) == 1, (label, [r.getMessage() for r in caplog.records])
