/* Flash written by the store instructions compilers and libraries use: a
 * plain STR, STRH and STRB (the emulator's run loop carries these out
 * itself: the PC past the store, the value its hook saw), and the shapes
 * it steps over with their stores held back (emu/cpu/runloop.py,
 * _handle_flash_write): a post-indexed STR (memcpy's loop: the base moves),
 * a pre-indexed one with writeback, STRD and STMIA (two and three stores
 * from one instruction), and a conditional STR inside an IT block, taken
 * and not taken.  Each word must hold exactly the bits the NVMC keeps
 * (old AND new), each base register its written-back value, and the flags
 * and the instructions after each store must run as usual.  A checksum of
 * the page and the registers is printed: the same natively and in pure
 * Python (tests/peripherals/test_periph_nvmc.py). */
#include "harness.h"
HARNESS_STATE

#define NVMC_READY     REG32(0x4001E400)
#define NVMC_CONFIG    REG32(0x4001E504)
#define NVMC_ERASEPAGE REG32(0x4001E508)
#define PAGE_ADDR 0x0007E000u

static void wait_ready(void) { while (!NVMC_READY) { } }

int main(void) {
    volatile uint32_t *w = (volatile uint32_t *)PAGE_ADDR;
    NVMC_CONFIG = 2;                       /* Een */
    NVMC_ERASEPAGE = PAGE_ADDR;
    wait_ready();
    NVMC_CONFIG = 1;                       /* Wen */

    /* plain stores: a word, then a halfword and a byte into the next one */
    w[0] = 0x11223344;
    wait_ready();
    *(volatile uint16_t *)(PAGE_ADDR + 4) = 0xBEEF;
    wait_ready();
    *(volatile uint8_t *)(PAGE_ADDR + 7) = 0x5A;
    wait_ready();
    CHECK_EQ("STR", w[0], 0x11223344);
    CHECK_EQ("STRH and STRB", w[1], 0x5AFFBEEF);
    w[0] = 0xFF00FFFF;                     /* bits only clear */
    wait_ready();
    CHECK_EQ("STR over written bits", w[0], 0x11003344);

    /* post-indexed: str r1, [r0], #4 (twice) */
    uint32_t base = PAGE_ADDR + 8, v1 = 0xCAFEF00D, v2 = 0x0BADBEEF;
    __asm volatile("str %1, [%0], #4\n"
                   "str %2, [%0], #4\n"
                   : "+r"(base) : "r"(v1), "r"(v2) : "memory");
    wait_ready();
    CHECK_EQ("post-indexed STR's base", base, PAGE_ADDR + 16);
    CHECK_EQ("post-indexed STR 1", w[2], 0xCAFEF00D);
    CHECK_EQ("post-indexed STR 2", w[3], 0x0BADBEEF);

    /* pre-indexed with writeback: str r1, [r0, #4]! */
    base = PAGE_ADDR + 12;
    uint32_t v3 = 0x13579BDF;
    __asm volatile("str %1, [%0, #4]!\n" : "+r"(base) : "r"(v3) : "memory");
    wait_ready();
    CHECK_EQ("pre-indexed STR's base", base, PAGE_ADDR + 16);
    CHECK_EQ("pre-indexed STR", w[4], 0x13579BDF);

    /* STRD: two words from one instruction */
    uint32_t lo = 0x01020304, hi = 0x05060708;
    __asm volatile("strd %1, %2, [%0]\n" :: "r"(PAGE_ADDR + 20), "r"(lo), "r"(hi) : "memory");
    wait_ready();
    CHECK_EQ("STRD low", w[5], 0x01020304);
    CHECK_EQ("STRD high", w[6], 0x05060708);

    /* STMIA with writeback: three words */
    register uint32_t r0 __asm__("r0") = PAGE_ADDR + 28;
    register uint32_t r1 __asm__("r1") = 0xA1A1A1A1;
    register uint32_t r2 __asm__("r2") = 0xB2B2B2B2;
    register uint32_t r3 __asm__("r3") = 0xC3C3C3C3;
    __asm volatile("stmia %0!, {%1, %2, %3}\n"
                   : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3) : "memory");
    wait_ready();
    CHECK_EQ("STMIA's base", r0, PAGE_ADDR + 40);
    CHECK_EQ("STMIA 1", w[7], 0xA1A1A1A1);
    CHECK_EQ("STMIA 2", w[8], 0xB2B2B2B2);
    CHECK_EQ("STMIA 3", w[9], 0xC3C3C3C3);

    /* a conditional store in an IT block, taken then not; the instruction
     * after it in the block must still run under its own condition */
    uint32_t taken = 0, skipped = 0, v4 = 0x2468ACE0;
    __asm volatile("cmp %2, %2\n"          /* Z set */
                   "ite eq\n"
                   "streq %3, [%4]\n"
                   "movne %0, #1\n"
                   "cmp %2, #0\n"          /* v4 != 0: Z clear */
                   "itt eq\n"
                   "streq %3, [%5]\n"
                   "moveq %1, #1\n"
                   : "+r"(taken), "+r"(skipped)
                   : "r"(v4), "r"(v4), "r"(PAGE_ADDR + 40), "r"(PAGE_ADDR + 44)
                   : "cc", "memory");
    wait_ready();
    CHECK_EQ("IT: the taken store", w[10], 0x2468ACE0);
    CHECK_EQ("IT: the else after it not run", taken, 0);
    CHECK_EQ("IT: the store not taken", w[11], 0xFFFFFFFF);
    CHECK_EQ("IT: the then after it not run", skipped, 0);

    NVMC_CONFIG = 0;
    uint32_t sum = 0;
    for (int i = 0; i < 12; i++)
        sum = sum * 33u + w[i];
    semihost_puts("page checksum: ");
    put_hex(sum);
    semihost_puts("\n");
    return harness_failures;
}
