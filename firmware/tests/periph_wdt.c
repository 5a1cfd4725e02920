/* WDT: start a 10 ms watchdog, feed it for a while (no reset), stop feeding,
 * sleep; after the watchdog reset the firmware sees RESETREAS.DOG, the RAM
 * marker kept, GPREGRET cleared (PS reset table) and the WDT stopped. */
#include "harness.h"
HARNESS_STATE

#define POWER_RESETREAS REG32(0x40000400)
#define POWER_GPREGRET  REG32(0x4000051C)
#define WDT_START     REG32(0x40010000)
#define WDT_TIMEOUT   REG32(0x40010100)
#define WDT_RUNSTATUS REG32(0x40010400)
#define WDT_REQSTATUS REG32(0x40010404)
#define WDT_CRV       REG32(0x40010504)
#define WDT_RREN      REG32(0x40010508)
#define WDT_RR(n)     REG32(0x40010600 + 4 * (n))
#define MARKER        REG32(0x2000C000)   /* above .bss, below the stack */
#define RTC1_START    REG32(0x40011000)
#define RTC1_COUNTER  REG32(0x40011504)

int main(void) {
    uint32_t rr = POWER_RESETREAS;
    if (rr & 2) {
        semihost_puts("after watchdog reset\n");
        CHECK_EQ("resetreas dog only", rr, 2);
        CHECK_EQ("ram kept across reset", MARKER, 0xC0FFEE42);
        CHECK_EQ("gpregret cleared by watchdog reset", POWER_GPREGRET, 0);
        CHECK_EQ("wdt stopped by its reset", WDT_RUNSTATUS, 0);
        POWER_RESETREAS = rr;                    /* W1C */
        CHECK_EQ("resetreas w1c", POWER_RESETREAS, 0);
        return harness_failures;
    }
    CHECK_EQ("resetreas at power-on", rr, 0);
    MARKER = 0xC0FFEE42;
    POWER_GPREGRET = 0x5A;
    WDT_CRV = 327;                               /* (327+1)/32768 s = 10 ms */
    WDT_RREN = 0x3;                              /* RR[0] and RR[1] */
    WDT_START = 1;
    CHECK_EQ("runstatus", WDT_RUNSTATUS, 1);
    WDT_CRV = 100000;                            /* ignored while running */
    CHECK_EQ("crv locked", WDT_CRV, 327);
    CHECK_EQ("reqstatus both", WDT_REQSTATUS, 3);
    RTC1_START = 1;
    /* feed every ~5 ms for 50 ms: no reset */
    uint32_t last = 0;
    while (RTC1_COUNTER < 50 * 33) {
        if (RTC1_COUNTER - last >= 160) {
            last = RTC1_COUNTER;
            WDT_RR(0) = 0x6E524635;
            if (WDT_REQSTATUS != 2) harness_failures++;
            WDT_RR(1) = 0x6E524635;
        }
    }
    CHECK("fed watchdog did not bite", WDT_TIMEOUT == 0);
    WDT_RR(0) = 0x6E524635;                      /* only one of two: no reload */
    for (;;) __asm volatile("wfi");
}
