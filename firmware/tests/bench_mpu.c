/* bench_cpu's workload with the MPU on, as Zephyr sets it up: flash
 * read-only/executable, RAM privileged read/write and never-execute, a
 * 32-byte stack guard (privileged read-only).  GUARD_HOT puts the guard in
 * the 1 KiB page the stack works in (every store there is then decided
 * byte-exactly: the worst case); otherwise it sits in a page nothing uses. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE
#define RASR(ap, xn, size_log) (((uint32_t)(xn) << 28) | ((uint32_t)(ap) << 24) | \
    ((uint32_t)((size_log) - 1) << 1) | 1u)
extern uint32_t _estack;
#include "bench_workload.h"
int main(void) {
#ifdef GUARD_HOT
    uint32_t guard = ((uint32_t)&_estack - 768) & ~31u;
#else
    uint32_t guard = 0x20008000;
#endif
    MPU_RNR = 0; MPU_RBAR = 0x00000000; MPU_RASR = RASR(6, 0, 19);
    MPU_RNR = 1; MPU_RBAR = 0x20000000; MPU_RASR = RASR(1, 1, 16);
    MPU_RNR = 2; MPU_RBAR = guard; MPU_RASR = RASR(5, 1, 5);
    MPU_CTRL = 5;
    __asm volatile("dsb\n isb" ::: "memory");
    uint32_t sum = bench_workload();
    semihost_puts("checksum "); put_hex(sum); semihost_puts("\n");
    return 0;
}
