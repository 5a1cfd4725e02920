/* The PineTime's devices hang on pins, not on a serial instance: the display
 * (CS P0.25, D/C P0.18) and the NOR (CS P0.05) on SCK P0.02 / MOSI P0.03 /
 * MISO P0.04, the touch controller and the accelerometer on SCL P0.07 /
 * SDA P0.06.  Every master whose PSEL registers select those pins reaches
 * them, as on silicon:
 *   - legacy SPI1 (0x40004000, as Zephyr's pinetime_devkit0 drives them) and
 *     SPIM2 (0x40023000): NOR JEDEC ID, erase/program/read-back, display
 *     RDDID and a pixel window each (the Python side checks NOR contents and
 *     display memory);
 *   - TWIM1 (0x40004000) and TWIM0 (0x40003000, as Zephyr drives them): the
 *     CST816S chip ID register 0xA7 (0xB4), the BMA421 chip ID 0x00 (0x11).
 * The companions point an instance elsewhere and see no device: SPIM2 on
 * P0.11/12/13 reads JEDEC 00 00 00 (its MISO pin floats low) and its pixels
 * never reach the display; SPIM2 with only MISO elsewhere (P0.13, pulled up)
 * clocks the NOR but reads FF FF FF; TWIM0 on P0.27/26 or with SCL and SDA
 * swapped gets ERRORSRC.ANACK. */
#include "pinetime.h"

#define SPI1  0x40004000u
#define SPIM2 0x40023000u
#define TWIM0 0x40003000u
#define TWIM1 0x40004000u

enum { NOR_A = 0x2000, NOR_B = 0x3000 };   /* SPI1 programs A, SPIM2 B */
enum { WIN_X = 10, WIN_Y = 20, WIN_W = 8, WIN_H = 4 };  /* SPI1's window; SPIM2 +90 x */
enum { STRAY_X = 200, STRAY_Y = 200 };     /* what SPIM2 on other pins tried to draw */

static uint32_t master;                    /* SPI1 or SPIM2 */

static void spi_pins(uint32_t base, uint32_t sck, uint32_t mosi, uint32_t miso) {
    REG32(base + 0x508) = sck; REG32(base + 0x50C) = mosi; REG32(base + 0x510) = miso;
}

static void spi_on(uint32_t base, uint32_t enable) {
    master = base;
    REG32(base + 0x524) = 0x80000000u;    /* 8 Mbps */
    REG32(base + 0x554) = 6;              /* mode 3 */
    REG32(base + 0x500) = enable;
}

static uint8_t dma_tx[260], dma_rx[260];

/* max(ntx, nrx) bytes: tx[i] (then 0xFF) out, the first nrx in (SPIM semantics) */
static int xfer(const uint8_t *tx, int ntx, uint8_t *rx, int nrx) {
    int n = ntx > nrx ? ntx : nrx;
    if (master == SPI1) {
        for (int i = 0; i < n; i++) {
            REG32(SPI1 + 0x51C) = i < ntx ? tx[i] : 0xFF;
            int k = 0;
            while (!REG32(SPI1 + 0x108) && k < POLL_LIMIT) k++;
            if (k == POLL_LIMIT) return -1;
            REG32(SPI1 + 0x108) = 0;
            uint8_t b = (uint8_t)REG32(SPI1 + 0x518);
            if (i < nrx) rx[i] = b;
        }
        return 0;
    }
    for (int i = 0; i < ntx; i++) dma_tx[i] = tx[i];
    REG32(SPIM2 + 0x5C0) = 0xFF;          /* ORC */
    REG32(SPIM2 + 0x544) = (uint32_t)dma_tx; REG32(SPIM2 + 0x548) = ntx;
    REG32(SPIM2 + 0x534) = (uint32_t)dma_rx; REG32(SPIM2 + 0x538) = nrx;
    REG32(SPIM2 + 0x118) = 0;
    REG32(SPIM2 + 0x010) = 1;             /* START */
    int k = 0;
    while (!REG32(SPIM2 + 0x118) && k < POLL_LIMIT) k++;
    if (k == POLL_LIMIT) return -1;
    REG32(SPIM2 + 0x118) = 0;
    for (int i = 0; i < nrx; i++) rx[i] = dma_rx[i];
    return 0;
}

