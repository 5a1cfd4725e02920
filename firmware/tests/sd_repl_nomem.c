/* A MicroPython REPL over the Nordic UART Service whose heap is gone, as
 * wasp-os's after its first boot (it formats the NOR): every line typed at
 * the prompt and every paste answers MemoryError, since the parser cannot
 * allocate.  What needs no parser still works, as on the watch: Ctrl-C
 * (a fresh prompt), Ctrl-E (paste mode, "=== " for each line), and Ctrl-D
 * at an empty prompt, MicroPython's soft reset, which this one reports on
 * the console as "SOFT REBOOT n" and answers with "MPY: soft reboot".
 * It serves one phone after another (advertising again after each), for
 * `pinetime-emu phone --reset` through a --bridge, until the run ends. */
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
static volatile int notify_on, disconnected, outstanding;
static volatile uint8_t in[1024];            /* bytes the phone wrote, not yet read */
static volatile uint32_t in_head, in_tail;
static uint8_t out[2048];                    /* bytes the REPL printed, not yet notified */
static uint32_t out_head, out_tail;

void IRQ22_Handler(void) {
    uint32_t id;
    while (sd_evt_get(&id) != NRF_ERROR_NOT_FOUND) {}
    for (;;) {
        uint32_t buf[20];
        uint8_t *b = (uint8_t *)buf;
        uint16_t len = sizeof buf;
        if (sd_ble_evt_get(b, &len)) break;
        uint16_t evt = b[0] | b[1] << 8;
        uint16_t h = b[4] | b[5] << 8;
        switch (evt) {
        case 0x10: conn = h; sd_ble_gatts_sys_attr_set(h, 0, 0, 0); break;
        case 0x11: conn = 0xFFFF; notify_on = 0; outstanding = 0; disconnected = 1; break;
        case 0x55: sd_ble_gatts_exchange_mtu_reply(h, 247); break;
        case 0x57: outstanding -= b[6]; break;
        case 0x50: {
            uint16_t ah = b[6] | b[7] << 8, n = b[16] | b[17] << 8;
            if (ah == tx.cccd_handle) notify_on = b[18] & 1;
            if (ah == rx.value_handle)
                for (int i = 0; i < n; i++) in[in_head++ & 1023] = b[18 + i];
            break;
        }
        }
    }
}

static void print(const char *s) {
    while (*s && out_head - out_tail < sizeof out) out[out_head++ & 2047] = (uint8_t)*s++;
}

/* Notify what the REPL printed, 20 bytes at a time, at most 8 outstanding. */
static void flush(void) {
    while (out_tail != out_head && notify_on && conn != 0xFFFF && outstanding < 8) {
        uint8_t chunk[20];
        uint16_t n = 0;
        while (n < sizeof chunk && out_tail + n != out_head) {
            chunk[n] = out[(out_tail + n) & 2047];
            n++;
        }
        uint16_t len = n;
        ble_gatts_hvx_params_t p = {tx.value_handle, 1, 0, &len, chunk};
        if (sd_ble_gatts_hvx(conn, &p)) return;    /* resources: after a completion */
        __asm volatile("cpsid i");
        outstanding++;
        __asm volatile("cpsie i");
        out_tail += len;
    }
}

static int pasting, line_len, reboots;

static void key(uint8_t c) {
    char echo[2] = {(char)c, 0};
    if (c == 0x03) {                               /* Ctrl-C: a fresh prompt */
        pasting = 0;
        line_len = 0;
        print("\r\n>>> ");
    } else if (c == 0x05 && !pasting && line_len == 0) {
        pasting = 1;                               /* Ctrl-E: paste mode */
        print("\r\npaste mode; Ctrl-C to cancel, Ctrl-D to finish\r\n=== ");
    } else if (c == 0x04 && pasting) {             /* run the paste: no heap to compile it */
        pasting = 0;
        line_len = 0;
        print("\r\nMemoryError: memory allocation failed, allocating 512 bytes\r\n>>> ");
    } else if (c == 0x04 && line_len == 0) {       /* Ctrl-D at an empty prompt: soft reset */
        reboots++;
        semihost_puts("SOFT REBOOT ");
        put_dec(reboots);
        semihost_puts("\n");
        print("\r\nMPY: soft reboot\r\n>>> ");
    } else if (c == '\r') {
        print("\r\n");
        if (pasting) print("=== ");
        else if (line_len) print("MemoryError: \r\n>>> ");
        else print(">>> ");
        line_len = 0;
    } else if (c >= 0x20) {
        line_len++;
        print(echo);
    }
}

int main(void) {
    uint32_t ram = 0x200039C0;
    uint8_t type = 0, adv = 0xFF;
    uint16_t svc = 0;
    if (sd_softdevice_enable(0, 0) || sd_ble_cfg_set(1, 0, ram) || sd_ble_enable(&ram)
            || sd_ble_uuid_vs_add(&nus_base, &type)) {
        semihost_puts("FAIL SoftDevice set-up\n");
        return 1;
    }
    ble_uuid_t su = {0x0001, type}, tu = {0x0003, type}, ru = {0x0002, type};
    sd_ble_gatts_service_add(1, &su, &svc);
    ble_gatts_attr_md_t md = {{0}};
    ble_gatts_char_md_t cm = {0};
    cm.char_props = CHAR_PROP_NOTIFY;
    ble_gatts_attr_t at = {&tu, &md, 1, 0, 20, 0};
    sd_ble_gatts_characteristic_add(svc, &cm, &at, &tx);
    cm.char_props = CHAR_PROP_WRITE | CHAR_PROP_WRITE_WO_RESP;
    ble_gatts_attr_t ar = {&ru, &md, 1, 0, 20, 0};
    sd_ble_gatts_characteristic_add(svc, &cm, &ar, &rx);
    uint8_t name[] = "nomem";
    sd_ble_gap_device_name_set(0, name, 5);
    sd_ble_gap_adv_set_configure(&adv, 0, 0);
    NVIC_ISER(0) = 1u << 22;
    sd_ble_gap_adv_start(adv, 1);
    semihost_puts("REPL READY\n");
    for (;;) {
        if (disconnected) {                        /* the next phone */
            disconnected = 0;
            out_tail = out_head;
            pasting = line_len = 0;
            sd_ble_gap_adv_start(adv, 1);
        }
        while (in_tail != in_head) key(in[in_tail++ & 1023]);
        flush();
        __asm volatile("cpsid i");                 /* sleep only with nothing to do */
        if (in_tail == in_head && !disconnected
                && !(out_tail != out_head && notify_on && outstanding < 8))
            __asm volatile("wfi");
        __asm volatile("cpsie i");
    }
}
