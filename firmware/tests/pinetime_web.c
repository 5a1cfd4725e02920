/* A PineTime firmware for the web view's and the previews' tests
 * (tests/frontends/test_web*.py, tests/frontends/test_preview.py): it draws on
 * the ST7789 and reacts to everything the page can send, as real firmware does.
 *
 * - The screen: a dark face with a seconds counter (two 3x5 digits, redrawn
 *   once a second: a frame to push) and a bar that grows with it.
 * - Touch (CST816S on TWI1, its interrupt on GPIOTE IN[0], as wasp-os reads
 *   it): a tap draws a white 12x12 square where the finger was, a double tap
 *   a cyan one, a long press a magenta one; a swipe repaints the background
 *   (up blue, down green, left red, right yellow).  Each prints
 *   "touch <gesture> <x> <y>" on the console (semihosting).
 * - The side button (P0.13, enabled by P0.15; GPIOTE IN[1] on both edges):
 *   while it is held a white frame is drawn round the screen; each press
 *   prints "button".
 * - Bluetooth through the S132 API (the calls sd_nus.c tests): the Nordic
 *   UART Service, advertising again after every disconnect.  Bytes written to
 *   RX are echoed on TX (a REPL's echo); a complete line holding
 *   "notify" paints an orange banner across the top, "call" a green one,
 *   "musicinfo" a purple one, each with the count of such lines so far.
 *
 * Runs until the emulator stops it. */
#include <stdint.h>
#include "pinetime.h"
#include "cm4.h"
#include "sd_api.h"

#define NRF_ERROR_NOT_FOUND 5
#define NRF_ERROR_DATA_SIZE 12

static void delay(volatile uint32_t n) { while (n--) __asm volatile("nop"); }

/* ------------------------------------------------------------ display */
static void lcd_window(int x, int y, int w, int h) {
    uint8_t ca[4] = {0, (uint8_t)x, 0, (uint8_t)(x + w - 1)};
    uint8_t ra[4] = {0, (uint8_t)y, 0, (uint8_t)(y + h - 1)};
    pt_lcd_cmd(0x2A, ca, 4);
    pt_lcd_cmd(0x2B, ra, 4);
}

static void lcd_fill(int x, int y, int w, int h, uint16_t color) {
    if (x < 0) { w += x; x = 0; }
    if (y < 0) { h += y; y = 0; }
    if (x + w > 240) w = 240 - x;
    if (y + h > 240) h = 240 - y;
    if (w <= 0 || h <= 0) return;
    lcd_window(x, y, w, h);
    GPIO_OUTCLR = 1u << PIN_LCD_CS;
    GPIO_OUTCLR = 1u << PIN_DC;
    pt_spi_xfer(0x2C);
    GPIO_OUTSET = 1u << PIN_DC;
    for (int i = 0; i < w * h; i++) { pt_spi_xfer(color >> 8); pt_spi_xfer(color & 0xFF); }
    GPIO_OUTSET = 1u << PIN_LCD_CS;
}

static uint16_t rgb(int r, int g, int b) {
    return (uint16_t)(((r & 0xF8) << 8) | ((g & 0xFC) << 3) | (b >> 3));
}

static const uint16_t font[10] = {
    0x7B6F, 0x2C97, 0x73E7, 0x73CF, 0x5BC9, 0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF,
};

static void draw_digit(int x, int y, int d, int scale, uint16_t fg, uint16_t bg) {
    uint16_t bits = font[d % 10];
    for (int row = 0; row < 5; row++)
        for (int col = 0; col < 3; col++) {
            int on = (bits >> (14 - (row * 3 + col))) & 1;
            lcd_fill(x + col * scale, y + row * scale, scale, scale, on ? fg : bg);
        }
}

static uint16_t background;
static volatile uint32_t ticks8, seconds;
void SysTick_Handler(void) { if (++ticks8 % 8 == 0) seconds++; }

#define FACE_X 60
#define FACE_Y 80
#define FACE_W 120
#define FACE_H 70

static void draw_face(uint32_t s) {
    uint16_t fg = rgb(255, 255, 255), bg = rgb(0, 0, 0);
    lcd_fill(FACE_X, FACE_Y, FACE_W, FACE_H, bg);
    draw_digit(FACE_X + 20, FACE_Y + 10, (s / 10) % 10, 10, fg, bg);
    draw_digit(FACE_X + 66, FACE_Y + 10, s % 10, 10, fg, bg);
    int w = (int)(s % 21) * 10;
    lcd_fill(20, 200, 200, 10, rgb(60, 60, 60));
    if (w) lcd_fill(20, 200, w, 10, rgb(255, 160, 0));
}

static void repaint(uint16_t bg) {
    background = bg;
    lcd_fill(0, 0, 240, 240, bg);
    draw_face(seconds);
}

/* ------------------------------------------------------------ touch, button */
static volatile int touched, button_edges;
void IRQ6_Handler(void) {                /* GPIOTE */
    if (GPIOTE_EVENTS_IN(0)) { GPIOTE_EVENTS_IN(0) = 0; touched++; }
    if (GPIOTE_EVENTS_IN(1)) { GPIOTE_EVENTS_IN(1) = 0; button_edges++; }
}

