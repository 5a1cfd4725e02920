/* A fault inside the HardFault handler locks the core up (ARMv7-M B1.5.15).
 * The emulator ends the run with reason "lockup". */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

void HardFault_Handler(void) {
    semihost_puts("in HardFault\n");
    __asm volatile(".short 0xde00");     /* undefined inside HardFault */
    semihost_puts("FAIL continued after fault in HardFault\n");
    semihost_exit(1);
}

int main(void) {
    semihost_puts("faulting\n");
    __asm volatile(".short 0xde01");     /* UsageFault disabled: HardFault */
    semihost_puts("FAIL returned to main\n");
    return 1;
}
