/* The default firmware for `scripts/demo.sh`: a bare-metal PineTime demo.
 * Drives the ST7789 through legacy SPI0 exactly like wasp-os does (PS 33,
 * "SPI - Serial peripheral interface master"), draws a watch face with a
 * 3x5 pixel font, and ticks the seconds with SysTick + WFI (8 Hz, so an idle
 * watch runs far faster than real time).  No semihosting exit: it runs until
 * the emulator stops it. */
#include <stdint.h>
#include "harness.h"

#define GPIO        0x50000000u
#define GPIO_OUTSET REG32(GPIO + 0x508)
#define GPIO_OUTCLR REG32(GPIO + 0x50C)
#define GPIO_DIRSET REG32(GPIO + 0x518)
#define GPIO_PIN_CNF(n) REG32(GPIO + 0x700 + 4 * (n))
#define SPI0        0x40003000u
#define SPI_EVENTS_READY REG32(SPI0 + 0x108)
#define SPI_ENABLE  REG32(SPI0 + 0x500)
#define SPI_PSEL_SCK  REG32(SPI0 + 0x508)
#define SPI_PSEL_MOSI REG32(SPI0 + 0x50C)
#define SPI_PSEL_MISO REG32(SPI0 + 0x510)
#define SPI_RXD     REG32(SPI0 + 0x518)
#define SPI_TXD     REG32(SPI0 + 0x51C)
#define SPI_FREQUENCY REG32(SPI0 + 0x524)
#define SPI_CONFIG  REG32(SPI0 + 0x554)

enum { PIN_SCK = 2, PIN_MOSI = 3, PIN_MISO = 4, PIN_BL_LOW = 14, PIN_DC = 18, PIN_BL_MID = 22,
       PIN_BL_HIGH = 23, PIN_LCD_CS = 25, PIN_LCD_RST = 26, PIN_NOR_CS = 5 };

static void delay(volatile uint32_t n) { while (n--) __asm volatile("nop"); }

static uint8_t spi_xfer(uint8_t b) {
    SPI_TXD = b;
    while (!SPI_EVENTS_READY) ;
    SPI_EVENTS_READY = 0;
    return (uint8_t)SPI_RXD;
}

static void lcd_cmd(uint8_t c, const uint8_t *data, int n) {
    GPIO_OUTCLR = 1u << PIN_LCD_CS;
    GPIO_OUTCLR = 1u << PIN_DC;
    spi_xfer(c);
    GPIO_OUTSET = 1u << PIN_DC;
    for (int i = 0; i < n; i++) spi_xfer(data[i]);
    GPIO_OUTSET = 1u << PIN_LCD_CS;
}

static void lcd_window(int x, int y, int w, int h) {
    uint8_t ca[4] = {0, (uint8_t)x, 0, (uint8_t)(x + w - 1)};
    uint8_t ra[4] = {0, (uint8_t)y, 0, (uint8_t)(y + h - 1)};
    lcd_cmd(0x2A, ca, 4);
    lcd_cmd(0x2B, ra, 4);
}

static void lcd_fill(int x, int y, int w, int h, uint16_t color) {
    lcd_window(x, y, w, h);
    GPIO_OUTCLR = 1u << PIN_LCD_CS;
    GPIO_OUTCLR = 1u << PIN_DC;
    spi_xfer(0x2C);
    GPIO_OUTSET = 1u << PIN_DC;
    for (int i = 0; i < w * h; i++) { spi_xfer(color >> 8); spi_xfer(color & 0xFF); }
    GPIO_OUTSET = 1u << PIN_LCD_CS;
}

static uint16_t rgb(int r, int g, int b) {
    return (uint16_t)(((r & 0xF8) << 8) | ((g & 0xFC) << 3) | (b >> 3));
}

/* 3x5 digits, one row per 3 bits */
static const uint16_t font[11] = {
    0x7B6F, 0x2C97, 0x73E7, 0x73CF, 0x5BC9, 0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF, 0x0410,
};

static void draw_char(int x, int y, int ch, int scale, uint16_t fg, uint16_t bg) {
    uint16_t bits = font[ch];
    for (int row = 0; row < 5; row++)
        for (int col = 0; col < 3; col++) {
            int on = (bits >> (14 - (row * 3 + col))) & 1;
            lcd_fill(x + col * scale, y + row * scale, scale, scale, on ? fg : bg);
        }
}

static volatile uint32_t ticks8, seconds;
void SysTick_Handler(void) { if (++ticks8 % 8 == 0) seconds++; }

int main(void) {
    uint32_t outs = (1u << PIN_LCD_CS) | (1u << PIN_DC) | (1u << PIN_LCD_RST) |
                    (1u << PIN_NOR_CS) | (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) |
                    (1u << PIN_BL_HIGH) | (1u << PIN_SCK) | (1u << PIN_MOSI);
    GPIO_OUTSET = (1u << PIN_LCD_CS) | (1u << PIN_NOR_CS) | (1u << PIN_LCD_RST);
    GPIO_DIRSET = outs;
    GPIO_OUTCLR = (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) | (1u << PIN_BL_HIGH); /* full */
    SPI_PSEL_SCK = PIN_SCK; SPI_PSEL_MOSI = PIN_MOSI; SPI_PSEL_MISO = PIN_MISO;
    SPI_FREQUENCY = 0x80000000u;   /* 8 Mbps */
    SPI_CONFIG = 0x6;              /* mode 3 */
    SPI_ENABLE = 1;

    GPIO_OUTCLR = 1u << PIN_LCD_RST; delay(1000); GPIO_OUTSET = 1u << PIN_LCD_RST; delay(1000);
    lcd_cmd(0x11, 0, 0);                       /* SLPOUT */
    uint8_t colmod = 0x05; lcd_cmd(0x3A, &colmod, 1);
    uint8_t madctl = 0x00; lcd_cmd(0x36, &madctl, 1);
    lcd_cmd(0x21, 0, 0);                       /* INVON */
    lcd_cmd(0x13, 0, 0);                       /* NORON */
    lcd_cmd(0x29, 0, 0);                       /* DISPON */

    /* background: vertical gradient, then a face */
    for (int y = 0; y < 240; y += 8) lcd_fill(0, y, 240, 8, rgb(0, y / 3, 40 + y / 2));
    uint16_t fg = rgb(255, 255, 255), bg = rgb(0, 0, 0);
    lcd_fill(20, 70, 200, 90, bg);
    int digits[5] = {1, 0, 10, 0, 9};          /* 10:09 */
    for (int i = 0; i < 5; i++) draw_char(28 + i * 38, 80, digits[i], 10, fg, bg);
    lcd_fill(20, 200, 200, 10, rgb(60, 60, 60));
    semihost_puts("pinetime demo running\n");


    REG32(0xE000E014) = 8000000 - 1;           /* 8 Hz at 64 MHz (RVR is 24 bits) */
    REG32(0xE000E018) = 0;
    REG32(0xE000E010) = 7;
    uint32_t shown = 0;
    for (;;) {
        __asm volatile("wfi");
        if (seconds != shown) {
            shown = seconds;
            int w = (int)(shown % 21) * 10;
            lcd_fill(20, 200, 200, 10, rgb(60, 60, 60));
            if (w) lcd_fill(20, 200, w, 10, rgb(255, 160, 0));
        }
    }
}
