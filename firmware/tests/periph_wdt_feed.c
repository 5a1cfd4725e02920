/* WDT fed the common way (RREN = RR[0] only, wasp-os's tick feeds it so;
 * the feed as the Adafruit bootloader writes it: RUNSTATUS read, then all
 * eight RR registers):
 * a 10 ms watchdog fed every ~5 ms for 50 ms does not bite; RR[1] (not
 * enabled) and a wrong value in RR[0] reload nothing, so it bites 10 ms
 * after the last right feed (plus the two LFCLK cycles to the reset).  The
 * reload is carried out by emu.soc._mmio.WdtCore natively, by the model in
 * pure Python. */
#include "harness.h"
HARNESS_STATE

#define POWER_RESETREAS REG32(0x40000400)
#define WDT_START     REG32(0x40010000)
#define WDT_TIMEOUT   REG32(0x40010100)
#define WDT_CRV       REG32(0x40010504)
#define WDT_RUNSTATUS REG32(0x40010400)
#define WDT_RR(n)     REG32(0x40010600 + 4 * (n))
#define RTC1_START    REG32(0x40011000)
#define RTC1_COUNTER  REG32(0x40011504)
#define LAST_FEED     REG32(0x2000C000)   /* above .bss, below the stack: kept */
#define LAST_SEEN     REG32(0x2000C004)
#define MAGIC         REG32(0x2000C008)

int main(void) {
    uint32_t rr = POWER_RESETREAS;
    if (rr & 2) {
        semihost_puts("after watchdog reset\n");
        CHECK_EQ("the watchdog's reset", rr, 2);
        CHECK_EQ("the RAM markers kept", MAGIC, 0xFEED0001);
        uint32_t after = LAST_SEEN - LAST_FEED;
        /* 328 counts (10 ms) after the last right feed, the reset 2 LFCLK later */
        CHECK("bit 10 ms after the last right feed", after >= 326 && after <= 331);
        POWER_RESETREAS = rr;
        return harness_failures;
    }
    MAGIC = 0xFEED0001;
    WDT_RR(0) = 0x6E524635;                      /* before START: reloads nothing */
    CHECK_EQ("RUNSTATUS before START", WDT_RUNSTATUS, 0);
    WDT_CRV = 327;                               /* (327+1)/32768 s = 10 ms */
    WDT_START = 1;                               /* RREN: RR[0] only (reset value) */
    RTC1_START = 1;
    uint32_t last = 0;
    while (RTC1_COUNTER < 50 * 33) {             /* feed every ~5 ms for 50 ms */
        uint32_t now = RTC1_COUNTER;
        if (now - last >= 160) {
            last = now;
            if (WDT_RUNSTATUS)                   /* the Adafruit bootloader's feed: */
                for (int i = 0; i < 8; i++)      /* every RR, enabled or not */
                    WDT_RR(i) = 0x6E524635;
            LAST_FEED = now;
        }
    }
    CHECK("a fed watchdog does not bite", WDT_TIMEOUT == 0);
    for (;;) {                                   /* feeds that reload nothing */
        WDT_RR(1) = 0x6E524635;                  /* not enabled in RREN */
        WDT_RR(0) = 0x12345678;                  /* not the reload value */
        LAST_SEEN = RTC1_COUNTER;
    }
}
