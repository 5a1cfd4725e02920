/* SPI masters the way nrfx drives them: legacy SPI0 polled with the
 * double-buffered TXD/RXD (as wasp-os's display/flash path does), and SPIM2
 * with EasyDMA and an END interrupt.  The Python side attaches a fake device
 * (returns previous byte + 1) with its chip select held low, on a bus on the
 * PineTime's SPI pins (P0.02/03/04) and on a second bus on P0.11/12/13. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define SPI0   0x40003000u
#define SPIM2  0x40023000u

static volatile int spim_done;
void IRQ35_Handler(void) {
    if (REG32(SPIM2 + 0x118)) {      /* EVENTS_END */
        REG32(SPIM2 + 0x118) = 0;
        (void)REG32(SPIM2 + 0x118);
        spim_done++;
    }
}

static uint8_t tx[16], rx[16];

int main(void) {
    /* legacy SPI0: 8 MHz, mode 3, pins as on the PineTime */
    REG32(SPI0 + 0x508) = 2; REG32(SPI0 + 0x50C) = 3; REG32(SPI0 + 0x510) = 4;
    REG32(SPI0 + 0x524) = 0x80000000u;
    REG32(SPI0 + 0x554) = 6;
    REG32(SPI0 + 0x500) = 1;
    uint8_t got[8];
    int loops = 0;
    REG32(SPI0 + 0x51C) = 0x10;          /* two bytes in flight: double buffer */
    REG32(SPI0 + 0x51C) = 0x11;
    for (int i = 0; i < 8; i++) {
        while (!REG32(SPI0 + 0x108)) loops++;
        REG32(SPI0 + 0x108) = 0;
        got[i] = REG32(SPI0 + 0x518);
        if (i + 2 < 8) REG32(SPI0 + 0x51C) = 0x10 + i + 2;
    }
    CHECK_EQ("spi first rx is the device's reset byte", got[0], 0x00);
    int ok = 1;
    for (int i = 1; i < 8; i++) ok &= got[i] == (uint8_t)(0x10 + i);
    CHECK("spi polled echo of previous byte + 1", ok);
    CHECK("spi READY took polling time", loops > 8);
    REG32(SPI0 + 0x500) = 0;

    /* SPIM2 EasyDMA, interrupt-driven, on the second bus's pins */
    for (int i = 0; i < 16; i++) tx[i] = 0xA0 + i;
    REG32(SPIM2 + 0x508) = 11; REG32(SPIM2 + 0x50C) = 12; REG32(SPIM2 + 0x510) = 13;
    REG32(SPIM2 + 0x524) = 0x40000000u;  /* 4 MHz */
    REG32(SPIM2 + 0x544) = (uint32_t)tx; REG32(SPIM2 + 0x548) = 16;
    REG32(SPIM2 + 0x534) = (uint32_t)rx; REG32(SPIM2 + 0x538) = 16;
    REG32(SPIM2 + 0x500) = 7;
    REG32(SPIM2 + 0x304) = 1u << 6;      /* INTENSET.END */
    irq_enable(35);
    REG32(SPIM2 + 0x010) = 1;            /* TASKS_START */
    while (!spim_done) __asm volatile("wfi");
    CHECK_EQ("spim TXD.AMOUNT", REG32(SPIM2 + 0x54C), 16);
    CHECK_EQ("spim RXD.AMOUNT", REG32(SPIM2 + 0x53C), 16);
    CHECK_EQ("spim rx[0] = last legacy byte + 1", rx[0], 0x18);
    CHECK_EQ("spim rx[15]", rx[15], 0xAF);
    return harness_failures;
}
