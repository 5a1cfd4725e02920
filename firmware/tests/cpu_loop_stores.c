/* Loops that store, as MicroPython's delay loop on the nRF52 does: it calls
 * mp_hal_ticks_us, which pushes, masks the RTC's overflow interrupt
 * (INTENCLR), reads COUNTER and EVENTS_OVRFLW, unmasks it (INTENSET) and
 * pops PC (wasp-os's first boot: 2 M iterations, 40 % of its blocks).  The
 * emulator counts such a loop ahead when an iteration provably repeats:
 * its stores are all MMIO writes that only set state (an event, INTEN*:
 * the same writes again leave the same state), its pushes land below the
 * head's SP, and a COUNTER it reads holds its value up to its next tick
 * (emu/cpu/_blockhook.c, loop_step; emu/soc/_mmio.c, loop_note_*).  Each
 * loop must end exactly as when it runs:
 *   - the MicroPython delay shape, waiting 200 RTC ticks: it ends at
 *     exactly the tick it waits for;
 *   - the same loop whose leaf also writes TIMER1's TASKS_COUNT (a write
 *     with an effect: it runs every iteration); the count is printed;
 *   - the same loop whose leaf also bumps a counter in RAM (a store that
 *     is no MMIO write: it runs every iteration); the count is printed;
 *   - a loop counting in a register its leaf saves on the stack and
 *     clobbers (the stack, not the registers, tells one iteration from the
 *     next), with SysTick interrupting it: it runs every iteration; the
 *     count is printed. */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE

#define RTC1   0x40011000u
#define TIMER2 0x4000A000u
#define T_MODE(t)     REG32((t) + 0x504)
#define T_COUNT(t)    REG32((t) + 0x008)

static volatile uint32_t ticks;
/* a few iterations of a pure loop, then the count: a handler of 8 blocks,
 * so that the loop watch starts afresh at points all round the loop below
 * (a watch whose iteration grows past 8 blocks moves its head) */
void SysTick_Handler(void) {
    __asm volatile("movs r0, #6\n"
                   "1: subs r0, r0, #1\n"
                   "bne 1b\n" ::: "r0", "cc");
    ticks++;
}

/* mp_hal_ticks_us's shape: push, INTENCLR, COUNTER, EVENTS_OVRFLW (and a
 * branch on it: two blocks), INTENSET, pop {r4, pc} */
__attribute__((naked, noinline)) static uint32_t rtc_ticks(void) {
    __asm volatile("push {r4, lr}\n"
                   "movw r2, #0x1000\n"
                   "movt r2, #0x4001\n"
                   "movs r0, #2\n"
                   "str r0, [r2, #0x308]\n"       /* INTENCLR = OVRFLW */
                   "ldr r3, [r2, #0x504]\n"       /* COUNTER */
                   "ldr r4, [r2, #0x104]\n"       /* EVENTS_OVRFLW */
                   "cbz r4, 1f\n"
                   "adds r3, r3, #1\n"
                   "1: str r0, [r2, #0x304]\n"    /* INTENSET = OVRFLW */
                   "mov r0, r3\n"
                   "pop {r4, pc}\n");
}

/* the same, also counting on TIMER1 (TASKS_COUNT: not a state-only write) */
__attribute__((naked, noinline)) static uint32_t rtc_ticks_counting(void) {
    __asm volatile("push {r4, lr}\n"
                   "movw r2, #0x1000\n"
                   "movt r2, #0x4001\n"
                   "movs r0, #2\n"
                   "str r0, [r2, #0x308]\n"
                   "ldr r3, [r2, #0x504]\n"
                   "movw r1, #0x9000\n"
                   "movt r1, #0x4000\n"
                   "movs r4, #1\n"
                   "str r4, [r1, #8]\n"           /* TIMER1 TASKS_COUNT */
                   "movs r1, #0\n"
                   "str r0, [r2, #0x304]\n"
                   "mov r0, r3\n"
                   "pop {r4, pc}\n");
}

static volatile uint32_t bumps;
/* the same, also bumping a RAM counter (a store that is no MMIO write) */
__attribute__((naked, noinline)) static uint32_t rtc_ticks_bumping(void) {
    __asm volatile("push {r4, lr}\n"
                   "movw r2, #0x1000\n"
                   "movt r2, #0x4001\n"
                   "movs r0, #2\n"
                   "str r0, [r2, #0x308]\n"
                   "ldr r3, [r2, #0x504]\n"
                   "movw r1, #:lower16:bumps\n"
                   "movt r1, #:upper16:bumps\n"
                   "ldr r4, [r1]\n"
                   "adds r4, r4, #1\n"
                   "str r4, [r1]\n"              /* bumps++ */
                   "movs r1, #0\n"
                   "str r0, [r2, #0x304]\n"
                   "mov r0, r3\n"
                   "pop {r4, pc}\n");
}

