/* The exception paths the emulator carries out in C as well as in Python
 * (emu/twins.py), each reached the way firmware reaches it:
 *  - ICSR read with PendSV, SysTick and NMI pending (VECTPENDING's
 *    neighbours PENDSVSET, PENDSTSET, NMIPENDSET);
 *  - an interrupt whose line is still high when its handler returns (an
 *    EGU event left set): pended again at the return, entered again;
 *  - an interrupt pended from the NMI handler and from a HardFault handler
 *    (the NVIC's arithmetic with a negative priority active);
 *  - WFI with BASEPRI masking a pending interrupt, woken by a higher one;
 *  - the MPU's check of an exception's stack frame, from unprivileged
 *    thread mode, with the frame in a disabled subregion of one region
 *    (another region decides), in memory only PRIVDEFENA's background map
 *    covers, and in a region whose RAM is executable (XN clear);
 *  - an interrupt pended twice (ISPR written while it is pending);
 *  - an event register written 1 with its interrupt enabled (the line rises
 *    at the write); WFE loops without SEV, woken by SysTick;
 *  - the MPU on in handlers (HFNMIENA) at an entry;
 *  - RTC EVTEN written whole (a bit-field write on a cell). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define EGU0 0x40014000u
#define EGU1 0x40015000u
#define RTC1 0x40011000u
#define RASR(ap, xn, size_log, srd) (((uint32_t)(xn) << 28) | ((uint32_t)(ap) << 24) | \
    ((uint32_t)(srd) << 8) | ((uint32_t)((size_log) - 1) << 1) | 1u)

static volatile uint32_t pendsv_n, systick_n, nmi_n, nmi_icsr, egu0_n, egu1_n, hard_n;
static volatile uint32_t egu1_in_hard, egu1_in_nmi;

static volatile uint32_t tick_flag;
void PendSV_Handler(void) { pendsv_n++; }
void SysTick_Handler(void) { systick_n++; tick_flag = 1; SYST_CSR = 0; }

void NMI_Handler(void) {
    nmi_n++;
    if (nmi_n == 1) {
        SCB_ICSR = 1u << 31;              /* NMIPENDSET again: pending behind itself */
        nmi_icsr = SCB_ICSR;
        irq_pend(21);                     /* an interrupt pended with NMI active */
        egu1_in_nmi = egu1_n;
    }
}

/* SWI0_EGU0: its TRIGGERED[0] event is left set once: the line stays high */
void IRQ20_Handler(void) {
    egu0_n++;
    if (egu0_n >= 2)
        REG32(EGU0 + 0x100) = 0;
    REG32(EGU0 + 0x104) = 0;              /* TRIGGERED[1]: cleared at once */
}
void IRQ21_Handler(void) { egu1_n++; }

/* a HardFault (an undefined instruction, UsageFault disabled): pends IRQ21
 * and skips the instruction */
void hard_c(uint32_t *frame) {
    hard_n++;
    irq_pend(21);
    egu1_in_hard = egu1_n;
    SCB_CFSR = SCB_CFSR;
    SCB_HFSR = SCB_HFSR;
    frame[6] += 2;
}
__attribute__((naked)) void HardFault_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b hard_c\n");
}

/* SVC from unprivileged thread mode: back to privileged; the stacked
 * xPSR's exception number made non-zero (a return to thread mode with IPSR
 * in its frame: the core returns with IPSR 0) */
static volatile uint32_t svc_n;
void svc_c(uint32_t *frame) {
    __asm volatile("mrs r1, control\n bic r1, r1, #1\n msr control, r1\n" ::: "r1");
    frame[7] |= 5;
    svc_n++;
}
__attribute__((naked)) void SVC_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b svc_c\n");
}

/* user stacks: one whose frame lands in a subregion of region 3 that is
 * disabled (region 1 decides), one in region 1 */
static uint32_t sub_area[512] __attribute__((aligned(2048)));
static uint32_t user_stack[128] __attribute__((aligned(8)));

static void user_thread(void) {          /* unprivileged: waits for SysTick, then SVC */
    while (!tick_flag)
        ;
    __asm volatile("svc #0" ::: "memory");
}

static void arm_systick(void) {
    tick_flag = 0;
    SYST_RVR = 3000;
    SYST_CVR = 0;
    SYST_CSR = 7;
}

