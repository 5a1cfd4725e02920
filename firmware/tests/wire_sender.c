/* One end of a wire between two boards (emu/timeline.py, Wire): drives
 * P0.17 high and low at irregular times (a TIMER0 compare sequence), 16
 * edges, then sleeps.  wire_receiver.c on another chip timestamps them. */
#include "harness.h"
#include "cm4.h"
#include "timer.h"
HARNESS_STATE

#define GPIO 0x50000000u
#define PIN 17

int main(void) {
    REG32(GPIO + 0x518) = 1u << PIN;          /* DIRSET */
    T_BITMODE(TIMER0) = 3;
    T_PRESCALER(TIMER0) = 4;                  /* 1 MHz */
    T_START(TIMER0) = 1;
    uint32_t at = 100;
    for (int i = 0; i < 16; i++) {
        at += 37 + 13 * (i % 5);              /* irregular: 37..89 us apart */
        T_CC(TIMER0, 0) = at;
        T_COMPARE(TIMER0, 0) = 0;
        while (!T_COMPARE(TIMER0, 0))
            ;
        REG32(GPIO + (i & 1 ? 0x50C : 0x508)) = 1u << PIN;   /* OUTSET / OUTCLR */
    }
    semihost_puts("PASS sent 16 edges\n");
    for (;;)
        __asm volatile("wfi");
}