static void cs(int pin, int low) { if (low) GPIO_OUTCLR = 1u << pin; else GPIO_OUTSET = 1u << pin; }

static void nor(const uint8_t *tx, int ntx, uint8_t *rx, int nrx) {
    cs(PIN_NOR_CS, 1); xfer(tx, ntx, rx, nrx); cs(PIN_NOR_CS, 0);
}

static uint32_t jedec(void) {
    uint8_t c = 0x9F, r[4];
    nor(&c, 1, r, 4);
    return (uint32_t)r[1] << 16 | r[2] << 8 | r[3];
}

static int nor_wait(void) {
    uint8_t c = 0x05, r[2];
    for (int i = 0; i < 200000; i++) {
        nor(&c, 1, r, 2);
        if (!(r[1] & 1)) return 0;
    }
    return -1;
}

static int nor_program_and_read(uint32_t a, uint8_t seed) {
    uint8_t wren = 0x06, buf[4 + 16], got[4 + 16];
    nor(&wren, 1, 0, 0);
    uint8_t erase[4] = {0x20, a >> 16, a >> 8, a};
    nor(erase, 4, 0, 0);
    if (nor_wait()) return -1;
    nor(&wren, 1, 0, 0);
    buf[0] = 0x02; buf[1] = a >> 16; buf[2] = a >> 8; buf[3] = a;
    for (int i = 0; i < 16; i++) buf[4 + i] = (uint8_t)(seed + 7 * i);
    nor(buf, 20, 0, 0);
    if (nor_wait()) return -2;
    buf[0] = 0x03;
    nor(buf, 4, got, 20);
    for (int i = 0; i < 16; i++) if (got[4 + i] != (uint8_t)(seed + 7 * i)) return -3;
    return 0;
}

static void lcd_cmd(uint8_t c, const uint8_t *data, int n) {
    cs(PIN_LCD_CS, 1);
    GPIO_OUTCLR = 1u << PIN_DC; xfer(&c, 1, 0, 0);
    GPIO_OUTSET = 1u << PIN_DC;
    if (n) xfer(data, n, 0, 0);
    cs(PIN_LCD_CS, 0);
}

static uint32_t lcd_rddid(void) {
    uint8_t c = 0x04, r[3];
    cs(PIN_LCD_CS, 1);
    GPIO_OUTCLR = 1u << PIN_DC; xfer(&c, 1, 0, 0);
    GPIO_OUTSET = 1u << PIN_DC; xfer(0, 0, r, 3);
    cs(PIN_LCD_CS, 0);
    return (uint32_t)r[0] << 16 | r[1] << 8 | r[2];
}

/* a WIN_W x WIN_H window at (x, y): pixel (i, j) = base ^ (i << 11 | j << 5 | i + j) */
static void lcd_window(int x, int y, uint16_t base) {
    uint8_t ca[4] = {0, x, 0, x + WIN_W - 1}, ra[4] = {0, y, 0, y + WIN_H - 1};
    lcd_cmd(0x2A, ca, 4); lcd_cmd(0x2B, ra, 4);
    uint8_t px[2 * WIN_W * WIN_H];
    for (int j = 0; j < WIN_H; j++)
        for (int i = 0; i < WIN_W; i++) {
            uint16_t c = base ^ (uint16_t)(i << 11 | j << 5 | (i + j));
            px[2 * (j * WIN_W + i)] = c >> 8; px[2 * (j * WIN_W + i) + 1] = c;
        }
    lcd_cmd(0x2C, px, sizeof px);
}

