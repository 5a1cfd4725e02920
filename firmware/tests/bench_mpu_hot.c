#define GUARD_HOT 1
#include "bench_mpu.c"
