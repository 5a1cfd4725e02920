/* The FreeRTOS tickless idle loop (InfiniTime's vPortSuppressTicksAndSleep):
 *     1: wfe ; ldr ; ldr ; orrs ; beq 1b
 * After an interrupt wakes the core, the loop runs back into the same WFE
 * within one emulation slice; that WFE must sleep again, not fault.  Two
 * shapes: the plain loop, and one with a UDIV in its block (a per-
 * instruction hook is then active there, and Unicorn reports the WFE with
 * the PC already past it). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t ticks, flag_a, flag_b;
void SysTick_Handler(void) {
    ticks++;
    if (ticks == 4) flag_a = 1;
    if (ticks == 8) flag_b = 1;
}

int main(void) {
    SYST_RVR = 64000 - 1;                /* 1 ms at 64 MHz */
    SYST_CVR = 0;
    SYST_CSR = 7;
    uint32_t r;
    __asm volatile(
        "1: wfe\n"
        "   ldr %0, [%1]\n"
        "   ldr r3, [%2]\n"
        "   orrs %0, r3\n"
        "   beq 1b\n"
        : "=&r"(r) : "r"(&flag_a), "r"(&flag_b) : "r3", "memory", "cc");
    CHECK("plain idle loop woke on its flag", flag_a == 1 && ticks >= 4);
    uint32_t q, div = 3;
    __asm volatile(
        "1: wfe\n"
        "   ldr %0, [%2]\n"
        "   udiv r3, %0, %3\n"
        "   ldr r3, [%2]\n"
        "   orrs %0, r3\n"
        "   ldr r3, [%1]\n"
        "   cmp r3, #0\n"
        "   beq 1b\n"
        : "=&r"(q) : "r"(&flag_b), "r"(&flag_a), "r"(div) : "r3", "memory", "cc");
    CHECK("idle loop with a hooked instruction woke on its flag", flag_b == 1 && ticks >= 8);
    SYST_CSR = 0;
    CHECK("slept between ticks (few wake-ups)", ticks <= 9);
    return harness_failures;
}
