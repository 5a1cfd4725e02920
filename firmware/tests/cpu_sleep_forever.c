/* Sleeps with nothing that could wake it: no interrupt enabled, no timer.
 * A run with no deadline ends at once with the reason "sleep" (the run
 * loop's "would sleep forever"); tests/twins/drivers.py:sleep_forever. */
#include "harness.h"
HARNESS_STATE

int main(void) {
    semihost_puts("PASS about to sleep for good\n");
    for (;;)
        __asm volatile("wfi");
}
