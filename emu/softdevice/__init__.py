"""Emulated Nordic S132 v6.1.1 SoftDevice API (SVC layer), for apps at 0x26000.

The real SoftDevice binary is never executed.  Every ``svc #N`` with N >= 0x10
reaches :meth:`SoftDevice.svc`; arguments are in r0-r3 and the return code
goes to r0, as with the real ``svc #N; bx lr`` wrappers in nrf_svc.h.  BLE and
SoC events are queued and delivered like the SoftDevice does: SWI2
(SD_EVT_IRQn, IRQ 22) is pended and the app drains ``sd_evt_get`` /
``sd_ble_evt_get``.  The radio side is a host central (emu/softdevice/central.py)
whose actions take effect at connection events scheduled on the clock.
The SoC library (SVCs 0x20-0x4C: PPI, flash, mutex, rand, power, clock,
sd_app_evt_wait, ECB) and the SoftDevice's resource rules are the
:class:`emu.softdevice.soc.SocLibrary` mixin.

References: S132 SoftDevice v6.1.1 API (nrf_sdm.h, nrf_soc.h, ble.h, ble_gap.h,
ble_gatts.h, ble_gattc.h); S132 SoftDevice Specification v6.x (interrupt
priorities, reserved peripherals).

Not modelled: the link layer and radio timing beyond "one central write and
up to PACKETS_PER_CONN_EVENT notifications per connection event"; security
and bonding (sec_params_reply is accepted, no pairing); indications (sent as
notifications, logged once); the watch as GAP central/observer (scan, connect)
and GATTC; the radio timeslot API and sd_mbr_command (answered NOT_SUPPORTED
and logged once with name and caller); what the SoC library SVCs and the
resource rules leave out is listed in emu/softdevice/soc.py (reserved
peripherals and interrupts are logged, not faulted); RAM protection (MWU);
the exact RAM requirement computation from the cfg_set
calls (a fixed minimum matching wasp-os's configuration, APP_RAM_BASE_MIN);
ADV_SET_TERMINATED (never raised: advertising has no timeout here).
"""
from __future__ import annotations

import collections
import logging
import struct
from typing import Callable, Optional

from emu.clock import TICKS_PER_US
from emu.softdevice.soc import SOC_SVC_BASE_NOT_AVAILABLE, SOC_SVC_NAMES, SVC_SOC_LAST, SocLibrary

log = logging.getLogger("emu.softdevice")

# nrf_error.h / ble_err.h
NRF_SUCCESS = 0
NRF_ERROR_SVC_HANDLER_MISSING = 1
NRF_ERROR_SOFTDEVICE_NOT_ENABLED = 2
NRF_ERROR_INTERNAL = 3
NRF_ERROR_NO_MEM = 4
NRF_ERROR_NOT_FOUND = 5
NRF_ERROR_NOT_SUPPORTED = 6
NRF_ERROR_INVALID_PARAM = 7
NRF_ERROR_INVALID_STATE = 8
NRF_ERROR_INVALID_LENGTH = 9
NRF_ERROR_DATA_SIZE = 12
NRF_ERROR_INVALID_ADDR = 16
NRF_ERROR_BUSY = 17
NRF_ERROR_RESOURCES = 19
BLE_ERROR_INVALID_CONN_HANDLE = 0x3002
BLE_ERROR_INVALID_ATTR_HANDLE = 0x3003
BLE_ERROR_GATTS_SYS_ATTR_MISSING = 0x3401

SD_EVT_IRQ = 22            # SWI2_EGU2
SD_EVT_PRIORITY = 6        # written as IPR byte 0xC0 by sd_softdevice_enable
SD_RESERVED_IRQ_MASK = 0x4200F903
SD_RESERVED_PRIORITIES = (0, 1, 4)      # S132 v6: the application may use 2, 3, 5, 6, 7
NRF_ERROR_SDM_INCORRECT_INTERRUPT_CONFIGURATION = 0x1001   # NRF_ERROR_SDM_BASE_NUM + 1
APP_RAM_BASE_MIN = 0x200039C0   # what wasp-os's configuration needs (S132 6.1.1)
BLE_CONN_HANDLE_INVALID = 0xFFFF
BLE_GAP_ADV_SET_HANDLE_NOT_SET = 0xFF
ATT_MTU_DEFAULT = 23
HVN_TX_QUEUE_SIZE = 16      # notifications the SoftDevice accepts before RESOURCES
PACKETS_PER_CONN_EVENT = 6

