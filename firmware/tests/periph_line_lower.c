/* Writes that lower an interrupt line, as tick handlers make them (wasp-os's
 * 1 kHz RTC1 handler: INTENCLR COMPARE0, EVENTS_COMPARE0 = 0, CC, INTENSET),
 * carried out by the bus's EVENT/INTENCLR ops in C: the line goes down and
 * the NVIC sees it (a pend cleared with ICPR stays cleared; a line still
 * high pends again at once), INTENCLR of one of two enabled events keeps it
 * up, INTENSET raises it again; then 20 real compare interrupts whose handler
 * lowers the line are each taken once. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RTC1 0x40011000u
#define R(o) REG32(RTC1 + (o))
#define IRQ_RTC1 17
#define COMPARE0 (1u << 16)
#define COMPARE1 (1u << 17)

static volatile uint32_t ticks, spurious;

void IRQ17_Handler(void) {                        /* vector 16 + 17 */
    if (!R(0x140))
        spurious++;                               /* entered with no event */
    R(0x308) = COMPARE0;                          /* INTENCLR: the line goes down */
    R(0x140) = 0;                                 /* EVENTS_COMPARE[0] */
    R(0x540) = R(0x504) + 3;                      /* CC[0]: the next tick */
    if (++ticks < 20)
        R(0x304) = COMPARE0;                      /* INTENSET */
}

static uint32_t pending(void) {
    dsb_isb();
    return (NVIC_ISPR(0) >> IRQ_RTC1) & 1;
}

static void unpend(void) {
    NVIC_ICPR(0) = 1u << IRQ_RTC1;
    dsb_isb();
}

int main(void) {
    __asm volatile("cpsid i");
    irq_enable(IRQ_RTC1);
    R(0x508) = 0;                                 /* PRESCALER */
    R(0x540) = 4;                                 /* CC[0] */
    R(0x544) = 4;                                 /* CC[1] */
    R(0x304) = COMPARE0 | COMPARE1;               /* INTENSET */
    R(0x000) = 1;                                 /* START */
    while (!R(0x140) || !R(0x144)) { }
    CHECK_EQ("compare events raise the line: pending", pending(), 1);
    unpend();
    CHECK_EQ("a line still high pends again after ICPR", pending(), 1);

    R(0x308) = COMPARE1;                          /* INTENCLR of one: COMPARE0 keeps it up */
    unpend();
    CHECK_EQ("INTENCLR of one of two keeps the line up", pending(), 1);
    R(0x308) = COMPARE0;                          /* INTENCLR: lowered */
    unpend();
    CHECK_EQ("INTENCLR lowered the line: ICPR clears the pend", pending(), 0);
    CHECK_EQ("INTENSET reads the bits left", R(0x304) & (COMPARE0 | COMPARE1), 0);

    R(0x304) = COMPARE0;                          /* INTENSET: raised again */
    CHECK_EQ("INTENSET raises it again", pending(), 1);
    R(0x140) = 0;                                 /* EVENTS_COMPARE[0] = 0: lowered */
    unpend();
    CHECK_EQ("clearing the event lowered the line", pending(), 0);
    CHECK_EQ("the event reads 0", R(0x140), 0);
    R(0x144) = 0;

    R(0x540) = R(0x504) + 3;
    __asm volatile("cpsie i");
    while (ticks < 20) { __asm volatile("wfi"); }
    R(0x004) = 1;                                 /* STOP */
    CHECK_EQ("20 compare interrupts, each taken once", ticks, 20);
    CHECK_EQ("no entry without its event", spurious, 0);
    unpend();
    CHECK_EQ("nothing pending after the last", pending(), 0);
    return harness_failures;
}
