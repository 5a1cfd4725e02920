/* NVIC ISER/ICER as firmware uses them around critical sections (MicroPython
 * on the micro:bit: NVIC_DisableIRQ/NVIC_EnableIRQ around its ticker, ~2000
 * writes an emulated second), carried out by the bus's BITS op: an enable of
 * an interrupt that is pending is taken at once (after the ISB), one that is
 * not pending changes nothing else, a disable holds a pend back.  Also the
 * second enable word (IRQs 32-38). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t taken7, taken34;
void IRQ7_Handler(void) { taken7++; }   /* vector 16 + 7 */
void IRQ34_Handler(void) { taken34++; }

#define NVIC_ICER_(n) REG32(0xE000E180 + 4 * (n))
#define NVIC_ISPR_(n) REG32(0xE000E200 + 4 * (n))

int main(void) {
    uint32_t late = 0, early = 0;
    for (int i = 0; i < 200; i++) {
        uint32_t before = taken7;
        NVIC_ICER_(0) = 1u << 7;            /* disabled */
        NVIC_ISPR_(0) = 1u << 7;            /* pending, held back */
        dsb_isb();
        if (taken7 != before)
            early++;
        NVIC_ISER(0) = 1u << 7;             /* enabled while pending: taken now */
        dsb_isb();
        if (taken7 != before + 1)
            late++;
        NVIC_ISER(0) = 1u << 7;             /* enabled again, nothing pending */
        NVIC_ICER_(0) = 1u << 7;
        NVIC_ISER(0) = 1u << 7;
    }
    CHECK_EQ("a disabled interrupt's pend waits", early, 0);
    CHECK_EQ("enabling a pending interrupt takes it at once", late, 0);
    CHECK_EQ("each pend taken once", taken7, 200);
    CHECK_EQ("ISER reads the enable bit", (NVIC_ISER(0) >> 7) & 1, 1);
    NVIC_ICER_(0) = 1u << 7;
    CHECK_EQ("ICER clears it", (NVIC_ISER(0) >> 7) & 1, 0);

    NVIC_ICER_(1) = 1u << 2;
    NVIC_ISPR_(1) = 1u << 2;
    dsb_isb();
    uint32_t held = taken34;
    NVIC_ISER(1) = 1u << 2;
    dsb_isb();
    CHECK_EQ("IRQ34 held back while disabled", held, 0);
    CHECK_EQ("IRQ34 taken when enabled (second word)", taken34, 1);
    CHECK_EQ("ISER[1] reads it", (NVIC_ISER(1) >> 2) & 1, 1);
    NVIC_ICER_(1) = 1u << 2;
    return harness_failures;
}
