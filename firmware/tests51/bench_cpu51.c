/* bench_cpu's workload on the Cortex-M0 (the micro:bit's nRF51822): the
 * CPU-bound rate bench/limit.py measures for the micro:bit's bench. */
#include "harness.h"
HARNESS_STATE
#include "bench_workload.h"
int main(void) {
    uint32_t sum = bench_workload();
    semihost_puts("checksum "); put_hex(sum); semihost_puts("\n");
    return 0;
}
