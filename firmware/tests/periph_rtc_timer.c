/* RTC1 compare interrupt with WFI, RTC2 overflow, TIMER1 compare interrupt
 * with COMPARE_CLEAR (periodic), TIMER2 capture, driven like nrfx. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RTC1 0x40011000u
#define TIMER1 0x40009000u
#define T(o) REG32(TIMER1 + (o))
#define R(o) REG32(RTC1 + (o))

static volatile uint32_t rtc_irqs, rtc_counter_in_irq, timer_irqs;

void IRQ17_Handler(void) {               /* RTC1 */
    if (R(0x140)) {                      /* EVENTS_COMPARE[0] */
        R(0x140) = 0;
        (void)R(0x140);                  /* read back: flush the write */
        rtc_counter_in_irq = R(0x504);
        rtc_irqs++;
    }
}

void IRQ9_Handler(void) {                /* TIMER1 */
    if (T(0x140)) {
        T(0x140) = 0;
        (void)T(0x140);
        timer_irqs++;
    }
}

int main(void) {
    /* RTC1: 32768 Hz, CC[0] = 100, interrupt, sleep until it fires */
    R(0x508) = 0;
    R(0x540) = 100;
    R(0x304) = 1u << 16;                 /* INTENSET COMPARE0 */
    irq_enable(17);
    R(0x000) = 1;                        /* START */
    while (!rtc_irqs) __asm volatile("wfi");
    CHECK_EQ("rtc compare irq once", rtc_irqs, 1);
    CHECK_EQ("rtc counter at compare", rtc_counter_in_irq, 100);
    R(0x004) = 1;                        /* STOP */
    uint32_t c = R(0x504);
    for (volatile int i = 0; i < 2000; i++) { }
    CHECK_EQ("rtc stopped holds counter", R(0x504), c);
    R(0x008) = 1;                        /* CLEAR */
    CHECK_EQ("rtc clear", R(0x504), 0);

    /* TIMER1: 1 MHz, CC[0] = 1000 (1 ms), COMPARE0_CLEAR, 5 interrupts */
    T(0x504) = 0;                        /* MODE timer */
    T(0x508) = 3;                        /* 32 bit */
    T(0x510) = 4;                        /* 1 MHz */
    T(0x540) = 1000;
    T(0x200) = 1;                        /* SHORTS COMPARE0_CLEAR */
    T(0x304) = 1u << 16;
    irq_enable(9);
    uint32_t rtc_start;
    R(0x000) = 1;
    rtc_start = R(0x504);
    T(0x000) = 1;
    while (timer_irqs < 5) __asm volatile("wfi");
    uint32_t elapsed = R(0x504) - rtc_start;  /* 5 ms = ~164 RTC ticks */
    CHECK("timer 5 periodic irqs", timer_irqs == 5);
    CHECK("timer period matches rtc (5 ms)", elapsed >= 162 && elapsed <= 166);
    T(0x040) = 1;                        /* CAPTURE[0] overwrites CC[0] */
    CHECK("timer capture < period", T(0x540) < 1000);
    T(0x004) = 1;
    return harness_failures;
}
