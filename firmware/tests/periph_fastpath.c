/* The accesses the bus carries out from the register tables (emu/soc/ops.py,
 * in C in emu/soc/_mmio.c), driven the way real firmware drives them:
 *   - MicroPython's ticks: INTENCLR.OVRFLW, read COUNTER and EVENTS_OVRFLW,
 *     INTENSET.OVRFLW, thousands of times, with RTC1 COMPARE interrupts at
 *     ~1 kHz re-armed in the handler (CC write, event clear);
 *   - INTENSET while the event is already set raises the line at once, and
 *     an event clear lowers it (the op must hand those to the model);
 *   - a plain register's writable mask (NVMC ICACHECNF);
 *   - legacy SPI0 polled: READY completes lazily when polled;
 *   - a store through a NULL pointer into flash, dropped while the NVMC is
 *     read-only, and a real flash write in write mode;
 *   - LFCLKSTAT polled while the LFCLK starts (a cell read without the GIL
 *     natively: InfiniTime's first second), then stopped.
 * It prints a checksum of everything it read, so runs with the native and
 * the pure-Python bus can be compared byte for byte. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RTC1   0x40011000u
#define SPI0   0x40003000u
#define NVMC   0x4001E000u
#define EGU0   0x40014000u
#define CLOCK  0x40000000u

static volatile uint32_t ticks, hits;
void IRQ17_Handler(void) {               /* RTC1 */
    if (REG32(RTC1 + 0x140)) {           /* EVENTS_COMPARE[0] */
        REG32(RTC1 + 0x140) = 0;
        REG32(RTC1 + 0x540) = (REG32(RTC1 + 0x504) + 33) & 0xFFFFFF;   /* ~1 ms */
        ticks++;
    }
}
void IRQ20_Handler(void) {               /* EGU0/SWI0 */
    REG32(EGU0 + 0x100) = 0;             /* EVENTS_TRIGGERED[0] clear lowers the line */
    hits++;
}

static uint32_t crc;
static void mix(uint32_t v) { crc = (crc ^ v) * 0x01000193u; }

int main(void) {
    crc = 0x811C9DC5u;
    REG32(RTC1 + 0x540) = 33;
    REG32(RTC1 + 0x304) = 1u << 16;      /* INTENSET.COMPARE0 */
    REG32(RTC1 + 0x344) = 1u << 16;      /* EVTENSET.COMPARE0 */
    irq_enable(17);
    REG32(RTC1 + 0x000) = 1;             /* START */

    /* MicroPython's ticks_ms: mask the overflow around each counter read */
    uint32_t last = 0, backwards = 0, reads = 0;
    while (ticks < 40) {
        REG32(RTC1 + 0x308) = 2;         /* INTENCLR.OVRFLW */
        uint32_t c = REG32(RTC1 + 0x504);
        uint32_t ov = REG32(RTC1 + 0x104);
        REG32(RTC1 + 0x304) = 2;         /* INTENSET.OVRFLW */
        if (c < last) backwards++;
        last = c;
        mix(c + ov);
        reads++;
    }
    CHECK("rtc counter never goes backwards", backwards == 0);
    CHECK("rtc counter advanced with the ticks", last >= 40 * 33);
    CHECK("rtc compare interrupts kept coming while INTEN toggled", ticks == 40);
    CHECK("many counter reads", reads > 1000);
    mix(ticks);

    /* INTENSET with the event already set raises the line; the clear lowers it */
    REG32(EGU0 + 0x000) = 1;             /* TASKS_TRIGGER[0]: EVENTS_TRIGGERED[0] = 1 */
    irq_enable(20);
    CHECK_EQ("no interrupt before INTEN", hits, 0);
    REG32(EGU0 + 0x304) = 1;             /* INTENSET.TRIGGERED0 */
    __asm volatile("dsb; isb");
    for (volatile int i = 0; i < 10; i++) {}
    CHECK_EQ("INTENSET with the event set interrupts once", hits, 1);
    REG32(EGU0 + 0x308) = 1;
    CHECK_EQ("INTENCLR reads back", REG32(EGU0 + 0x304), 0);

    /* a plain register: only its writable bits stick */
    REG32(NVMC + 0x540) = 0xFFFFFFFFu;
    CHECK_EQ("ICACHECNF keeps its mask", REG32(NVMC + 0x540), 0x101);
    REG32(NVMC + 0x540) = 0;

    /* legacy SPI0 polled, no device: READY completes when polled */
    REG32(SPI0 + 0x524) = 0x80000000u;
    REG32(SPI0 + 0x500) = 1;
    uint32_t polls = 0;
    for (int i = 0; i < 64; i++) {
        REG32(SPI0 + 0x51C) = i;
        while (!REG32(SPI0 + 0x108)) polls++;
        REG32(SPI0 + 0x108) = 0;
        mix(REG32(SPI0 + 0x518));
    }
    REG32(SPI0 + 0x500) = 0;
    CHECK("spi READY polled", polls > 64);
    mix(polls);

    /* a NULL receive buffer: stores into flash, ignored while read-only */
    volatile uint32_t *null = (volatile uint32_t *)0;
    uint32_t v0 = null[1];
    for (int i = 0; i < 100; i++) null[1] = i;
    CHECK_EQ("stores into read-only flash are ignored", null[1], v0);
    volatile uint32_t *page = (volatile uint32_t *)0x7F000;
    REG32(NVMC + 0x504) = 1;             /* CONFIG = Wen */
    while (!REG32(NVMC + 0x400)) {}
    page[0] = 0x12345678u;
    while (!REG32(NVMC + 0x400)) {}
    REG32(NVMC + 0x504) = 0;
    CHECK_EQ("flash write in write mode", page[0], 0x12345678u);
    page[1] = 0;                          /* read-only again: ignored */
    CHECK_EQ("read-only again", page[1], 0xFFFFFFFFu);

    /* LFCLK from the RC oscillator: LFCLKSTAT polled until it runs */
    REG32(CLOCK + 0x518) = 0;            /* LFCLKSRC = RC */
    REG32(CLOCK + 0x008) = 1;            /* TASKS_LFCLKSTART */
    uint32_t lpolls = 0, stat;
    while (!((stat = REG32(CLOCK + 0x418)) & (1u << 16))) lpolls++;
    mix(stat); mix(lpolls);
    CHECK("LFCLKSTAT polled until the LFCLK runs", lpolls > 100 && stat == 0x10000u);
    REG32(CLOCK + 0x00C) = 1;            /* TASKS_LFCLKSTOP */
    CHECK_EQ("LFCLKSTAT clear after LFCLKSTOP", REG32(CLOCK + 0x418), 0);

    semihost_puts("checksum ");
    put_hex(crc);
    semihost_puts("\n");
    return harness_failures;
}
