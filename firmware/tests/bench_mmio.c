/* MMIO-heavy benchmark: a tight loop polling peripheral registers (RTC1
 * COUNTER and GPIO IN), as a busy-waiting driver does.  Exits with the
 * number of accesses made so the benchmark can check it. */
#include "harness.h"

#define N 500000u

int main(void) {
    REG32(0x40011000) = 1;                 /* RTC1 TASKS_START */
    uint32_t acc = 0;
    for (uint32_t i = 0; i < N; i++) {
        acc += REG32(0x40011504);          /* RTC1 COUNTER */
        acc ^= REG32(0x50000510);          /* GPIO IN */
    }
    semihost_puts("mmio done\n");
    return acc == 0x12345678;              /* 0: keep the result live */
}
