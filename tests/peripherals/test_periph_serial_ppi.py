"""PPI at the shared-ID slots (UART0/UARTE0, SPIM/TWIM, SPIM2) and the UART/UARTE
byte times of the PS's BAUDRATE tables: firmware/tests/periph_serial_ppi.c
(Zephyr's UARTE ENDTX -> PPI -> STOPTX, SPIM/TWIM events and tasks through
PPI), register-level checks, and companions that break each part."""
import pytest

from conftest import assert_firmware_passed, run_fw
from emu.peripherals import serial, uart
from emu.soc.nrf52832 import Nrf52832

U, SPIM0, PPI, EGU0 = 0x40002000, 0x40003000, 0x4001F000, 0x40014000
FW = "periph_serial_ppi"


def _fails(fw):
    m, _ = run_fw(fw(FW), 100)
    return [l for l in m.console_text().splitlines() if l.startswith("FAIL")]


def test_firmware_passes(fw):
    m, r = run_fw(fw(FW), 100)
    assert_firmware_passed(m, r, min_passes=15)
    assert m.board.uart_output() == b"\n\n\n"        # UARTE twice, UART once, on P0.06


def test_firmware_same_on_both_paths(fw):
    a, _ = run_fw(fw(FW), 100)
    b, _ = run_fw(fw(FW), 100, pure_python=True)
    assert (a.cpu.cycles, a.clock.now, a.console_text()) == \
        (b.cpu.cycles, b.clock.now, b.console_text())


def test_without_ppi_tasks_into_the_slot_zephyr_waits_forever(fw, monkeypatch):
    """Companion: a PPI task at a shared-ID slot does nothing (the old defect)."""
    monkeypatch.setattr(serial.SerialMux, "trigger", lambda self, offset: None)
    fails = _fails(fw)
    assert any("TXSTOPPED through PPI" in f for f in fails), fails
    assert any("spim2" in f for f in fails), fails


def test_without_slot_events_on_ppi_the_chain_breaks(fw, monkeypatch):
    """Companion: the variants keep their events to themselves (the old defect)."""
    adopt = serial.SerialMux.adopt

    def private(self, variants):
        adopt(self, variants)
        for v in variants.values():
            v.event_listeners = []
    monkeypatch.setattr(serial.SerialMux, "adopt", private)
    fails = _fails(fw)
    assert any("TXSTOPPED through PPI" in f for f in fails), fails
    assert any("spim0 END -> egu0" in f for f in fails), fails
    assert any("twim1 ERROR -> egu0" in f for f in fails), fails


def test_register_formula_instead_of_the_table_is_detected(fw, monkeypatch):
    """Companion: BAUDRATE x 16 MHz / 2^32 (115 203 / 114 743 baud) instead of
    the PS's actual rates."""
    monkeypatch.setattr(uart, "bit_ticks", lambda rates, value: None)
    fails = _fails(fw)
    assert any("115108 baud" in f for f in fails), fails
    assert any("115942 baud" in f for f in fails), fails


# -- register level ----------------------------------------------------------
def w(soc, addr, v):
    soc.peripheral_at(addr).write(addr & 0xFFF, v)


def r(soc, addr):
    return soc.peripheral_at(addr).read(addr & 0xFFF)


@pytest.mark.parametrize("pure", [False, True])
def test_uarte_endtx_to_stoptx_at_the_byte_time(pure):
    soc = Nrf52832(force_python_counter=pure)
    soc.cpu.write_mem(0x20004000, b"Z")
    w(soc, U + 0x524, 0x01D60000)            # UARTE Baud115200: 115 108 baud
    w(soc, U + 0x50C, 6)
    w(soc, U + 0x500, 8)
    w(soc, PPI + 0x510, U + 0x120)           # CH[0]: ENDTX -> STOPTX
    w(soc, PPI + 0x514, U + 0x00C)
    w(soc, PPI + 0x504, 1)
    w(soc, U + 0x544, 0x20004000); w(soc, U + 0x548, 1)
    t0 = soc.clock.now
    w(soc, U + 0x008, 1)
    frame = 10 * round(512_000_000 / 115108)     # 10 bits of 1 / 115 108 s
    soc.clock.advance_to(t0 + frame - 1)         # one tick short of the frame
    assert r(soc, U + 0x120) == 0 and r(soc, U + 0x158) == 0
    soc.clock.advance_to(t0 + frame)
    assert r(soc, U + 0x120) == 1 and r(soc, U + 0x158) == 1     # ENDTX, TXSTOPPED


