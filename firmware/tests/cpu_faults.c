/* Configurable faults (ARMv7-M B1.5): UsageFault on an undefined
 * instruction (UFSR.UNDEFINSTR) with SHCSR.USGFAULTENA, divide by zero with
 * CCR.DIV_0_TRP (UFSR.DIVBYZERO), precise BusFault on an unmapped address
 * (BFSR.PRECISERR + BFARVALID, BFAR), and escalation to HardFault with
 * HFSR.FORCED when the configurable fault is disabled.  Each handler
 * advances the stacked PC past the faulting instruction and returns. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t uf_count, bf_count, hf_count, cfsr_seen, bfar_seen, hfsr_seen, ipsr_seen;

/* Skip the faulting instruction: 16- or 32-bit Thumb encoding */
static void skip(uint32_t *frame) {
    uint16_t hw = *(uint16_t *)frame[6];
    frame[6] += ((hw & 0xE000) == 0xE000 && (hw & 0x1800)) ? 4 : 2;
}
#define FRAME_HANDLER(name) \
    __attribute__((naked)) void name##_Handler(void) { __asm volatile( \
        "tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b " #name "_c\n"); }

void UsageFault_c(uint32_t *frame) {
    uf_count++; cfsr_seen = SCB_CFSR; ipsr_seen = get_ipsr();
    SCB_CFSR = cfsr_seen;   /* W1C */
    skip(frame);
}
void BusFault_c(uint32_t *frame) {
    bf_count++; cfsr_seen = SCB_CFSR; bfar_seen = SCB_BFAR; ipsr_seen = get_ipsr();
    SCB_CFSR = cfsr_seen;
    skip(frame);
}
void HardFault_c(uint32_t *frame) {
    hf_count++; cfsr_seen = SCB_CFSR; hfsr_seen = SCB_HFSR; ipsr_seen = get_ipsr();
    SCB_CFSR = cfsr_seen; SCB_HFSR = hfsr_seen;
    skip(frame);
}
FRAME_HANDLER(UsageFault)
FRAME_HANDLER(BusFault)
FRAME_HANDLER(HardFault)

static volatile uint32_t zero = 0;

/* A division alone in its block (no store before it): translated once with
 * DIV_0_TRP clear, it must trap after the bit is set (the emulator hooks
 * divisions only from then on and must re-translate this one). */
__attribute__((noinline)) static uint32_t divide(uint32_t a, uint32_t b) {
    uint32_t q;
    __asm volatile("udiv %0, %1, %2" : "=r"(q) : "r"(a), "r"(b));
    return q;
}

int main(void) {
    SCB_SHCSR |= (1 << 18) | (1 << 17);   /* USGFAULTENA, BUSFAULTENA */
    CHECK_EQ("SHCSR enables readback", (SCB_SHCSR >> 17) & 3, 3);

    /* undefined instruction: permanently undefined UDF #0 (0xDE00) */
    __asm volatile(".short 0xde00" ::: "memory");
    CHECK_EQ("UsageFault taken once", uf_count, 1);
    CHECK_EQ("UFSR.UNDEFINSTR", cfsr_seen, 1u << 16);
    CHECK_EQ("IPSR = 6 in UsageFault", ipsr_seen, 6);
    CHECK_EQ("CFSR cleared by W1C", SCB_CFSR, 0);

    /* divide by zero: no trap without DIV_0_TRP, result 0 */
    volatile uint32_t q = 100u / zero;
    CHECK_EQ("udiv by 0 without trap gives 0", q, 0);
    CHECK_EQ("no UsageFault without DIV_0_TRP", uf_count, 1);
    CHECK_EQ("translated division by 0 gives 0", divide(7, zero), 0);
    CHECK_EQ("still no UsageFault", uf_count, 1);
    SCB_CCR |= 1 << 4;
    q = 100u / zero;
    CHECK_EQ("DIV_0_TRP: UsageFault", uf_count, 2);
    CHECK_EQ("UFSR.DIVBYZERO", cfsr_seen, 1u << 25);
    divide(7, zero);
    CHECK_EQ("DIV_0_TRP: the division translated before traps", uf_count, 3);
    CHECK_EQ("divide(): UFSR.DIVBYZERO", cfsr_seen, 1u << 25);
    CHECK_EQ("divide(7, 2) still divides", divide(7, 2), 3);
    SCB_CCR &= ~(1u << 4);

    /* precise BusFault: load from an unmapped address */
    volatile uint32_t v = REG32(0x30000000);
    (void)v;
    CHECK_EQ("BusFault taken once", bf_count, 1);
    CHECK_EQ("BFSR.PRECISERR|BFARVALID", cfsr_seen, (1u << 9) | (1u << 15));
    CHECK_EQ("BFAR", bfar_seen, 0x30000000);
    CHECK_EQ("IPSR = 5 in BusFault", ipsr_seen, 5);

    /* escalation: UsageFault disabled -> HardFault, HFSR.FORCED */
    SCB_SHCSR &= ~(1u << 18);
    __asm volatile(".short 0xde00" ::: "memory");
    CHECK_EQ("escalated to HardFault", hf_count, 1);
    CHECK_EQ("no UsageFault handler", uf_count, 3);
    CHECK_EQ("HFSR.FORCED", hfsr_seen, 1u << 30);
    CHECK_EQ("UFSR.UNDEFINSTR also set", cfsr_seen, 1u << 16);
    CHECK_EQ("IPSR = 3 in HardFault", ipsr_seen, 3);

    /* BusFault disabled -> HardFault */
    SCB_SHCSR &= ~(1u << 17);
    v = REG32(0x30000004);
    CHECK_EQ("BusFault escalated", hf_count, 2);
    CHECK_EQ("BFAR after escalation", SCB_BFAR, 0x30000004);
    return harness_failures;
}
