/* RAM as the emulator's TLB fill (emu.soc._mmio.PageMap) serves it: stores
 * into RAM at full speed, code run from RAM and rewritten there, an access
 * in an IT block that misses the TLB, and fetches from the execute-never
 * regions of the default memory map.
 *
 *   - code copied into RAM runs, and a store that rewrites it is seen by
 *     the next call, again and again (the translated code is dropped);
 *   - two functions on one RAM page that already ran are rewritten one
 *     after the other by plain stores, after code first run from another
 *     page emptied the engine's TLB (PageMap does, so that no entry made
 *     before a page was executable stays): the second store must drop the
 *     second function's translated code too (a page once executed stays
 *     executable in every TLB entry made for it, whatever the access);
 *   - a store in an IT block is the first access to its RAM page: the TLB
 *     fill there follows Unicorn's sync of the CPU state (IT bits too) to
 *     the store, and the next block, a callee entered with Z clear, must
 *     still run its first instruction;
 *   - a branch into the peripheral region, the System region and its last
 *     page (thread mode: not an exception return) is a MemManage fault with
 *     CFSR.IACCVIOL and the target as the stacked PC. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

/* two 1 KiB pages of RAM code, and a page the IT-block store touches first */
static volatile uint16_t code_page[1024] __attribute__((aligned(1024)));
static volatile uint32_t fresh_page[256] __attribute__((aligned(1024)));

typedef uint32_t (*fn_t)(void);
#define MOVS_R0(imm) ((uint16_t)(0x2000u | ((imm) & 0xFF)))
#define BX_LR 0x4770u

static fn_t put_fn(unsigned at, uint32_t imm) {
    code_page[at] = MOVS_R0(imm);
    code_page[at + 1] = BX_LR;
    dsb_isb();
    return (fn_t)((uint32_t)&code_page[at] | 1);
}

/* the callee's first instruction (MOVS; MOVEQ in a stale IT block) decides */
__attribute__((naked, noinline, used)) uint32_t it_store_callee(void) {
    __asm volatile("movs r0, #1\n bx lr\n");
}
__attribute__((naked, noinline)) static uint32_t it_store(volatile uint32_t *p, uint32_t v) {
    __asm volatile("push {r4, lr}\n mov r3, r1\n movs r2, #0\n cmp r2, #0\n"
                   "it eq\n streq r3, [r0]\n"
                   "movs r1, #1\n bl it_store_callee\n pop {r4, pc}\n");
}

static volatile uint32_t mm_count, mm_cfsr, mm_pc;
void MemManage_c(uint32_t *frame) {
    mm_count++;
    mm_cfsr = SCB_CFSR;
    mm_pc = frame[6];
    SCB_CFSR = mm_cfsr;                              /* W1C */
    frame[6] = frame[5] & ~1u;                       /* back to the caller (LR) */
}
__attribute__((naked)) void MemManage_Handler(void) {
    __asm volatile("tst lr, #4\n ite eq\n mrseq r0, msp\n mrsne r0, psp\n b MemManage_c\n");
}

static void fetch_from(const char *name, uint32_t target) {
    uint32_t before = mm_count;
    ((fn_t)(target | 1))();
    if (mm_count == before + 1 && mm_cfsr == 1u /* IACCVIOL */ && mm_pc == target) {
        semihost_puts("PASS fetch from ");
    } else {
        harness_failures++;
        semihost_puts("FAIL fetch from ");
    }
    semihost_puts(name);
    semihost_puts(": MemManage IACCVIOL at the target; got ");
    put_dec(mm_count - before); semihost_puts(" faults, CFSR ");
    put_hex(mm_cfsr); semihost_puts(", PC "); put_hex(mm_pc); semihost_puts("\n");
}

int main(void) {
    /* code rewritten in RAM, called after each store */
    uint32_t bad = 0;
    for (uint32_t i = 1; i <= 40; i++) {
        fn_t f = put_fn(0, i);
        if (f() != i)
            bad++;
    }
    CHECK_EQ("RAM code rewritten 40 times: each call saw the new code", bad, 0);

    /* two functions on one page, both translated; code run from the other
     * page for the first time (the TLB emptied); then the two rewritten
     * one after the other by plain stores */
    fn_t f = put_fn(32, 10), g = put_fn(96, 20);
    CHECK_EQ("first RAM function", f(), 10);
    CHECK_EQ("second RAM function", g(), 20);
    fn_t h = put_fn(512 + 8, 30);
    CHECK_EQ("a function on the next page", h(), 30);
    code_page[32] = MOVS_R0(11);
    code_page[96] = MOVS_R0(21);
    dsb_isb();
    CHECK_EQ("first RAM function rewritten", f(), 11);
    CHECK_EQ("second RAM function rewritten right after it", g(), 21);

    /* a store in an IT block, the first access to its page */
    uint32_t r = it_store(&fresh_page[7], 0xBEEF);
    CHECK_EQ("store in an IT block missing the TLB: the callee ran", r, 1);
    CHECK_EQ("the IT block's store happened", fresh_page[7], 0xBEEF);

    /* plain data in RAM after all that */
    uint32_t sum = 0;
    for (int i = 0; i < 256; i++)
        fresh_page[i] = i * 3u;
    for (int i = 0; i < 256; i++)
        sum += fresh_page[i];
    CHECK_EQ("RAM stores and loads", sum, 3u * 255 * 256 / 2);

    /* fetches from execute-never regions */
    SCB_SHCSR |= 1u << 16;                           /* MEMFAULTENA */
    fetch_from("the peripheral region", 0x40000000u);
    fetch_from("the System region (DWT)", 0xE0001000u);
    fetch_from("the last page of the address space", 0xFFFFFF00u);
    return harness_failures;
}
