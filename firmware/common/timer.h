/* nRF52832 TIMER registers (PS v1.4 section 23) for test firmware:
 * T_xxx(t) for the block at base address t. */
#ifndef TIMER_H
#define TIMER_H
#include "harness.h"

#define TIMER0 0x40008000u
#define TIMER1 0x40009000u
#define T_START(t)      REG32((t) + 0x000)
#define T_STOP(t)       REG32((t) + 0x004)
#define T_CLEAR(t)      REG32((t) + 0x00C)
#define T_CAPTURE(t, n) REG32((t) + 0x040 + 4 * (n))
#define T_COMPARE(t, n) REG32((t) + 0x140 + 4 * (n))
#define T_BITMODE(t)    REG32((t) + 0x508)
#define T_PRESCALER(t)  REG32((t) + 0x510)
#define T_CC(t, n)      REG32((t) + 0x540 + 4 * (n))

/* Wait for an event register to read nonzero in a loop of one block
 * (ldr; cmp; beq), as a driver's tight poll of EVENTS_COMPARE compiles:
 * the polling-loop tests' shape. */
static inline uint32_t poll_one_block(volatile uint32_t *ev) {
    uint32_t v;
    __asm volatile("1: ldr %0, [%1]\n"
                   "   cmp %0, #0\n"
                   "   beq 1b\n"
                   : "=&r"(v) : "r"(ev) : "cc", "memory");
    return v;
}
#endif
