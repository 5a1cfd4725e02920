/* FP context across exceptions (ARMv7-M B1.5.7, Cortex-M4F): once the
 * thread has used the FPU, CONTROL.FPCA = 1 and exception entry pushes the
 * extended frame (s0-s15, FPSCR) with EXC_RETURN 0xFFFFFFE9; the handler
 * clobbers s0-s15 and FPSCR (caller-saved) and, saving them itself like
 * any AAPCS function, s16-s31.  After return every thread register and
 * FPSCR are intact. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t excret_seen, ctrl_in_handler, handler_ran;
static volatile uint32_t sp_thread_before, sp_in_handler;
uint32_t after[32];
volatile uint32_t fpscr_after;

void IRQ0_Handler(void) {
    uint32_t lr = (uint32_t)__builtin_return_address(0);
    excret_seen = lr;
    ctrl_in_handler = get_control();
    __asm volatile("mov %0, sp" : "=r"(sp_in_handler));
    /* clobber every FP register and FPSCR */
    __asm volatile(
        "vpush {s16-s31}\n"
        "mov r0, #0x7F000000\n vmov s0, r0\n vmov s1, r0\n vmov s2, r0\n vmov s3, r0\n"
        "vmov s4, r0\n vmov s5, r0\n vmov s6, r0\n vmov s7, r0\n vmov s8, r0\n vmov s9, r0\n"
        "vmov s10, r0\n vmov s11, r0\n vmov s12, r0\n vmov s13, r0\n vmov s14, r0\n vmov s15, r0\n"
        "vmov s16, r0\n vmov s20, r0\n vmov s31, r0\n"
        "mov r0, #0\n vmsr fpscr, r0\n"
        "vpop {s16-s31}\n" ::: "r0", "memory");
    handler_ran = 1;
}

int main(void) {
    CHECK_EQ("CPACR CP10/CP11 full access", (REG32(0xE000ED88) >> 20) & 0xF, 0xF);
    irq_prio(0, 0x40); irq_enable(0);

    /* Before any FP instruction in this context FPCA is clear: basic frame */
    __asm volatile("mov r0, #0\n msr control, r0\n isb" ::: "r0");
    CHECK_EQ("FPCA clear", get_control() & 4, 0);
    irq_pend(0); dsb_isb();
    CHECK_EQ("basic frame EXC_RETURN", excret_seen, 0xFFFFFFF9);

    /* Load s0..s31 with i*1.5f bit patterns and FPSCR with known flags */
    __asm volatile(
        "mov r0, #0x40000000\n"
        "vmov s0, r0\n add r0, #1\n vmov s1, r0\n add r0, #1\n vmov s2, r0\n add r0, #1\n"
        "vmov s3, r0\n add r0, #1\n vmov s4, r0\n add r0, #1\n vmov s5, r0\n add r0, #1\n"
        "vmov s6, r0\n add r0, #1\n vmov s7, r0\n add r0, #1\n vmov s8, r0\n add r0, #1\n"
        "vmov s9, r0\n add r0, #1\n vmov s10, r0\n add r0, #1\n vmov s11, r0\n add r0, #1\n"
        "vmov s12, r0\n add r0, #1\n vmov s13, r0\n add r0, #1\n vmov s14, r0\n add r0, #1\n"
        "vmov s15, r0\n add r0, #1\n vmov s16, r0\n add r0, #1\n vmov s17, r0\n add r0, #1\n"
        "vmov s18, r0\n add r0, #1\n vmov s19, r0\n add r0, #1\n vmov s20, r0\n add r0, #1\n"
        "vmov s21, r0\n add r0, #1\n vmov s22, r0\n add r0, #1\n vmov s23, r0\n add r0, #1\n"
        "vmov s24, r0\n add r0, #1\n vmov s25, r0\n add r0, #1\n vmov s26, r0\n add r0, #1\n"
        "vmov s27, r0\n add r0, #1\n vmov s28, r0\n add r0, #1\n vmov s29, r0\n add r0, #1\n"
        "vmov s30, r0\n add r0, #1\n vmov s31, r0\n"
        "ldr r0, =0x03C00000\n vmsr fpscr, r0\n"      /* RMode=RZ, FZ, DN */
        /* take the interrupt with every FP register live */
        "ldr r1, =0xE000E200\n mov r0, #1\n str r0, [r1]\n dsb\n isb\n"
        "ldr r1, =after\n vstmia r1, {s0-s31}\n"
        "vmrs r0, fpscr\n ldr r1, =fpscr_after\n str r0, [r1]\n"
        ::: "r0", "r1", "memory");
    CHECK_EQ("handler ran", handler_ran, 1);
    CHECK_EQ("extended frame EXC_RETURN 0xFFFFFFE9", excret_seen, 0xFFFFFFE9);
    CHECK_EQ("FPCA cleared on entry", ctrl_in_handler & 4, 0);
    CHECK_EQ("FPCA set in thread after return", get_control() & 4, 4);
    int bad = 0;
    for (int i = 0; i < 32; i++)
        if (after[i] != 0x40000000u + i) { bad++; semihost_puts("s"); put_dec(i); semihost_puts(" = "); put_hex(after[i]); semihost_puts("\n"); }
    CHECK_EQ("s0-s31 intact", bad, 0);
    CHECK_EQ("FPSCR preserved", fpscr_after & 0x07C00000, 0x03C00000);
    return harness_failures;
}