# event ids
BLE_GAP_EVT_CONNECTED, BLE_GAP_EVT_DISCONNECTED, BLE_GAP_EVT_CONN_PARAM_UPDATE = 0x10, 0x11, 0x12
BLE_GAP_EVT_ADV_SET_TERMINATED = 0x26
BLE_GATTS_EVT_WRITE, BLE_GATTS_EVT_SYS_ATTR_MISSING = 0x50, 0x52
BLE_GATTS_EVT_EXCHANGE_MTU_REQUEST, BLE_GATTS_EVT_HVN_TX_COMPLETE = 0x55, 0x57
BLE_GATTS_OP_WRITE_REQ, BLE_GATTS_OP_WRITE_CMD = 0x01, 0x02
BLE_GATT_HVX_NOTIFICATION, BLE_GATT_HVX_INDICATION = 1, 2
BLE_UUID_TYPE_BLE = 1
BLE_UUID_CCCD, BLE_UUID_CUDD, BLE_UUID_SCCD = 0x2902, 0x2901, 0x2903
NRF_EVT_FLASH_OPERATION_SUCCESS = 2

SVC_NAMES = {
    0x10: "sd_softdevice_enable", 0x11: "sd_softdevice_disable",
    0x12: "sd_softdevice_is_enabled", 0x13: "sd_softdevice_vector_table_base_set",
    0x18: "sd_mbr_command",
    0x46: "sd_ecb_block_encrypt", 0x47: "sd_ecb_blocks_encrypt",
    0x4B: "sd_evt_get", 0x4C: "sd_temp_get",
    0x60: "sd_ble_enable", 0x61: "sd_ble_evt_get", 0x62: "sd_ble_uuid_vs_add",
    0x63: "sd_ble_uuid_decode", 0x64: "sd_ble_uuid_encode", 0x65: "sd_ble_version_get",
    0x66: "sd_ble_user_mem_reply", 0x67: "sd_ble_opt_set", 0x68: "sd_ble_opt_get",
    0x69: "sd_ble_cfg_set", 0x6A: "sd_ble_uuid_vs_remove",
    0x6C: "sd_ble_gap_addr_set", 0x6D: "sd_ble_gap_addr_get",
    0x6E: "sd_ble_gap_whitelist_set", 0x6F: "sd_ble_gap_device_identities_set",
    0x70: "sd_ble_gap_privacy_set", 0x71: "sd_ble_gap_privacy_get",
    0x72: "sd_ble_gap_adv_set_configure", 0x73: "sd_ble_gap_adv_start",
    0x74: "sd_ble_gap_adv_stop", 0x75: "sd_ble_gap_conn_param_update",
    0x76: "sd_ble_gap_disconnect", 0x77: "sd_ble_gap_tx_power_set",
    0x78: "sd_ble_gap_appearance_set", 0x79: "sd_ble_gap_appearance_get",
    0x7A: "sd_ble_gap_ppcp_set", 0x7B: "sd_ble_gap_ppcp_get",
    0x7C: "sd_ble_gap_device_name_set", 0x7D: "sd_ble_gap_device_name_get",
    0x7E: "sd_ble_gap_authenticate", 0x7F: "sd_ble_gap_sec_params_reply",
    0x80: "sd_ble_gap_auth_key_reply", 0x81: "sd_ble_gap_lesc_dhkey_reply",
    0x82: "sd_ble_gap_keypress_notify", 0x83: "sd_ble_gap_lesc_oob_data_get",
    0x84: "sd_ble_gap_lesc_oob_data_set", 0x85: "sd_ble_gap_encrypt",
    0x86: "sd_ble_gap_sec_info_reply", 0x87: "sd_ble_gap_conn_sec_get",
    0x88: "sd_ble_gap_rssi_start", 0x89: "sd_ble_gap_rssi_stop",
    0x8A: "sd_ble_gap_scan_start", 0x8B: "sd_ble_gap_scan_stop",
    0x8C: "sd_ble_gap_connect", 0x8D: "sd_ble_gap_connect_cancel",
    0x8E: "sd_ble_gap_rssi_get", 0x8F: "sd_ble_gap_phy_update",
    0x90: "sd_ble_gap_data_length_update",
    0x9B: "sd_ble_gattc_primary_services_discover",
    0x9C: "sd_ble_gattc_relationships_discover",
    0x9D: "sd_ble_gattc_characteristics_discover",
    0x9E: "sd_ble_gattc_descriptors_discover", 0x9F: "sd_ble_gattc_attr_info_discover",
    0xA0: "sd_ble_gattc_char_value_by_uuid_read", 0xA1: "sd_ble_gattc_read",
    0xA2: "sd_ble_gattc_char_values_read", 0xA3: "sd_ble_gattc_write",
    0xA4: "sd_ble_gattc_hv_confirm", 0xA5: "sd_ble_gattc_exchange_mtu_request",
    0xA8: "sd_ble_gatts_service_add", 0xA9: "sd_ble_gatts_include_add",
    0xAA: "sd_ble_gatts_characteristic_add", 0xAB: "sd_ble_gatts_descriptor_add",
    0xAC: "sd_ble_gatts_value_set", 0xAD: "sd_ble_gatts_value_get",
    0xAE: "sd_ble_gatts_hvx", 0xAF: "sd_ble_gatts_service_changed",
    0xB0: "sd_ble_gatts_rw_authorize_reply", 0xB1: "sd_ble_gatts_sys_attr_set",
    0xB2: "sd_ble_gatts_sys_attr_get", 0xB3: "sd_ble_gatts_initial_user_handle_get",
    0xB4: "sd_ble_gatts_attr_get", 0xB5: "sd_ble_gatts_exchange_mtu_reply",
}
SVC_NAMES.update(SOC_SVC_NAMES)     # 0x20-0x4C: emu/softdevice/soc.py


