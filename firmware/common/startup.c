/* Startup code for the project's test firmware (nRF52832, Cortex-M4F).
 * Vector table with weak handlers, .data/.bss initialisation, FPU enable,
 * then main(); main's return value becomes the semihosting exit code. */
#include <stdint.h>
#include "harness.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);

void Reset_Handler(void);
void Default_Handler(void) { for (;;) __asm volatile("nop"); }

#define WEAK __attribute__((weak, alias("Default_Handler")))
void NMI_Handler(void) WEAK;
void HardFault_Handler(void) WEAK;
void MemManage_Handler(void) WEAK;
void BusFault_Handler(void) WEAK;
void UsageFault_Handler(void) WEAK;
void SVC_Handler(void) WEAK;
void DebugMon_Handler(void) WEAK;
void PendSV_Handler(void) WEAK;
void SysTick_Handler(void) WEAK;
#define IRQ(n) void IRQ##n##_Handler(void) WEAK;
IRQ(0) IRQ(1) IRQ(2) IRQ(3) IRQ(4) IRQ(5) IRQ(6) IRQ(7) IRQ(8) IRQ(9) IRQ(10) IRQ(11) IRQ(12)
IRQ(13) IRQ(14) IRQ(15) IRQ(16) IRQ(17) IRQ(18) IRQ(19) IRQ(20) IRQ(21) IRQ(22) IRQ(23) IRQ(24)
IRQ(25) IRQ(26) IRQ(27) IRQ(28) IRQ(29) IRQ(30) IRQ(31) IRQ(32) IRQ(33) IRQ(34) IRQ(35) IRQ(36)
IRQ(37) IRQ(38)
#define V(n) IRQ##n##_Handler,

/* The nRF52832 has 39 interrupts; the nRF51822 (Cortex-M0 builds) has 32, and
 * its vector table ends there, as the nRF51 MDK's does. */
#if defined(__ARM_ARCH_6M__)
#define NUM_IRQS 32
#else
#define NUM_IRQS 39
#endif

__attribute__((section(".isr_vector"), used))
void (*const vector_table[16 + NUM_IRQS])(void) = {
    (void (*)(void))&_estack, Reset_Handler, NMI_Handler, HardFault_Handler, MemManage_Handler,
    BusFault_Handler, UsageFault_Handler, 0, 0, 0, 0, SVC_Handler, DebugMon_Handler, 0,
    PendSV_Handler, SysTick_Handler,
    V(0) V(1) V(2) V(3) V(4) V(5) V(6) V(7) V(8) V(9) V(10) V(11) V(12) V(13) V(14) V(15) V(16)
    V(17) V(18) V(19) V(20) V(21) V(22) V(23) V(24) V(25) V(26) V(27) V(28) V(29) V(30) V(31)
#if NUM_IRQS > 32
    V(32) V(33) V(34) V(35) V(36) V(37) V(38)
#endif
};

void Reset_Handler(void) {
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss; ) *dst++ = 0;
#if defined(__ARM_FP)
    /* CPACR: full access to CP10/CP11, as SystemInit does on the nRF52 */
    *(volatile uint32_t *)0xE000ED88 |= 0x00F00000;
    __asm volatile("dsb\n isb");
#endif
    int rc = main();
    semihost_exit(rc);
    for (;;) ;
}
