/* bench_cpu's workload (CRC-32, an 8x8 integer matrix multiply and a bubble
 * sort, 600 times), shared by the benchmarks that time it under different
 * conditions (bench_cpu.c, bench_mpu.c). */
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H
#include <stdint.h>
static uint8_t buf[1024];
static int32_t a[8][8], b[8][8], c[8][8];
static uint32_t arr[64];
static uint32_t crc32(const uint8_t *p, int n, uint32_t crc) {
    crc = ~crc;
    while (n--) { crc ^= *p++; for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1)); }
    return ~crc;
}
static inline __attribute__((always_inline)) uint32_t bench_workload(void) {
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
    return sum;
}
#endif
