/* Target for the GDB stub tests (tests/frontends/test_gdb*.py): a global counter
 * changed in a loop, a function to break on, a SysTick handler that runs
 * repeatedly, and some single-precision float math.  The firmware is also a
 * determinism probe: it prints a digest of what it observed, so a run with
 * breakpoints and single steps must print exactly the same text. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

volatile uint32_t counter;        /* changed by the main loop */
volatile uint32_t ticks;          /* changed by the SysTick handler */
volatile uint32_t watched;        /* written once per loop iteration */
volatile float fval = 1.5f;
volatile uint32_t poke;           /* tests write this from GDB */
volatile uint32_t spin_forever;   /* set from GDB: never finish (Ctrl-C tests) */

__attribute__((noinline)) void tick_work(uint32_t n) {
    ticks = ticks + n;            /* line for a breakpoint inside the handler */
}

void SysTick_Handler(void) {
    tick_work(1);
}

__attribute__((noinline)) uint32_t bump(uint32_t x) {
    uint32_t y = x * 3u + 1u;
    counter = counter + 1u;
    return y;
}

__attribute__((noinline)) float fmath(float a) {
    return a * 1.25f + 0.5f;
}

int main(void) {
    uint32_t acc = 0;
    DEMCR |= 1u << 24; DWT_CTRL |= 1u;
    SYST_RVR = 400 - 1;           /* every 400 CPU cycles */
    SYST_CVR = 0;
    SYST_CSR = 7;                 /* processor clock, interrupt, enable */
    for (int i = 0; i < 200; i++) {
        acc = bump(acc) & 0xFFFFu;
        watched = i;
        fval = fmath(fval) - fval;
        poke += 0;
    }
    while (spin_forever)
        counter++;
    SYST_CSR = 0;
    semihost_puts("acc=");  put_hex(acc);
    semihost_puts(" counter="); put_hex(counter);
    semihost_puts(" ticks="); put_hex(ticks);
    semihost_puts(" poke="); put_hex(poke);
    semihost_puts(" cyc="); put_hex(DWT_CYCCNT);
    semihost_puts("\n");
    CHECK("counter", counter == 200);
    CHECK("ticks ran", ticks > 10);
    return harness_failures;
}
