/* The legacy SPI's byte stream to the display (ST7789 in RAMWR), driven the
 * way a hand-written driver drives it, beyond one byte at a time:
 *  - TXD written twice (the second waits in the TXD buffer, then goes out
 *    back to back), both answers read from RXD, READY set again while the
 *    RXD FIFO still holds one;
 *  - RXD read with the FIFO empty (0), READY written 1 by the CPU;
 *  - a third TXD while both buffers are full (the peripheral drops it);
 *  - four bytes without reading RXD (its two-deep FIFO overflows).
 * The emulator carries these accesses out in C while it streams
 * (emu/soc/_streams.c) and in the SPI model otherwise: the same bytes on
 * the wire, the same registers (emu/twins.py: spi.stream). */
#include "harness.h"
#include "cm4.h"
#include "pinetime.h"
HARNESS_STATE

static void wait_ready(void) {
    for (int i = 0; i < POLL_LIMIT && !SPI_EVENTS_READY; i++)
        ;
}

static void settle(void) {               /* longer than two bytes at 8 Mbps */
    for (volatile int i = 0; i < 100; i++)
        ;
}

int main(void) {
    pt_gpio_init();
    pt_spi_init();
    pt_lcd_cmd(0x11, 0, 0);              /* SLPOUT */
    GPIO_OUTCLR = 1u << PIN_LCD_CS;
    GPIO_OUTCLR = 1u << PIN_DC;
    pt_spi_xfer(0x2C);                   /* RAMWR: the display takes pixel bytes */
    GPIO_OUTSET = 1u << PIN_DC;
    for (int i = 0; i < 64; i++)         /* a run of single bytes first */
        pt_spi_xfer(0x10 + i);

    /* two back to back */
    SPI_TXD = 0x11;
    SPI_TXD = 0x22;
    settle();
    wait_ready();
    SPI_EVENTS_READY = 0;
    uint32_t a = SPI_RXD;
    uint32_t ready_again = SPI_EVENTS_READY;
    SPI_EVENTS_READY = 0;
    uint32_t b = SPI_RXD;
    uint32_t empty = SPI_RXD;
    CHECK_EQ("first answer", a, 0xFF);
    CHECK_EQ("READY again while one answer waits", ready_again, 1);
    CHECK_EQ("second answer", b, 0xFF);
    CHECK_EQ("RXD empty reads 0", empty, 0);

    /* READY written by the CPU */
    SPI_EVENTS_READY = 1;
    CHECK_EQ("READY written 1 reads 1", SPI_EVENTS_READY, 1);
    SPI_EVENTS_READY = 0;

    /* a third byte while both buffers are full: dropped */
    SPI_TXD = 0x31;
    SPI_TXD = 0x32;
    SPI_TXD = 0x33;
    settle();
    SPI_EVENTS_READY = 0;
    uint32_t n = 0;
    while (n < 4 && (SPI_RXD, 1)) {
        n++;
        if (!SPI_EVENTS_READY)
            break;
        SPI_EVENTS_READY = 0;
    }
    CHECK("the third byte was dropped (two answers at most)", n <= 2);

    /* four bytes, RXD not read: the FIFO holds two */
    SPI_TXD = 0x41;
    SPI_TXD = 0x42;
    settle();
    SPI_TXD = 0x43;
    SPI_TXD = 0x44;
    settle();
    SPI_EVENTS_READY = 0;
    uint32_t r1 = SPI_RXD, r2 = SPI_RXD, r3 = SPI_RXD;
    CHECK_EQ("FIFO: first", r1, 0xFF);
    CHECK_EQ("FIFO: second", r2, 0xFF);
    CHECK_EQ("FIFO: no third", r3, 0);
    GPIO_OUTSET = 1u << PIN_LCD_CS;
    return harness_failures;
}
