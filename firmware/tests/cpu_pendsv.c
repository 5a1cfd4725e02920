/* PendSV context switch, the classic RTOS pattern (ARMv7-M B1.5): three
 * threads on PSP (main + two tasks).  PendSV saves r4-r11 and EXC_RETURN
 * (+ s16-s31 when EXC_RETURN bit 4 is clear, i.e. the thread had an FP
 * context) on the outgoing PSP, switches PSP, restores the next thread and
 * returns with its EXC_RETURN (0xFFFFFFFD or 0xFFFFFFED).  Each thread
 * keeps a private value in s0 (hardware-stacked) and s16 (software-saved)
 * and in r4-r11 across switches; the threads must alternate in order. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define ROUNDS 6
uint32_t sp_table[3];
uint32_t cur;
static volatile uint32_t seq[3 * ROUNDS + 4];
static volatile uint32_t nseq, corrupt, excret_or, excret_and = 0xFFFFFFFF, ctrl_bad;
static uint32_t stack1[256] __attribute__((aligned(8)));
static uint32_t stack2[256] __attribute__((aligned(8)));
static uint32_t handler_stack[256] __attribute__((aligned(8)));
uint32_t last_excret;

__attribute__((naked)) void PendSV_Handler(void) {
    __asm volatile(
        "mrs r0, psp\n"
        "tst lr, #0x10\n"
        "it eq\n"
        "vstmdbeq r0!, {s16-s31}\n"
        "stmdb r0!, {r4-r11, lr}\n"
        "ldr r1, =cur\n ldr r2, [r1]\n ldr r3, =sp_table\n"
        "str r0, [r3, r2, lsl #2]\n"
        "adds r2, #1\n cmp r2, #3\n it eq\n moveq r2, #0\n str r2, [r1]\n"
        "ldr r0, [r3, r2, lsl #2]\n"
        "ldmia r0!, {r4-r11, lr}\n"
        "tst lr, #0x10\n"
        "it eq\n"
        "vldmiaeq r0!, {s16-s31}\n"
        "msr psp, r0\n"
        "ldr r1, =last_excret\n str lr, [r1]\n"
        "bx lr\n");
}

/* Put a private pattern in s0, s16 and r4-r11, yield, check them */
static void yield_checked(uint32_t id) {
    uint32_t ok;
    __asm volatile(
        "vmov s0, %1\n vmov s16, %1\n"
        "mov r4, %1\n add r5, r4, #1\n add r6, r4, #2\n add r7, r4, #3\n"
        "add r8, r4, #4\n add r9, r4, #5\n add r10, r4, #6\n add r11, r4, #7\n"
        "ldr r0, =0xE000ED04\n mov r1, #0x10000000\n str r1, [r0]\n dsb\n isb\n"
        "mov %0, #1\n"
        "vmov r0, s0\n cmp r0, %1\n it ne\n movne %0, #0\n"
        "vmov r0, s16\n cmp r0, %1\n it ne\n movne %0, #0\n"
        "cmp r4, %1\n it ne\n movne %0, #0\n"
        "sub r0, r11, r4\n cmp r0, #7\n it ne\n movne %0, #0\n"
        "sub r0, r8, r5\n cmp r0, #3\n it ne\n movne %0, #0\n"
        : "=&r"(ok) : "r"(id * 0x01010101u + 0x40000000u)
        : "r0", "r1", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "s0", "s16", "memory");
    if (!ok) corrupt++;
    uint32_t e = last_excret;
    excret_or |= e; excret_and &= e;
    if ((get_control() & 2) == 0) ctrl_bad++;
}

static void task(uint32_t id) {
    for (;;) {
        seq[nseq++] = id;
        yield_checked(id);
    }
}
static void task1(void) { task(1); }
static void task2(void) { task(2); }

/* Initial frame: software part (r4-r11, EXC_RETURN 0xFFFFFFFD: no FP yet)
 * below a hardware basic frame with PC = entry, xPSR.T set. */
static uint32_t init_stack(uint32_t *top, void (*entry)(void)) {
    uint32_t *sp = top - 8;
    sp[0] = 0; sp[1] = 0; sp[2] = 0; sp[3] = 0; sp[4] = 0;
    sp[5] = 0xFFFFFFFF;                /* LR: tasks never return */
    sp[6] = (uint32_t)entry & ~1u;     /* PC */
    sp[7] = 0x01000000;                /* xPSR: Thumb */
    sp -= 9;
    for (int i = 0; i < 8; i++) sp[i] = 0x1000 + i;
    sp[8] = 0xFFFFFFFD;
    return (uint32_t)sp;
}

int main(void) {
    SCB_SHPR8(14) = 0xFF;     /* PendSV lowest */
    CHECK_EQ("PendSV priority", REG32(0xE000ED20) >> 16 & 0xFF, 0xE0);
    sp_table[1] = init_stack(&stack1[256], task1);
    sp_table[2] = init_stack(&stack2[256], task2);
    cur = 0;
    /* main moves onto PSP (same stack), handlers get their own MSP stack */
    __asm volatile("mrs r0, msp\n msr psp, r0\n mov r0, #2\n msr control, r0\n isb\n"
                   "msr msp, %0\n" :: "r"(&handler_stack[256]) : "r0", "memory");
    CHECK_EQ("CONTROL.SPSEL", get_control() & 2, 2);
    for (int i = 0; i < ROUNDS; i++) {
        seq[nseq++] = 0;
        yield_checked(0);
    }
    CHECK_EQ("sequence length", nseq, 3 * ROUNDS);
    int order_ok = 1;
    for (int i = 0; i < 3 * ROUNDS; i++)
        if (seq[i] != (uint32_t)(i % 3)) order_ok = 0;
    CHECK("threads alternate 0,1,2,0,1,2...", order_ok);
    CHECK_EQ("registers preserved across switches", corrupt, 0);
    CHECK_EQ("EXC_RETURN thread/PSP with FP context", excret_or, 0xFFFFFFED);
    CHECK_EQ("EXC_RETURN always thread/PSP", excret_and & 0xD, 0xD);
    CHECK_EQ("CONTROL.SPSEL in every thread", ctrl_bad, 0);
    /* back to MSP for exit */
    __asm volatile("mrs r0, psp\n msr msp, r0\n mov r0, #0\n msr control, r0\n isb\n" ::: "r0", "memory");
    return harness_failures;
}
