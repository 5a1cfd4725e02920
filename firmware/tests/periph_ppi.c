/* PPI chain with no CPU involvement: TIMER0 COMPARE[0] (every 50 us,
 * COMPARE0_CLEAR) -> GPIOTE TASKS_OUT[0] toggling P0.20; FORK -> EGU0
 * TRIGGER[0] counted by interrupt.  The Python test counts the pin edges. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define GPIOTE 0x40006000u
#define TIMER0 0x40008000u
#define PPI    0x4001F000u
#define EGU0   0x40014000u
#define RTC1   0x40011000u

static volatile uint32_t egu_irqs;
void IRQ20_Handler(void) { REG32(EGU0 + 0x100) = 0; (void)REG32(EGU0 + 0x100); egu_irqs++; }

int main(void) {
    REG32(GPIOTE + 0x510) = 3 | (20 << 8) | (3 << 16);    /* task, P0.20, toggle, init low */
    REG32(PPI + 0x510) = TIMER0 + 0x140;                   /* CH[0].EEP */
    REG32(PPI + 0x514) = GPIOTE + 0x000;                   /* CH[0].TEP = OUT[0] */
    REG32(PPI + 0x910) = EGU0 + 0x000;                     /* FORK[0].TEP = TRIGGER[0] */
    REG32(PPI + 0x504) = 1;                                /* CHENSET */
    REG32(EGU0 + 0x304) = 1;
    irq_enable(20);
    REG32(TIMER0 + 0x508) = 3;
    REG32(TIMER0 + 0x510) = 4;                             /* 1 MHz */
    REG32(TIMER0 + 0x540) = 50;                            /* 50 us */
    REG32(TIMER0 + 0x200) = 1;                             /* COMPARE0_CLEAR */
    REG32(TIMER0 + 0x000) = 1;
    while (egu_irqs < 20) __asm volatile("wfi");
    REG32(PPI + 0x508) = 1;                                /* CHENCLR: chain off */
    REG32(TIMER0 + 0x004) = 1;
    CHECK_EQ("egu fork count", egu_irqs, 20);
    CHECK_EQ("pin low after even toggles", (REG32(0x50000510) >> 20) & 1, 0);
    return harness_failures;
}
