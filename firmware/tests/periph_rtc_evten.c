/* RTC EVTENSET/EVTENCLR as firmware's tick handlers write them around each CC
 * write (wasp-os: ~3000 an emulated second), carried out by the bus's BITS op
 * on the RTC's evten: COMPARE routed to PPI while set, not while cleared, EVTEN
 * reads them back; a write touching TICK goes to the model, which schedules the
 * TICK events (EVENTS_TICK is set only while TICK is routed somewhere). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RTC1 0x40011000u
#define TIMER0 0x40008000u
#define PPI 0x4001F000u
#define R(o) REG32(RTC1 + (o))

static uint32_t timer_count(void) {
    REG32(TIMER0 + 0x040) = 1;                    /* CAPTURE[0] */
    return REG32(TIMER0 + 0x540);
}

static void wait_compare0(void) {
    while (!R(0x140)) { }
    R(0x140) = 0;
}

int main(void) {
    REG32(TIMER0 + 0x504) = 2;                    /* low-power counter */
    REG32(TIMER0 + 0x508) = 3;                    /* 32 bit */
    REG32(TIMER0 + 0x000) = 1;                    /* START */
    REG32(PPI + 0x510) = RTC1 + 0x140;            /* CH[0].EEP: COMPARE[0] */
    REG32(PPI + 0x514) = TIMER0 + 0x008;          /* CH[0].TEP: COUNT */
    REG32(PPI + 0x504) = 1;                       /* CHENSET */

    R(0x508) = 0;                                 /* PRESCALER */
    R(0x540) = 5;                                 /* CC[0] */
    R(0x344) = 1u << 16;                          /* EVTENSET COMPARE0 */
    CHECK_EQ("EVTEN reads COMPARE0 routed", R(0x340), 1u << 16);
    CHECK_EQ("EVTENSET reads it too", R(0x344), 1u << 16);
    R(0x000) = 1;                                 /* START */
    wait_compare0();
    CHECK_EQ("COMPARE0 routed through PPI counted once", timer_count(), 1);

    uint32_t bad = 0;
    for (int i = 0; i < 50; i++) {               /* a tick handler's routine */
        R(0x348) = 1u << 16;                      /* EVTENCLR COMPARE0 */
        R(0x540) = R(0x504) + 3;
        R(0x344) = 1u << 16;                      /* EVTENSET COMPARE0 */
        wait_compare0();
        if (timer_count() != 2u + i)
            bad++;
    }
    CHECK_EQ("routed 50 more times", bad, 0);

    R(0x348) = 1u << 16;                          /* EVTENCLR: not routed any more */
    CHECK_EQ("EVTEN cleared", R(0x340), 0);
    R(0x540) = R(0x504) + 3;
    wait_compare0();
    CHECK_EQ("COMPARE0 not routed after EVTENCLR", timer_count(), 51);

    R(0x100) = 0;                                 /* EVENTS_TICK */
    R(0x344) = 1;                                 /* EVTENSET TICK: the model schedules it */
    while (!R(0x100)) { }
    CHECK_EQ("TICK routed: EVENTS_TICK set", R(0x100), 1);
    CHECK_EQ("EVTEN reads TICK", R(0x340) & 1, 1);
    R(0x348) = 1;
    R(0x004) = 1;                                 /* STOP */
    return harness_failures;
}
