/* S132 SoftDevice API test: the calls wasp-os makes, with its structures.
 * Registers the Nordic UART Service, advertises, then (driven by the Python
 * central) echoes every RX byte back as its own TX notification, keeping at
 * most 10 notifications outstanding like wasp-os's ble_uart. Exits after the
 * central disconnects. */
#include "harness.h"
#include "cm4.h"
#include "sd_api.h"

#define NRF_ERROR_NOT_FOUND 5
#define NRF_ERROR_RESOURCES 19
#define NRF_ERROR_DATA_SIZE 12

static const ble_uuid128_t nus_base = {{0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
                                        0x93, 0xF3, 0xA3, 0xB5, 0x00, 0x00, 0x40, 0x6E}};
static ble_gatts_char_handles_t tx, rx;
static volatile uint16_t conn = 0xFFFF;
static volatile int notify_on, disconnected, disc_reason, mtu_req, connected_role;
static volatile int outstanding, completed, data_size_seen, soc_polls, writes, max_write;
static volatile uint8_t ring[256];
static volatile uint32_t ring_in, ring_out;

void IRQ22_Handler(void) {
    uint32_t id;
    while (sd_evt_get(&id) != NRF_ERROR_NOT_FOUND) {}
    soc_polls++;
    for (;;) {
        uint32_t buf[20];
        uint8_t *b = (uint8_t *)buf;
        uint16_t len = data_size_seen ? sizeof buf : 4;
        uint32_t rc = sd_ble_evt_get(b, &len);
        if (rc == NRF_ERROR_DATA_SIZE && !data_size_seen && len > 4) { data_size_seen = 1; continue; }
        if (rc) break;
        uint16_t evt = b[0] | b[1] << 8;
        uint16_t h = b[4] | b[5] << 8;
        switch (evt) {
        case 0x10: conn = h; connected_role = b[15];
            sd_ble_gatts_sys_attr_set(h, 0, 0, 0); break;
        case 0x11: disconnected = 1; disc_reason = b[8]; conn = 0xFFFF; break;
        case 0x55: mtu_req = b[6] | b[7] << 8; sd_ble_gatts_exchange_mtu_reply(h, 247); break;
        case 0x57: outstanding -= b[6]; completed += b[6]; break;
        case 0x50: {
            uint16_t ah = b[6] | b[7] << 8, n = b[16] | b[17] << 8;
            if (ah == tx.cccd_handle) notify_on = b[18] & 1;
            if (ah == rx.value_handle) {
                writes++;
                if (n > max_write) max_write = n;
                for (int i = 0; i < n; i++) ring[ring_in++ & 255] = b[18 + i];
            }
            break;
        }
        }
    }
}

static uint32_t hvx_byte(uint8_t c) {
    uint16_t len = 1;
    ble_gatts_hvx_params_t p = {tx.value_handle, 1, 0, &len, &c};
    return sd_ble_gatts_hvx(conn, &p);
}

