/* Two TIMER compares one count apart: both fire (PS v1.4 23.4: COMPARE[n]
 * when the counter becomes equal to CC[n]).  The emulator evaluates a
 * compare when the core reaches a block start at or after its tick, a few
 * cycles late; the next compare must be planned from the compare's own
 * tick, not from the later time: at 16 MHz a count is 4 CPU cycles, and
 * planned from "now" the counter already equals the next CC, which was then
 * taken as a whole wrap away (2^32 counts).
 *
 * TIMER1 at 16 MHz, 32-bit: CC[1] = x, CC[0] = x + d (d = 1-3 counts),
 * CC[2] = x + 1000 (the bound); the loop polls COMPARE[0] and COMPARE[2].
 * 10 consecutive x for each d (every phase of the loop against the
 * counts): COMPARE[0] must come first every time, a few counts after x + d. */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE


int main(void) {
    T_BITMODE(TIMER1) = 3;
    T_PRESCALER(TIMER1) = 0;
    uint32_t trials = 0, missed = 0, worst = 0;
    for (uint32_t d = 1; d <= 3; d++) {
        for (uint32_t k = 0; k < 10; k++) {
            uint32_t x = 200 + k;
            T_STOP(TIMER1) = 1;
            T_CLEAR(TIMER1) = 1;
            for (int n = 0; n < 4; n++)
                T_COMPARE(TIMER1, n) = 0;
            T_CC(TIMER1, 1) = x;
            T_CC(TIMER1, 0) = x + d;
            T_CC(TIMER1, 2) = x + 1000;
            T_START(TIMER1) = 1;
            while (!T_COMPARE(TIMER1, 0) && !T_COMPARE(TIMER1, 2))
                ;
            T_CAPTURE(TIMER1, 3) = 1;
            trials++;
            if (!T_COMPARE(TIMER1, 0) || !T_COMPARE(TIMER1, 1)) {
                missed++;
            } else {
                uint32_t late = T_CC(TIMER1, 3) - (x + d);
                if (late > worst)
                    worst = late;
            }
        }
    }
    T_STOP(TIMER1) = 1;
    CHECK_EQ("every trial ran", trials, 30);
    CHECK_EQ("no compare one count after another was missed", missed, 0);
    CHECK("each poll ended within 8 counts of CC[0]", worst <= 8);
    semihost_puts("latest end after CC[0] (counts): ");
    put_dec(worst);
    semihost_puts("\n");
    return harness_failures;
}
