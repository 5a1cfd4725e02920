/* The Cortex-M4 MPU (PMSAv7, 8 regions) as Zephyr and the nRF5 SDK use it:
 * MPU_TYPE, a flash region, RAM for privileged code only, a buffer user code
 * may use, a 32-byte stack guard that privileged code may read but not write
 * (Zephyr's K_MEM_PARTITION_P_RO_U_NA), PRIVDEFENA, XN, subregions; faults
 * with MMFSR/MMFAR, escalation to HardFault, and exception stacking into the
 * guard (MSTKERR), as a stack overflow does: by an interrupt (entered by the
 * emulator's C exception entry, which checks the MPU itself) and by an SVC. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RASR(ap, xn, size_log, srd) (((uint32_t)(xn) << 28) | ((uint32_t)(ap) << 24) | \
    ((uint32_t)(srd) << 8) | ((uint32_t)((size_log) - 1) << 1) | 1u)

static uint32_t guarded_stack[64] __attribute__((aligned(256)));   /* guard: first 32 bytes */
static uint32_t user_buf[64] __attribute__((aligned(256)));
static uint32_t sub_buf[64] __attribute__((aligned(256)));
static volatile uint32_t kernel_word = 0x600D;
/* a page of kernel data no region boundary cuts: its protection comes from
 * the page alone, so a privilege drop must change the page at once */
static volatile uint32_t kernel_page[256] __attribute__((aligned(1024)));
static uint16_t ram_code[4] __attribute__((aligned(4)));
static volatile uint32_t faults, last_cfsr, last_mmfar, last_hfsr, hardfaults, recovered;
static uint32_t recover_frame[8] __attribute__((aligned(8)));

static void after_overflow(void);
static void after_irq_overflow(void);
static void svc_overflow(void);
static volatile uint32_t overflow_phase;
static void recovery(void) {          /* a fresh frame on a fresh stack, as an RTOS would */
    recovered++;
    if (overflow_phase == 0) {        /* the interrupt's overflow: then the SVC's */
        after_irq_overflow();
        overflow_phase = 1;
        MPU_CTRL = 5;
        __asm volatile("dsb\n isb");
        svc_overflow();
    }
    after_overflow();
    semihost_exit(harness_failures);
    for (;;) ;
}

static volatile uint32_t irq20_ran;
void IRQ20_Handler(void) { irq20_ran++; }

/* frame: the stacked r0-r3, r12, lr, pc, xpsr */
void mm_c(uint32_t *frame, uint32_t excret, int hard) {
    uint32_t cfsr = SCB_CFSR;
    if (hard) { hardfaults++; last_hfsr = SCB_HFSR; SCB_HFSR = SCB_HFSR; }
    faults++;
    last_cfsr = cfsr;
    last_mmfar = SCB_MMFAR;
    SCB_CFSR = cfsr;                    /* write-1-to-clear */
    if (cfsr & (1u << 4)) {             /* MSTKERR: no valid frame; start over */
        MPU_CTRL = 0;
        uint32_t psp = (uint32_t)&recover_frame[0];
        recover_frame[6] = (uint32_t)recovery & ~1u;
        recover_frame[7] = 0x01000000;
        __asm volatile("msr psp, %0" :: "r"(psp));
        return;
    }
    if (cfsr & 1u) {                    /* IACCVIOL: return to the caller */
        frame[6] = frame[5] & ~1u;
        return;
    }
    frame[6] += 2;                      /* skip the 16-bit load/store */
}

__attribute__((naked)) void MemManage_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n"
                   "mov r1, lr\n movs r2, #0\n push {lr}\n bl mm_c\n pop {pc}\n");
}
__attribute__((naked)) void HardFault_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n"
                   "mov r1, lr\n movs r2, #1\n push {lr}\n bl mm_c\n pop {pc}\n");
}

static volatile uint32_t busfaults, last_bfar;
void bf_c(uint32_t *frame) {
    busfaults++;
    last_bfar = SCB_BFAR;
    SCB_CFSR = SCB_CFSR;
    frame[6] += 2;                      /* skip the 16-bit store */
}
__attribute__((naked)) void BusFault_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b bf_c\n");
}