static void on_touch(void) {
    uint8_t d[6];
    if (pt_twi_read(0x15, 0x01, d, 6)) return;
    int g = d[0], x = ((d[2] & 0x0F) << 8) | d[3], y = ((d[4] & 0x0F) << 8) | d[5];
    semihost_puts("touch "); put_dec(g); semihost_puts(" "); put_dec(x);
    semihost_puts(" "); put_dec(y); semihost_puts("\n");
    switch (g) {
    case 0x01: repaint(rgb(0, 120, 40)); break;        /* slide down: green */
    case 0x02: repaint(rgb(20, 60, 200)); break;       /* slide up: blue */
    case 0x03: repaint(rgb(200, 30, 30)); break;       /* slide left: red */
    case 0x04: repaint(rgb(200, 180, 0)); break;       /* slide right: yellow */
    case 0x05: lcd_fill(x - 6, y - 6, 12, 12, rgb(255, 255, 255)); break;
    case 0x0B: lcd_fill(x - 6, y - 6, 12, 12, rgb(0, 255, 255)); break;
    case 0x0C: lcd_fill(x - 6, y - 6, 12, 12, rgb(255, 0, 255)); break;
    default: break;
    }
}

static int button_shown;
static void on_button(void) {
    int down = (GPIO_IN >> PIN_BUTTON) & 1;
    if (down == button_shown) return;
    button_shown = down;
    uint16_t c = down ? rgb(255, 255, 255) : background;
    lcd_fill(0, 0, 240, 4, c); lcd_fill(0, 236, 240, 4, c);
    lcd_fill(0, 0, 4, 240, c); lcd_fill(236, 0, 4, 240, c);
    if (down) semihost_puts("button\n");
}

/* ------------------------------------------------------------ Bluetooth */
static const ble_uuid128_t nus_base = {{0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
                                        0x93, 0xF3, 0xA3, 0xB5, 0x00, 0x00, 0x40, 0x6E}};
static ble_gatts_char_handles_t tx, rx;
static uint8_t adv = 0xFF;
static volatile uint16_t conn = 0xFFFF;
static volatile int notify_on, outstanding, data_size_seen, readvertise;
static volatile uint8_t ring[256];
static volatile uint32_t ring_in, ring_out;

void IRQ22_Handler(void) {              /* SWI2: SoftDevice events */
    uint32_t id;
    while (sd_evt_get(&id) != NRF_ERROR_NOT_FOUND) {}
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
        case 0x10: conn = h; sd_ble_gatts_sys_attr_set(h, 0, 0, 0); break;
        case 0x11: conn = 0xFFFF; notify_on = 0; outstanding = 0; readvertise = 1; break;
        case 0x55: sd_ble_gatts_exchange_mtu_reply(h, 247); break;
        case 0x57: outstanding -= b[6]; break;
        case 0x50: {
            uint16_t ah = b[6] | b[7] << 8, n = b[16] | b[17] << 8;
            if (ah == tx.cccd_handle) notify_on = b[18] & 1;
            if (ah == rx.value_handle)
                for (int i = 0; i < n; i++) ring[ring_in++ & 255] = b[18 + i];
            break;
        }
        }
    }
}

static void ble_init(void) {
    uint32_t ram = 0x200039C0;
    sd_softdevice_enable(0, 0);
    sd_ble_enable(&ram);
    uint8_t type = 0;
    sd_ble_uuid_vs_add(&nus_base, &type);
    ble_uuid_t su = {0x0001, type};
    uint16_t svc = 0;
    sd_ble_gatts_service_add(1, &su, &svc);
    ble_gatts_attr_md_t md = {{0}};
    ble_gatts_char_md_t cm = {0};
    cm.char_props = CHAR_PROP_NOTIFY;
    ble_uuid_t tu = {0x0003, type}, ru = {0x0002, type};
    ble_gatts_attr_t at = {&tu, &md, 1, 0, 20, 0};
    sd_ble_gatts_characteristic_add(svc, &cm, &at, &tx);
    cm.char_props = CHAR_PROP_WRITE | CHAR_PROP_WRITE_WO_RESP;
    ble_gatts_attr_t ar = {&ru, &md, 1, 0, 20, 0};
    sd_ble_gatts_characteristic_add(svc, &cm, &ar, &rx);
    uint8_t name[] = "emu-web";
    sd_ble_gap_device_name_set(0, name, 7);
    sd_ble_gap_adv_set_configure(&adv, 0, 0);
    NVIC_ISER(0) = 1u << 22;
    sd_ble_gap_adv_start(adv, 1);
}

static int banners[3];
static char line[96];
static int line_len;

static int contains(const char *s, int n, const char *word) {
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (word[j] && i + j < n && s[i + j] == word[j]) j++;
        if (!word[j]) return 1;
    }
    return 0;
}

