/* A polled event that fires a few cycles after another clock event, as
 * InfiniTime's SpiMaster::Read meets it (its loop on SPIM EVENTS_END ended a
 * whole BLE event late when polling loops were counted: emu/cpu/_blockhook.c,
 * loop_step; docs/performance.md).
 *
 * TIMER0 at 16 MHz: CC[1] fires g timer ticks (4 to 20 CPU cycles) before
 * CC[0], the event the one-block loop polls, and CC[2] far after.  The slice
 * that starts at CC[1] is only one or two loop iterations long: it ends at the
 * loop's head when CC[0] fires.  The iteration before that boundary read
 * COMPARE[0] = 0; it must not stand for the iterations after it, which read 1.
 * Trials sweep g (1-5 ticks) and CC[0] (10 consecutive ticks: every phase of
 * the loop's iterations against the events), and each capture right after the
 * loop must be a few ticks past CC[0]: a loop counted on to the next clock
 * event ends tens of ticks late (or at CC[2], 2000 ticks on).  (g = 1 also
 * needs the TIMER to plan CC[0] from CC[1]'s tick: periph_timer_adjacent_cc.c.) */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE


int main(void) {
    T_BITMODE(TIMER0) = 3;
    T_PRESCALER(TIMER0) = 0;
    uint32_t trials = 0, late_ones = 0, worst = 0;
    for (uint32_t g = 1; g <= 5; g++) {
        for (uint32_t k = 0; k < 10; k++) {
            uint32_t cc0 = 300 + k;
            T_STOP(TIMER0) = 1;
            T_CLEAR(TIMER0) = 1;
            for (int n = 0; n < 4; n++)
                T_COMPARE(TIMER0, n) = 0;
            T_CC(TIMER0, 0) = cc0;
            T_CC(TIMER0, 1) = cc0 - g;
            T_CC(TIMER0, 2) = cc0 + 2000;
            T_START(TIMER0) = 1;
            poll_one_block(&T_COMPARE(TIMER0, 0));
            T_CAPTURE(TIMER0, 3) = 1;
            uint32_t late = T_CC(TIMER0, 3) - cc0;
            trials++;
            if (late > 8)
                late_ones++;
            if (late > worst)
                worst = late;
        }
    }
    T_STOP(TIMER0) = 1;
    CHECK_EQ("every trial ran", trials, 50);
    CHECK_EQ("no poll ended late (an iteration from before the event skipped it)",
             late_ones, 0);
    CHECK("the latest poll ended within 8 ticks of its event", worst <= 8);
    semihost_puts("latest end after the event (timer ticks): ");
    put_dec(worst);
    semihost_puts("\n");
    return harness_failures;
}
