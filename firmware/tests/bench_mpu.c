/* bench_cpu's workload with the MPU on, as Zephyr sets it up: flash
 * read-only/executable, RAM privileged read/write and never-execute, a
 * 32-byte stack guard (privileged read-only).  GUARD_HOT puts the guard in
 * the 1 KiB page the stack works in (every store there is then decided
 * byte-exactly: the worst case); otherwise it sits in a page nothing uses. */
#include "harness.h"
HARNESS_STATE
#define MPU_CTRL REG32(0xE000ED94)
#define MPU_RNR  REG32(0xE000ED98)
#define MPU_RBAR REG32(0xE000ED9C)
#define MPU_RASR REG32(0xE000EDA0)
#define RASR(ap, xn, size_log) (((uint32_t)(xn) << 28) | ((uint32_t)(ap) << 24) | \
    ((uint32_t)((size_log) - 1) << 1) | 1u)
extern uint32_t _estack;
static uint8_t buf[1024];
static int32_t a[8][8], b[8][8], c[8][8];
static uint32_t arr[64];
static uint32_t crc32(const uint8_t *p, int n, uint32_t crc) {
    crc = ~crc;
    while (n--) { crc ^= *p++; for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1)); }
    return ~crc;
}
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
    uint32_t sum = 0;
    for (int i = 0; i < 1024; i++) buf[i] = i * 7;
    for (int it = 0; it < 600; it++) {
        sum = crc32(buf, sizeof buf, sum);
        for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) { a[i][j] = i + j + it; b[i][j] = i - j; }
        for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) {
            int32_t s = 0; for (int k = 0; k < 8; k++) s += a[i][k] * b[k][j]; c[i][j] = s; sum += s; }
        for (int i = 0; i < 64; i++) arr[i] = (sum * (i + 1)) ^ (i * 2654435761u);
        for (int i = 0; i < 64; i++) for (int j = 0; j + 1 < 64 - i; j++)
            if (arr[j] > arr[j + 1]) { uint32_t t = arr[j]; arr[j] = arr[j + 1]; arr[j + 1] = t; }
        sum += arr[0] ^ arr[63];
    }
    semihost_puts("checksum "); put_hex(sum); semihost_puts("\n");
    return 0;
}
