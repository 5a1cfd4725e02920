/* More code than the block hook's cost table first holds: 14 000 calls
 * (as many translated blocks after them), run three times.  The table grows (every cost kept, re-hashed) and its probes
 * meet collisions; the count of cycles stays exact: the same in the native
 * table as in the Python counter's dict (emu/twins.py: cycles.block_hook). */
#include "harness.h"
HARNESS_STATE

#define R10(x) x x x x x x x x x x
/* a call per step: every return starts a translated block of its own */
static __attribute__((noinline)) uint32_t mix(uint32_t acc, uint32_t v, uint32_t k) {
    return (acc ^ v) + k;
}
#define STEP acc = mix(acc, v, __COUNTER__); __asm volatile("nop.w");   /* (Thumb-2: an M4 image) */
#define R1000 R10(R10(R10(STEP)))

static __attribute__((noinline)) uint32_t many(uint32_t v) {
    uint32_t acc = 0;
    R1000 R1000 R1000 R1000 R1000 R1000 R1000 R1000 R1000 R1000 R1000 R1000 R1000 R1000
    return acc;
}

static volatile uint32_t seeds[2] = {0x5A5A5A5A, 0xA5A5A5A5};

int main(void) {
    uint32_t a = many(seeds[0]), b = many(seeds[0]), c = many(seeds[1]);
    CHECK("the same input gives the same sum", a == b);
    CHECK("another input another", a != c);
    CHECK("UDIV (and a Cortex-M4 image by its code)", seeds[1] / (seeds[0] >> 24) == 0x1D72C81);
    return harness_failures;
}
