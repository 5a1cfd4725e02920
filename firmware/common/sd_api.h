/* Minimal S132 v6.1.1 SVC wrappers and structures, as in Nordic's headers
 * (nrf_svc.h style: naked `svc #N; bx lr`), for the SoftDevice API tests. */
#ifndef SD_API_H
#define SD_API_H
#include <stdint.h>

#define SVCALL(num, ret, sig) \
    __attribute__((naked, noinline, unused)) ret sig { __asm volatile("svc %0\n bx lr" :: "I"(num)); }

typedef struct { uint16_t uuid; uint8_t type; } ble_uuid_t;
typedef struct { uint8_t uuid128[16]; } ble_uuid128_t;
typedef struct { uint16_t value_handle, user_desc_handle, cccd_handle, sccd_handle; }
    ble_gatts_char_handles_t;
typedef struct {
    uint8_t char_props; uint8_t char_ext_props;
    uint8_t const *p_char_user_desc; uint16_t char_user_desc_max_size, char_user_desc_size;
    void const *p_char_pf, *p_user_desc_md, *p_cccd_md, *p_sccd_md;
} ble_gatts_char_md_t;
typedef struct { uint8_t b[3]; } ble_gatts_attr_md_t;
typedef struct {
    ble_uuid_t const *p_uuid; ble_gatts_attr_md_t const *p_attr_md;
    uint16_t init_len, init_offs, max_len; uint8_t *p_value;
} ble_gatts_attr_t;
typedef struct { uint16_t handle; uint8_t type; uint16_t offset; uint16_t *p_len;
                 uint8_t const *p_data; } ble_gatts_hvx_params_t;
typedef struct { uint16_t len, offset; uint8_t *p_value; } ble_gatts_value_t;
typedef struct { uint8_t addr_id_peer_type; uint8_t addr[6]; } ble_gap_addr_t;
typedef struct { uint16_t min_conn_interval, max_conn_interval, slave_latency, conn_sup_timeout; }
    ble_gap_conn_params_t;

#define CHAR_PROP_WRITE_WO_RESP 0x04
#define CHAR_PROP_WRITE 0x08
#define CHAR_PROP_NOTIFY 0x10

static SVCALL(0x10, uint32_t, sd_softdevice_enable(void const *p_clock_lf_cfg, void *fault_handler))
static SVCALL(0x11, uint32_t, sd_softdevice_disable(void))
static SVCALL(0x12, uint32_t, sd_softdevice_is_enabled(uint8_t *p_enabled))
static SVCALL(0x4B, uint32_t, sd_evt_get(uint32_t *p_evt_id))
static SVCALL(0x4C, uint32_t, sd_temp_get(int32_t *p_temp))
static SVCALL(0x60, uint32_t, sd_ble_enable(uint32_t *p_app_ram_base))
static SVCALL(0x61, uint32_t, sd_ble_evt_get(uint8_t *p_dest, uint16_t *p_len))
static SVCALL(0x62, uint32_t, sd_ble_uuid_vs_add(ble_uuid128_t const *p_vs_uuid, uint8_t *p_type))
static SVCALL(0x64, uint32_t, sd_ble_uuid_encode(ble_uuid_t const *p_uuid, uint8_t *p_len, uint8_t *p_le))
static SVCALL(0x69, uint32_t, sd_ble_cfg_set(uint32_t cfg_id, void const *p_cfg, uint32_t app_ram_base))
static SVCALL(0x6D, uint32_t, sd_ble_gap_addr_get(ble_gap_addr_t *p_addr))
static SVCALL(0x72, uint32_t, sd_ble_gap_adv_set_configure(uint8_t *p_handle, void const *p_data, void const *p_params))
static SVCALL(0x73, uint32_t, sd_ble_gap_adv_start(uint8_t handle, uint8_t conn_cfg_tag))
static SVCALL(0x74, uint32_t, sd_ble_gap_adv_stop(uint8_t handle))
static SVCALL(0x7A, uint32_t, sd_ble_gap_ppcp_set(ble_gap_conn_params_t const *p))
static SVCALL(0x7B, uint32_t, sd_ble_gap_ppcp_get(ble_gap_conn_params_t *p))
static SVCALL(0x7C, uint32_t, sd_ble_gap_device_name_set(void const *p_perm, uint8_t const *p_name, uint16_t len))
static SVCALL(0xA8, uint32_t, sd_ble_gatts_service_add(uint8_t type, ble_uuid_t const *p_uuid, uint16_t *p_handle))
static SVCALL(0xAA, uint32_t, sd_ble_gatts_characteristic_add(uint16_t service_handle, ble_gatts_char_md_t const *p_md, ble_gatts_attr_t const *p_attr, ble_gatts_char_handles_t *p_handles))
static SVCALL(0xAC, uint32_t, sd_ble_gatts_value_set(uint16_t conn, uint16_t handle, ble_gatts_value_t *p_value))
static SVCALL(0xAE, uint32_t, sd_ble_gatts_hvx(uint16_t conn, ble_gatts_hvx_params_t const *p_hvx))
static SVCALL(0xB1, uint32_t, sd_ble_gatts_sys_attr_set(uint16_t conn, uint8_t const *p_data, uint16_t len, uint32_t flags))
static SVCALL(0xB5, uint32_t, sd_ble_gatts_exchange_mtu_reply(uint16_t conn, uint16_t server_rx_mtu))
static SVCALL(0xF0, uint32_t, sd_unknown_svc(void))
#endif
