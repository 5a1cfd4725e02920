/* ST7789 over legacy SPI0 the way wasp-os drives it: hardware reset, init
 * sequence, CASET/RASET windows, RAMWR of a known RGB565 pattern (the test
 * recomputes it in Python and compares the screenshot pixel by pixel). */
#include "pinetime.h"

/* pattern: pixel (x, y) inside the window gets colour PAT(x, y) */
#define PAT(x, y) ((uint16_t)((x) * 1031u + (y) * 7919u + (((x) ^ (y)) << 11)))
#define WX 40
#define WY 60
#define WW 64
#define WH 48


static void delay(volatile uint32_t n) { while (n--) __asm volatile("nop"); }

int main(void) {
    pt_gpio_init();
    GPIO_OUTCLR = (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) | (1u << PIN_BL_HIGH);
    pt_spi_init();
    GPIO_OUTCLR = 1u << PIN_LCD_RST; delay(1000); GPIO_OUTSET = 1u << PIN_LCD_RST; delay(1000);
    pt_lcd_cmd(0x01, 0, 0);                     /* SWRESET */
    pt_lcd_cmd(0x11, 0, 0);                     /* SLPOUT */
    uint8_t colmod = 0x05; pt_lcd_cmd(0x3A, &colmod, 1);
    uint8_t madctl = 0x00; pt_lcd_cmd(0x36, &madctl, 1);
    pt_lcd_cmd(0x21, 0, 0);                     /* INVON (the PineTime panel is inverted) */
    pt_lcd_cmd(0x13, 0, 0);                     /* NORON */
    pt_lcd_cmd(0x29, 0, 0);                     /* DISPON */

    /* clear the visible area to white (RAM 0xFFFF; the panel shows true colours with INVON) */
    uint8_t ca[4] = {0, 0, 0, 239}, ra[4] = {0, 0, 0, 239};
    pt_lcd_cmd(0x2A, ca, 4); pt_lcd_cmd(0x2B, ra, 4);
    GPIO_OUTCLR = 1u << PIN_LCD_CS; GPIO_OUTCLR = 1u << PIN_DC;
    pt_spi_xfer(0x2C);
    GPIO_OUTSET = 1u << PIN_DC;
    for (int i = 0; i < 240 * 240 * 2; i++) pt_spi_xfer(0xFF);
    GPIO_OUTSET = 1u << PIN_LCD_CS;

    uint8_t ca2[4] = {0, WX, 0, WX + WW - 1}, ra2[4] = {0, WY, 0, WY + WH - 1};
    pt_lcd_cmd(0x2A, ca2, 4); pt_lcd_cmd(0x2B, ra2, 4);
    GPIO_OUTCLR = 1u << PIN_LCD_CS; GPIO_OUTCLR = 1u << PIN_DC;
    pt_spi_xfer(0x2C);
    GPIO_OUTSET = 1u << PIN_DC;
    for (int y = 0; y < WH; y++)
        for (int x = 0; x < WW; x++) {
            uint16_t c = PAT(x, y);
            pt_spi_xfer(c >> 8); pt_spi_xfer(c & 0xFF);
        }
    GPIO_OUTSET = 1u << PIN_LCD_CS;

    /* RDDID through MISO */
    GPIO_OUTCLR = 1u << PIN_LCD_CS; GPIO_OUTCLR = 1u << PIN_DC;
    pt_spi_xfer(0x04);
    GPIO_OUTSET = 1u << PIN_DC;
    uint32_t id = pt_spi_xfer(0) << 16; id |= pt_spi_xfer(0) << 8; id |= pt_spi_xfer(0);
    GPIO_OUTSET = 1u << PIN_LCD_CS;
    CHECK_EQ("lcd_rddid", id, 0x858552);
    semihost_puts("PASS display_drawn\n");
    return harness_failures;
}
