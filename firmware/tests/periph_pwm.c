/* PWM0 motor pulse the way wasp-os does it: 16 MHz, COUNTERTOP 16000,
 * 25 % duty from RAM, run ~40 ms, TASKS_STOP, wait EVENTS_STOPPED. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define P 0x4001C000u
#define RTC_WAIT_LOOPS 20000
static uint16_t seq[1] = {0x8000 | 4000};

int main(void) {
    REG32(P + 0x560) = 16;               /* PSEL.OUT[0] = P0.16 */
    REG32(P + 0x500) = 1;
    REG32(P + 0x504) = 0;
    REG32(P + 0x508) = 16000;
    REG32(P + 0x50C) = 0;
    REG32(P + 0x510) = 0;
    REG32(P + 0x520) = (uint32_t)seq; REG32(P + 0x524) = 1;
    REG32(P + 0x528) = 0; REG32(P + 0x52C) = 0;
    REG32(P + 0x008) = 1;                /* SEQSTART[0] */
    while (!REG32(P + 0x110)) ;          /* SEQEND[0] after one 1 ms period */
    CHECK("pwm SEQEND[0]", 1);
    for (volatile int i = 0; i < RTC_WAIT_LOOPS; i++) ;
    REG32(P + 0x004) = 1;
    while (!REG32(P + 0x104)) ;
    CHECK("pwm STOPPED", 1);
    return harness_failures;
}
