/* The other end of a wire between two boards (emu/timeline.py, Wire): a
 * GPIOTE event on each edge of P0.13 interrupts; the handler captures
 * TIMER1 (1 MHz) and the level.  After 16 edges it prints each edge's time
 * and level, and exits. */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE

#define GPIO   0x50000000u
#define GPIOTE 0x40006000u
#define PIN 13

static volatile uint32_t n, times[16], levels[16];

void IRQ6_Handler(void) {                       /* GPIOTE */
    REG32(GPIOTE + 0x100) = 0;                  /* EVENTS_IN[0] */
    T_CAPTURE(TIMER1, 0) = 1;
    if (n < 16) {
        times[n] = T_CC(TIMER1, 0);
        levels[n] = (REG32(GPIO + 0x510) >> PIN) & 1;
        n++;
    }
}

int main(void) {
    T_BITMODE(TIMER1) = 3;
    T_PRESCALER(TIMER1) = 4;                    /* 1 MHz */
    T_START(TIMER1) = 1;
    REG32(GPIO + 0x700 + 4 * PIN) = 0;          /* PIN_CNF: input, buffer connected */
    REG32(GPIOTE + 0x510) = 1u | (PIN << 8) | (3u << 16);   /* CONFIG[0]: Event, Toggle */
    REG32(GPIOTE + 0x304) = 1;                  /* INTENSET IN[0] */
    irq_enable(6);
    while (n < 16)
        __asm volatile("wfi");
    for (int i = 0; i < 16; i++) {
        semihost_puts("edge ");
        put_dec(i);
        semihost_puts(" at ");
        put_dec(times[i]);
        semihost_puts(" us, level ");
        put_dec(levels[i]);
        semihost_puts("\n");
    }
    CHECK("16 edges", n == 16);
    return harness_failures;
}
