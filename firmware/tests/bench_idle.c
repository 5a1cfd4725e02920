/* Idle benchmark: SysTick every 250 ms (the 24-bit maximum is 262 ms at
 * 64 MHz), WFI between wake-ups, for 400 wake-ups (100 s emulated). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE
static volatile uint32_t ticks;
void SysTick_Handler(void) { ticks++; }
int main(void) {
    SYST_RVR = 16000000 - 1; SYST_CVR = 0; SYST_CSR = 7;
    while (ticks < 400) __asm volatile("wfi");
    semihost_puts("ticks "); put_dec(ticks); semihost_puts("\n");
    return 0;
}
