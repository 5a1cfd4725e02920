/* An interrupt whose vector table entry is 0: entered (the emulator's C
 * entry), the vector found invalid: HFSR.VECTTBL and a lockup, as the
 * Python's entry reports it.  With CHAIN defined, the interrupt is pended
 * from another handler and entered by a tail-chain at that one's return. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

static uint32_t table[64] __attribute__((aligned(256)));

void IRQ21_Handler(void) {
#ifdef CHAIN
    irq_pend(22);                          /* lower priority: tail-chained */
#endif
}

int main(void) {
    const uint32_t *old = (const uint32_t *)SCB_VTOR;
    for (int i = 0; i < 64; i++)
        table[i] = old[i];
    table[16 + 22] = 0;                    /* IRQ22: no handler */
    SCB_VTOR = (uint32_t)table;
    irq_prio(21, 0x20);
    irq_prio(22, 0x40);
    irq_enable(21);
    irq_enable(22);
    semihost_puts("PASS about to enter IRQ22 through a zero vector\n");
#ifdef CHAIN
    irq_pend(21);
#else
    irq_pend(22);
#endif
    for (;;)
        ;
}
