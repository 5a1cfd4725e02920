/* A conditional load or store in an IT block that one of the emulator's
 * memory hooks handles and lets go on, the IT block ending before the
 * translation block does: the next block's first instruction must run
 * unconditionally.
 *
 * Unicorn syncs the CPU state to the accessing instruction before calling
 * a memory hook, and that sets the IT bits to the instruction's IT state;
 * the translated code keeps them zero inside a block, so left stale they
 * made the next block (looked up and translated with them) conditional on
 * the finished IT block's condition.  Zephyr 3.1's z_impl_k_queue_get
 * (kernel.lifo) did
 *     cmp r4, r2; mov r0, r4; str r3, [r6]; it eq; streq r3, [r6, #4];
 *     movs r1, #1; bl z_queue_node_peek
 * with the k_lifo in a RAM page its MPU stack guard (a 32-byte privileged
 * read-only region) cuts, so the stores went through the MPU's store hook;
 * MOVS cleared Z and z_queue_node_peek's "push {r4, lr}" was skipped, its
 * "pop {r4, pc}" then returning into rodata (MemManage).
 *
 * Here the same sequence, the callee's first instruction observable:
 *   - a store into a RAM page a Zephyr-like stack guard cuts (MPU store hook),
 *   - a load from a RAM page a no-access region cuts (MPU load hook),
 *   - with the MPU off, a store into flash the NVMC ignores (flash store hook),
 *   - a store to a peripheral register (the MMIO trace's hooks, when tracing).
 * The callee is entered with Z clear, so a stale "EQ" would skip it. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RASR(ap, xn, size_log) (((uint32_t)(xn) << 28) | ((uint32_t)(ap) << 24) | \
    ((uint32_t)((size_log) - 1) << 1) | 1u)
#define POWER_GPREGRET2 0x40000520u

/* one 1 KiB page: a kernel object in its first half, a thread stack whose
 * 32-byte guard (privileged read-only, Zephyr's MPU_STACK_GUARD) starts at
 * +512; and one more page with a 32-byte no-access region at +512 */
static volatile uint32_t guard_page[256] __attribute__((aligned(1024)));
static volatile uint32_t noaccess_page[256] __attribute__((aligned(1024)));
static const uint32_t in_flash[2] = {0x11111111, 0x22222222};

static volatile uint32_t faults;
void MemManage_Handler(void) { faults++; for (;;) ; }

/* IT_CASE(name, insns): name(p, v) runs insns (an IT block around the
 * access, r0 = p, r3 = v) with Z set, then "movs r1, #1" (Z clear) and a
 * call; it returns the callee's result: 1, or p if the callee's first
 * instruction (a 16-bit MOVS, MOV<c> in an IT block) was skipped.  Each
 * case has its own caller and callee: the engine chains a block to the
 * next one it ran, so a callee translated with stale IT bits would be
 * reached again from the same call site. */
#define IT_CASE(name, insns) \
    __attribute__((naked, noinline, used)) uint32_t name##_callee(void) { \
        __asm volatile("movs r0, #1\n bx lr\n"); } \
    __attribute__((naked, noinline)) static uint32_t name(volatile uint32_t *p, uint32_t v) { \
        __asm volatile("push {r4, lr}\n mov r3, r1\n movs r2, #0\n cmp r2, #0\n" insns "\n" \
                       "movs r1, #1\n bl " #name "_callee\n pop {r4, pc}\n"); }

/* as z_impl_k_queue_get: str r3, [r6]; it eq; streq r3, [r6, #4] */
IT_CASE(flash_store, "str r3, [r0]\n it eq\n streq r3, [r0, #4]")
IT_CASE(mmio_store, "str r3, [r0]\n it eq\n streq r3, [r0, #4]")
IT_CASE(guard_page_store, "str r3, [r0]\n it eq\n streq r3, [r0, #4]")
IT_CASE(noaccess_page_load, "it eq\n ldreq r3, [r0]")
/* the last access of a longer IT block */
IT_CASE(guard_page_store_itte, "itte eq\n streq r3, [r0]\n streq r3, [r0, #4]\n strne r2, [r0]")

int main(void) {
    uint32_t r;

    /* MPU off: a store into flash the NVMC (read-only) ignores */
    r = flash_store((volatile uint32_t *)in_flash, 0x5A5A5A5A);
    CHECK_EQ("ignored flash store in an IT block: the callee ran", r, 1);
    CHECK_EQ("the flash store was ignored", in_flash[1], 0x22222222);

    /* a peripheral register (traced: the MMIO trace's write hook) */
    r = mmio_store((volatile uint32_t *)(POWER_GPREGRET2 - 4), 0x5);
    CHECK_EQ("peripheral store in an IT block: the callee ran", r, 1);
    CHECK_EQ("the peripheral store happened", REG32(POWER_GPREGRET2) & 0xFF, 0x5);

    noaccess_page[3] = 0xFEED;    /* before the MPU: the case's load is the page's first access */

    /* the MPU as Zephyr programs it for a thread with a stack guard */
    SCB_SHCSR |= 1u << 16;                                             /* MEMFAULTENA */
    MPU_RNR = 0; MPU_RBAR = 0x00000000; MPU_RASR = RASR(6, 0, 19);    /* flash RO+X */
    MPU_RNR = 1; MPU_RBAR = (uint32_t)&guard_page[128]; MPU_RASR = RASR(5, 1, 5);   /* guard */
    MPU_RNR = 2; MPU_RBAR = (uint32_t)&noaccess_page[128]; MPU_RASR = RASR(0, 1, 5);
    MPU_CTRL = 5;                                                      /* ENABLE|PRIVDEFENA */
    dsb_isb();

    r = guard_page_store(&guard_page[4], 0x600D);
    CHECK_EQ("store into a page the guard cuts, in an IT block: the callee ran", r, 1);
    CHECK_EQ("both stores happened", guard_page[4] + guard_page[5], 2 * 0x600D);
    r = guard_page_store_itte(&guard_page[200], 0x1234);               /* above the guard */
    CHECK_EQ("stores in an ITTE block: the callee ran", r, 1);
    CHECK_EQ("the ITTE block's stores", guard_page[200] + guard_page[201], 2 * 0x1234);

    r = noaccess_page_load(&noaccess_page[3], 0);
    CHECK_EQ("load from a page a no-access region cuts, in an IT block: the callee ran", r, 1);

    CHECK_EQ("no MemManage", faults, 0);
    MPU_CTRL = 0;
    dsb_isb();
    return harness_failures;
}
