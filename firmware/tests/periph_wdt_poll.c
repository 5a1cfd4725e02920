/* The loop the Adafruit bootloader (wasp-os ships it) waits in while in
 * DFU mode: no sleep (its sd_app_evt_wait is commented out), RUNSTATUS read,
 * all eight RR registers written with the reload value, a call that empties
 * the scheduler's queue, then the status checked.  The emulator counts such
 * a loop instead of running it (emu/cpu/_blockhook.c, loop_step): RR[0]'s
 * reload is a timed write (emu/soc/_ops.c, feed_write), and a skip moves
 * the watchdog's deadline to the last iteration counted's feed (_slot.c,
 * slot_replay).
 *
 * A 10 ms watchdog (RR[0] only) and RTC1's COMPARE[0] interrupt every 492
 * ticks (15 ms: longer than the watchdog's period, so one skip outlasts
 * it) putting an event on the queue, which the loop's call takes off (the
 * RTC's COUNTER and the DWT's CYCCNT folded into a checksum).  After 12
 * events (180 ms) the interrupt sets the status and the loop returns; the firmware
 * notes the COUNTER and then spins without feeding.  The watchdog must bite
 * 10 ms (328 counts, and the reset's 2 LFCLK cycles) after that last feed:
 * a skip that left the deadline at the iteration it watched bites while the
 * loop still feeds (a reset before the loop ends), one that moved it too
 * far bites late.  The checksum and the bite's count are printed: the
 * same with the loop counted, run, and in pure Python
 * (tests/peripherals/test_periph_wdt.py). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define POWER_RESETREAS REG32(0x40000400)
#define WDT_START     REG32(0x40010000)
#define WDT_CRV       REG32(0x40010504)
#define WDT_RUNSTATUS REG32(0x40010400)
#define WDT_BASE      0x40010000u
#define RELOAD        0x6E524635u
#define RTC1_START    REG32(0x40011000)
#define RTC1_COMPARE0 REG32(0x40011140)
#define RTC1_INTENSET REG32(0x40011304)
#define RTC1_EVTENSET REG32(0x40011344)
#define RTC1_COUNTER  REG32(0x40011504)
#define RTC1_CC0      REG32(0x40011540)
#define RTC1_IRQ      17
#define DWT_CYCCNT    REG32(0xE0001004)
#define DWT_CTRL      REG32(0xE0001000)
#define DEMCR         REG32(0xE000EDFC)
/* kept across the watchdog's reset: above .bss, below the stack */
#define LAST_FEED     REG32(0x2000C000)
#define LAST_SEEN     REG32(0x2000C004)
#define MAGIC         REG32(0x2000C008)
#define SUM           REG32(0x2000C00C)
#define PHASE         REG32(0x2000C010)

#define EVENTS 12
#define EVERY  492
static volatile uint8_t q_head, q_tail, status;
static volatile uint32_t stamps[16];
static uint32_t events;

void IRQ17_Handler(void) {              /* RTC1 */
    RTC1_COMPARE0 = 0;
    RTC1_CC0 = RTC1_COUNTER + EVERY;
    stamps[q_tail & 15] = RTC1_COUNTER;
    q_tail = q_tail + 1;
    if (++events == EVENTS)
        status = 2;                       /* BOOTLOADER_COMPLETE */
}

/* app_sched_execute: events off the queue, none most of the time */
__attribute__((noinline)) void sched_execute(void) {
    while (q_head != q_tail) {
        SUM = SUM * 31u + stamps[q_head & 15] + (DWT_CYCCNT & 0xF);
        q_head = q_head + 1;
    }
}

/* the bootloader's wait_for_events, as its compiler laid it out: the eight
 * stores in one block */
__attribute__((noinline)) void wait_for_events(void) {
    volatile uint32_t *rr = (volatile uint32_t *)(WDT_BASE + 0x600);
    for (;;) {
        if (WDT_RUNSTATUS) {
            rr[0] = RELOAD; rr[1] = RELOAD; rr[2] = RELOAD; rr[3] = RELOAD;
            rr[4] = RELOAD; rr[5] = RELOAD; rr[6] = RELOAD; rr[7] = RELOAD;
        }
        sched_execute();
        if (status >= 2 && status <= 4)
            return;
    }
}

int main(void) {
    uint32_t rr = POWER_RESETREAS;
    if (rr & 2) {
        semihost_puts("after watchdog reset\n");
        CHECK_EQ("the watchdog's reset", rr, 2);
        CHECK_EQ("the RAM markers kept", MAGIC, 0xFEED0002);
        CHECK_EQ("it bit after the feeding loop had ended", PHASE, 2);
        uint32_t after = LAST_SEEN - LAST_FEED;
        /* 328 counts (10 ms) after the last feed, the reset 2 LFCLK later */
        CHECK("bit 10 ms after the loop's last feed", after >= 326 && after <= 331);
        semihost_puts("events' checksum: ");
        put_hex(SUM);
        semihost_puts("\ncounts from the last feed to the bite: ");
        put_dec(after);
        semihost_puts("\n");
        POWER_RESETREAS = rr;
        return harness_failures;
    }
    MAGIC = 0xFEED0002;
    SUM = 0;
    PHASE = 1;
    DEMCR |= 1u << 24;
    DWT_CYCCNT = 0;
    DWT_CTRL |= 1;
    WDT_CRV = 327;                        /* (327+1)/32768 s = 10 ms */
    WDT_START = 1;                        /* RREN: RR[0] only (reset value) */
    RTC1_CC0 = EVERY;
    RTC1_EVTENSET = 1u << 16;
    RTC1_INTENSET = 1u << 16;
    irq_enable(RTC1_IRQ);
    RTC1_START = 1;
    wait_for_events();
    LAST_FEED = RTC1_COUNTER;
    PHASE = 2;
    CHECK_EQ("every event handled", events, EVENTS);
    for (;;)                              /* no more feeds */
        LAST_SEEN = RTC1_COUNTER;
}
