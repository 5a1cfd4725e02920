/* Keeps every output of `pinetime-emu run` busy until the emulator is
 * stopped (a signal): the screen changes every emulated second (a bar that
 * grows, for --screenshot and --record), and each second the NOR flash gets
 * a record, the second's number at 0x10000 + 256 * n (for --flash-file),
 * announced on the console as "NOR n" once it is programmed.  SysTick at
 * 8 Hz and WFI between, as pinetime_demo.c: it never exits. */
#include <stdint.h>
#include "pinetime.h"

#define RECORDS 0x10000u
#define MAX_RECORDS 4096u

static void nor_begin(void) { GPIO_OUTCLR = 1u << PIN_NOR_CS; }
static void nor_end(void) { GPIO_OUTSET = 1u << PIN_NOR_CS; }
static void nor_cmd(uint8_t c) { nor_begin(); pt_spi_xfer(c); nor_end(); }
static void nor_wait(void) {
    for (int n = 0; n < 200000; n++) {
        nor_begin(); pt_spi_xfer(0x05);
        uint8_t s = pt_spi_xfer(0);
        nor_end();
        if (!(s & 1)) return;
    }
}

static void nor_record(uint32_t n) {
    uint32_t a = RECORDS + 256 * n;
    nor_cmd(0x06);                                 /* WREN */
    nor_begin();
    pt_spi_xfer(0x02); pt_spi_xfer(a >> 16); pt_spi_xfer(a >> 8); pt_spi_xfer(a);
    for (int i = 0; i < 4; i++) pt_spi_xfer((uint8_t)(n >> (8 * i)));
    nor_end();
    nor_wait();
}

static void lcd_fill(int x, int y, int w, int h, uint16_t color) {
    uint8_t ca[4] = {0, (uint8_t)x, 0, (uint8_t)(x + w - 1)};
    uint8_t ra[4] = {0, (uint8_t)y, 0, (uint8_t)(y + h - 1)};
    pt_lcd_cmd(0x2A, ca, 4);
    pt_lcd_cmd(0x2B, ra, 4);
    GPIO_OUTCLR = 1u << PIN_LCD_CS;
    GPIO_OUTCLR = 1u << PIN_DC;
    pt_spi_xfer(0x2C);
    GPIO_OUTSET = 1u << PIN_DC;
    for (int i = 0; i < w * h; i++) { pt_spi_xfer(color >> 8); pt_spi_xfer(color & 0xFF); }
    GPIO_OUTSET = 1u << PIN_LCD_CS;
}

static volatile uint32_t ticks8, seconds;
void SysTick_Handler(void) { if (++ticks8 % 8 == 0) seconds++; }

int main(void) {
    pt_gpio_init();
    GPIO_OUTCLR = (1u << PIN_BL_LOW) | (1u << PIN_BL_MID) | (1u << PIN_BL_HIGH);
    pt_spi_init();
    GPIO_OUTSET = 1u << PIN_LCD_RST;
    pt_lcd_cmd(0x11, 0, 0);                       /* SLPOUT */
    uint8_t colmod = 0x05; pt_lcd_cmd(0x3A, &colmod, 1);
    pt_lcd_cmd(0x21, 0, 0);                       /* INVON: the panel's colours */
    pt_lcd_cmd(0x29, 0, 0);                       /* DISPON */
    lcd_fill(0, 0, 240, 240, 0x001F);
    nor_cmd(0xAB);                                /* release from deep power-down */
    semihost_puts("outputs running\n");

    REG32(0xE000E014) = 8000000 - 1;              /* 8 Hz at 64 MHz */
    REG32(0xE000E018) = 0;
    REG32(0xE000E010) = 7;
    uint32_t shown = 0;
    for (;;) {
        __asm volatile("wfi");
        if (seconds == shown) continue;
        shown = seconds;
        lcd_fill(0, 100, 240, 40, 0x0000);
        lcd_fill(0, 100, (int)(shown % 24) * 10 + 10, 40, 0xFFE0);
        if (shown <= MAX_RECORDS) {
            nor_record(shown - 1);
            semihost_puts("NOR ");
            put_dec(shown - 1);
            semihost_puts("\n");
        }
    }
}
