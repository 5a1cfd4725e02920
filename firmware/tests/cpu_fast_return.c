/* Exception returns the emulator carries out without ending its slice
 * (CortexM._return_in_hook): what must still happen right after one.
 *   - A handler pends a lower-priority IRQ that BASEPRI (or PRIMASK, set in
 *     the handler) masks after the return: it must be taken at the very
 *     instruction that lifts the mask, not at some later slice boundary.
 *   - A handler pends one that nothing masks: it tail-chains.
 *   - The thread pends one under BASEPRI/PRIMASK (a pend that does not end
 *     the slice, CortexM._pending_changed): taken where the mask drops.
 *   - Many returns in a row (a tight pend/return loop) keep registers. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t step, x_at, x_count, y_count, chain_ok;
static volatile uint32_t a_mode;

void IRQ5_Handler(void) {             /* A: priority 0x20 */
    irq_pend(6);                      /* X: 0x60, cannot preempt A */
    dsb_isb();
    if (a_mode == 1) cpsid();         /* PRIMASK stays set after the return */
    if (a_mode == 2) chain_ok = (x_count == 0);
}
void IRQ6_Handler(void) { x_at = step; x_count++; }   /* X */
void IRQ7_Handler(void) { y_count++; }                /* Y: a plain return */

/* The same code runs twice: the second time every block is already costed
 * (a first execution ends the slice, which would hide a late entry). */
static uint32_t masked_round(uint32_t mode, uint32_t lift_at) {
    a_mode = mode; x_at = 0xFFFF; x_count = 0;
    if (mode == 0 || mode == 3) set_basepri(0x40);   /* masks X (0x60), not A (0x20) */
    if (mode == 4) cpsid();
    if (mode <= 1) irq_pend(5);         /* A pends X, returns to the masked thread */
    else irq_pend(6);                   /* the masked thread pends X itself */
    dsb_isb();
    for (step = 0; step < 200; step++) {
        if (step == lift_at) {
            if (mode == 0 || mode == 3) set_basepri(0); else cpsie();
        }
        __asm volatile("nop");
    }
    return x_count == 1 ? x_at : 0xFFFF;
}

int main(void) {
    irq_prio(5, 0x20); irq_prio(6, 0x60); irq_prio(7, 0x80);
    irq_enable(5); irq_enable(6); irq_enable(7);

    for (int round = 0; round < 2; round++) {
        CHECK_EQ("X masked by BASEPRI taken where BASEPRI drops", masked_round(0, 77 + round), 77 + round);
        /* PRIMASK set in A, still set after its return */
        CHECK_EQ("X masked by PRIMASK taken where PRIMASK drops", masked_round(1, 123 + round), 123 + round);
        CHECK_EQ("X pended under BASEPRI taken where BASEPRI drops", masked_round(3, 55 + round), 55 + round);
        CHECK_EQ("X pended under PRIMASK taken where PRIMASK drops", masked_round(4, 99 + round), 99 + round);
    }

    /* nothing masks X: tail-chained from A, before the thread runs again */
    a_mode = 2; x_at = 0xFFFF; x_count = 0; chain_ok = 0; step = 0xAAAA;
    irq_pend(5); dsb_isb();
    step = 0;
    CHECK("X tail-chained after A", chain_ok && x_count == 1 && x_at == 0xAAAA);

    /* many plain returns, registers intact */
    uint32_t bad = 0;
    for (uint32_t i = 0; i < 300; i++) {
        uint32_t a = i * 7u, b = i ^ 0x5A5A5A5Au;
        irq_pend(7); dsb_isb();
        if (a != i * 7u || b != (i ^ 0x5A5A5A5Au)) bad++;
    }
    CHECK("300 returns to thread, registers kept", bad == 0 && y_count == 300);
    return harness_failures;
}