def svc_name(num: int) -> str:
    return SVC_NAMES.get(num, f"svc_{num:#04x}")


class Attribute:
    """One GATT server attribute: handle, 16-bit UUID + type, value, properties."""
    # saved by value in snapshots (emu/snapshot.py VALUE_CLASSES): these fields
    SNAPSHOT = ("handle", "uuid", "uuid_type", "value", "props", "max_len", "kind", "service",
                "cccd")

    def __init__(self, handle: int, uuid: int, uuid_type: int, value: bytes = b"",
                 props: int = 0, max_len: int = 512, kind: str = "value"):
        self.handle, self.uuid, self.uuid_type = handle, uuid, uuid_type
        self.value = bytearray(value)
        self.props, self.max_len, self.kind = props, max_len, kind
        self.service: Optional[int] = None
        self.cccd: Optional[int] = None        # for values: their CCCD handle


class SoftDevice(SocLibrary):
    """S132 v6.1.1 state machine answering the app's SVCs."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_client_mtu", "_conn_event", "_logged", "adv_handle", "advertising", "attrs",
                "ble_enabled", "ble_events", "calls", "conn_handle", "conn_interval", "cpu",
                "device_name", "enabled", "hvn_queue", "mtu", "next_handle", "ppcp",
                "rx_writes", "soc_events", "vs_uuids")
    STRUCTURE = ("central", "clock", "fault_handler", "machine", "on_notification")
    _client_mtu = ATT_MTU_DEFAULT     # the central's ATT MTU (an exchange sets it)

    def __init__(self, machine):
        self.machine = machine
        self.cpu = machine.cpu
        self.clock = machine.clock
        self._conn_event = self.clock.event("sd.conn_event", self._connection_event)
        self._logged: set = set()
        self.central = None           # the host-side central, attached by central.py
        self.on_notification: list[Callable[[int, bytes], None]] = []
        self._soc_init()
        self.reset()

    # ------------------------------------------------------------------
    # public state
    # ------------------------------------------------------------------
    def reset(self) -> None:
        """State after power-on/system reset or sd_softdevice_disable."""
        self._conn_event.cancel()
        self.enabled = False
        self.ble_enabled = False
        self.soc_events: collections.deque = collections.deque()
        self.ble_events: collections.deque = collections.deque()
        self.vs_uuids: list[bytes] = []
        self.attrs: dict[int, Attribute] = {}
        self.next_handle = 1
        self.adv_handle: Optional[int] = None
        self.advertising = False
        self.device_name = b"nRF5x"
        self.ppcp = bytes(8)
        self.conn_handle = BLE_CONN_HANDLE_INVALID
        self.conn_interval = 12        # 1.25 ms units (15 ms)
        self.mtu = ATT_MTU_DEFAULT
        self.hvn_queue: collections.deque = collections.deque()   # (handle, data)
        self.rx_writes: collections.deque = collections.deque()   # central->server, per event
        self.calls: collections.Counter = collections.Counter()
        self._soc_reset()

    @property
    def connected(self) -> bool:
        return self.conn_handle != BLE_CONN_HANDLE_INVALID

    def find_attribute(self, uuid: int, uuid_type: Optional[int] = None,
                       kind: str = "value") -> Optional[Attribute]:
        for a in self.attrs.values():
            if a.uuid == uuid and a.kind == kind and (uuid_type is None or a.uuid_type == uuid_type):
                return a
        return None

    # ------------------------------------------------------------------
    # SVC entry
    # ------------------------------------------------------------------
    def svc(self, num: int) -> bool:
        if num < 0x10:
            return False      # the app's own SVCs
        from unicorn import arm_const as A
        cpu = self.cpu
        args = [cpu.reg(r) for r in (A.UC_ARM_REG_R0, A.UC_ARM_REG_R1, A.UC_ARM_REG_R2,
                                     A.UC_ARM_REG_R3)]
        self.calls[num] += 1
        fn = getattr(self, "_" + SVC_NAMES.get(num, ""), None) if num in SVC_NAMES else None
        try:
            if SOC_SVC_BASE_NOT_AVAILABLE <= num < SVC_SOC_LAST and not self.enabled:
                rc = NRF_ERROR_SOFTDEVICE_NOT_ENABLED
            elif fn is None:
                self._unsupported(num)
                rc = NRF_ERROR_NOT_SUPPORTED
            else:
                rc = fn(*args)
        except Exception as e:       # a bad guest pointer must never crash the emulator
            key = ("exc", num)
            if key not in self._logged:
                self._logged.add(key)
                log.warning("%s failed (%s) at %s", svc_name(num), e, self._caller())
            rc = NRF_ERROR_INVALID_ADDR
        cpu.set_reg(A.UC_ARM_REG_R0, rc & 0xFFFFFFFF)
        return True

    def _caller(self) -> str:
        from unicorn import arm_const as A
        lr = self.cpu.reg(A.UC_ARM_REG_LR) & ~1
        sym = self.machine.describe_address(lr)
        return f"{lr:#010x}" + (f" ({sym})" if sym else "")

    def _unsupported(self, num: int) -> None:
        if num not in self._logged:
            self._logged.add(num)
            log.warning("SoftDevice SVC %#04x %s not modelled (called from %s): NOT_SUPPORTED",
                        num, svc_name(num), self._caller())

    # memory helpers
    def _rd(self, addr: int, n: int) -> bytes:
        return self.cpu.read_mem(addr, n)

    def _u8(self, a: int) -> int:
        return self._rd(a, 1)[0]

    def _u16(self, a: int) -> int:
        return struct.unpack("<H", self._rd(a, 2))[0]

    def _u32(self, a: int) -> int:
        return struct.unpack("<I", self._rd(a, 4))[0]

    def _wr(self, addr: int, data: bytes) -> None:
        self.cpu.write_mem(addr, bytes(data))

    # ------------------------------------------------------------------
    # event delivery
    # ------------------------------------------------------------------
    def post_soc_event(self, evt_id: int) -> None:
        self.soc_events.append(evt_id)
        self.cpu.set_pending(16 + SD_EVT_IRQ)

    def post_ble_event(self, evt_id: int, body: bytes) -> None:
        self.ble_events.append(struct.pack("<HH", evt_id, 4 + len(body)) + body)
        self.cpu.set_pending(16 + SD_EVT_IRQ)

    # ------------------------------------------------------------------
    # SDM
    # ------------------------------------------------------------------
    def _sd_softdevice_enable(self, p_clock_cfg, fault_handler, *_):
        if self.enabled:
            return NRF_ERROR_INVALID_STATE
        bad = self._interrupt_config_error()
        if bad:
            log.warning("sd_softdevice_enable refused (%s) called from %s: "
                        "NRF_ERROR_SDM_INCORRECT_INTERRUPT_CONFIGURATION", bad, self._caller())
            return NRF_ERROR_SDM_INCORRECT_INTERRUPT_CONFIGURATION
        self.enabled = True
        self.fault_handler = fault_handler
        # SWI2 (SD_EVT_IRQn) gets application priority 6, like the real enable
        self.cpu.prio[16 + SD_EVT_IRQ] = (SD_EVT_PRIORITY << 5) & self.cpu.prio_mask
        log.info("sd_softdevice_enable (emulated S132 6.1.1; SoftDevice code not executed)")
        self._soc_enabled()
        return NRF_SUCCESS

    def _interrupt_config_error(self) -> str:
        """Why the real enable would refuse the NVIC state ('' if it would not):
        a SoftDevice interrupt already enabled, or an enabled application
        interrupt at a priority the SoftDevice keeps (0, 1 and 4 on S132)."""
        cpu = self.cpu
        for irq in range(32):
            if not (cpu.irq_enabled >> irq) & 1:
                continue
            if (SD_RESERVED_IRQ_MASK >> irq) & 1:
                return f"IRQ {irq} is the SoftDevice's and already enabled"
            level = cpu.prio[16 + irq] >> 5
            if level in SD_RESERVED_PRIORITIES:
                return f"IRQ {irq} is enabled at priority {level}, reserved by the SoftDevice"
        return ""

    def _sd_softdevice_disable(self, *_):
        self.reset()
        return NRF_SUCCESS

    def _sd_softdevice_is_enabled(self, p_enabled, *_):
        self._wr(p_enabled, bytes([1 if self.enabled else 0]))
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # SoC
    # ------------------------------------------------------------------
    def _sd_evt_get(self, p_evt_id, *_):
        if not self.soc_events:
            return NRF_ERROR_NOT_FOUND
        self._wr(p_evt_id, struct.pack("<I", self.soc_events.popleft()))
        return NRF_SUCCESS

    def _sd_temp_get(self, p_temp, *_):
        self._wr(p_temp, struct.pack("<i", 25 * 4))    # 0.25 degC units
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # BLE common
    # ------------------------------------------------------------------
    def _sd_ble_enable(self, p_app_ram_base, *_):
        if not self.enabled:
            return NRF_ERROR_INVALID_STATE
        if self.ble_enabled:
            return NRF_ERROR_INVALID_STATE
        base = self._u32(p_app_ram_base)
        if base < APP_RAM_BASE_MIN:
            self._wr(p_app_ram_base, struct.pack("<I", APP_RAM_BASE_MIN))
            return NRF_ERROR_NO_MEM
        self.ble_enabled = True
        return NRF_SUCCESS

    def _sd_ble_cfg_set(self, cfg_id, p_cfg, app_ram_base, *_):
        if not self.enabled or self.ble_enabled:
            return NRF_ERROR_INVALID_STATE
        return NRF_SUCCESS

    def _sd_ble_evt_get(self, p_dest, p_len, *_):
        if not self.ble_events:
            return NRF_ERROR_NOT_FOUND
        evt = self.ble_events[0]
        if p_dest == 0:                      # length query
            self._wr(p_len, struct.pack("<H", len(evt)))
            return NRF_SUCCESS
        room = self._u16(p_len)
        self._wr(p_len, struct.pack("<H", len(evt)))
        if room < len(evt):
            return NRF_ERROR_DATA_SIZE
        self._wr(p_dest, evt)
        self.ble_events.popleft()
        return NRF_SUCCESS

    def _sd_ble_uuid_vs_add(self, p_vs_uuid, p_uuid_type, *_):
        if p_vs_uuid == 0 or p_uuid_type == 0:
            return NRF_ERROR_INVALID_ADDR
        base = self._rd(p_vs_uuid, 16)
        if base in self.vs_uuids:
            t = 2 + self.vs_uuids.index(base)
        else:
            if len(self.vs_uuids) >= 10:     # BLE_UUID_VS_COUNT_DEFAULT
                return NRF_ERROR_NO_MEM
            self.vs_uuids.append(base)
            t = 1 + len(self.vs_uuids)
        self._wr(p_uuid_type, bytes([t]))
        return NRF_SUCCESS

    def _sd_ble_uuid_encode(self, p_uuid, p_le_len, p_le, *_):
        uuid, t = struct.unpack("<HB", self._rd(p_uuid, 3))
        if t == BLE_UUID_TYPE_BLE:
            enc = struct.pack("<H", uuid)
        elif 2 <= t < 2 + len(self.vs_uuids):
            b = bytearray(self.vs_uuids[t - 2])
            b[12:14] = struct.pack("<H", uuid)
            enc = bytes(b)
        else:
            return NRF_ERROR_INVALID_PARAM
        self._wr(p_le_len, bytes([len(enc)]))
        if p_le:
            self._wr(p_le, enc)
        return NRF_SUCCESS

    def _sd_ble_uuid_decode(self, le_len, p_le, p_uuid, *_):
        raw = self._rd(p_le, le_len) if le_len in (2, 16) else None
        if raw is None:
            return NRF_ERROR_INVALID_LENGTH
        if le_len == 2:
            self._wr(p_uuid, struct.pack("<HB", struct.unpack("<H", raw)[0], BLE_UUID_TYPE_BLE))
            return NRF_SUCCESS
        for i, base in enumerate(self.vs_uuids):
            if base[:12] == raw[:12] and base[14:] == raw[14:]:
                self._wr(p_uuid, struct.pack("<HB", struct.unpack("<H", raw[12:14])[0], 2 + i))
                return NRF_SUCCESS
        return NRF_ERROR_NOT_FOUND

    # ------------------------------------------------------------------
    # GAP
    # ------------------------------------------------------------------
    def own_address(self) -> bytes:
        ficr = self.cpu.read_mem(0x100000A4, 8)
        addr = bytearray(ficr[:6])
        addr[5] |= 0xC0                      # random static
        return bytes(addr)

    def _sd_ble_gap_addr_get(self, p_addr, *_):
        self._wr(p_addr, bytes([1 << 1]) + self.own_address())   # addr_type RANDOM_STATIC
        return NRF_SUCCESS

    def _sd_ble_gap_addr_set(self, p_addr, *_):
        return NRF_SUCCESS if not self.advertising else NRF_ERROR_INVALID_STATE

    def _sd_ble_gap_adv_set_configure(self, p_handle, p_adv_data, p_adv_params, *_):
        h = self._u8(p_handle)
        if h == BLE_GAP_ADV_SET_HANDLE_NOT_SET:
            if self.adv_handle is not None:
                return NRF_ERROR_NO_MEM      # one advertising set in S132
            self.adv_handle = 0
            self._wr(p_handle, b"\x00")
        elif h != self.adv_handle:
            return 0x3004                    # BLE_ERROR_INVALID_ADV_HANDLE
        elif self.advertising and p_adv_params:
            return NRF_ERROR_INVALID_STATE
        return NRF_SUCCESS

    def _sd_ble_gap_adv_start(self, handle, conn_cfg_tag, *_):
        if handle != self.adv_handle:
            return 0x3004
        if self.advertising or self.connected:
            return NRF_ERROR_INVALID_STATE
        self.advertising = True
        return NRF_SUCCESS

    def _sd_ble_gap_adv_stop(self, handle, *_):
        if handle != self.adv_handle:
            return 0x3004
        if not self.advertising:
            return NRF_ERROR_INVALID_STATE
        self.advertising = False
        return NRF_SUCCESS

    def _sd_ble_gap_conn_param_update(self, conn_handle, p_params, *_):
        if conn_handle != self.conn_handle or not self.connected:
            return BLE_ERROR_INVALID_CONN_HANDLE
        params = self._rd(p_params, 8) if p_params else self.ppcp
        self.conn_interval = max(6, struct.unpack("<H", params[2:4])[0] or self.conn_interval)
        self.post_ble_event(BLE_GAP_EVT_CONN_PARAM_UPDATE,
                            struct.pack("<HH", conn_handle, 0) + struct.pack(
                                "<HHHH", self.conn_interval, self.conn_interval,
                                *struct.unpack("<HH", params[4:8])))
        return NRF_SUCCESS

    def _sd_ble_gap_disconnect(self, conn_handle, reason, *_):
        if conn_handle != self.conn_handle or not self.connected:
            return BLE_ERROR_INVALID_CONN_HANDLE
        self.link_lost(0x16)     # BLE_HCI_LOCAL_HOST_TERMINATED_CONNECTION
        return NRF_SUCCESS

    def _sd_ble_gap_ppcp_set(self, p_params, *_):
        self.ppcp = self._rd(p_params, 8)
        return NRF_SUCCESS

    def _sd_ble_gap_ppcp_get(self, p_params, *_):
        self._wr(p_params, self.ppcp)
        return NRF_SUCCESS

    def _sd_ble_gap_device_name_set(self, p_perm, p_name, length, *_):
        if length > 248:
            return NRF_ERROR_DATA_SIZE
        self.device_name = self._rd(p_name, length) if length else b""
        return NRF_SUCCESS

    def _sd_ble_gap_device_name_get(self, p_name, p_len, *_):
        room = self._u16(p_len)
        self._wr(p_len, struct.pack("<H", len(self.device_name)))
        if p_name == 0:
            return NRF_SUCCESS
        if room < len(self.device_name):
            return NRF_ERROR_DATA_SIZE
        self._wr(p_name, self.device_name)
        return NRF_SUCCESS

    def _sd_ble_gap_sec_params_reply(self, conn_handle, status, *_):
        return NRF_SUCCESS if conn_handle == self.conn_handle else BLE_ERROR_INVALID_CONN_HANDLE

    def _sd_ble_gap_data_length_update(self, conn_handle, *_):
        return NRF_SUCCESS if conn_handle == self.conn_handle else BLE_ERROR_INVALID_CONN_HANDLE

    def _sd_ble_gap_phy_update(self, conn_handle, *_):
        return NRF_SUCCESS if conn_handle == self.conn_handle else BLE_ERROR_INVALID_CONN_HANDLE

    def _sd_ble_gap_scan_stop(self, *_):
        return NRF_ERROR_INVALID_STATE      # never scanning

    # ------------------------------------------------------------------
    # GATTS
    # ------------------------------------------------------------------
    def _add_attr(self, uuid: int, uuid_type: int, value: bytes = b"", **kw) -> Attribute:
        a = Attribute(self.next_handle, uuid, uuid_type, value, **kw)
        self.attrs[a.handle] = a
        self.next_handle += 1
        return a

    def _uuid(self, p_uuid: int) -> tuple[int, int]:
        uuid, t = struct.unpack("<HB", self._rd(p_uuid, 3))
        if t != BLE_UUID_TYPE_BLE and not 2 <= t < 2 + len(self.vs_uuids):
            raise ValueError("uuid type")
        return uuid, t

    def _sd_ble_gatts_service_add(self, svc_type, p_uuid, p_handle, *_):
        if not self.ble_enabled:
            return NRF_ERROR_INVALID_STATE
        if svc_type not in (1, 2) or p_uuid == 0:
            return NRF_ERROR_INVALID_PARAM
        uuid, t = self._uuid(p_uuid)
        a = self._add_attr(0x2800 if svc_type == 1 else 0x2801, BLE_UUID_TYPE_BLE,
                           struct.pack("<HB", uuid, t), kind="service")
        a.service = a.handle
        self._wr(p_handle, struct.pack("<H", a.handle))
        return NRF_SUCCESS

    def _sd_ble_gatts_characteristic_add(self, service_handle, p_md, p_attr, p_handles):
        svc = self.attrs.get(service_handle)
        if svc is None or svc.kind != "service":
            return NRF_ERROR_INVALID_PARAM
        md = self._rd(p_md, 28)
        props = md[0]
        p_user_desc = struct.unpack("<I", md[4:8])[0]
        ud_max, ud_size = struct.unpack("<HH", md[8:12])
        p_uuid, p_attr_md, init_len, init_offs, max_len, p_value = struct.unpack(
            "<IIHHHxxI", self._rd(p_attr, 20))
        uuid, t = self._uuid(p_uuid)
        if max_len > 512 or init_len > max_len:
            return NRF_ERROR_INVALID_PARAM
        init = self._rd(p_value, init_len) if (p_value and init_len) else bytes(init_len)
        decl = self._add_attr(0x2803, BLE_UUID_TYPE_BLE, bytes([props]), kind="decl")
        val = self._add_attr(uuid, t, init, props=props, max_len=max_len)
        decl.service = val.service = service_handle
        user_desc = cccd = sccd = 0
        if p_user_desc or ud_max:
            d = self._add_attr(BLE_UUID_CUDD, BLE_UUID_TYPE_BLE,
                               self._rd(p_user_desc, ud_size) if p_user_desc and ud_size else b"",
                               kind="desc")
            user_desc = d.handle
        if props & 0x30:                     # notify | indicate
            c = self._add_attr(BLE_UUID_CCCD, BLE_UUID_TYPE_BLE, b"\0\0", kind="desc")
            cccd = val.cccd = c.handle
        if props & 0x01:                     # broadcast
            sccd = self._add_attr(BLE_UUID_SCCD, BLE_UUID_TYPE_BLE, b"\0\0", kind="desc").handle
        self._wr(p_handles, struct.pack("<HHHH", val.handle, user_desc, cccd, sccd))
        return NRF_SUCCESS

    def _sd_ble_gatts_value_set(self, conn_handle, handle, p_value, *_):
        a = self.attrs.get(handle)
        if a is None:
            return BLE_ERROR_INVALID_ATTR_HANDLE
        length, offset, p_data = struct.unpack("<HHI", self._rd(p_value, 8))
        if offset > len(a.value) or offset + length > a.max_len:
            return NRF_ERROR_INVALID_PARAM
        a.value[offset:offset + length] = self._rd(p_data, length) if length else b""
        return NRF_SUCCESS

    def _sd_ble_gatts_value_get(self, conn_handle, handle, p_value, *_):
        a = self.attrs.get(handle)
        if a is None:
            return BLE_ERROR_INVALID_ATTR_HANDLE
        length, offset, p_data = struct.unpack("<HHI", self._rd(p_value, 8))
        if offset > len(a.value):
            return NRF_ERROR_INVALID_PARAM
        data = bytes(a.value[offset:])
        n = min(length, len(data)) if p_data else len(data)
        if p_data:
            self._wr(p_data, data[:n])
        self._wr(p_value, struct.pack("<H", n if p_data else len(data)))
        return NRF_SUCCESS

    def _sd_ble_gatts_hvx(self, conn_handle, p_params, *_):
        if conn_handle != self.conn_handle or not self.connected:
            return BLE_ERROR_INVALID_CONN_HANDLE
        handle, hvx_type, offset, p_len, p_data = struct.unpack("<HBxHxxII", self._rd(p_params, 16))
        a = self.attrs.get(handle)
        if a is None or a.kind != "value":
            return BLE_ERROR_INVALID_ATTR_HANDLE
        if hvx_type not in (BLE_GATT_HVX_NOTIFICATION, BLE_GATT_HVX_INDICATION):
            return NRF_ERROR_INVALID_PARAM
        if a.cccd is None:
            return NRF_ERROR_INVALID_STATE
        cccd = struct.unpack("<H", bytes(self.attrs[a.cccd].value[:2]))[0]
        if not cccd & hvx_type:
            return NRF_ERROR_INVALID_STATE
        length = self._u16(p_len) if p_len else len(a.value)
        if length > self.mtu - 3:
            return NRF_ERROR_DATA_SIZE
        if hvx_type == BLE_GATT_HVX_INDICATION:
            self._unsupported(0x100)   # indications: logged once, sent as notifications
        if len(self.hvn_queue) >= HVN_TX_QUEUE_SIZE:
            return NRF_ERROR_RESOURCES
        data = self._rd(p_data, length) if p_data and length else bytes(a.value[:length])
        a.value[offset:offset + len(data)] = data
        self.hvn_queue.append((handle, data))
        self._arm_conn_event()
        return NRF_SUCCESS

    def _sd_ble_gatts_sys_attr_set(self, conn_handle, p_data, length, flags):
        if conn_handle != self.conn_handle or not self.connected:
            return BLE_ERROR_INVALID_CONN_HANDLE
        return NRF_SUCCESS

    def _sd_ble_gatts_exchange_mtu_reply(self, conn_handle, server_rx_mtu, *_):
        if conn_handle != self.conn_handle or not self.connected:
            return BLE_ERROR_INVALID_CONN_HANDLE
        if server_rx_mtu < ATT_MTU_DEFAULT:
            return NRF_ERROR_INVALID_PARAM
        self.mtu = max(ATT_MTU_DEFAULT, min(server_rx_mtu, self._client_mtu))
        return NRF_SUCCESS

    # ------------------------------------------------------------------
    # link side, driven by the central
    # ------------------------------------------------------------------
    def link_connect(self, peer_addr: bytes, interval: int = 12, latency: int = 0,
                     timeout: int = 400) -> None:
        self.advertising = False
        self.conn_handle = 0
        self.conn_interval = interval
        self.mtu = self._client_mtu = ATT_MTU_DEFAULT
        for a in self.attrs.values():        # CCCDs are per connection (no bonding)
            if a.uuid == BLE_UUID_CCCD and a.kind == "desc":
                a.value[:] = b"\0\0"
        body = struct.pack("<HH", 0, 0) + bytes([0x01 << 1]) + peer_addr[:6] + bytes([1]) \
            + struct.pack("<HHHH", interval, interval, latency, timeout)
        self.post_ble_event(BLE_GAP_EVT_CONNECTED, body)
        self._arm_conn_event()

    def link_lost(self, reason: int) -> None:
        if not self.connected:
            return
        h = self.conn_handle
        self.conn_handle = BLE_CONN_HANDLE_INVALID
        self.hvn_queue.clear()
        self.rx_writes.clear()
        self._conn_event.cancel()
        self.post_ble_event(BLE_GAP_EVT_DISCONNECTED, struct.pack("<HHB", h, 0, reason))

    def link_mtu_request(self, client_mtu: int) -> None:
        self._client_mtu = client_mtu
        self.post_ble_event(BLE_GATTS_EVT_EXCHANGE_MTU_REQUEST,
                            struct.pack("<HH", self.conn_handle, client_mtu))

    def link_write(self, handle: int, data: bytes, op: int = BLE_GATTS_OP_WRITE_CMD) -> None:
        """Queue an ATT write from the central; it lands at the next connection event."""
        self.rx_writes.append((handle, bytes(data), op))
        self._arm_conn_event()

    def _arm_conn_event(self) -> None:
        if self.connected and not self._conn_event.pending:
            self._conn_event.schedule_in(self.conn_interval * 1250 * TICKS_PER_US)

    def _connection_event(self) -> None:
        """One connection event: one central write in, a batch of notifications out."""
        if not self.connected:
            return
        if self.rx_writes:
            handle, data, op = self.rx_writes.popleft()
            a = self.attrs.get(handle)
            if a is not None:
                a.value[:len(data)] = data
                if a.kind == "value":
                    del a.value[len(data):]
                self.post_ble_event(BLE_GATTS_EVT_WRITE, struct.pack(
                    "<HHHBxBBHH", self.conn_handle, handle, a.uuid, a.uuid_type, op, 0, 0,
                    len(data)) + data)
        sent = 0
        while self.hvn_queue and sent < PACKETS_PER_CONN_EVENT:
            handle, data = self.hvn_queue.popleft()
            sent += 1
            for fn in list(self.on_notification):
                fn(handle, data)
        if sent:
            self.post_ble_event(BLE_GATTS_EVT_HVN_TX_COMPLETE,
                                struct.pack("<HB", self.conn_handle, sent))
        if self.rx_writes or self.hvn_queue:
            self._arm_conn_event()


def attach(machine) -> SoftDevice:
    """Install the emulated S132 on a machine (SVCs >= 0x10 are answered)."""
    sd = getattr(machine, "softdevice", None)
    if sd is None:
        sd = SoftDevice(machine)
        machine.softdevice = sd
        machine.cpu.svc_handler = sd.svc
        board = machine.board
        for name in ("power_on_reset", "system_reset"):     # the SoftDevice restarts with the chip
            orig = getattr(board, name)

            def wrapped(*a, _orig=orig, **k):
                sd.reset()
                return _orig(*a, **k)
            setattr(board, name, wrapped)
        announce = getattr(machine, "softdevice_attached", None)
        if announce is not None:
            announce(sd)            # the machine gives it a phone (machine.phone)
    return sd
