/* An interrupt taken between an IT instruction and the instruction it makes
 * conditional: the handler must run unconditionally (ARMv7-M B1.5.6: EPSR.IT
 * is cleared on exception entry and restored from the frame on return).
 *
 * The IT sits in the last halfword of a 1 KiB page, so the emulator's
 * translation block ends between it and its conditional instruction (a
 * block never crosses a page), and SysTick every 97 cycles lands there
 * about half the time.  The condition is false (NE after cmp r1, r1): with
 * the IT state left live, the handler's first instruction (movs r0, #1) is
 * skipped and ``added`` falls behind ``taken``.  Real InfiniTime hit this in
 * its RTC0 handler (``ldr r3, [pc, #4]`` skipped, then a jump to garbage). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

volatile uint32_t taken, added, conditional_ran;

__attribute__((naked)) void SysTick_Handler(void) {
    __asm volatile(
        "movs r0, #1\n"                 /* skipped if the IT state leaked in */
        "ldr r1, =added\n ldr r2, [r1]\n add r2, r2, r0\n str r2, [r1]\n"
        "ldr r1, =taken\n ldr r2, [r1]\n adds r2, r2, #1\n str r2, [r1]\n"
        "bx lr\n" ::: "memory");
}

/* spin(n): n times through "cmp; it ne; movne" with the IT at a page end */
__attribute__((naked, noinline, aligned(1024))) static void spin(uint32_t n) {
    __asm volatile(
        "b 2f\n"
        ".rept 509\n nop\n .endr\n"     /* 2 + 1018 bytes: the loop starts at +1020 */
        "1: cmp r1, r1\n"               /* +1020 */
        "it ne\n"                       /* +1022: the page's last halfword */
        "movne r3, #1\n"                /* +1024: the next page */
        "cmp r3, #0\n"
        "bne 3f\n"
        "subs r0, r0, #1\n"
        "bne 1b\n"
        "bx lr\n"
        "2: movs r3, #0\n"
        "b 1b\n"
        "3: ldr r1, =conditional_ran\n str r3, [r1]\n bx lr\n" ::: "memory");
}

int main(void) {
    CHECK_EQ("spin is page aligned", ((uint32_t)spin & ~1u) % 1024, 0);
    SYST_RVR = 96;                      /* every 97 cycles */
    SYST_CVR = 0;
    SYST_CSR = 7;                       /* enable, interrupt, core clock */
    spin(20000);
    SYST_CSR = 0;
    CHECK("SysTick taken many times", taken > 500);
    CHECK_EQ("every handler ran its first instruction", added, taken);
    CHECK_EQ("the false conditional never ran", conditional_ran, 0);
    return harness_failures;
}