static void lcd_init(void) {
    GPIO_OUTCLR = 1u << PIN_LCD_RST; for (volatile int i = 0; i < 1000; i++) ;
    GPIO_OUTSET = 1u << PIN_LCD_RST;
    lcd_cmd(0x11, 0, 0);                  /* SLPOUT */
    uint8_t colmod = 0x05; lcd_cmd(0x3A, &colmod, 1);
    lcd_cmd(0x21, 0, 0);                  /* INVON */
    lcd_cmd(0x29, 0, 0);                  /* DISPON */
}

/* TWIM: write reg, read n (LASTTX_STARTRX, LASTRX_STOP); 0 ok, else ERRORSRC */
static int twim_read(uint32_t t, uint8_t addr, uint8_t reg, uint8_t *buf, int n) {
    static uint8_t wbuf[1], rbuf[8];
    wbuf[0] = reg;
    for (int i = 0; i < n; i++) rbuf[i] = 0;
    REG32(t + 0x588) = addr;
    REG32(t + 0x544) = (uint32_t)wbuf; REG32(t + 0x548) = 1;
    REG32(t + 0x534) = (uint32_t)rbuf; REG32(t + 0x538) = n;
    REG32(t + 0x104) = 0; REG32(t + 0x124) = 0;
    REG32(t + 0x200) = (1u << 7) | (1u << 12);
    REG32(t + 0x008) = 1;                 /* STARTTX */
    int k = 0;
    while (!REG32(t + 0x104) && !REG32(t + 0x124) && k < POLL_LIMIT) k++;
    int err = 0;
    if (REG32(t + 0x124)) {               /* ERROR: STOP, wait STOPPED */
        err = REG32(t + 0x4C4);
        REG32(t + 0x4C4) = err;
        REG32(t + 0x124) = 0;
        REG32(t + 0x014) = 1;
        for (k = 0; !REG32(t + 0x104) && k < POLL_LIMIT; k++) ;
    } else if (k == POLL_LIMIT) {
        err = 0x100;
    }
    REG32(t + 0x200) = 0;
    for (int i = 0; i < n; i++) buf[i] = rbuf[i];
    return err;
}

static void twim_on(uint32_t t, uint32_t scl, uint32_t sda) {
    REG32(t + 0x508) = scl; REG32(t + 0x50C) = sda;
    REG32(t + 0x524) = 0x06400000u;       /* K400 */
    REG32(t + 0x500) = 6;
}

