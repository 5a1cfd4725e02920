/* Nordic's standard idle, as nrf_pwr_mgmt and most nRF5 SDK applications
 * write it:  __SEV(); __WFE(); __WFE();  The SEV sets the event register,
 * the first WFE clears it without sleeping and the second one sleeps until
 * an event (here the SysTick interrupt).  Also the same with a NOP between
 * the two WFEs, and the loop without the SEV. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t ticks;
void SysTick_Handler(void) { ticks++; }

static uint32_t idle_until(uint32_t n, int shape) {
    uint32_t loops = 0;
    ticks = 0;
    while (ticks < n) {
        if (shape == 0)
            __asm volatile("sev\n wfe\n wfe" ::: "memory");
        else if (shape == 1)
            __asm volatile("sev\n wfe\n nop\n wfe" ::: "memory");
        else
            __asm volatile("wfe\n sev\n wfe\n wfe" ::: "memory");
        loops++;
    }
    return loops;
}

int main(void) {
    SYST_RVR = 64000 - 1;                /* 1 ms at 64 MHz */
    SYST_CVR = 0;
    SYST_CSR = 7;
    uint32_t c0 = DWT_CYCCNT;
    DEMCR |= 1u << 24;
    DWT_CTRL |= 1;
    (void)c0;
    uint32_t a = idle_until(20, 0);
    uint32_t b = idle_until(20, 1);
    uint32_t c = idle_until(20, 2);
    SYST_CSR = 0;
    /* one wake-up per tick: about 20 loops, not thousands */
    CHECK("sev; wfe; wfe sleeps until the tick", a <= 22);
    CHECK("sev; wfe; nop; wfe sleeps until the tick", b <= 22);
    CHECK("wfe; sev; wfe; wfe sleeps until the tick", c <= 22);
    semihost_puts("loops "); put_dec(a); semihost_puts(" "); put_dec(b); semihost_puts(" ");
    put_dec(c); semihost_puts("\n");
    return harness_failures;
}
