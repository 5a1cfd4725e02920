/* Cortex-M0 (ARMv6-M) exception model on the nRF51822, checked from firmware.
 * Built with -mcpu=cortex-m0; runs on the micro:bit board.
 *   - CPUID, 2 implemented priority bits, no SysTick on the nRF51
 *   - SVC and PendSV with their SHPR2/SHPR3 priorities, EXC_RETURN values
 *   - NVIC pending/enable, PRIMASK holding an interrupt off until CPSIE
 *   - preemption by a higher priority, tail-chaining of a lower one
 *   - a Thumb-2 instruction (UDIV, not in ARMv6-M) is a HardFault, not a
 *     UsageFault (ARMv6-M has no configurable faults)
 *   - TIMER0 at 1 MHz wakes WFI after the programmed number of counts */
#include "harness.h"
#include "cm4.h"


#define SHPR2 REG32(0xE000ED1C)
#define SHPR3 REG32(0xE000ED20)
#define TIMER0 0x40008000u
#define SWI0_IRQ 20
#define SWI1_IRQ 21
#define TIMER0_IRQ 8

static volatile uint32_t svc_lr, svc_count, pendsv_count, log_pos, hf_count, hf_pc, t0_count;
static volatile uint8_t order[8];

void SVC_Handler(void) {
    uint32_t lr;
    __asm volatile("mov %0, lr" : "=r"(lr));
    svc_lr = lr;
    svc_count++;
}

void PendSV_Handler(void) { pendsv_count++; }

void IRQ20_Handler(void) {          /* SWI0, low priority (0xC0) */
    order[log_pos++] = 20;
    irq_pend(SWI1_IRQ);             /* higher priority: preempts once the */
    __asm volatile("dsb\nisb");     /* barrier makes the pend recognised  */
    order[log_pos++] = 120;
}

void IRQ21_Handler(void) {          /* SWI1, high priority (0x40) */
    order[log_pos++] = 21;
}

void IRQ8_Handler(void) {           /* TIMER0 COMPARE[0] */
    REG32(TIMER0 + 0x140) = 0;
    t0_count++;
}

/* HardFault: record the faulting PC, skip the 4-byte instruction. */
__attribute__((naked)) void HardFault_Handler(void) {
    __asm volatile(
        ".syntax unified\n"
        "mrs r0, msp\n"
        "ldr r1, [r0, #24]\n"       /* stacked PC */
        "ldr r2, =hf_pc\n"
        "str r1, [r2]\n"
        "adds r1, r1, #4\n"
        "str r1, [r0, #24]\n"
        "ldr r2, =hf_count\n"
        "ldr r3, [r2]\n"
        "adds r3, r3, #1\n"
        "str r3, [r2]\n"
        "bx lr\n");
}

extern uint32_t udiv_insn;
__attribute__((noinline)) static uint32_t try_udiv(uint32_t a, uint32_t b) {
    register uint32_t r0 __asm("r0") = a;
    register uint32_t r1 __asm("r1") = b;
    /* UDIV r0, r0, r1 as raw Thumb-2 halfwords: undefined on ARMv6-M */
    __asm volatile(".global udiv_insn\nudiv_insn: .hword 0xfbb0, 0xf0f1" : "+r"(r0) : "r"(r1));
    return r0;
}

int main(void) {
    CHECK_EQ("cpuid_cortex_m0", SCB_CPUID, 0x410CC200);

    REG32(0xE000E400) = 0xFFFFFFFF;              /* IPR0: only bits [7:6] exist */
    CHECK_EQ("two_priority_bits", REG32(0xE000E400), 0xC0C0C0C0);
    REG32(0xE000E400) = 0;

    SYST_RVR = 1000;
    SYST_CSR = 7;
    CHECK_EQ("no_systick_on_nrf51", SYST_CSR | SYST_RVR, 0);

    __asm volatile("svc #1");
    CHECK_EQ("svc_taken", svc_count, 1);
    CHECK_EQ("exc_return_thread_msp", svc_lr, 0xFFFFFFF9);

    SHPR3 = 0xC0u << 16;                          /* PendSV lowest */
    CHECK_EQ("shpr3_pendsv", SHPR3, 0x00C00000);
    SCB_ICSR = 1u << 28;                          /* PENDSVSET */
    __asm volatile("dsb\nisb");
    CHECK_EQ("pendsv_taken", pendsv_count, 1);

    irq_prio(SWI0_IRQ, 0xC0);
    irq_prio(SWI1_IRQ, 0x40);
    irq_enable(SWI0_IRQ);
    irq_enable(SWI1_IRQ);
    cpsid();
    irq_pend(SWI0_IRQ);
    __asm volatile("dsb\nisb");
    CHECK_EQ("primask_holds_irq", log_pos, 0);
    CHECK("pending_visible", NVIC_ISPR(0) & (1u << SWI0_IRQ));
    cpsie();
    __asm volatile("dsb\nisb");
    CHECK_EQ("irq_ran_once_each", log_pos, 3);
    CHECK("preempted_by_higher", order[0] == 20 && order[1] == 21 && order[2] == 120);

    uint32_t r = try_udiv(100, 7);
    (void)r;
    CHECK_EQ("udiv_is_hardfault", hf_count, 1);
    CHECK_EQ("hardfault_pc", hf_pc, (uint32_t)&udiv_insn);

    /* TIMER0: 1 MHz, CC[0] = 500 -> interrupt wakes WFI */
    REG32(TIMER0 + 0x510) = 4;                     /* PRESCALER */
    REG32(TIMER0 + 0x508) = 3;                     /* BITMODE 32 */
    REG32(TIMER0 + 0x540) = 500;
    REG32(TIMER0 + 0x304) = 1u << 16;              /* INTENSET COMPARE0 */
    irq_enable(TIMER0_IRQ);
    REG32(TIMER0 + 0x000) = 1;                     /* START */
    while (!t0_count) __asm volatile("wfi");
    REG32(TIMER0 + 0x040) = 1;                     /* CAPTURE[0] */
    uint32_t now = REG32(TIMER0 + 0x540);
    CHECK("timer_wakes_wfi", t0_count == 1 && now >= 500 && now < 520);
    return harness_failures;
}
