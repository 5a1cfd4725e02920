/* SysTick (ARMv7-M B3.3): RVR/CVR/CSR, COUNTFLAG (clear on read), a write
 * to CVR clears it and COUNTFLAG, TICKINT interrupts at the reload rate:
 * over a busy loop measured by DWT CYCCNT, the number of SysTick interrupts
 * must equal elapsed cycles / (RELOAD+1). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t ticks, first_tick_cyc, last_tick_cyc;
void SysTick_Handler(void) {
    uint32_t c = DWT_CYCCNT;
    if (ticks == 0) first_tick_cyc = c;
    last_tick_cyc = c;
    ticks++;
}

#define RELOAD 9999u   /* one interrupt per 10000 cycles */

int main(void) {
    DEMCR |= 1u << 24;          /* TRCENA */
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1;              /* CYCCNTENA */

    CHECK_EQ("CALIB NOREF", REG32(0xE000E01C) >> 31, 1);
    SYST_RVR = 0xFFFFFFFF;
    CHECK_EQ("RVR is 24 bits", SYST_RVR, 0x00FFFFFF);

    /* Polled: counter decrements at the CPU clock, COUNTFLAG on wrap */
    SYST_RVR = 999;
    SYST_CVR = 12345;           /* any write clears to 0 */
    CHECK_EQ("CVR write clears", SYST_CVR, 0);
    SYST_CSR = 5;               /* CLKSOURCE | ENABLE, no TICKINT */
    for (volatile int i = 0; i < 3; i++) ;   /* past the first reload */
    uint32_t a = SYST_CVR;
    for (volatile int i = 0; i < 10; i++) ;
    uint32_t b = SYST_CVR;
    put_dec(a); semihost_puts(" -> "); put_dec(b); semihost_puts("\n");
    CHECK("counter counts down", a <= 999 && b < a);
    while (!(SYST_CSR & (1u << 16))) ;
    CHECK_EQ("COUNTFLAG cleared by read", (SYST_CSR >> 16) & 1, 0);
    SYST_CVR = 0;
    CHECK_EQ("CVR write clears COUNTFLAG", (SYST_CSR >> 16) & 1, 0);
    SYST_CSR = 0;
    CHECK_EQ("no interrupt without TICKINT", ticks, 0);

    /* Interrupts: count them over a busy loop of ~500k cycles */
    SYST_RVR = RELOAD;
    SYST_CVR = 0;
    uint32_t c0 = DWT_CYCCNT;
    SYST_CSR = 7;               /* CLKSOURCE | TICKINT | ENABLE */
    while (DWT_CYCCNT - c0 < 500000) ;
    SYST_CSR = 0;
    uint32_t n = ticks;
    uint32_t elapsed = DWT_CYCCNT - c0;
    put_dec(n); semihost_puts(" ticks in "); put_dec(elapsed); semihost_puts(" cycles\n");
    uint32_t expect = elapsed / (RELOAD + 1);
    CHECK("ticks per cycles", n + 1 >= expect && n <= expect + 1);
    uint32_t period = (last_tick_cyc - first_tick_cyc) / (n - 1);
    put_dec(period); semihost_puts(" cycles between ticks\n");
    /* handler entry latency jitters by a few cycles; average is exact */
    CHECK("tick period = RELOAD+1", period >= RELOAD - 5 && period <= RELOAD + 6);
    CHECK_EQ("no tick after disable", ticks, n);
    return harness_failures;
}
