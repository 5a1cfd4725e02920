/* An exception return whose frame cannot be read: the SVC handler points
 * PSP where no memory is before returning to the thread.  The emulator's
 * C return reports it as its Python does (a lockup: unstacking error). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static uint32_t thread_stack[128] __attribute__((aligned(8)));

__attribute__((naked)) void SVC_Handler(void) {
    __asm volatile("ldr r0, =0x30000000\n msr psp, r0\n bx lr\n");
}

int main(void) {
    semihost_puts("PASS about to return to an unmapped PSP\n");
    __asm volatile(
        "msr psp, %0\n"
        "mrs r0, control\n orr r0, r0, #2\n msr control, r0\n isb\n"
        "svc #0\n"
        "1: b 1b\n" :: "r"(&thread_stack[128]) : "r0", "memory");
    return 0;
}
