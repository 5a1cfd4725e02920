/* DWT CYCCNT over hand-written loops, compared with the Cortex-M4 TRM
 * (ARM DDI 0439B, 3.3.1 "Cortex-M4 instruction set summary"):
 *   ADD/SUBS/MOV        1 cycle
 *   B<cond> taken       1 + P (P = 1..3; 2 on a zero-wait-state core)
 *   LDR                 2 (1 when pipelined after another load)
 *   MUL                 1
 *   UDIV                2..12
 * Each loop reports its cycles per iteration x100; the Python test checks
 * them within 10 % of the TRM numbers. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define N 10000
static volatile uint32_t word = 5;

static uint32_t measure(void (*fn)(void)) {
    uint32_t c0 = DWT_CYCCNT;
    fn();
    return DWT_CYCCNT - c0;
}
/* subs + bne: 1 + (1+P) = 3 cycles */
__attribute__((naked, noinline)) static void loop_subs_bne(void) {
    __asm volatile("movw r0, #10000\n1: subs r0, #1\n bne 1b\n bx lr\n");
}
/* 4 adds + subs + bne: 4 + 1 + 2 = 7 cycles */
__attribute__((naked, noinline)) static void loop_alu(void) {
    __asm volatile("movw r0, #10000\n1: add r1, r1, #1\n add r2, r2, #1\n add r3, r3, #1\n"
                   " add r12, r12, #1\n subs r0, #1\n bne 1b\n bx lr\n");
}
/* ldr + subs + bne: 2 + 1 + 2 = 5 cycles */
__attribute__((naked, noinline)) static void loop_ldr(void) {
    __asm volatile("ldr r1, =word\n movw r0, #10000\n1: ldr r2, [r1]\n subs r0, #1\n bne 1b\n bx lr\n");
}
/* 2 mul + subs + bne: 1 + 1 + 1 + 2 = 5 cycles */
__attribute__((naked, noinline)) static void loop_mul(void) {
    __asm volatile("movs r1, #3\n movw r0, #10000\n1: mul r2, r1, r1\n mul r3, r1, r2\n"
                   " subs r0, #1\n bne 1b\n bx lr\n");
}
/* empty call overhead */
__attribute__((naked, noinline)) static void empty(void) { __asm volatile("bx lr\n"); }

static void report(const char *name, uint32_t cyc, uint32_t base) {
    uint32_t x100 = (cyc - base) * 100 / N;
    semihost_puts("CPI "); semihost_puts(name); semihost_puts(" "); put_dec(x100); semihost_puts("\n");
}

int main(void) {
    CHECK_EQ("CYCCNT stopped without TRCENA/CYCCNTENA", (DWT_CYCCNT, DWT_CYCCNT - DWT_CYCCNT), 0);
    DEMCR |= 1u << 24;
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1;
    /* time is block-granular in the emulator: separate the reads by a loop */
    uint32_t a = DWT_CYCCNT;
    for (volatile int i = 0; i < 10; i++) ;
    uint32_t b = DWT_CYCCNT;
    CHECK("CYCCNT runs", b > a + 20);
    DWT_CTRL &= ~1u;
    a = DWT_CYCCNT;
    for (volatile int i = 0; i < 10; i++) ;
    CHECK_EQ("CYCCNT frozen when CYCCNTENA=0", DWT_CYCCNT, a);
    /* a write while stopped reads back, and the count goes on from it */
    DWT_CYCCNT = 0x12345678u;
    CHECK_EQ("CYCCNT written while stopped", DWT_CYCCNT, 0x12345678u);
    DWT_CTRL |= 1;
    for (volatile int i = 0; i < 10; i++) ;
    b = DWT_CYCCNT;
    CHECK("CYCCNT counts on from the written value", b > 0x12345678u + 20 && b < 0x12345678u + 2000);
    /* a write while running: the count restarts from it */
    DWT_CYCCNT = 1000;
    for (volatile int i = 0; i < 10; i++) ;
    b = DWT_CYCCNT;
    CHECK("CYCCNT counts on from a write while running", b > 1020 && b < 3000);
    /* a timeout loop on a running counter (a driver's wait with a timeout) */
    uint32_t t0 = DWT_CYCCNT, polls = 0;
    while (DWT_CYCCNT - t0 < 5000) polls++;
    CHECK("CYCCNT timeout loop ends", polls > 100);
    uint32_t base = measure(empty);
    report("subs_bne", measure(loop_subs_bne), base);
    report("alu", measure(loop_alu), base);
    report("ldr", measure(loop_ldr), base);
    report("mul", measure(loop_mul), base);
    return harness_failures;
}
