/* SVCall: the handler finds the stacked frame (MSP or PSP from EXC_RETURN
 * bit 2), reads the SVC number from the byte before the stacked PC, takes
 * arguments from stacked r0-r3 and returns a value through stacked r0.
 * Also: SVC from thread mode on PSP, and SVCall priority (SHPR2) against
 * BASEPRI-free preemption by a higher-priority IRQ. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t svc_count, last_num, last_excret, last_ipsr;
static uint32_t psp_stack[128] __attribute__((aligned(8)));

__attribute__((naked)) void SVC_Handler(void) {
    __asm volatile(
        "tst lr, #4\n"
        "ite eq\n"
        "mrseq r0, msp\n"
        "mrsne r0, psp\n"
        "mov r1, lr\n"
        "b svc_c\n");
}

void svc_c(uint32_t *frame, uint32_t excret) {
    uint8_t num = ((uint8_t *)frame[6])[-2];
    svc_count++;
    last_num = num;
    last_excret = excret;
    last_ipsr = get_ipsr();
    switch (num) {
    case 1: frame[0] = frame[0] + frame[1] + frame[2] + frame[3]; break;
    case 2: frame[0] = frame[0] * frame[1]; break;
    case 3: irq_pend(0); dsb_isb(); frame[0] = svc_count; break; /* IRQ0 prio 0x20 vs SVC 0x80 */
    default: frame[0] = 0xDEAD; break;
    }
}

static volatile uint32_t irq0_in_svc;
void IRQ0_Handler(void) { irq0_in_svc = (SCB_SHCSR >> 7) & 1; /* SVCALLACT */ }

static uint32_t svc1(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    register uint32_t r0 __asm("r0") = a, r1 __asm("r1") = b, r2 __asm("r2") = c, r3 __asm("r3") = d;
    __asm volatile("svc #1" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3) : "memory");
    return r0;
}
static uint32_t svc2(uint32_t a, uint32_t b) {
    register uint32_t r0 __asm("r0") = a, r1 __asm("r1") = b;
    __asm volatile("svc #2" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}
static uint32_t svc3(void) {
    register uint32_t r0 __asm("r0") = 0;
    __asm volatile("svc #3" : "+r"(r0) :: "memory");
    return r0;
}
static uint32_t svc200(void) {
    register uint32_t r0 __asm("r0") = 0;
    __asm volatile("svc #200" : "+r"(r0) :: "memory");
    return r0;
}

static volatile uint32_t psp_result, psp_excret, psp_ctrl;
static void on_psp(void) {
    psp_ctrl = get_control();
    psp_result = svc1(10, 20, 30, 40);
    psp_excret = last_excret;
}

int main(void) {
    CHECK_EQ("svc1 sum of r0-r3", svc1(1, 2, 3, 4), 10);
    CHECK_EQ("svc number 1", last_num, 1);
    CHECK_EQ("EXC_RETURN thread/MSP", last_excret & 0xFFFFFFEF, 0xFFFFFFE9);
    CHECK_EQ("IPSR in SVCall", last_ipsr, 11);
    CHECK_EQ("svc2 product", svc2(6, 7), 42);
    CHECK_EQ("svc number 2", last_num, 2);
    CHECK_EQ("svc200 default", svc200(), 0xDEAD);
    CHECK_EQ("svc number 200", last_num, 200);

    /* SVCall priority: SHPR2[31:24] = 0x80; IRQ0 at 0x20 preempts the handler */
    SCB_SHPR8(11) = 0x80;
    CHECK_EQ("SHPR2 readback", REG32(0xE000ED1C) >> 24, 0x80);
    irq_prio(0, 0x20); irq_enable(0);
    svc3();
    CHECK_EQ("IRQ0 preempted SVCall (SVCALLACT set)", irq0_in_svc, 1);
    /* Now IRQ0 lower (0xC0) than SVCall: it runs after the SVC returns */
    irq_prio(0, 0xC0);
    irq0_in_svc = 0xFF;
    svc3();
    CHECK_EQ("IRQ0 waited for SVCall to finish", irq0_in_svc, 0);

    /* Thread mode on PSP */
    uint32_t saved_msp;
    __asm volatile("mrs %0, msp" : "=r"(saved_msp));
    __asm volatile("msr psp, %0\n"
                   "mov r0, #2\n msr control, r0\n isb\n"
                   :: "r"(&psp_stack[128]) : "r0", "memory");
    on_psp();
    __asm volatile("mov r0, #0\n msr control, r0\n isb\n" ::: "r0", "memory");
    CHECK_EQ("CONTROL.SPSEL on PSP", psp_ctrl & 2, 2);
    CHECK_EQ("svc1 from PSP", psp_result, 100);
    CHECK_EQ("EXC_RETURN thread/PSP", psp_excret & 0xFFFFFFEF, 0xFFFFFFED);
    uint32_t msp_now;
    __asm volatile("mrs %0, msp" : "=r"(msp_now));
    CHECK_EQ("MSP unchanged after PSP excursion", msp_now, saved_msp);
    CHECK_EQ("svc count", svc_count, 6);
    return harness_failures;
}
