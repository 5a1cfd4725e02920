/* A test suite faulting on purpose, case after case, in the same function
 * (as Zephyr's tests/kernel/fatal/exception does): five UsageFaults at the same
 * instruction, 250 ms apart, each handler taking 20 ms (a fault report
 * printed at 115200 baud) before skipping the instruction.  Neither the
 * "same fault repeats" nor the "handler never returns" diagnosis may stop
 * it; and a MemManage whose own stacking hits the stack guard is entered
 * as MemManage with MSTKERR and the first fault's bits (not HardFault). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t ticks, busfaults, mm_cfsr, hardfaults;

void SysTick_Handler(void) { ticks++; }

static void busy_ms(uint32_t ms) {
    uint32_t start = DWT_CYCCNT;
    while (DWT_CYCCNT - start < ms * 64000u) ;
}

void bf_c(uint32_t *frame) {
    busfaults++;
    SCB_CFSR = SCB_CFSR;
    busy_ms(20);
    frame[6] += 2;
}
__attribute__((naked)) void UsageFault_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b bf_c\n");
}

__attribute__((noinline)) static void poke(void) {
    __asm volatile("udf #7" ::: "memory");                      /* a deliberate fault */
}

/* the guard test: MemManage records CFSR and abandons the thread's stack */
static uint32_t thread_stack[64] __attribute__((aligned(256)));
static void after(void);
void mm_c(void) {
    mm_cfsr = SCB_CFSR;
    SCB_CFSR = SCB_CFSR;
    MPU_CTRL = 0;
    after();
}
__attribute__((naked)) void MemManage_Handler(void) { __asm volatile("b mm_c\n"); }
void HardFault_Handler(void) { hardfaults++; after(); }

/* Zephyr's user-string fixup: a BusFault's stacked PC must be the faulting
 * load itself (not its block's start), the first time the block runs too,
 * for the handler to find it in its fixup table and resume after it. */
extern const char fixup_start[], fixup_end[];
static volatile uint32_t bf_pc, fixups;
void bf_fixup_c(uint32_t *frame) {
    bf_pc = frame[6];
    SCB_CFSR = SCB_CFSR;
    if (frame[6] == ((uint32_t)fixup_start & ~1u)) {
        fixups++;
        frame[6] = (uint32_t)fixup_end & ~1u;
    } else {
        frame[6] += 2;
    }
}
__attribute__((naked)) void BusFault_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b bf_fixup_c\n");
}
__attribute__((noinline)) static uint32_t probe(const volatile uint8_t *p) {
    uint32_t v = 0x55;
    __asm volatile("movs r3, #1\n adds r3, r3, #2\n adds r3, r3, #3\n"
                   ".global fixup_start\n.type fixup_start, %%function\n.thumb_func\nfixup_start:\n"
                   "ldrb %0, [%1]\n"
                   ".global fixup_end\n.type fixup_end, %%function\n.thumb_func\nfixup_end:\n"
                   : "+l"(v) : "l"(p) : "r3", "memory");
    return v;
}

int main(void) {
    DEMCR |= 1u << 24;
    DWT_CTRL |= 1;
    SCB_SHCSR |= (1u << 16) | (1u << 18);                    /* MEMFAULTENA, USGFAULTENA */
    SYST_RVR = 64000 - 1;
    SYST_CVR = 0;
    SYST_CSR = 7;
    for (int i = 0; i < 5; i++) {
        uint32_t t = ticks;
        while (ticks - t < 250) __asm volatile("wfi");
        poke();
    }
    SYST_CSR = 0;
    CHECK_EQ("five faults in one place, all handled", busfaults, 5);
    SCB_SHCSR |= 1u << 17;                                    /* BUSFAULTENA */
    uint32_t v = probe((const volatile uint8_t *)0xFFFFFFF0u);  /* nothing there */
    CHECK_EQ("BusFault's stacked PC is the load", bf_pc, (uint32_t)fixup_start & ~1u);
    CHECK_EQ("the fixup resumed after it", fixups, 1);
    CHECK_EQ("the load left its register", v, 0x55);
    /* a 32-byte guard at the bottom of a thread stack, privileged read-only */
    MPU_RNR = 0; MPU_RBAR = (uint32_t)thread_stack;
    MPU_RASR = (5u << 24) | (1u << 28) | ((5u - 1) << 1) | 1u;
    MPU_CTRL = 5;
    __asm volatile("dsb\n isb\n"
                   "msr psp, %0\n mrs r3, control\n orr r3, r3, #2\n msr control, r3\n isb\n"
                   "push {r0-r7}\n push {r0-r7}\n push {r0-r7}\n"   /* overflows into it */
                   :: "r"((uint32_t)&thread_stack[8] + 40) : "r3", "memory");
    for (;;) ;
}

static void after(void) {
    CHECK_EQ("MemManage, not HardFault", hardfaults, 0);
    CHECK_EQ("MSTKERR with DACCVIOL and MMARVALID", mm_cfsr & 0x9B, 0x92);
    semihost_exit(harness_failures);
}
