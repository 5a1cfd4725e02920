/* WDT CONFIG.SLEEP=0 (PS v1.4 25.3): the watchdog pauses while the CPU sleeps.
 *
 * Boot 1: a 10 ms watchdog with CONFIG.SLEEP=0 (pause in sleep) is started,
 * then the CPU sleeps in WFI for 50 ms until an RTC1 COMPARE interrupt: the
 * watchdog must not bite.  It is fed, then the CPU busy-waits (awake) for
 * 30 ms: now the watchdog must bite.
 * Boot 2 (RESETREAS.DOG): the reset came during the busy wait. */
#include "harness.h"
#include "cm4.h"

#define LFCLKSTART      REG32(0x40000008)
#define LFCLKSTARTED    REG32(0x40000104)
#define POWER_RESETREAS REG32(0x40000400)
#define WDT_START       REG32(0x40010000)
#define WDT_TIMEOUT     REG32(0x40010100)
#define WDT_RUNSTATUS   REG32(0x40010400)
#define WDT_CRV         REG32(0x40010504)
#define WDT_RREN        REG32(0x40010508)
#define WDT_CONFIG      REG32(0x4001050C)
#define WDT_RR0         REG32(0x40010600)
#define RTC1_START      REG32(0x40011000)
#define RTC1_COMPARE0   REG32(0x40011140)
#define RTC1_INTENSET   REG32(0x40011304)
#define RTC1_COUNTER    REG32(0x40011504)
#define RTC1_CC0        REG32(0x40011540)
#define RTC1_IRQ        17

__attribute__((section(".noinit"))) uint32_t stage;
static volatile uint32_t woken;

void IRQ17_Handler(void) {               /* RTC1 COMPARE[0] */
    RTC1_COMPARE0 = 0;
    woken = 1;
}

int main(void) {
    uint32_t rr = POWER_RESETREAS;
    if (rr & 2) {
        semihost_puts("after watchdog reset\n");
        CHECK_EQ("resetreas dog", rr, 2);
        CHECK_EQ("bitten during the awake busy wait", stage, 2);
        return harness_failures;
    }
    stage = 0;
    LFCLKSTART = 1;
    while (!LFCLKSTARTED) {}
    WDT_CRV = 327;                       /* (327+1)/32768 s = 10 ms */
    WDT_RREN = 1;
    WDT_CONFIG = 0;                      /* SLEEP=0: pause in sleep; HALT=0 */
    WDT_START = 1;
    CHECK_EQ("wdt running", WDT_RUNSTATUS, 1);

    RTC1_START = 1;
    uint32_t wake_at = RTC1_COUNTER + 1638;   /* 50 ms */
    RTC1_CC0 = wake_at;
    RTC1_INTENSET = 1u << 16;            /* COMPARE[0] */
    NVIC_ISER(0) = 1u << RTC1_IRQ;
    stage = 1;
    while (!woken)
        __asm volatile("wfi");
    CHECK("slept 50 ms past a 10 ms watchdog", RTC1_COUNTER >= wake_at);
    CHECK_EQ("no timeout while asleep", WDT_TIMEOUT, 0);

    WDT_RR0 = 0x6E524635;                /* feed: a fresh 10 ms */
    stage = 2;
    uint32_t until = RTC1_COUNTER + 983; /* 30 ms awake */
    while (RTC1_COUNTER < until) {}
    stage = 3;
    semihost_puts("FAIL watchdog did not bite while the CPU was awake\n");
    return harness_failures + 1;
}