int main(void) {
    uint8_t en = 0xAA;
    CHECK_EQ("is_enabled before enable", (sd_softdevice_is_enabled(&en), en), 0);
    CHECK_EQ("softdevice_enable", sd_softdevice_enable(0, 0), 0);
    CHECK_EQ("SWI2 priority set to 6 (IPR 0xC0)", *(volatile uint8_t *)(0xE000E400 + 22), 0xC0);
    CHECK_EQ("is_enabled after enable", (sd_softdevice_is_enabled(&en), en), 1);
    CHECK_EQ("enable twice: INVALID_STATE", sd_softdevice_enable(0, 0), 8);
    CHECK_EQ("cfg_set before ble_enable", sd_ble_cfg_set(1, 0, 0x200039C0), 0);
    uint32_t ram = 0x20002000;
    CHECK_EQ("ble_enable low RAM: NO_MEM", sd_ble_enable(&ram), 4);
    CHECK_EQ("ble_enable reports needed RAM", ram, 0x200039C0);
    CHECK_EQ("ble_enable", sd_ble_enable(&ram), 0);
    ble_gap_addr_t addr;
    CHECK_EQ("gap_addr_get", sd_ble_gap_addr_get(&addr), 0);
    CHECK("address is random static", (addr.addr[5] & 0xC0) == 0xC0 && addr.addr_id_peer_type == 2);
    uint8_t type = 0;
    CHECK_EQ("uuid_vs_add", sd_ble_uuid_vs_add(&nus_base, &type), 0);
    CHECK_EQ("first vendor uuid type", type, 2);
    ble_uuid_t su = {0x0001, type};
    uint8_t le[16], le_len = 0;
    CHECK_EQ("uuid_encode", sd_ble_uuid_encode(&su, &le_len, le), 0);
    CHECK("uuid_encode 128-bit with alias", le_len == 16 && le[12] == 1 && le[13] == 0 && le[15] == 0x6E);
    uint16_t svc = 0;
    CHECK_EQ("service_add", sd_ble_gatts_service_add(1, &su, &svc), 0);
    ble_gatts_attr_md_t md = {{0}};
    ble_gatts_char_md_t cm = {0};
    cm.char_props = CHAR_PROP_NOTIFY;
    ble_uuid_t tu = {0x0003, type}, ru = {0x0002, type};
    ble_gatts_attr_t at = {&tu, &md, 1, 0, 20, 0};
    CHECK_EQ("characteristic_add TX", sd_ble_gatts_characteristic_add(svc, &cm, &at, &tx), 0);
    cm.char_props = CHAR_PROP_WRITE | CHAR_PROP_WRITE_WO_RESP;
    ble_gatts_attr_t ar = {&ru, &md, 1, 0, 20, 0};
    CHECK_EQ("characteristic_add RX", sd_ble_gatts_characteristic_add(svc, &cm, &ar, &rx), 0);
    CHECK("TX handles: value after declaration, CCCD", tx.value_handle == svc + 2 && tx.cccd_handle == svc + 3);
    CHECK("RX handles: no CCCD", rx.value_handle == svc + 5 && rx.cccd_handle == 0);
    CHECK_EQ("hvx without connection", hvx_byte('x'), 0x3002);
    uint8_t name[] = "emu";
    CHECK_EQ("device_name_set", sd_ble_gap_device_name_set(0, name, 3), 0);
    ble_gap_conn_params_t pp = {12, 24, 0, 400}, pg = {0};
    CHECK_EQ("ppcp_set", sd_ble_gap_ppcp_set(&pp), 0);
    CHECK("ppcp_get", sd_ble_gap_ppcp_get(&pg) == 0 && pg.max_conn_interval == 24);
    int32_t t = 0;
    CHECK("temp_get", sd_temp_get(&t) == 0 && t == 100);
    CHECK_EQ("unknown SVC: NOT_SUPPORTED", sd_unknown_svc(), 6);
    uint8_t adv = 0xFF;
    CHECK_EQ("adv_set_configure", sd_ble_gap_adv_set_configure(&adv, 0, 0), 0);
    CHECK_EQ("adv handle allocated", adv, 0);
    CHECK_EQ("adv_stop while idle: INVALID_STATE", sd_ble_gap_adv_stop(adv), 8);
    NVIC_ISER(0) = 1u << 22;
    CHECK_EQ("adv_start", sd_ble_gap_adv_start(adv, 1), 0);
    CHECK_EQ("adv_start twice: INVALID_STATE", sd_ble_gap_adv_start(adv, 1), 8);

    int echoed = 0, waited = 0;
    while (!disconnected || (notify_on && ring_out != ring_in && conn != 0xFFFF)) {
        if (ring_out != ring_in && notify_on && conn != 0xFFFF) {
            if (outstanding > 10) { waited++; __asm volatile("wfi"); continue; }
            uint32_t rc = hvx_byte(ring[ring_out & 255]);
            if (rc == NRF_ERROR_RESOURCES) { __asm volatile("wfi"); continue; }
            if (rc) { CHECK_EQ("hvx", rc, 0); break; }
            __asm volatile("cpsid i");
            outstanding++;
            __asm volatile("cpsie i");
            ring_out++; echoed++;
        } else {
            __asm volatile("wfi");
        }
    }
    CHECK_EQ("connected as peripheral", connected_role, 1);
    CHECK_EQ("MTU exchange request", mtu_req, 247);
    CHECK("event length protocol (DATA_SIZE then full)", data_size_seen);
    CHECK("RX writes at most 20 bytes", writes > 1 && max_write <= 20);
    CHECK_EQ("echoed every RX byte", echoed, (int)ring_in);
    CHECK("flow control waited for HVN_TX_COMPLETE", waited > 0);
    CHECK_EQ("disconnect reason remote user", disc_reason, 0x13);
    semihost_puts("ECHOED ");
    put_dec(echoed);
    semihost_puts(" COMPLETED ");
    put_dec(completed);
    semihost_puts("\n");
    return harness_failures;
}
