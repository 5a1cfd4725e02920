/* The CPU waits for the NVMC when it runs from flash (nRF52832 PS v1.4,
 * 11.1: "the CPU is halted" while the NVMC writes or erases if it fetches
 * from flash), and runs on when it runs from RAM.
 *
 * From flash: an ERASEPAGE store takes T_ERASEPAGE (85 ms): READY reads 1 at
 * once, DWT CYCCNT and RTC1 moved on by 85 ms, the TIMER1 compares due
 * meanwhile happened at their own times (counted by TIMER2 through PPI,
 * stamped by TIMER3's CAPTURE) and their interrupt is taken after the
 * erase.  A word write takes T_WRITE (41 us) the same way.
 * From RAM (a .ramfunc, as Mynewt's and nrfx's erase loops are when placed
 * there): READY reads 0 and the code polls it for the whole 85 ms. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define NVMC_READY     REG32(0x4001E400)
#define NVMC_CONFIG    REG32(0x4001E504)
#define NVMC_ERASEPAGE REG32(0x4001E508)
#define PAGE_FLASH 0x0007E000u
#define PAGE_RAM   0x0007D000u

#define TIMER1 0x40009000u
#define TIMER2 0x4000A000u
#define TIMER3 0x4001A000u
#define RTC1   0x40011000u
#define PPI    0x4001F000u
#define T1(o) REG32(TIMER1 + (o))
#define T2(o) REG32(TIMER2 + (o))
#define T3(o) REG32(TIMER3 + (o))
#define R1(o) REG32(RTC1 + (o))
#define P(o)  REG32(PPI + (o))

#define T_ERASEPAGE_CYCLES (85u * 64000u)      /* 85 ms at 64 MHz */
#define T_WRITE_CYCLES     (41u * 64u)         /* 41 us */

static volatile uint32_t timer_irqs, cyc_in_irq;

void IRQ9_Handler(void) {                      /* TIMER1 */
    if (T1(0x140)) {
        T1(0x140) = 0;
        (void)T1(0x140);
        cyc_in_irq = DWT_CYCCNT;
        timer_irqs++;
    }
}

/* Runs from RAM: erase, the first READY read, then poll. */
__attribute__((section(".ramfunc"), noinline, long_call))
static uint32_t erase_from_ram(uint32_t page, uint32_t *first_ready, uint32_t *cycles) {
    uint32_t polls = 0;
    uint32_t c0 = DWT_CYCCNT;
    NVMC_ERASEPAGE = page;
    *first_ready = NVMC_READY;
    while (!NVMC_READY)
        polls++;
    *cycles = DWT_CYCCNT - c0;
    return polls;
}

__attribute__((section(".ramfunc"), noinline, long_call))
static uint32_t write_from_ram(volatile uint32_t *w, uint32_t v, uint32_t *first_ready) {
    uint32_t polls = 0;
    *w = v;
    *first_ready = NVMC_READY;
    while (!NVMC_READY)
        polls++;
    return polls;
}