def test_ppi_task_while_the_slot_is_disabled_is_ignored():
    soc = Nrf52832()
    soc.peripheral_at(U).trigger(0x008)          # STARTTX, UART0 disabled
    soc.peripheral_at(SPIM0).trigger(0x010)      # START, serial0 disabled
    assert r(soc, U + 0x150) == 0 and r(soc, SPIM0 + 0x14C) == 0


def test_variant_events_reach_ppi_at_the_slot_address():
    soc = Nrf52832()
    seen = []
    soc.peripheral_at(SPIM0).event_listeners.append(lambda p, off: seen.append(p.base + off))
    w(soc, SPIM0 + 0x500, 7)                     # SPIM
    w(soc, SPIM0 + 0x010, 1)                     # START: STARTED at once
    assert SPIM0 + 0x14C in seen


@pytest.mark.parametrize("value,baud", [(0x0004F000, 1205), (0x01D7E000, 115942),
                                        (0x075F7000, 470588), (0x10000000, 1000000)])
def test_uart_byte_time_from_the_table(value, baud):
    soc = Nrf52832()
    w(soc, U + 0x524, value)
    w(soc, U + 0x50C, 6)
    w(soc, U + 0x500, 4)                         # legacy UART
    w(soc, U + 0x008, 1)
    t0 = soc.clock.now
    w(soc, U + 0x51C, 0x55)
    frame = 10 * round(512_000_000 / baud)
    soc.clock.advance_to(t0 + frame - 1)
    assert r(soc, U + 0x11C) == 0
    soc.clock.advance_to(t0 + frame)
    assert r(soc, U + 0x11C) == 1


def test_value_outside_the_table_uses_the_register_formula():
    soc = Nrf52832()
    w(soc, U + 0x524, 0x01000000)                # not in the table: 62 500 baud by formula
    w(soc, U + 0x50C, 6)
    w(soc, U + 0x500, 4)
    w(soc, U + 0x008, 1)
    t0 = soc.clock.now
    w(soc, U + 0x51C, 0x55)
    soc.clock.advance_to(t0 + 10 * 8192 - 1)     # 512 MHz / 62 500 = 8192 ticks a bit
    assert r(soc, U + 0x11C) == 0
    soc.clock.advance_to(t0 + 10 * 8192)
    assert r(soc, U + 0x11C) == 1


def test_legacy_spi_ready_through_ppi_at_its_time_and_lazy_otherwise():
    """The legacy SPI completes polled bytes lazily; a PPI in use for other
    slots leaves it so, a channel from its READY makes it fire on time."""
    soc = Nrf52832()
    spi = soc.peripheral_at(SPIM0).variant(1)
    w(soc, PPI + 0x510, 0x40008140)              # CH[0]: TIMER0 COMPARE[0] -> EGU0 TRIGGER[1]
    w(soc, PPI + 0x514, EGU0 + 4)
    w(soc, PPI + 0x504, 1)
    w(soc, SPIM0 + 0x524, 0x80000000)            # 8 MHz: a byte in 1 us
    w(soc, SPIM0 + 0x500, 1)                     # legacy SPI
    w(soc, SPIM0 + 0x51C, 0xA5)
    assert not spi._done.pending                 # lazy: PPI routes nothing from this slot
    soc.clock.advance_to(soc.clock.now + 2 * 512)
    r(soc, SPIM0 + 0x518)                        # RXD: READY seen, FIFO emptied
    w(soc, SPIM0 + 0x108, 0)
    w(soc, PPI + 0x518, SPIM0 + 0x108)           # CH[1]: SPI READY -> EGU0 TRIGGER[0]
    w(soc, PPI + 0x51C, EGU0)
    w(soc, PPI + 0x504, 2)
    t0 = soc.clock.now
    w(soc, SPIM0 + 0x51C, 0x5A)
    assert spi._done.pending
    soc.clock.advance_to(t0 + 512 - 1)           # one tick short of the byte
    assert r(soc, EGU0 + 0x100) == 0
    soc.clock.advance_to(t0 + 512)               # no SPI access: READY reaches PPI on time
    assert r(soc, EGU0 + 0x100) == 1