/* thread mode on ``top`` (PSP), unprivileged, until user_thread's SVC */
static void run_unprivileged(uint32_t *top) {
    arm_systick();
    __asm volatile(
        "msr psp, %0\n"
        "mrs r0, control\n orr r0, r0, #3\n msr control, r0\n isb\n"
        "blx %1\n"
        "mrs r0, control\n bic r0, r0, #2\n msr control, r0\n isb\n"
        :: "r"(top), "r"(user_thread) : "r0", "r1", "r2", "r3", "r12", "lr", "memory");
}

int main(void) {
    /* -- ICSR with PendSV and SysTick pending (PRIMASK holds them) */
    cpsid();
    SCB_ICSR = 1u << 28;                   /* PENDSVSET */
    SCB_ICSR = 1u << 26;                   /* PENDSTSET */
    uint32_t icsr = SCB_ICSR;
    CHECK("ICSR: PendSV pending", icsr & (1u << 28));
    CHECK("ICSR: SysTick pending", icsr & (1u << 26));
    cpsie();
    dsb_isb();
    CHECK_EQ("PendSV taken", pendsv_n, 1);
    CHECK_EQ("SysTick taken", systick_n, 1);

    /* -- a polling loop reading nine registers and writing one an iteration
     * (more than the block hook's loop watch notes: every iteration runs; before the MPU
     * is used, which turns the watch off for good) */
    REG32(RTC1 + 0x000) = 1;               /* START */
    uint32_t c0 = REG32(RTC1 + 0x504), spins = 0;
    while (REG32(RTC1 + 0x504) < c0 + 3) {
        (void)REG32(RTC1 + 0x140); (void)REG32(RTC1 + 0x144); (void)REG32(RTC1 + 0x148);
        (void)REG32(RTC1 + 0x14C); (void)REG32(RTC1 + 0x100); (void)REG32(RTC1 + 0x104);
        (void)REG32(RTC1 + 0x540); (void)REG32(RTC1 + 0x544);
        REG32(RTC1 + 0x104) = 0;           /* and an event written: the tenth access */
        spins++;
    }
    REG32(RTC1 + 0x004) = 1;               /* STOP */
    CHECK("the nine-read loop ran until COUNTER moved", spins > 10);

    /* -- NMI: pending behind itself; IRQ21 pended from it waits */
    irq_enable(21);
    SCB_ICSR = 1u << 31;
    dsb_isb();
    CHECK_EQ("NMI taken twice", nmi_n, 2);
    CHECK("ICSR in NMI: NMIPENDSET", nmi_icsr & (1u << 31));
    CHECK_EQ("IRQ21 waited for the NMI", egu1_in_nmi, 0);
    CHECK_EQ("IRQ21 after the NMI", egu1_n, 1);

    /* -- a level that stays high: pended again at the return */
    irq_enable(20);
    REG32(EGU0 + 0x304) = 1;               /* INTENSET TRIGGERED[0] */
    REG32(EGU0 + 0x000) = 1;               /* TASKS_TRIGGER[0] */
    dsb_isb();
    CHECK_EQ("a line still high is entered again", egu0_n, 2);

    /* -- HardFault pends IRQ21 */
    __asm volatile(".short 0xde00");       /* udf #0 */
    CHECK_EQ("HardFault taken", hard_n, 1);
    CHECK_EQ("IRQ21 waited for the HardFault", egu1_in_hard, 1);
    CHECK_EQ("IRQ21 after the HardFault", egu1_n, 2);

    /* -- WFI with BASEPRI masking IRQ21; SysTick (priority 0) wakes it */
    irq_prio(21, 0xC0);
    SCB_SHPR8(15) = 0x00;
    set_basepri(0x80);
    irq_pend(21);
    SYST_RVR = 1000;
    SYST_CVR = 0;
    SYST_CSR = 7;
    __asm volatile("wfi");
    uint32_t waited = egu1_n;
    set_basepri(0);
    dsb_isb();
    CHECK_EQ("BASEPRI held IRQ21 through the WFI", waited, 2);
    CHECK_EQ("SysTick woke the WFI", systick_n, 2);
    CHECK_EQ("IRQ21 once BASEPRI dropped", egu1_n, 3);

    /* -- the MPU's frame check: region 1 (32 KiB of RAM, RW for all, XN
     * clear), region 2 enabled with a reserved size (ignored), region 3
     * over sub_area with its top subregion off; the main stack above 32 KiB
     * in no region (PRIVDEFENA: privileged only) */
    MPU_RNR = 0; MPU_RBAR = 0x00000000; MPU_RASR = RASR(6, 0, 19, 0);     /* flash RO+X */
    MPU_RNR = 1; MPU_RBAR = 0x20000000; MPU_RASR = RASR(3, 0, 15, 0);     /* RAM 32K RW, X */
    MPU_RNR = 2; MPU_RBAR = 0x20000000; MPU_RASR = RASR(3, 1, 4, 0);      /* size reserved */
    MPU_RNR = 3; MPU_RBAR = (uint32_t)sub_area; MPU_RASR = RASR(1, 1, 11, 0x80);
    MPU_CTRL = 5;                                                        /* ENABLE|PRIVDEFENA */
    dsb_isb();
    uint32_t msp;
    __asm volatile("mrs %0, msp" : "=r"(msp));
    arm_systick();                         /* privileged: the frame on MSP, background map */
    while (!tick_flag)
        ;
    CHECK("MSP above region 1", msp >= 0x20008000);
    CHECK_EQ("SysTick with the frame in the background map", systick_n, 3);
    run_unprivileged(&sub_area[512]);      /* the frame in the disabled subregion */
    CHECK_EQ("SysTick from unprivileged mode, frame in a disabled subregion", systick_n, 4);
    run_unprivileged(&user_stack[128]);    /* region 1 */
    CHECK_EQ("SysTick from unprivileged mode, frame in region 1", systick_n, 5);
    CHECK_EQ("two SVCs back to privileged", svc_n, 2);
    CHECK_EQ("back in thread mode (IPSR 0)", get_ipsr(), 0);
    MPU_CTRL = 0;
    dsb_isb();

    /* -- IRQ21 pended twice while PRIMASK holds it: entered once */
    cpsid();
    irq_pend(21);
    irq_pend(21);
    uint32_t before21 = egu1_n;
    cpsie();
    dsb_isb();
    CHECK_EQ("pended twice, entered once", egu1_n, before21 + 1);

    /* -- an event written 1 with its interrupt enabled: entered at once */
    REG32(EGU0 + 0x304) = 2;               /* INTENSET TRIGGERED[1] */
    uint32_t before20 = egu0_n;
    REG32(EGU0 + 0x104) = 1;               /* EVENTS_TRIGGERED[1] written 1 */
    dsb_isb();
    CHECK("an event written 1 interrupts", egu0_n > before20);
    REG32(EGU0 + 0x104) = 0;
    REG32(EGU0 + 0x308) = 2;

    /* -- WFE without SEV: each sleeps until SysTick; then, with SEVONPEND,
     * a pend (held by PRIMASK) sets the event register: WFE returns at once */
    uint32_t ticks0 = systick_n;
    for (volatile int i = 0; i < 4; i++) {     /* (volatile: one WFE site, run again) */
        arm_systick();
        __asm volatile("wfe");
        __asm volatile("wfe");
    }
    CHECK("SysTick woke the WFEs", systick_n > ticks0);
    SCB_SCR |= 0x10;                       /* SEVONPEND */
    cpsid();
    uint32_t e21 = egu1_n;
    irq_pend(21);
    __asm volatile("wfe");                 /* the pend's event: no sleep */
    cpsie();
    dsb_isb();
    SCB_SCR &= ~0x10u;
    CHECK_EQ("the pend woke the WFE, then was taken", egu1_n, e21 + 1);
    ticks0 = systick_n;

    /* -- the MPU in force in handlers too (HFNMIENA): an entry checks it */
    MPU_RNR = 1; MPU_RBAR = 0x20000000; MPU_RASR = RASR(3, 0, 16, 0);     /* all RAM */
    MPU_CTRL = 7;                          /* ENABLE|HFNMIENA|PRIVDEFENA */
    dsb_isb();
    arm_systick();
    while (!tick_flag)
        ;
    MPU_CTRL = 0;
    dsb_isb();
    CHECK_EQ("SysTick with HFNMIENA", systick_n, ticks0 + 1);

    /* -- RTC1 EVTEN written whole (RW on a bit field kept in a cell) */
    REG32(RTC1 + 0x340) = (1u << 16) | 1u;  /* EVTEN: COMPARE0, TICK */
    CHECK_EQ("EVTEN reads back", REG32(RTC1 + 0x340), (1u << 16) | 1u);
    REG32(RTC1 + 0x340) = 1u << 17;
    CHECK_EQ("EVTEN replaced", REG32(RTC1 + 0x340), 1u << 17);
    return harness_failures;
}