int main(void) {
    pt_gpio_init();                       /* CS high, SCK/MOSI outputs, TP_RST high */
    uint8_t c;

    /* ---- legacy SPI1 on the PineTime's SPI pins ---------------------- */
    spi_pins(SPI1, PIN_SCK, PIN_MOSI, PIN_MISO);
    spi_on(SPI1, 1);
    c = 0xAB; nor(&c, 1, 0, 0);           /* release from deep power-down */
    CHECK_EQ("spi1_nor_jedec", jedec(), 0x0B4016);
    CHECK_EQ("spi1_nor_program_read", nor_program_and_read(NOR_A, 0x11), 0);
    lcd_init();
    CHECK_EQ("spi1_lcd_rddid", lcd_rddid(), 0x858552);
    lcd_window(WIN_X, WIN_Y, 0xA5A5);
    REG32(SPI1 + 0x500) = 0;

    /* ---- SPIM2 on the same pins --------------------------------------- */
    spi_pins(SPIM2, PIN_SCK, PIN_MOSI, PIN_MISO);
    spi_on(SPIM2, 7);
    CHECK_EQ("spim2_nor_jedec", jedec(), 0x0B4016);
    CHECK_EQ("spim2_nor_program_read", nor_program_and_read(NOR_B, 0x55), 0);
    uint8_t rd[4] = {0x03, (uint8_t)(NOR_A >> 16), (uint8_t)(NOR_A >> 8), (uint8_t)NOR_A}, got[4 + 16];
    nor(rd, 4, got, 20);                  /* what SPI1 programmed */
    CHECK_EQ("spim2_reads_spi1_data", got[4] | got[5] << 8, 0x11 | (0x11 + 7) << 8);
    CHECK_EQ("spim2_lcd_rddid", lcd_rddid(), 0x858552);
    lcd_window(WIN_X + 90, WIN_Y, 0x5A5A);
    REG32(SPIM2 + 0x500) = 0;

    /* ---- companion: SPIM2 on other pins reaches nothing ---------------- */
    spi_pins(SPIM2, 11, 12, 13);
    spi_on(SPIM2, 7);
    CHECK_EQ("spim2_other_pins_jedec_reads_low_miso", jedec(), 0x000000);
    CHECK_EQ("spim2_other_pins_no_lcd_id", lcd_rddid(), 0x000000);
    lcd_window(STRAY_X, STRAY_Y, 0xFFFF);  /* the Python side: never drawn */
    REG32(SPIM2 + 0x500) = 0;
    /* only MISO elsewhere (pulled up): the NOR is clocked, the master reads its pin */
    GPIO_PIN_CNF(13) = 0x0000000C;        /* input, connected, pull-up */
    spi_pins(SPIM2, PIN_SCK, PIN_MOSI, 13);
    spi_on(SPIM2, 7);
    CHECK_EQ("spim2_miso_elsewhere_reads_its_pin", jedec(), 0xFFFFFF);
    REG32(SPIM2 + 0x500) = 0;
    spi_pins(SPIM2, PIN_SCK, PIN_MOSI, PIN_MISO);
    spi_on(SPIM2, 7);
    CHECK_EQ("spim2_back_on_the_pins", jedec(), 0x0B4016);
    c = 0xB9; nor(&c, 1, 0, 0);           /* deep power-down */
    REG32(SPIM2 + 0x500) = 0;

    /* ---- TWIM1 and TWIM0 on the PineTime's I2C pins ------------------- */
    GPIO_PIN_CNF(PIN_SCL) = 0x0000060C;   /* input, pull-up, S0D1 (as nrfx does) */
    GPIO_PIN_CNF(PIN_SDA) = 0x0000060C;
    uint8_t v[2] = {0, 0};
    twim_on(TWIM1, PIN_SCL, PIN_SDA);
    CHECK_EQ("twim1_touch_chip_id_ok", twim_read(TWIM1, 0x15, 0xA7, v, 1), 0);
    CHECK_EQ("twim1_touch_chip_id", v[0], 0xB4);
    REG32(TWIM1 + 0x500) = 0;
    twim_on(TWIM0, PIN_SCL, PIN_SDA);
    v[0] = 0;
    CHECK_EQ("twim0_touch_chip_id_ok", twim_read(TWIM0, 0x15, 0xA7, v, 1), 0);
    CHECK_EQ("twim0_touch_chip_id", v[0], 0xB4);
    CHECK_EQ("twim0_accel_chip_id_ok", twim_read(TWIM0, 0x18, 0x00, v, 1), 0);
    CHECK_EQ("twim0_accel_chip_id", v[0], 0x11);
    REG32(TWIM0 + 0x500) = 0;

    /* ---- companion: TWIM0 elsewhere, or with SCL/SDA swapped ---------- */
    twim_on(TWIM0, 27, 26);
    CHECK_EQ("twim0_other_pins_anack", twim_read(TWIM0, 0x15, 0xA7, v, 1), 2);
    REG32(TWIM0 + 0x500) = 0;
    twim_on(TWIM0, PIN_SDA, PIN_SCL);
    CHECK_EQ("twim0_swapped_pins_anack", twim_read(TWIM0, 0x15, 0xA7, v, 1), 2);
    REG32(TWIM0 + 0x500) = 0;
    return harness_failures;
}
