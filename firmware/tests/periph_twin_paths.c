/* The peripherals' steps the emulator carries out in C as well as in
 * Python (emu/twins.py), each reached the way firmware reaches it:
 *  - RTC1's TICK routed by EVTEN (its event set, no interrupt), then
 *    INTENSET TICK: the line rises at the write; the handler's INTENCLR
 *    TICK (the event still set) lowers it;
 *  - the watchdog with CRV below its minimum (15), fed: the reload counts
 *    from 16 LFCLK cycles, not CRV + 1;
 *  - a TIMER CAPTURE task written with 0 (no capture) and with 1. */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE

#define RTC1 0x40011000u
#define WDT  0x40010000u

static volatile uint32_t rtc_irqs, tick_seen_in_irq;
void IRQ17_Handler(void) {                      /* RTC1 */
    rtc_irqs++;
    tick_seen_in_irq = REG32(RTC1 + 0x100);
    REG32(RTC1 + 0x308) = 1;                    /* INTENCLR TICK: the line falls */
}

int main(void) {
    /* -- RTC1: TICK routed, then enabled as an interrupt */
    irq_enable(17);
    REG32(RTC1 + 0x344) = 1;                    /* EVTENSET TICK */
    REG32(RTC1 + 0x000) = 1;                    /* START */
    while (!REG32(RTC1 + 0x100))                /* EVENTS_TICK */
        ;
    CHECK_EQ("no interrupt for a routed TICK", rtc_irqs, 0);
    REG32(RTC1 + 0x304) = 1;                    /* INTENSET TICK: the event is set */
    dsb_isb();
    CHECK_EQ("INTENSET with TICK set interrupts at once", rtc_irqs, 1);
    CHECK_EQ("TICK set in the handler", tick_seen_in_irq, 1);
    CHECK_EQ("INTENCLR left INTEN clear", REG32(RTC1 + 0x304), 0);
    REG32(RTC1 + 0x100) = 0;
    REG32(RTC1 + 0x004) = 1;                    /* STOP */
    REG32(RTC1 + 0x348) = 1;                    /* EVTENCLR TICK */

    /* -- TIMER1 CAPTURE: 0 does nothing, 1 captures */
    T_BITMODE(TIMER1) = 3;
    T_PRESCALER(TIMER1) = 4;                    /* 1 MHz */
    T_CC(TIMER1, 1) = 0xDEAD;
    T_START(TIMER1) = 1;
    for (volatile int i = 0; i < 200; i++)
        ;
    T_CAPTURE(TIMER1, 1) = 0;
    CHECK_EQ("CAPTURE written with 0 captures nothing", T_CC(TIMER1, 1), 0xDEAD);
    T_CAPTURE(TIMER1, 1) = 1;
    uint32_t cap = T_CC(TIMER1, 1);
    CHECK("CAPTURE written with 1 captures the count", cap != 0xDEAD && cap < 1000);
    T_STOP(TIMER1) = 1;

    /* -- the watchdog, CRV 1 (below the minimum 15): fed for a while */
    REG32(WDT + 0x504) = 1;                     /* CRV */
    REG32(WDT + 0x508) = 1;                     /* RREN: RR[0] */
    REG32(WDT + 0x000) = 1;                     /* START */
    for (int i = 0; i < 400; i++) {
        REG32(WDT + 0x600) = 0x6E524635;        /* RR[0] */
        for (volatile int j = 0; j < 20; j++)
            ;
    }
    CHECK_EQ("fed: no reset, RUNSTATUS 1", REG32(WDT + 0x400), 1);
    return harness_failures;
}