static void banner(int kind) {
    static const uint8_t colours[3][3] = {{255, 120, 0}, {0, 200, 60}, {140, 40, 200}};
    uint16_t c = rgb(colours[kind][0], colours[kind][1], colours[kind][2]);
    banners[kind]++;
    lcd_fill(0, 8, 240, 48, c);
    draw_digit(104, 17, (banners[kind] / 10) % 10, 6, rgb(0, 0, 0), c);
    draw_digit(126, 17, banners[kind] % 10, 6, rgb(0, 0, 0), c);
}

static void on_line(void) {
    /* "musicinfo" first: it does not hold "notify" or "call", but keep the
     * tests of the longer words ahead of the shorter ones all the same */
    if (contains(line, line_len, "musicinfo")) banner(2);
    else if (contains(line, line_len, "notify")) banner(0);
    else if (contains(line, line_len, "\"call\"")) banner(1);
    line_len = 0;
}

static int tx_blocked;               /* waiting for the SoftDevice to take more */

static void uart_service(void) {
    tx_blocked = 0;
    while (ring_out != ring_in) {
        uint8_t c = ring[ring_out & 255];
        if (notify_on && conn != 0xFFFF) {
            if (outstanding > 10) { tx_blocked = 1; return; }   /* HVN_TX_COMPLETE */
            uint16_t len = 1;
            ble_gatts_hvx_params_t p = {tx.value_handle, 1, 0, &len, &c};
            if (sd_ble_gatts_hvx(conn, &p)) { tx_blocked = 1; return; }
            __asm volatile("cpsid i");
            outstanding++;
            __asm volatile("cpsie i");
        }
        ring_out++;
        if (c == '\n' || c == '\r') on_line();
        else if (line_len < (int)sizeof line) line[line_len++] = (char)c;
    }
}

/* ------------------------------------------------------------ main */
int main(void) {
    pt_gpio_init();
    GPIO_OUTCLR = (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) | (1u << PIN_BL_HIGH); /* full */
    pt_spi_init();
    pt_twi_init();

    GPIO_OUTCLR = 1u << PIN_LCD_RST; delay(1000); GPIO_OUTSET = 1u << PIN_LCD_RST; delay(1000);
    pt_lcd_cmd(0x11, 0, 0);                       /* SLPOUT */
    uint8_t colmod = 0x05; pt_lcd_cmd(0x3A, &colmod, 1);
    uint8_t madctl = 0x00; pt_lcd_cmd(0x36, &madctl, 1);
    pt_lcd_cmd(0x21, 0, 0);                       /* INVON */
    pt_lcd_cmd(0x13, 0, 0);                       /* NORON */
    pt_lcd_cmd(0x29, 0, 0);                       /* DISPON */
    repaint(rgb(30, 30, 40));

    /* touch: reset pulse, interrupt on the falling edge of TP_INT */
    GPIO_PIN_CNF(PIN_TP_INT) = 0x0000000C;        /* input, connected, pull-up */
    GPIO_OUTCLR = 1u << PIN_TP_RST;
    delay(100);
    GPIO_OUTSET = 1u << PIN_TP_RST;
    GPIOTE_CONFIG(0) = 1u | (PIN_TP_INT << 8) | (2u << 16);   /* Event, HiToLo */
    /* button: enable it (P0.15 high), interrupt on both edges of P0.13 */
    GPIO_DIRSET = 1u << PIN_BUTTON_EN;
    GPIO_OUTSET = 1u << PIN_BUTTON_EN;
    GPIO_PIN_CNF(PIN_BUTTON) = 0x00000004;        /* input, connected, pull-down */
    GPIOTE_CONFIG(1) = 1u | (PIN_BUTTON << 8) | (3u << 16);   /* Event, Toggle */
    GPIOTE_EVENTS_IN(0) = 0;
    GPIOTE_EVENTS_IN(1) = 0;
    GPIOTE_INTENSET = 3;
    *(volatile uint8_t *)(0xE000E400 + 6) = 3 << 5;   /* priority 3: 0, 1 and 4 are the SoftDevice's */
    NVIC_ISER(0) = 1u << 6;

    ble_init();
    semihost_puts("pinetime web demo running\n");

    REG32(0xE000E014) = 8000000 - 1;              /* SysTick 8 Hz at 64 MHz */
    REG32(0xE000E018) = 0;
    REG32(0xE000E010) = 7;
    uint32_t shown = 0;
    int touches = 0, edges = 0;
    for (;;) {
        __asm volatile("cpsid i");
        if (touched == touches && button_edges == edges && seconds == shown
                && (ring_out == ring_in || tx_blocked) && !readvertise)
            __asm volatile("wfi");
        __asm volatile("cpsie i");
        if (readvertise) { readvertise = 0; sd_ble_gap_adv_start(adv, 1); }
        while (touches != touched) { touches++; on_touch(); }
        if (edges != button_edges) { edges = button_edges; on_button(); }
        if (seconds != shown) { shown = seconds; draw_face(shown); }
        uart_service();
    }
}