/* MicroPython's mp_hal_delay_us loop: start = ticks(); while (ticks() - start < n) */
#define WAIT_TICKS(leaf, n, end)                                            \
    __asm volatile("bl %1\n"                                                \
                   "mov r5, r0\n"                                           \
                   "1: bl %1\n"                                             \
                   "subs r3, r0, r5\n"                                      \
                   "cmp r3, %2\n"                                           \
                   "blo 1b\n"                                               \
                   "mov %0, r0\n"                                           \
                   : "=r"(end) : "i"(leaf), "r"(n)                          \
                   : "r0", "r1", "r2", "r3", "r4", "r5", "r12", "lr", "cc", "memory")

/* saves r4 (the caller's count), clobbers it, reads TIMER2's COMPARE[0]:
 * the registers at its pop are the same every call, the stack is not */
__attribute__((naked, noinline)) static uint32_t leaf_clobbering(void) {
    __asm volatile("push {r4, lr}\n"
                   "movs r4, #0\n"
                   "movw r1, #0xA140\n"
                   "movt r1, #0x4000\n"
                   "ldr r0, [r1]\n"               /* TIMER2 EVENTS_COMPARE[0] */
                   "cmp r0, #0\n"
                   "bne 1f\n"
                   "pop {r4, pc}\n"
                   "1: movs r0, #1\n"
                   "pop {r4, pc}\n");
}

static uint32_t count_until_compare(void) {
    uint32_t n;
    __asm volatile("movs r4, #0\n"
                   "1: adds r4, r4, #1\n"
                   "bl %1\n"
                   "cmp r0, #0\n"
                   "beq 1b\n"
                   "mov %0, r4\n"
                   : "=r"(n) : "i"(leaf_clobbering)
                   : "r0", "r1", "r2", "r3", "r4", "r12", "lr", "cc", "memory");
    return n;
}

int main(void) {
    DEMCR |= 1u << 24;                  /* TRCENA */
    DWT_CTRL |= 1;                      /* CYCCNTENA */
    REG32(RTC1 + 0x000) = 1;            /* RTC1 START (prescaler 0: 30.5 us a tick) */
    volatile uint32_t *counter = &REG32(RTC1 + 0x504);
    while (*counter < 2) {}

    uint32_t start = *counter, end;
    uint32_t c0 = DWT_CYCCNT;
    WAIT_TICKS(rtc_ticks, 200u, end);
    uint32_t dt = DWT_CYCCNT - c0, after = *counter;
    CHECK_EQ("the delay loop ended at the tick it waited for", end - start, 200);
    CHECK("COUNTER right after is that tick (no time skipped)", after - end <= 1);
    CHECK("the delay took 200 ticks of CPU cycles", dt > 199 * 1953 && dt < 201 * 1953);
    CHECK("INTEN is as the loop left it (OVRFLW on)", (REG32(RTC1 + 0x304) & 2) != 0);

    T_MODE(TIMER1) = 1;                 /* counter */
    T_BITMODE(TIMER1) = 3;
    T_START(TIMER1) = 1;
    start = *counter;
    WAIT_TICKS(rtc_ticks_counting, 50u, end);
    T_CAPTURE(TIMER1, 0) = 1;
    uint32_t counted = T_CC(TIMER1, 0);
    CHECK_EQ("the counting delay ended at its tick", end - start, 50);
    CHECK("a leaf writing TASKS_COUNT ran every iteration", counted > 1000);
    semihost_puts("TASKS_COUNT writes: ");
    put_dec(counted);
    semihost_puts("\n");

    start = *counter;
    WAIT_TICKS(rtc_ticks_bumping, 50u, end);
    CHECK_EQ("the bumping delay ended at its tick", end - start, 50);
    CHECK("a leaf storing to RAM ran every iteration", bumps > 1000);
    semihost_puts("RAM bumps: ");
    put_dec(bumps);
    semihost_puts("\n");

    /* SysTick every 0.1 ms interrupts the loop; TIMER2 compares after 3 ms */
    SYST_RVR = 6399;
    SYST_CVR = 0;
    SYST_CSR = 7;
    T_BITMODE(TIMER2) = 3;
    T_PRESCALER(TIMER2) = 0;
    T_CC(TIMER2, 0) = 48000;
    T_CLEAR(TIMER2) = 1;
    T_START(TIMER2) = 1;
    uint32_t n = count_until_compare();
    SYST_CSR = 0;
    CHECK("the loop counting on the stack ran every iteration", n > 1000);
    CHECK("SysTick interrupted it", ticks >= 20);
    semihost_puts("stack-counted iterations: ");
    put_dec(n);
    semihost_puts("\n");
    return harness_failures;
}