static volatile uint32_t svc9;
__attribute__((naked)) void SVC_Handler(void) {
    __asm volatile("mrs r0, control\n bic r0, r0, #3\n msr control, r0\n"
                   "ldr r0, =svc9\n movs r1, #1\n str r1, [r0]\n bx lr\n");
}

/* 16-bit encodings, so the handler can skip them */
static inline void st16(volatile uint32_t *p, uint32_t v) {
    __asm volatile("str %1, [%0]" :: "l"(p), "l"(v) : "memory");
}
static inline uint32_t ld16(volatile uint32_t *p) {
    uint32_t v = 0xBAD;
    __asm volatile("ldr %0, [%1]" : "+l"(v) : "l"(p) : "memory");
    return v;
}

static void setup(void) {
    MPU_RNR = 0; MPU_RBAR = 0x00000000; MPU_RASR = RASR(6, 0, 19, 0);        /* flash RO+X */
    MPU_RNR = 1; MPU_RBAR = 0x20000000; MPU_RASR = RASR(1, 1, 16, 0);        /* RAM priv RW, XN */
    MPU_RBAR = (uint32_t)user_buf | 0x10 | 2; MPU_RASR = RASR(3, 1, 8, 0);   /* VALID|REGION 2 */
    MPU_RBAR_A1 = (uint32_t)guarded_stack | 0x10 | 3;                         /* guard, alias */
    MPU_RASR_A1 = RASR(5, 1, 5, 0);
    MPU_RNR = 4; MPU_RBAR = (uint32_t)sub_buf; MPU_RASR = RASR(0, 1, 8, 0x01); /* sub 0 off */
    MPU_CTRL = 5;                                                             /* ENABLE|PRIVDEFENA */
    dsb_isb();
}

