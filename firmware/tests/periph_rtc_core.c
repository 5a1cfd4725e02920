/* RTC1's clock event and CC writes as firmware uses them, carried out by
 * emu.soc._mmio.RtcCore in C (natively) or by the model (pure Python): a
 * periodic compare interrupt re-armed from its handler (wasp-os's tick), two
 * CCs on one edge, a compare neither routed nor enabled (polled), one routed
 * to PPI (TIMER0 COUNT) and enabled together (handed to the model), the N+1
 * window (a CC written one ahead is missed with PRESCALER 0), TICK events
 * with INTEN.TICK, and the overflow after TRIGOVRFLW with INTEN.OVRFLW. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RTC1 0x40011000u
#define TIMER0 0x40008000u
#define PPI 0x4001F000u
#define R(o) REG32(RTC1 + (o))
#define IRQ_RTC1 17
#define TICK (1u << 0)
#define OVRFLW (1u << 1)
#define COMPARE(n) (1u << (16 + (n)))

static volatile uint32_t compares0, compares1, ticks, overflows, periodic;

void IRQ17_Handler(void) {
    if (R(0x100)) { R(0x100) = 0; ticks++; }
    if (R(0x104)) { R(0x104) = 0; overflows++; }
    if (R(0x144)) { R(0x144) = 0; compares1++; }
    if (R(0x140)) {
        R(0x140) = 0;
        compares0++;
        if (periodic && --periodic) {
            R(0x308) = COMPARE(0);                /* wasp-os's routine */
            R(0x540) = R(0x504) + 2;
            R(0x304) = COMPARE(0);
        }
    }
}

static uint32_t timer_count(void) {
    REG32(TIMER0 + 0x040) = 1;                    /* CAPTURE[0] */
    return REG32(TIMER0 + 0x540);
}

static void wait_counts(uint32_t n) {
    uint32_t start = R(0x504);
    while (((R(0x504) - start) & 0xFFFFFF) < n) { }
}

int main(void) {
    irq_enable(IRQ_RTC1);
    REG32(TIMER0 + 0x504) = 2;                    /* low-power counter */
    REG32(TIMER0 + 0x508) = 3;                    /* 32 bit */
    REG32(TIMER0 + 0x000) = 1;                    /* START */
    R(0x508) = 0;                                 /* PRESCALER */
    R(0x000) = 1;                                 /* START */

    /* a periodic compare re-armed from the handler, 30 times */
    periodic = 30;
    R(0x540) = R(0x504) + 2;
    R(0x304) = COMPARE(0);
    while (periodic) { __asm volatile("wfi"); }
    CHECK_EQ("30 periodic compare interrupts", compares0, 30);
    R(0x308) = COMPARE(0);

    /* two CCs on one edge: both events, one interrupt or two, both seen */
    compares0 = 0;
    uint32_t at = R(0x504) + 3;
    R(0x540) = at;
    R(0x544) = at;
    R(0x304) = COMPARE(0) | COMPARE(1);
    wait_counts(5);
    CHECK_EQ("CC[0] on the shared edge", compares0, 1);
    CHECK_EQ("CC[1] on the shared edge", compares1, 1);
    R(0x308) = COMPARE(0) | COMPARE(1);

    /* neither routed nor enabled: the event is set, polled */
    R(0x548) = R(0x504) + 2;
    while (!R(0x148)) { }
    CHECK_EQ("an unrouted, disabled compare sets its event", R(0x148), 1);
    R(0x148) = 0;

    /* routed to PPI and enabled: TIMER0 counts it, the interrupt is taken */
    REG32(PPI + 0x510) = RTC1 + 0x140;            /* CH[0].EEP: COMPARE[0] */
    REG32(PPI + 0x514) = TIMER0 + 0x008;          /* CH[0].TEP: COUNT */
    REG32(PPI + 0x504) = 1;                       /* CHENSET */
    R(0x344) = COMPARE(0);                        /* EVTENSET */
    compares0 = 0;
    R(0x540) = R(0x504) + 2;
    R(0x304) = COMPARE(0);
    wait_counts(4);
    CHECK_EQ("a routed compare counted by TIMER0", timer_count(), 1);
    CHECK_EQ("... and its interrupt taken", compares0, 1);
    R(0x348) = COMPARE(0);
    R(0x308) = COMPARE(0);

    /* the N+1 window: CC written one ahead of COUNTER is missed (PRESCALER 0) */
    R(0x140) = 0;
    R(0x540) = R(0x504) + 1;
    wait_counts(4);
    CHECK_EQ("CC = COUNTER + 1 is missed", R(0x140), 0);
    R(0x540) = R(0x504) + 2;
    wait_counts(4);
    CHECK_EQ("CC = COUNTER + 2 fires", R(0x140), 1);
    R(0x140) = 0;

    /* TICK with INTEN.TICK: an interrupt every count */
    R(0x304) = TICK;
    uint32_t t0 = ticks;
    wait_counts(10);
    R(0x308) = TICK;
    uint32_t n = ticks - t0;
    CHECK_EQ("TICK interrupts while enabled (10 or 11)", n == 10 || n == 11, 1);

    /* overflow after TRIGOVRFLW (COUNTER 0xFFFFF0) with INTEN.OVRFLW */
    R(0x304) = OVRFLW;
    R(0x00C) = 1;                                 /* TRIGOVRFLW */
    while (!overflows) { }
    CHECK_EQ("one overflow interrupt", overflows, 1);
    CHECK_EQ("COUNTER wrapped", R(0x504) < 16, 1);
    R(0x308) = OVRFLW;
    R(0x004) = 1;                                 /* STOP */
    return harness_failures;
}
