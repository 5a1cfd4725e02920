/* Countdown (delay) loops as firmware writes them, which the emulator counts
 * instead of running (emu/cpu/_blockhook.c, countdown_step): each must take
 * the same cycles, leave the same register and flags, and let an interrupt
 * in at the same instruction with the same stacked state as when it runs.
 *   - nrfx's NRFX_DELAY_US machine code (``subs r0, #3; bhi; bx lr``, a
 *     const array in flash called through a pointer: the SDK's
 *     nrf_delay_us, Zephyr's k_busy_wait, the Adafruit bootloader), and the
 *     same copied into RAM;
 *   - MicroPython's mp_hal_delay_us shape (``subs r0, #1``, NOPs, ``bne``);
 *   - ``subs.w`` with a wide immediate and a high register;
 *   - small counts (0 to 7: the last iteration, none skipped) and long ones;
 * while SysTick interrupts every 10 007 cycles and folds the interrupted
 * R0, PC and xPSR and the cycle counter into a checksum printed at the end. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE


static const uint16_t delay_flash[] __attribute__((aligned(4))) = {0x3803, 0xd8fd, 0x4770};
static uint16_t delay_ram[] __attribute__((aligned(4))) = {0x3803, 0xd8fd, 0x4770};
typedef void (*delay_fn)(uint32_t);

static volatile uint32_t ticks, sum;

void systick_c(uint32_t *frame) {
    ticks++;
    sum = (sum * 31u) ^ frame[0] ^ (frame[6] << 1) ^ frame[7] ^ DWT_CYCCNT;
}

void SysTick_Handler(void) __attribute__((naked));
void SysTick_Handler(void) { __asm volatile("mov r0, sp\n b systick_c\n"); }

static void delay_mp(uint32_t n) {
    __asm volatile("1: subs %0, %0, #1\n"
                   "   nop\n nop\n nop\n"
                   "   bne 1b\n" : "+l"(n) : : "cc");
}

static uint32_t delay_wide(uint32_t n) {
    register uint32_t r9 __asm("r9") = n;
    __asm volatile("1: subs.w r9, r9, #200\n"
                   "   bhi 1b\n" : "+r"(r9) : : "cc");
    return r9;
}

static uint32_t timed(delay_fn f, uint32_t n) {
    uint32_t t = DWT_CYCCNT;
    f(n);
    return DWT_CYCCNT - t;
}

static void report(const char *what, uint32_t n, uint32_t cycles) {
    semihost_puts(what);
    put_dec(n);
    semihost_puts(": ");
    put_dec(cycles);
    semihost_puts(" cycles\n");
}

int main(void) {
    DEMCR |= 1u << 24;
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1;
    SYST_RVR = 10006;                   /* every 10 007 cycles */
    SYST_CVR = 0;
    SYST_CSR = 7;                       /* processor clock, interrupt, enable */

    delay_fn flash = (delay_fn)((uint32_t)delay_flash | 1);
    delay_fn ram = (delay_fn)((uint32_t)delay_ram | 1);
    static const uint32_t counts[] = {0, 1, 2, 3, 4, 5, 6, 7, 100, 12345, 640000};
    uint32_t c;
    for (unsigned i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        report("flash delay ", counts[i], c = timed(flash, counts[i]));
        if (counts[i] == 640000)
            CHECK("a 10 ms nrfx delay takes about 640 000 cycles",
                  c >= 640000 && c < 700000);
        report("RAM delay ", counts[i], timed(ram, counts[i]));
    }
    static const uint32_t mp[] = {1, 2, 3, 1000, 200000};
    for (unsigned i = 0; i < sizeof mp / sizeof mp[0]; i++)
        report("mp delay ", mp[i], timed(delay_mp, mp[i]));
    uint32_t left = delay_wide(1000001);
    CHECK_EQ("subs.w countdown leaves what the last subs left", left, 1u - 200u);
    left = delay_wide(200);
    CHECK_EQ("subs.w countdown from its immediate", left, 0);
    SYST_CSR = 0;
    CHECK("SysTick came during the delays", ticks > 100);
    semihost_puts("interrupts ");
    put_dec(ticks);
    semihost_puts(" checksum ");
    put_dec(sum);
    semihost_puts("\n");
    return harness_failures;
}