int main(void) {
    CHECK_EQ("MPU_TYPE: 8 data regions", MPU_TYPE, 0x800);
    SCB_SHCSR |= (1u << 16) | (1u << 17);                     /* MEMFAULTENA, BUSFAULTENA */
    SCB_SHPR8(4) = 0x20;
    setup();
    MPU_RNR = 3;
    CHECK_EQ("RBAR readback (alias wrote region 3)", MPU_RBAR, (uint32_t)guarded_stack | 3);
    CHECK_EQ("RASR readback", MPU_RASR, RASR(5, 1, 5, 0));

    /* privileged: the guard reads, does not write */
    guarded_stack[8] = 0x1234;                                /* just above the guard: fine */
    CHECK_EQ("write above the guard", guarded_stack[8], 0x1234);
    uint32_t v = ld16(&guarded_stack[1]);
    CHECK_EQ("privileged read of the guard", v, 0);
    CHECK_EQ("no fault so far", faults, 0);
    st16(&guarded_stack[2], 0xDEAD);
    CHECK_EQ("privileged write to the guard faults", faults, 1);
    CHECK_EQ("MMFSR DACCVIOL|MMARVALID", last_cfsr & 0xFF, 0x82);
    CHECK_EQ("MMFAR", last_mmfar, (uint32_t)&guarded_stack[2]);
    CHECK_EQ("the store did not happen", guarded_stack[2], 0);
    CHECK_EQ("CFSR cleared", SCB_CFSR & 0xFF, 0);
    /* subregion 0 of region 4 is disabled: region 1 (priv RW) decides there */
    st16(&sub_buf[1], 7);
    CHECK_EQ("disabled subregion falls through", sub_buf[1], 7);
    st16(&sub_buf[16], 7);                                    /* subregion 1: AP=0 */
    CHECK_EQ("enabled subregion: no access", faults, 2);
    uint32_t before;

    /* flash is read-only in region 0: a store there is a MemManage fault
     * (the MPU decides before the NVMC would ignore it) */
    static const uint32_t in_flash = 0x12345678;
    before = faults;
    st16((volatile uint32_t *)&in_flash, 1);
    CHECK_EQ("store into read-only flash faults", faults, before + 1);
    CHECK_EQ("flash MMFAR", last_mmfar, (uint32_t)&in_flash);

    /* never-execute RAM */
    ram_code[0] = 0x2007; ram_code[1] = 0x4770;               /* movs r0, #7; bx lr */
    uint32_t (*fn)(void) = (uint32_t (*)(void))((uint32_t)ram_code | 1);
    before = faults;
    (void)fn();
    CHECK_EQ("execute from XN RAM faults", faults, before + 1);
    CHECK_EQ("MMFSR IACCVIOL", last_cfsr & 0xFF, 0x01);

    /* unprivileged thread on PSP (only accesses there: the counters are kernel data) */
    before = faults;
    __asm volatile("msr psp, %0\n mrs r3, control\n orr r3, r3, #3\n msr control, r3\n isb"
                   :: "r"((uint32_t)&user_buf[64]) : "r3", "memory");
    user_buf[0] = 5;                                          /* allowed */
    uint32_t k = ld16(&kernel_word);                          /* priv-only RAM */
    uint32_t g = ld16(&guarded_stack[8]);                     /* priv-only too */
    uint32_t kp = ld16(&kernel_page[5]);                      /* a whole priv-only page */
    st16(&MPU_CTRL, 0);                                       /* the SCS: privileged only */
    __asm volatile("svc #9" ::: "memory");                    /* back to privileged */
    CHECK_EQ("user write to its buffer", user_buf[0], 5);
    CHECK_EQ("user reads of kernel data and the stack fault", faults, before + 3);
    CHECK_EQ("the loads did not happen", k + g + kp, 3 * 0xBAD);
    CHECK_EQ("user MMFAR", last_mmfar, (uint32_t)&kernel_page[5]);
    CHECK_EQ("user write to MPU_CTRL is a BusFault", busfaults, 1);
    CHECK_EQ("BFAR", last_bfar, 0xE000ED94);
    CHECK_EQ("the MPU stays on", MPU_CTRL, 5);
    CHECK_EQ("privileged again", get_control() & 1, 0);

    /* MemManage disabled: escalation to HardFault (FORCED) */
    SCB_SHCSR &= ~(1u << 16);
    st16(&guarded_stack[3], 1);
    CHECK_EQ("escalated to HardFault", hardfaults, 1);
    CHECK("HFSR.FORCED", last_hfsr & (1u << 30));
    SCB_SHCSR |= 1u << 16;

    /* stack overflow: an interrupt stacks into the guard (MSTKERR) */
    irq_enable(20);
    __asm volatile("msr psp, %0\n mrs r3, control\n orr r3, r3, #2\n msr control, r3\n isb\n"
                   :: "r"((uint32_t)&guarded_stack[8] + 8) : "r3", "memory");
    irq_pend(20);                                              /* stacking into the guard */
    __asm volatile("dsb\n isb");
    CHECK("not reached: the overflow ends in recovery()", 0);
    return harness_failures;
}

static void after_irq_overflow(void) {
    CHECK_EQ("interrupt: MSTKERR", last_cfsr & 0x10, 0x10);
    CHECK_EQ("interrupt: recovered after the overflow", recovered, 1);
    CHECK_EQ("interrupt: the frame was not written into the guard", guarded_stack[7], 0);
    CHECK_EQ("interrupt: it stayed pending and ran after", irq20_ran, 1);
}

/* stack overflow: an SVC stacks into the guard (MSTKERR) */
static void svc_overflow(void) {
    __asm volatile("msr psp, %0\n mrs r3, control\n orr r3, r3, #2\n msr control, r3\n isb\n"
                   "svc #1\n"                                 /* stacking into the guard */
                   :: "r"((uint32_t)&guarded_stack[8] + 8) : "r3", "memory");
    CHECK("not reached: the overflow ends in recovery()", 0);
}

static void after_overflow(void) {
    CHECK_EQ("MSTKERR", last_cfsr & 0x10, 0x10);
    CHECK_EQ("recovered after the overflow", recovered, 2);
    CHECK_EQ("the frame was not written into the guard", guarded_stack[7], 0);
    CHECK_EQ("the SVC stayed pending and ran after", svc9, 1);
}
