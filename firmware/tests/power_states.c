/* Known power states for known emulated times, for the energy model's
 * integral (tests/machine/test_power.py).  Everything timed comes from RTC1 on the
 * LFXO through the PPI, so each state begins and ends on an exact LFCLK tick
 * whatever the CPU does:
 *   CC[0] -> GPIOTE CLR: P0.23 (LCD_BACKLIGHT_HIGH) low, backlight level 3
 *   CC[1] -> GPIOTE SET: backlight off                (BL_TICKS later)
 *   CC[2] -> RADIO TXEN: ramp-up, then TXIDLE (carrier at TXPOWER 0 dBm)
 *   CC[3] -> RADIO DISABLE                             (TX_TICKS later)
 * The CPU sleeps in WFI meanwhile (woken by CC[3]'s interrupt), then holds
 * itself in a busy loop for BUSY_LOOPS turns.  The DC/DC converter and the
 * cache are selected first; "MARK start" and "MARK end" bracket the
 * measured part (the test reads the meter at each). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define POWER  0x40000000u
#define RADIO  0x40001000u
#define GPIOTE 0x40006000u
#define RTC1   0x40011000u
#define NVMC   0x4001E000u
#define PPI    0x4001F000u
#define GPIO   0x50000000u

#define BL_AT     40u
#define BL_TICKS  100u
#define TX_AT     200u
#define TX_TICKS  66u
#define BUSY_LOOPS 20000u

static volatile uint32_t woke;
void IRQ17_Handler(void) {                 /* RTC1 */
    REG32(RTC1 + 0x14C) = 0;               /* EVENTS_COMPARE[3] */
    (void)REG32(RTC1 + 0x14C);
    woke = 1;
}

static void ppi(int ch, uint32_t eep, uint32_t tep) {
    REG32(PPI + 0x510 + 8 * ch) = eep;
    REG32(PPI + 0x514 + 8 * ch) = tep;
    REG32(PPI + 0x504) = 1u << ch;         /* CHENSET */
}

int main(void) {
    REG32(POWER + 0x578) = 1;              /* DCDCEN */
    REG32(NVMC + 0x540) = 1;               /* ICACHECNF.CACHEEN */
    for (int p = 14; p <= 23; p += (p == 14 ? 8 : 1)) {   /* 14, 22, 23: outputs, high (off) */
        REG32(GPIO + 0x508) = 1u << p;
        REG32(GPIO + 0x518) = 1u << p;
    }
    REG32(0x40000518) = 1;                 /* LFCLKSRC = LFXO */
    REG32(0x40000008) = 1;                 /* TASKS_LFCLKSTART */
    while (!(REG32(0x40000418) & (1u << 16))) {}
    REG32(GPIOTE + 0x510) = 3 | (23u << 8) | (1u << 20);  /* task mode, P0.23, init high */
    REG32(RADIO + 0x50C) = 0x00;           /* TXPOWER 0 dBm */
    REG32(RADIO + 0x510) = 3;              /* MODE Ble_1Mbit */
    ppi(0, RTC1 + 0x140, GPIOTE + 0x060);  /* COMPARE[0] -> TASKS_CLR[0] */
    ppi(1, RTC1 + 0x144, GPIOTE + 0x030);  /* COMPARE[1] -> TASKS_SET[0] */
    ppi(2, RTC1 + 0x148, RADIO + 0x000);   /* COMPARE[2] -> TXEN */
    ppi(3, RTC1 + 0x14C, RADIO + 0x010);   /* COMPARE[3] -> DISABLE */
    REG32(RTC1 + 0x540) = BL_AT;
    REG32(RTC1 + 0x544) = BL_AT + BL_TICKS;
    REG32(RTC1 + 0x548) = TX_AT;
    REG32(RTC1 + 0x54C) = TX_AT + TX_TICKS;
    REG32(RTC1 + 0x344) = 0xF0000;         /* EVTENSET COMPARE[0..3] */
    REG32(RTC1 + 0x304) = 1u << 19;        /* INTENSET COMPARE[3] */
    irq_enable(17);
    semihost_puts("MARK start\n");
    REG32(RTC1 + 0x000) = 1;               /* TASKS_START */
    while (!woke) __asm volatile("wfi");
    for (volatile uint32_t i = 0; i < BUSY_LOOPS; i++) {}
    CHECK_EQ("radio disabled", REG32(RADIO + 0x550), 0);
    CHECK_EQ("backlight pin high again", (REG32(GPIO + 0x504) >> 23) & 1, 1);
    semihost_puts("MARK end\n");
    return harness_failures;
}
