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
/* SoC library (nrf_soc.h): SOC_SVC_BASE 0x20, SOC_SVC_BASE_NOT_AVAILABLE 0x2C */
typedef volatile uint8_t nrf_mutex_t;
typedef struct { uint8_t key[16], cleartext[16], ciphertext[16]; } nrf_ecb_hal_data_t;
typedef struct { uint8_t const (*p_key)[16]; uint8_t const (*p_cleartext)[16];
                 uint8_t (*p_ciphertext)[16]; } nrf_ecb_hal_data_block_t;
static SVCALL(0x20, uint32_t, sd_ppi_channel_enable_get(uint32_t *p_channel_enable))
static SVCALL(0x21, uint32_t, sd_ppi_channel_enable_set(uint32_t msk))
static SVCALL(0x22, uint32_t, sd_ppi_channel_enable_clr(uint32_t msk))
static SVCALL(0x23, uint32_t, sd_ppi_channel_assign(uint8_t ch, const volatile void *evt, const volatile void *task))
static SVCALL(0x24, uint32_t, sd_ppi_group_task_enable(uint8_t group))
static SVCALL(0x25, uint32_t, sd_ppi_group_task_disable(uint8_t group))
static SVCALL(0x26, uint32_t, sd_ppi_group_assign(uint8_t group, uint32_t channel_msk))
static SVCALL(0x27, uint32_t, sd_ppi_group_get(uint8_t group, uint32_t *p_channel_msk))
static SVCALL(0x28, uint32_t, sd_flash_page_erase(uint32_t page_number))
static SVCALL(0x29, uint32_t, sd_flash_write(uint32_t *p_dst, uint32_t const *p_src, uint32_t size))
static SVCALL(0x2A, uint32_t, sd_flash_protect(uint32_t cfg0, uint32_t cfg1, uint32_t cfg2, uint32_t cfg3))
static SVCALL(0x2B, uint32_t, sd_protected_register_write(volatile uint32_t *p_register, uint32_t value))
static SVCALL(0x2C, uint32_t, sd_mutex_new(nrf_mutex_t *p_mutex))
static SVCALL(0x2D, uint32_t, sd_mutex_acquire(nrf_mutex_t *p_mutex))
static SVCALL(0x2E, uint32_t, sd_mutex_release(nrf_mutex_t *p_mutex))
static SVCALL(0x2F, uint32_t, sd_rand_application_pool_capacity_get(uint8_t *p_pool_capacity))
static SVCALL(0x30, uint32_t, sd_rand_application_bytes_available_get(uint8_t *p_bytes_available))
static SVCALL(0x31, uint32_t, sd_rand_application_vector_get(uint8_t *p_buff, uint8_t length))
static SVCALL(0x32, uint32_t, sd_power_mode_set(uint8_t power_mode))
static SVCALL(0x33, uint32_t, sd_power_system_off(void))
static SVCALL(0x34, uint32_t, sd_power_reset_reason_get(uint32_t *p_reset_reason))
static SVCALL(0x35, uint32_t, sd_power_reset_reason_clr(uint32_t reset_reason_clr_msk))
static SVCALL(0x36, uint32_t, sd_power_pof_enable(uint8_t pof_enable))
static SVCALL(0x37, uint32_t, sd_power_pof_threshold_set(uint8_t threshold))
static SVCALL(0x39, uint32_t, sd_power_ram_power_set(uint8_t index, uint32_t ram_powerset))
static SVCALL(0x3A, uint32_t, sd_power_ram_power_clr(uint8_t index, uint32_t ram_powerclr))
static SVCALL(0x3B, uint32_t, sd_power_ram_power_get(uint8_t index, uint32_t *p_ram_power))
static SVCALL(0x3C, uint32_t, sd_power_gpregret_set(uint32_t gpregret_id, uint32_t gpregret_msk))
static SVCALL(0x3D, uint32_t, sd_power_gpregret_clr(uint32_t gpregret_id, uint32_t gpregret_msk))
static SVCALL(0x3E, uint32_t, sd_power_gpregret_get(uint32_t gpregret_id, uint32_t *p_gpregret))
static SVCALL(0x3F, uint32_t, sd_power_dcdc_mode_set(uint8_t dcdc_mode))
static SVCALL(0x41, uint32_t, sd_app_evt_wait(void))
static SVCALL(0x42, uint32_t, sd_clock_hfclk_request(void))
static SVCALL(0x43, uint32_t, sd_clock_hfclk_release(void))
static SVCALL(0x44, uint32_t, sd_clock_hfclk_is_running(uint32_t *p_is_running))
static SVCALL(0x45, uint32_t, sd_radio_notification_cfg_set(uint8_t type, uint8_t distance))
static SVCALL(0x46, uint32_t, sd_ecb_block_encrypt(nrf_ecb_hal_data_t *p_ecb_data))
static SVCALL(0x47, uint32_t, sd_ecb_blocks_encrypt(uint8_t block_count, nrf_ecb_hal_data_block_t *p_data_blocks))
#endif