int main(void) {
    DEMCR |= 1u << 24;                         /* TRCENA */
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1;                             /* CYCCNTENA */
    R1(0x000) = 1;                             /* RTC1 START (32768 Hz) */
    while (R1(0x504) < 2) { }                  /* counting (START waits for an LFCLK edge) */

    /* TIMER1: 1 MHz, compare every 10 ms (COMPARE0_CLEAR), interrupt.
     * PPI ch0: its COMPARE0 -> TIMER2 COUNT (counter mode); fork ->
     * TIMER3 CAPTURE[0] (TIMER3 a free-running 1 MHz timer). */
    T1(0x504) = 0; T1(0x508) = 3; T1(0x510) = 4; T1(0x540) = 10000;
    T1(0x200) = 1;                             /* SHORTS COMPARE0_CLEAR */
    T1(0x304) = 1u << 16;                      /* INTENSET COMPARE0 */
    T2(0x504) = 1; T2(0x508) = 3;              /* counter, 32 bit */
    T3(0x504) = 0; T3(0x508) = 3; T3(0x510) = 4;
    P(0x510) = TIMER1 + 0x140;                 /* CH[0].EEP */
    P(0x514) = TIMER2 + 0x008;                 /* CH[0].TEP: TASKS_COUNT */
    P(0x910) = TIMER3 + 0x040;                 /* FORK[0].TEP: TASKS_CAPTURE[0] */
    P(0x504) = 1;                              /* CHENSET */
    irq_enable(9);
    T2(0x000) = 1;

    /* ---- erase from flash ---- */
    NVMC_CONFIG = 2;                           /* Een */
    cpsid();                                   /* the interrupt waits: see below */
    T3(0x000) = 1;
    T1(0x000) = 1;
    uint32_t rtc0 = R1(0x504);
    uint32_t c0 = DWT_CYCCNT;
    NVMC_ERASEPAGE = PAGE_FLASH;
    uint32_t ready = NVMC_READY;
    uint32_t c1 = DWT_CYCCNT;
    uint32_t rtc1 = R1(0x504);
    uint32_t irqs_during = timer_irqs;
    cpsie();
    uint32_t irqs_after = timer_irqs;
    T2(0x040) = 1;                             /* TIMER2 CAPTURE[0]: the count */
    uint32_t compares = T2(0x540);
    uint32_t stamp = T3(0x540);                /* TIMER3 at the last compare */
    T1(0x004) = 1;                             /* STOP */
    T3(0x004) = 1;
    irq_disable(9);
    CHECK_EQ("erase from flash: READY at the first read", ready, 1);
    CHECK("erase from flash: CYCCNT moved by T_ERASEPAGE",
          c1 - c0 >= T_ERASEPAGE_CYCLES && c1 - c0 < T_ERASEPAGE_CYCLES + 200);
    CHECK("erase from flash: RTC1 moved by 85 ms (2785 ticks)",
          rtc1 - rtc0 >= 2785 && rtc1 - rtc0 <= 2786);
    CHECK_EQ("erase from flash: page erased", *(volatile uint32_t *)PAGE_FLASH, 0xFFFFFFFF);
    CHECK_EQ("compares during the erase: all 8 (TIMER2 via PPI)", compares, 8);
    CHECK("the last one at its own time, 80 ms (TIMER3 capture)",
          stamp >= 80000 && stamp <= 80002);
    CHECK_EQ("no interrupt taken during the stall (PRIMASK)", irqs_during, 0);
    CHECK_EQ("the interrupt taken after it", irqs_after, 1);
    CHECK("its entry after the erase's end", cyc_in_irq - c0 >= T_ERASEPAGE_CYCLES);

    /* ---- write a word from flash ---- */
    NVMC_CONFIG = 1;                           /* Wen */
    volatile uint32_t *w = (volatile uint32_t *)PAGE_FLASH;
    c0 = DWT_CYCCNT;
    w[0] = 0x12345678;
    ready = NVMC_READY;
    c1 = DWT_CYCCNT;
    CHECK_EQ("write from flash: READY at the first read", ready, 1);
    CHECK("write from flash: CYCCNT moved by T_WRITE",
          c1 - c0 >= T_WRITE_CYCLES && c1 - c0 < T_WRITE_CYCLES + 200);
    CHECK_EQ("write from flash: written", w[0], 0x12345678);

    /* ---- the same from RAM: the CPU runs on ---- */
    NVMC_CONFIG = 2;
    uint32_t first, cycles;
    uint32_t polls = erase_from_ram(PAGE_RAM, &first, &cycles);
    CHECK_EQ("erase from RAM: READY 0 at the first read", first, 0);
    CHECK("erase from RAM: polled READY meanwhile", polls > 1000);
    CHECK("erase from RAM: the polling took T_ERASEPAGE",
          cycles >= T_ERASEPAGE_CYCLES && cycles < T_ERASEPAGE_CYCLES + 2000);
    CHECK_EQ("erase from RAM: page erased", *(volatile uint32_t *)PAGE_RAM, 0xFFFFFFFF);
    NVMC_CONFIG = 1;
    polls = write_from_ram((volatile uint32_t *)PAGE_RAM, 0xA5A5A5A5, &first);
    CHECK_EQ("write from RAM: READY 0 at the first read", first, 0);
    CHECK("write from RAM: polled READY meanwhile", polls > 10);
    NVMC_CONFIG = 0;
    CHECK_EQ("write from RAM: written", *(volatile uint32_t *)PAGE_RAM, 0xA5A5A5A5);
    return harness_failures;
}
