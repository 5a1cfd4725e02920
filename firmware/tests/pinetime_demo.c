/* The default firmware for `scripts/demo.sh`: a bare-metal PineTime demo.
 * Drives the ST7789 through legacy SPI0 exactly like wasp-os does (PS 33,
 * "SPI - Serial peripheral interface master"), draws a watch face with a
 * 3x5 pixel font, and ticks the seconds with SysTick + WFI (8 Hz, so an idle
 * watch runs far faster than real time).  No semihosting exit: it runs until
 * the emulator stops it. */
#include <stdint.h>
#include "pinetime.h"

static void delay(volatile uint32_t n) { while (n--) __asm volatile("nop"); }

static void lcd_window(int x, int y, int w, int h) {
    uint8_t ca[4] = {0, (uint8_t)x, 0, (uint8_t)(x + w - 1)};
    uint8_t ra[4] = {0, (uint8_t)y, 0, (uint8_t)(y + h - 1)};
    pt_lcd_cmd(0x2A, ca, 4);
    pt_lcd_cmd(0x2B, ra, 4);
}

static void lcd_fill(int x, int y, int w, int h, uint16_t color) {
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
    pt_gpio_init();
    GPIO_OUTCLR = (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) | (1u << PIN_BL_HIGH); /* full */
    pt_spi_init();

    GPIO_OUTCLR = 1u << PIN_LCD_RST; delay(1000); GPIO_OUTSET = 1u << PIN_LCD_RST; delay(1000);
    pt_lcd_cmd(0x11, 0, 0);                       /* SLPOUT */
    uint8_t colmod = 0x05; pt_lcd_cmd(0x3A, &colmod, 1);
    uint8_t madctl = 0x00; pt_lcd_cmd(0x36, &madctl, 1);
    pt_lcd_cmd(0x21, 0, 0);                       /* INVON */
    pt_lcd_cmd(0x13, 0, 0);                       /* NORON */
    pt_lcd_cmd(0x29, 0, 0);                       /* DISPON */

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
