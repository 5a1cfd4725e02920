/* POWER's power-fail comparator (PS v1.4 17.4), driven as a firmware that
 * saves its state before the supply gives out: POFCON.POF with THRESHOLD
 * 2.8 V (V28 = 15), POFWARN's interrupt enabled, then WFI.  The test lowers
 * the PineTime's battery: VDD follows it through the 3.3 V regulator, and
 * POFWARN must come once, only when VDD falls below 2.8 V.  Then POF is
 * switched off and on again with VDD still low: that warns once more. */
#include "harness.h"
#include "cm4.h"

#define POWER          0x40000000u
#define EVENTS_POFWARN REG32(POWER + 0x108)
#define INTENSET       REG32(POWER + 0x304)
#define POFCON         REG32(POWER + 0x510)
#define GPREGRET       REG32(POWER + 0x51C)

static volatile int warned;

void IRQ0_Handler(void) {
    if (EVENTS_POFWARN) {
        EVENTS_POFWARN = 0;
        (void)EVENTS_POFWARN;                  /* the write lands before the return */
        warned++;
        GPREGRET = 0xA5;                       /* "state saved" */
        semihost_puts("POFWARN\n");
    }
}

int main(void) {
    POFCON = 1u | (15u << 1);                  /* POF, 2.8 V */
    INTENSET = 1u << 2;                        /* POFWARN */
    NVIC_ISER(0) = 1u;                         /* POWER_CLOCK */
    semihost_puts("armed\n");
    while (!warned)
        __asm volatile("wfi");
    CHECK_EQ("pofwarn_once", warned, 1);
    CHECK_EQ("state_saved", GPREGRET, 0xA5);
    POFCON = 0;                                /* off, and on again below the threshold */
    POFCON = 1u | (15u << 1);
    for (volatile int i = 0; i < 100 && warned < 2; i++) { }   /* the interrupt's latency */
    CHECK_EQ("rearmed_below_warns", warned, 2);
    return harness_failures;
}
