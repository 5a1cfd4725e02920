/* An interrupt taken while the thread's stack pointer (PSP) points where no
 * memory is: the frame cannot be stacked.  The core's entry fails (the
 * emulator's C entry hands it to the Python's, which reports the derived
 * fault); the run ends there.  emu/twins.py: the same in C and in Python. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

int main(void) {
    SCB_SHCSR |= 1u << 17;                 /* BUSFAULTENA */
    semihost_puts("PASS about to take SysTick on an unmapped PSP\n");
    SYST_RVR = 500;
    SYST_CVR = 0;
    SYST_CSR = 7;
    __asm volatile(
        "ldr r0, =0x30000000\n msr psp, r0\n"
        "mrs r0, control\n orr r0, r0, #2\n msr control, r0\n isb\n"
        "1: b 1b\n" ::: "r0", "memory");
    return 0;
}
