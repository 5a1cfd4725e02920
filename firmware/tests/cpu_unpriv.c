/* Unprivileged thread mode, as Zephyr's userspace uses it: a thread on PSP
 * with CONTROL.nPRIV set makes system calls through SVC, takes interrupts
 * (and tail-chains into them) and keeps its stack, FP registers and locals
 * across them; the SVC handler finds the caller's frame on PSP and the main
 * stack on MSP; a handler can clear nPRIV to bring the thread back to
 * privileged mode.  The checks run privileged, from the values the
 * unprivileged code left in globals. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static uint32_t user_stack[256] __attribute__((aligned(8)));
static volatile uint32_t svc_psp, svc_msp, svc_frame_r0, svc_calls, svc_excret;
static volatile uint32_t irq_calls, irq_msp, irq_excret, back_to_priv;
extern uint32_t _estack;

__attribute__((naked)) void SVC_Handler(void) {
    __asm volatile(
        "mrs r0, psp\n"
        "mrs r1, msp\n"
        "mov r2, lr\n"
        "b svc_c\n");
}

void svc_c(uint32_t *psp, uint32_t msp, uint32_t excret) {
    uint8_t num = ((uint8_t *)psp[6])[-2];
    svc_calls++;
    svc_psp = (uint32_t)psp;
    svc_msp = msp;
    svc_excret = excret;
    switch (num) {
    case 1: svc_frame_r0 = psp[0]; psp[0] = psp[0] + psp[1]; break;                /* a system call's result */
    case 2: irq_pend(3); psp[0] = 0; break;                   /* IRQ3 tail-chains after */
    case 3:                                                   /* back to privileged */
        __asm volatile("mrs r3, control\n bic r3, r3, #1\n msr control, r3\n isb" ::: "r3");
        back_to_priv = 1;
        break;
    }
}

void IRQ3_Handler(void) {
    uint32_t msp, lr;
    __asm volatile("mrs %0, msp\n mov %1, lr" : "=r"(msp), "=r"(lr));
    irq_calls++;
    irq_msp = msp;
    irq_excret = lr;
}

static uint32_t sys1(uint32_t a, uint32_t b) {
    register uint32_t r0 __asm("r0") = a, r1 __asm("r1") = b;
    __asm volatile("svc #1" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}
static void sys(int n) {
    if (n == 2) __asm volatile("svc #2" ::: "r0", "memory");
    else __asm volatile("svc #3" ::: "r0", "memory");
}

static volatile uint32_t u_ctrl, u_sum, u_local_ok, u_sp_before, u_sp_after, u_ctrl_after_irq;
static volatile float u_fp;

static void user_main(void) {
    volatile uint32_t local[4] = {0x11111111, 0x22222222, 0x33333333, 0x44444444};
    float f = 1.5f;
    u_ctrl = get_control();
    __asm volatile("mov %0, sp" : "=r"(u_sp_before));
    u_sum = sys1(40, 2);
    f = f * 3.0f;                                   /* FP live across the call: FPCA */
    sys(2);                                         /* IRQ3 pended in the SVC handler */
    __asm volatile("mov %0, sp" : "=r"(u_sp_after));
    u_ctrl_after_irq = get_control();
    u_local_ok = local[0] == 0x11111111 && local[1] == 0x22222222 && local[2] == 0x33333333
                 && local[3] == 0x44444444;
    u_fp = f + (float)u_sum;
    sys(3);                                         /* privileged again */
}

int main(void) {
    irq_prio(3, 0x40);
    irq_enable(3);
    SCB_SHPR8(11) = 0x20;                           /* SVCall above IRQ3: tail-chain */
    uint32_t top = (uint32_t)&user_stack[256];
    __asm volatile("msr psp, %0\n"
                   "mrs r3, control\n orr r3, r3, #2\n msr control, r3\n isb\n"   /* PSP */
                   "orr r3, r3, #1\n msr control, r3\n isb\n"                      /* nPRIV */
                   :: "r"(top) : "r3", "memory");
    user_main();
    uint32_t ctrl = get_control();
    __asm volatile("mrs r3, control\n bic r3, r3, #2\n msr control, r3\n isb" ::: "r3");

    CHECK_EQ("thread unprivileged on PSP", u_ctrl & 3, 3);
    CHECK_EQ("system call result", u_sum, 42);
    CHECK_EQ("SVC frame's r0 on PSP", svc_frame_r0, 40);
    CHECK("PSP seen by SVC inside the user stack",
          svc_psp >= (uint32_t)&user_stack[0] && svc_psp < top);
    CHECK("MSP seen by SVC on the main stack",
          svc_msp > (uint32_t)&user_stack[256] && svc_msp <= (uint32_t)&_estack);
    CHECK_EQ("EXC_RETURN to thread/PSP", svc_excret & 0xFFFFFFEF, 0xFFFFFFED);
    CHECK_EQ("IRQ tail-chained once", irq_calls, 1);
    CHECK("IRQ's MSP on the main stack",
          irq_msp > (uint32_t)&user_stack[256] && irq_msp <= (uint32_t)&_estack);
    CHECK_EQ("IRQ EXC_RETURN thread/PSP", irq_excret & 0xFFFFFFEF, 0xFFFFFFED);
    CHECK_EQ("SP unchanged across calls and the IRQ", u_sp_after, u_sp_before);
    CHECK_EQ("still unprivileged after the IRQ", u_ctrl_after_irq & 3, 3);
    CHECK_EQ("locals kept", u_local_ok, 1);
    CHECK_EQ("FP kept across the calls", (uint32_t)(u_fp * 2), 2 * 46.5);
    CHECK_EQ("privileged again after SVC 3", back_to_priv, 1);
    CHECK_EQ("CONTROL after the return: PSP, privileged", ctrl & 3, 2);
    CHECK_EQ("SVC calls", svc_calls, 3);
    return 0;
}
