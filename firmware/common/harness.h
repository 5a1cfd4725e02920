/* Test harness for firmware run under pinetime-emu.
 * Output goes through ARM semihosting (BKPT 0xAB), which the emulator
 * collects as the console; semihost_exit() ends the run with a status.
 * Tests print "PASS <name>" / "FAIL <name>: ..." lines and return the
 * number of failures from main(). */
#ifndef HARNESS_H
#define HARNESS_H
#include <stdint.h>

static inline int semihost_call(int op, const void *arg) {
    register int r0 __asm("r0") = op;
    register const void *r1 __asm("r1") = arg;
    __asm volatile("bkpt #0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}
static inline void semihost_puts(const char *s) { semihost_call(0x04, s); }
static inline void semihost_putc(char c) { semihost_call(0x03, &c); }
static inline void semihost_exit(int code) {
    uint32_t block[2] = {0x20026, (uint32_t)code};
    semihost_call(0x20, block);
}

static inline void put_hex(uint32_t v) {
    char buf[11] = "0x";
    for (int i = 0; i < 8; i++) {
        int d = (v >> (28 - 4 * i)) & 0xF;
        buf[2 + i] = d < 10 ? '0' + d : 'a' + d - 10;
    }
    buf[10] = 0;
    semihost_puts(buf);
}
static inline void put_dec(uint32_t v) {
    char buf[12]; int i = 11; buf[i] = 0;
    do { buf[--i] = '0' + v % 10; v /= 10; } while (v);
    semihost_puts(&buf[i]);
}

extern int harness_failures;
#define HARNESS_STATE /* harness_failures lives in harness.c */

/* CHECK(name, cond): one PASS/FAIL line */
#define CHECK(name, cond) do { \
    if (cond) { semihost_puts("PASS " name "\n"); } \
    else { harness_failures++; semihost_puts("FAIL " name " (" #cond ")\n"); } } while (0)
/* CHECK_EQ prints both values on failure */
#define CHECK_EQ(name, got, want) do { uint32_t g_ = (uint32_t)(got), w_ = (uint32_t)(want); \
    if (g_ == w_) { semihost_puts("PASS " name "\n"); } \
    else { harness_failures++; semihost_puts("FAIL " name ": got "); put_hex(g_); \
           semihost_puts(" want "); put_hex(w_); semihost_puts("\n"); } } while (0)

#define REG32(a) (*(volatile uint32_t *)(a))
#endif
