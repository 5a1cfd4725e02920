/* CPU-bound benchmark: CRC-32, an integer matrix multiply and a bubble
 * sort, repeated; no peripherals.  Prints a checksum and exits. */
#include "harness.h"
HARNESS_STATE
#include "bench_workload.h"
int main(void) {
    uint32_t sum = bench_workload();
    semihost_puts("checksum "); put_hex(sum); semihost_puts("\n");
    return 0;
}
