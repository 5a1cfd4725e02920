/* Exceptions and priorities: NVIC pending/enable, preemption by priority,
 * nesting, tail-chaining, PRIMASK, BASEPRI, FAULTMASK, PRIGROUP
 * sub-priorities, STIR, ICSR and IABR, byte access to the priority
 * registers, and the EXC_RETURN value seen in LR. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t order[16];
static volatile int n_order;
static volatile uint32_t lr_seen, ipsr_seen, iabr_seen, icsr_seen;
static void mark(uint32_t v) { order[n_order++] = v; }

void IRQ0_Handler(void) {
    lr_seen = (uint32_t)__builtin_return_address(0);
    mark(0);
    ipsr_seen = get_ipsr();
    iabr_seen = NVIC_IABR(0);
    irq_pend(1);          /* higher priority: preempts at once */
    dsb_isb();
    mark(100);
    irq_pend(2);          /* lower priority: runs after we return (tail-chain) */
    dsb_isb();
    mark(101);
}
void IRQ1_Handler(void) {
    uint32_t lr = (uint32_t)__builtin_return_address(0);
    mark(lr == 0xFFFFFFF1 ? 1 : 0xBAD1);   /* nested: returns to handler mode */
}
void IRQ2_Handler(void) { mark(2); }
void IRQ3_Handler(void) { mark(3); }
void IRQ4_Handler(void) { mark(4); }
void IRQ5_Handler(void) { mark(5); icsr_seen = SCB_ICSR; }

int main(void) {
    CHECK_EQ("cpuid", SCB_CPUID, 0x410FC241);
    irq_prio(0, 0x60); irq_prio(1, 0x20); irq_prio(2, 0xA0);
    CHECK_EQ("ipr byte access", REG32(0xE000E400), 0x00A02060);
    irq_enable(0); irq_enable(1); irq_enable(2);
    irq_pend(0);
    dsb_isb();
    CHECK_EQ("order count", n_order, 5);
    CHECK_EQ("order[0] IRQ0 entered", order[0], 0);
    CHECK_EQ("order[1] IRQ1 preempted IRQ0", order[1], 1);
    CHECK_EQ("order[2] IRQ0 resumed", order[2], 100);
    CHECK_EQ("order[3] IRQ2 did not preempt", order[3], 101);
    CHECK_EQ("order[4] IRQ2 after IRQ0", order[4], 2);
    CHECK_EQ("EXC_RETURN thread/MSP", lr_seen, 0xFFFFFFF9);
    CHECK_EQ("IPSR in IRQ0", ipsr_seen, 16);
    CHECK_EQ("IABR in IRQ0", iabr_seen & 1, 1);

    /* PRIMASK: a pended interrupt waits until cpsie */
    n_order = 0;
    irq_prio(3, 0x40); irq_enable(3);
    cpsid();
    irq_pend(3);
    dsb_isb();
    CHECK_EQ("primask holds IRQ3", n_order, 0);
    CHECK_EQ("ISPR shows IRQ3 pending", (NVIC_ISPR(0) >> 3) & 1, 1);
    cpsie();
    __asm volatile("nop");
    CHECK_EQ("IRQ3 after cpsie", n_order, 1);

    /* BASEPRI: masks priorities >= its value */
    n_order = 0;
    irq_prio(4, 0x80); irq_enable(4);
    set_basepri(0x80);
    irq_pend(4);
    dsb_isb();
    CHECK_EQ("basepri holds prio 0x80", n_order, 0);
    irq_pend(3);         /* prio 0x40 < 0x80: taken */
    dsb_isb();
    CHECK_EQ("basepri passes prio 0x40", n_order == 1 && order[0] == 3, 1);
    set_basepri(0);
    __asm volatile("nop");
    CHECK_EQ("IRQ4 after basepri cleared", n_order == 2 && order[1] == 4, 1);

    /* FAULTMASK masks everything but NMI */
    n_order = 0;
    __asm volatile("cpsid f");
    irq_pend(3);
    dsb_isb();
    CHECK_EQ("faultmask holds IRQ3", n_order, 0);
    __asm volatile("cpsie f");
    __asm volatile("nop");
    CHECK_EQ("IRQ3 after cpsie f", n_order, 1);

    /* Simultaneous pending: lowest priority value first, then lowest number */
    n_order = 0;
    cpsid();
    irq_prio(5, 0x40); irq_enable(5);
    irq_pend(4); irq_pend(5); irq_pend(3);
    cpsie();
    __asm volatile("nop");
    CHECK_EQ("three taken", n_order, 3);
    CHECK_EQ("first IRQ3 (0x40, lower number)", order[0], 3);
    CHECK_EQ("then IRQ5 (0x40)", order[1], 5);
    CHECK_EQ("then IRQ4 (0x80)", order[2], 4);
    CHECK_EQ("ICSR VECTACTIVE in IRQ5", icsr_seen & 0x1FF, 21);

    /* PRIGROUP: with 5 group bits split 2.1 (PRIGROUP=5 -> group [7:6]),
     * 0x40 and 0x60 are the same group: no preemption */
    SCB_AIRCR = 0x05FA0000 | (5 << 8);
    CHECK_EQ("prigroup readback", (SCB_AIRCR >> 8) & 7, 5);
    n_order = 0;
    irq_prio(0, 0x60); irq_prio(1, 0x40);
    irq_pend(0);
    dsb_isb();
    CHECK_EQ("same group: no nesting", order[1], 100);
    SCB_AIRCR = 0x05FA0000;

    /* STIR */
    n_order = 0;
    NVIC_STIR = 3;
    dsb_isb();
    CHECK_EQ("STIR pends IRQ3", n_order == 1 && order[0] == 3, 1);

    /* ICER reads back the enable bits */
    CHECK_EQ("ICER reads enables", NVIC_ICER(0) & 0x3F, 0x3F);
    irq_disable(5);
    CHECK_EQ("ICER clears", (NVIC_ISER(0) >> 5) & 1, 0);
    return harness_failures;
}
