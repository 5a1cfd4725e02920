/* The TIMER's compare event, CC writes and CAPTURE tasks as firmware uses
 * them, carried out by emu.soc._mmio.TimerCore in C (natively) or by the
 * model (pure Python): a periodic compare interrupt re-armed from its
 * handler with a CAPTURE there to read the time (micro:bit MicroPython's
 * ticker), two CCs on one edge, a compare with the COMPARE0_CLEAR shortcut
 * (handed to the model), one routed to PPI (TIMER4 counts it: handed to the
 * model), an 8-bit counter wrapping to its compare, and a CAPTURE of a
 * stopped timer. */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE

#define TIMER2 0x4000A000u
#define TIMER3 0x4001A000u
#define TIMER4 0x4001B000u
#define PPI 0x4001F000u
#define T_MODE(t)       REG32((t) + 0x504)
#define T_SHORTS(t)     REG32((t) + 0x200)
#define T_INTENSET(t)   REG32((t) + 0x304)
#define T_INTENCLR(t)   REG32((t) + 0x308)
#define T_COUNT(t)      REG32((t) + 0x008)
#define IRQ_TIMER1 9
#define IRQ_TIMER2 10
#define COMPARE(n) (1u << (16 + (n)))

static volatile uint32_t periodic, ticks, max_lag, shared2, shared3, cleared, clear_max;

static uint32_t now1(void) {
    T_CAPTURE(TIMER1, 1) = 1;
    return T_CC(TIMER1, 1);
}

void IRQ9_Handler(void) {
    if (T_COMPARE(TIMER1, 0)) {
        T_COMPARE(TIMER1, 0) = 0;
        uint32_t lag = (now1() - T_CC(TIMER1, 0)) & 0xFFFF;
        if (lag > max_lag)
            max_lag = lag;
        ticks++;
        if (periodic && --periodic)
            T_CC(TIMER1, 0) = (T_CC(TIMER1, 0) + 50) & 0xFFFF;
    }
    if (T_COMPARE(TIMER1, 2)) { T_COMPARE(TIMER1, 2) = 0; shared2++; }
    if (T_COMPARE(TIMER1, 3)) { T_COMPARE(TIMER1, 3) = 0; shared3++; }
}

void IRQ10_Handler(void) {
    if (T_COMPARE(TIMER2, 0)) {
        T_COMPARE(TIMER2, 0) = 0;
        T_CAPTURE(TIMER2, 1) = 1;
        if (T_CC(TIMER2, 1) > clear_max)
            clear_max = T_CC(TIMER2, 1);
        cleared++;
    }
}

static void wait_us(uint32_t us) {
    uint32_t start = now1();
    while (((now1() - start) & 0xFFFF) < us) { }
}

int main(void) {
    irq_enable(IRQ_TIMER1);
    irq_enable(IRQ_TIMER2);
    T_BITMODE(TIMER1) = 0;                        /* 16 bit */
    T_PRESCALER(TIMER1) = 4;                      /* 1 MHz */
    T_START(TIMER1) = 1;

    /* a periodic compare re-armed from the handler, reading the time there */
    periodic = 20;
    T_CC(TIMER1, 0) = (now1() + 50) & 0xFFFF;
    T_INTENSET(TIMER1) = COMPARE(0);
    while (periodic) { __asm volatile("wfi"); }
    T_INTENCLR(TIMER1) = COMPARE(0);
    CHECK_EQ("20 periodic compare interrupts", ticks, 20);
    CHECK_EQ("the handler reads the time within a count of the compare", max_lag <= 1, 1);

    /* two CCs on one edge: both events, both seen */
    uint32_t at = (now1() + 20) & 0xFFFF;
    T_CC(TIMER1, 2) = at;
    T_CC(TIMER1, 3) = at;
    T_INTENSET(TIMER1) = COMPARE(2) | COMPARE(3);
    wait_us(40);
    T_INTENCLR(TIMER1) = COMPARE(2) | COMPARE(3);
    CHECK_EQ("CC[2] on the shared edge", shared2, 1);
    CHECK_EQ("CC[3] on the shared edge", shared3, 1);

    /* COMPARE0_CLEAR: the counter restarts at every compare (the model's) */
    T_BITMODE(TIMER2) = 0;
    T_PRESCALER(TIMER2) = 4;
    T_CC(TIMER2, 0) = 100;
    T_SHORTS(TIMER2) = 1;                         /* COMPARE0_CLEAR */
    T_INTENSET(TIMER2) = COMPARE(0);
    T_START(TIMER2) = 1;
    while (cleared < 10) { __asm volatile("wfi"); }
    T_STOP(TIMER2) = 1;
    T_INTENCLR(TIMER2) = COMPARE(0);
    CHECK_EQ("10 compares with COMPARE0_CLEAR", cleared, 10);
    CHECK_EQ("... each read just after the clear", clear_max < 5, 1);

    /* routed to PPI: TIMER4 (a counter) counts TIMER3's COMPARE[5] */
    T_MODE(TIMER4) = 2;                           /* low-power counter */
    T_BITMODE(TIMER4) = 3;
    T_START(TIMER4) = 1;
    REG32(PPI + 0x518) = TIMER3 + 0x154;          /* CH[1].EEP: COMPARE[5] */
    REG32(PPI + 0x51C) = TIMER4 + 0x008;          /* CH[1].TEP: COUNT */
    REG32(PPI + 0x504) = 2;                       /* CHENSET */
    T_PRESCALER(TIMER3) = 4;
    T_BITMODE(TIMER3) = 3;
    T_CC(TIMER3, 5) = 30;
    T_START(TIMER3) = 1;
    poll_one_block((volatile uint32_t *)(TIMER3 + 0x154));
    T_CAPTURE(TIMER4, 0) = 1;
    CHECK_EQ("a routed compare counted by TIMER4", T_CC(TIMER4, 0), 1);
    REG32(PPI + 0x508) = 2;                       /* CHENCLR */
    T_STOP(TIMER3) = 1;

    /* 8 bits: the counter wraps to a compare below it */
    T_STOP(TIMER1) = 1;
    T_CLEAR(TIMER1) = 1;
    T_BITMODE(TIMER1) = 1;                        /* 8 bit */
    T_CC(TIMER1, 0) = 200;
    T_START(TIMER1) = 1;
    poll_one_block((volatile uint32_t *)(TIMER1 + 0x140));
    T_COMPARE(TIMER1, 0) = 0;
    T_CC(TIMER1, 0) = 10;                         /* after the wrap */
    poll_one_block((volatile uint32_t *)(TIMER1 + 0x140));
    T_CAPTURE(TIMER1, 1) = 1;
    uint32_t c = T_CC(TIMER1, 1);
    CHECK_EQ("an 8-bit counter wraps to CC 10", c >= 10 && c < 14, 1);

    /* a stopped timer captures where it stopped */
    T_STOP(TIMER1) = 1;
    T_CAPTURE(TIMER1, 2) = 1;
    uint32_t s1 = T_CC(TIMER1, 2);
    wait_us(0);
    for (volatile int i = 0; i < 200; i++) { }
    T_CAPTURE(TIMER1, 3) = 1;
    CHECK_EQ("a stopped timer captures the same count", T_CC(TIMER1, 3), s1);
    return harness_failures;
}
