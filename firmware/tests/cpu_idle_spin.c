/* Loops that call a leaf function, as FreeRTOS's idle task spins on
 * prvGetExpectedIdleTime while the next wake-up is too near to sleep
 * (InfiniTime with the screen on: 80 % of its blocks).  The emulator counts
 * such a loop ahead to the next clock event when an iteration provably
 * repeats: only loads, compares, direct branches, a BL to the leaf and its
 * BX LR, in Thread mode (emu/cpu/_blockhook.c, loop_step).  It must end
 * exactly when SysTick's handler changes what it reads, in the same cycles
 * as when it runs:
 *   - a spin on a leaf that reads the tick count (no MMIO read at all);
 *   - a loop whose leaf stores (a RAM counter): it must run every iteration,
 *     and the count it reaches is printed (the same with and without
 *     skipping);
 *   - the same pure spin inside an interrupt handler (Handler mode: run). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static volatile uint32_t ticks, bumps, in_handler_spins;

void SysTick_Handler(void) { ticks++; }

__attribute__((noinline)) static uint32_t read_ticks(void) { return ticks; }
/* bumps++, leaving the registers it used as it found them (zero): only
 * the RAM counter tells one iteration of its loop from the next */
__attribute__((naked, noinline)) static void bump(void) {
    __asm volatile("movw r1, #:lower16:bumps\n"
                   "movt r1, #:upper16:bumps\n"
                   "ldr r2, [r1]\n"
                   "adds r2, r2, #1\n"
                   "str r2, [r1]\n"
                   "movs r1, #0\n"
                   "movs r2, #0\n"
                   "bx lr\n");
}

/* the spin itself, fixed in assembly: a BL to the leaf and a compare */
static void spin_until(uint32_t target) {
    __asm volatile("1: bl %0\n"
                   "   cmp r0, %1\n"
                   "   blo 1b\n"
                   : : "i"(read_ticks), "r"(target) : "r0", "r1", "r2", "r3", "r12", "lr",
                     "cc", "memory");
}

/* SWI0_EGU0 (IRQ 20): spins in Handler mode until the tick count moves */
void IRQ20_Handler(void) {
    uint32_t t = ticks;
    spin_until(t + 2);
    in_handler_spins++;
}

int main(void) {
    DEMCR |= 1u << 24;                  /* TRCENA */
    DWT_CTRL |= 1;                      /* CYCCNTENA */
    SYST_RVR = 63999;                   /* 1 ms at 64 MHz */
    SYST_CVR = 0;
    SYST_CSR = 7;                       /* CLKSOURCE | TICKINT | ENABLE */

    uint32_t c0 = DWT_CYCCNT;
    uint32_t t0 = ticks;
    spin_until(t0 + 5);
    uint32_t dt = DWT_CYCCNT - c0;
    CHECK("spin on a leaf ended when the tick count reached its target", ticks == t0 + 5);
    CHECK("spin took about 5 ms", dt > 4 * 64000 && dt < 6 * 64000);

    t0 = ticks;
    while (ticks - t0 < 3) {
        __asm volatile("movs r1, #0\nmovs r2, #0" ::: "r1", "r2");
        bump();
    }
    CHECK("a leaf that stores ran every iteration", bumps > 1000);
    semihost_puts("bumps: ");
    put_dec(bumps);
    semihost_puts("\n");

    *(volatile uint8_t *)(0xE000E400 + 20) = 0x80;   /* below SysTick (priority 0) */
    irq_enable(20);
    irq_pend(20);                       /* into the handler, which spins */
    __asm volatile("dsb\nisb");
    CHECK_EQ("the spin in Handler mode ended", in_handler_spins, 1);
    SYST_CSR = 0;
    return harness_failures;
}
