/* Polling loops as drivers write them, which the emulator counts instead of
 * running up to the next clock event when an iteration provably repeats
 * (emu/cpu/_blockhook.c, loop_step): the loop must still end exactly when
 * the hardware says, in the same cycles as when it runs.
 *   - one block polling a TIMER event (the compare ends it: a capture right
 *     after must be a few timer ticks past CC);
 *   - three blocks polling two events and a timeout on the DWT's stopped
 *     CYCCNT (InfiniTime's TWI driver);
 *   - RTC COUNTER, a value that changes with time alone: counted ahead
 *     only up to its next tick (the loop ends at exactly the COUNTER it
 *     waits for);
 *   - a loop that counts its iterations while polling (registers differ:
 *     it runs) and reports the count. */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE

#define RTC1   0x40011000u
#define DWT_CYCCNT_ 0xE0001004u

/* 0: the first event, 1: the second, 2: the timeout */
static uint32_t poll_three_blocks(volatile uint32_t *a, volatile uint32_t *b,
                                  volatile uint32_t *cyccnt, uint32_t start, uint32_t limit) {
    uint32_t v, r;
    __asm volatile("1: ldr %0, [%2]\n"
                   "   cbnz %0, 2f\n"
                   "   ldr %0, [%3]\n"
                   "   cbnz %0, 3f\n"
                   "   ldr %0, [%4]\n"
                   "   subs %0, %0, %5\n"
                   "   cmp %0, %6\n"
                   "   bls 1b\n"
                   "   movs %1, #2\n"
                   "   b 4f\n"
                   "2: movs %1, #0\n"
                   "   b 4f\n"
                   "3: movs %1, #1\n"
                   "4:\n"
                   : "=&l"(v), "=&r"(r)           /* cbnz takes a low register */
                   : "r"(a), "r"(b), "r"(cyccnt), "r"(start), "r"(limit) : "cc", "memory");
    return r;
}

static uint32_t poll_counter_until(volatile uint32_t *counter, uint32_t target) {
    uint32_t v;
    __asm volatile("1: ldr %0, [%1]\n"
                   "   cmp %0, %2\n"
                   "   blo 1b\n"
                   : "=&r"(v) : "r"(counter), "r"(target) : "cc", "memory");
    return v;
}

static uint32_t poll_counting(volatile uint32_t *ev) {
    uint32_t v, n = 0;
    __asm volatile("1: adds %1, %1, #1\n"
                   "   ldr %0, [%2]\n"
                   "   cmp %0, #0\n"
                   "   beq 1b\n"
                   : "=&r"(v), "+r"(n) : "r"(ev) : "cc", "memory");
    return n;
}

int main(void) {
    /* TIMER0 at 16 MHz, 32-bit: CC[0] 2 ms on, CC[1] 3 ms, CC[2] 4 ms */
    T_BITMODE(TIMER0) = 3;
    T_PRESCALER(TIMER0) = 0;
    T_CC(TIMER0, 0) = 32000;
    T_CC(TIMER0, 1) = 48000;
    T_CC(TIMER0, 2) = 64000;
    T_CLEAR(TIMER0) = 1;
    T_START(TIMER0) = 1;

    poll_one_block(&T_COMPARE(TIMER0, 0));
    T_CAPTURE(TIMER0, 3) = 1;
    uint32_t late = T_CC(TIMER0, 3) - 32000;
    CHECK("one-block poll ended right after the compare", late <= 16);

    uint32_t r = poll_three_blocks(&T_COMPARE(TIMER0, 1), &T_COMPARE(TIMER0, 3),
                                   (volatile uint32_t *)DWT_CYCCNT_, REG32(DWT_CYCCNT_),
                                   1000);
    T_CAPTURE(TIMER0, 3) = 1;
    late = T_CC(TIMER0, 3) - 48000;
    CHECK_EQ("three-block poll ended on the first event", r, 0);
    CHECK("three-block poll ended right after the compare", late <= 24);

    uint32_t n = poll_counting(&T_COMPARE(TIMER0, 2));
    CHECK("counting poll ran its iterations", n > 1000);
    semihost_puts("counting poll iterations: ");
    put_dec(n);
    semihost_puts("\n");
    T_STOP(TIMER0) = 1;

    /* RTC1 (LFCLK, prescaler 0): COUNTER changes every 30.5 us by itself */
    REG32(RTC1 + 0x000) = 1;                         /* START */
    volatile uint32_t *counter = &REG32(RTC1 + 0x504);
    uint32_t target = *counter + 40;
    uint32_t got = poll_counter_until(counter, target);
    uint32_t after = *counter;
    CHECK_EQ("COUNTER poll ended at the value it waited for", got, target);
    CHECK("COUNTER read right after is that value (no time skipped)", after - target <= 1);
    return harness_failures;
}
