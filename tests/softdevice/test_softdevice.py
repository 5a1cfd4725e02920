"""The emulated S132 SoftDevice API, driven by firmware/tests/sd_nus.c (the
calls and structures wasp-os uses) and the host central in
emu/softdevice/central.py."""
from __future__ import annotations

from conftest import assert_firmware_passed

from emu import Machine
from emu.clock import TICKS_PER_MS
import emu.softdevice as sdm
from emu.softdevice.central import Central, NusClient


def _boot(fw):
    m = Machine(fw("sd_nus"), board="nrf52832")
    sd = sdm.attach(m)
    assert m.run_until(lambda: sd.advertising, timeout_ms=50), m.console_text()
    return m, sd


def test_nus_echo_with_flow_control(fw):
    m, sd = _boot(fw)
    central = Central(sd)
    nus = NusClient(central)
    assert central.connect(mtu=247)
    assert nus.discover(), "NUS service/characteristics not found by UUID"
    payload = bytes(range(0x20, 0x20 + 90))        # 90 bytes -> 5 writes, 90 notifications
    t0 = m.now
    nus.send(payload)
    assert m.run_until(lambda: bytes(nus.received) == payload, timeout_ms=3000), \
        (bytes(nus.received), m.console_text())
    # paced by connection events (15 ms): 5 writes cannot take less than 75 ms
    assert m.now - t0 >= 5 * 15 * TICKS_PER_MS
    assert all(len(d) == 1 for h, d in central.notifications)
    central.disconnect()
    r = m.run(ms=200)
    assert_firmware_passed(m, r, min_passes=30)
    assert "ECHOED 90 COMPLETED 90" in m.console_text()


def test_notifications_dropped_without_cccd(fw):
    """Without the CCCD write the app sees notify_on = 0 and never calls hvx."""
    m, sd = _boot(fw)
    central = Central(sd)
    nus = NusClient(central)
    assert central.connect()
    nus.rx_handle = next(a.handle for a in sd.attrs.values() if a.kind == "value" and a.uuid == 2)
    nus.send(b"hello")
    m.run(ms=100)
    assert nus.received == b""
    assert sd.calls[0xAE] == 1          # only the pre-connection hvx call


def test_reconnect_after_disconnect(fw):
    m, sd = _boot(fw)
    central = Central(sd)
    assert central.connect()
    m.run(ms=50)
    assert sd.connected and not sd.advertising
    central.disconnect()
    m.run(ms=50)
    assert not sd.connected
    # firmware exits after the disconnect; the SoftDevice no longer advertises
    assert not central.can_connect()


def test_unknown_svc_logged_once_with_name(fw, caplog):
    m, sd = _boot(fw)
    msgs = [r.getMessage() for r in caplog.records if "not modelled" in r.getMessage()]
    assert any("0xf0" in s for s in msgs), msgs
    assert sdm.svc_name(0x61) == "sd_ble_evt_get"


def _enable_with(fw, irq, prio_byte):
    """sd_nus with IRQ ``irq`` already enabled at IPR byte ``prio_byte`` when
    it calls sd_softdevice_enable; returns the machine after 20 ms."""
    m = Machine(fw("sd_nus"), board="nrf52832")
    sdm.attach(m)
    m.cpu.irq_enabled |= 1 << irq
    m.cpu.prio[16 + irq] = prio_byte & m.cpu.prio_mask
    m.run(ms=20)
    return m


def test_enable_refuses_a_reserved_interrupt_already_enabled(fw):
    m = _enable_with(fw, 11, 0xC0)               # RTC0 belongs to the SoftDevice
    assert "FAIL softdevice_enable: got 0x00001001" in m.console_text()
    assert not m.softdevice.enabled


def test_enable_refuses_an_app_interrupt_at_a_softdevice_priority(fw):
    for level in (0, 1, 4):
        m = _enable_with(fw, 9, level << 5)      # TIMER1 at priority 0/1/4
        assert "FAIL softdevice_enable: got 0x00001001" in m.console_text(), level
    m = _enable_with(fw, 9, 6 << 5)              # priority 6 is the application's
    assert "PASS softdevice_enable" in m.console_text()
    assert m.softdevice.enabled
