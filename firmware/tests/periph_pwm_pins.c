/* Pin-select precedence (PS 22 "GPIO" and 45 "PWM"): while PWM0 generates,
 * its OUT[0] pin (P0.16, the PineTime's motor) follows the PWM, not GPIO OUT;
 * after STOP, GPIO OUT applies again.  The pin is read back through GPIO IN
 * (input buffer connected).  The PWM outputs a constant level: COMP 0 with
 * POLARITY FallingEdge is low all period, RisingEdge high all period.
 * Companion: with GPIO DIR input the PWM's output does not reach the pin
 * (the PS asks for an output there): the pull-up sets it. */
#include "harness.h"
HARNESS_STATE

#define GPIO      0x50000000u
#define OUTSET    REG32(GPIO + 0x508)
#define OUTCLR    REG32(GPIO + 0x50C)
#define IN        REG32(GPIO + 0x510)
#define DIRSET    REG32(GPIO + 0x518)
#define DIRCLR    REG32(GPIO + 0x51C)
#define PIN_CNF(n) REG32(GPIO + 0x700 + 4 * (n))
#define P 0x4001C000u
#define PIN 16
#define LEVEL() ((IN >> PIN) & 1)

static uint16_t seq[1];

static void pwm_start(uint16_t value) {
    seq[0] = value;
    REG32(P + 0x520) = (uint32_t)seq; REG32(P + 0x524) = 1;
    REG32(P + 0x110) = 0;
    REG32(P + 0x008) = 1;                 /* SEQSTART[0] */
    for (int i = 0; i < 100000 && !REG32(P + 0x110); i++) ;
}

static int pwm_stop(void) {
    REG32(P + 0x104) = 0;
    REG32(P + 0x004) = 1;
    int i = 0;
    while (!REG32(P + 0x104) && i < 100000) i++;
    return i < 100000;
}

int main(void) {
    PIN_CNF(PIN) = 0x00000001;            /* output, input buffer connected, no pull */
    OUTSET = 1u << PIN;                   /* motor idle (high) */
    CHECK_EQ("gpio_out_drives_idle", LEVEL(), 1);
    REG32(P + 0x560) = PIN;               /* PSEL.OUT[0] */
    REG32(P + 0x500) = 1;
    REG32(P + 0x504) = 0;
    REG32(P + 0x508) = 1000;              /* 16 MHz / 1000: 62.5 us periods */
    REG32(P + 0x50C) = 0;
    REG32(P + 0x510) = 0;
    REG32(P + 0x528) = 0; REG32(P + 0x52C) = 0;

    pwm_start(0x8000 | 0);                /* FallingEdge, COMP 0: low all period */
    CHECK_EQ("pwm_low_wins_over_out_high", LEVEL(), 0);
    OUTCLR = 1u << PIN;                   /* GPIO OUT changes under the PWM */
    OUTSET = 1u << PIN;
    CHECK_EQ("out_toggle_while_pwm_selects_ignored", LEVEL(), 0);
    CHECK("pwm_stopped", pwm_stop());
    CHECK_EQ("gpio_out_back_after_stop", LEVEL(), 1);

    OUTCLR = 1u << PIN;
    CHECK_EQ("gpio_out_low", LEVEL(), 0);
    pwm_start(0);                         /* RisingEdge, COMP 0: high all period */
    CHECK_EQ("pwm_high_wins_over_out_low", LEVEL(), 1);
    OUTSET = 1u << PIN;
    OUTCLR = 1u << PIN;
    CHECK_EQ("out_toggle_while_pwm_selects_ignored_2", LEVEL(), 1);
    CHECK("pwm_stopped_again", pwm_stop());
    CHECK_EQ("gpio_out_low_again", LEVEL(), 0);

    /* companion: DIR input, pull-up; the PWM wants low but does not drive */
    PIN_CNF(PIN) = 0x0000000C;            /* input, connected, pull-up */
    pwm_start(0x8000 | 0);
    CHECK_EQ("pwm_needs_dir_output", LEVEL(), 1);
    DIRSET = 1u << PIN;                   /* now an output: the PWM's low shows */
    CHECK_EQ("pwm_drives_once_dir_output", LEVEL(), 0);
    CHECK("pwm_stopped_last", pwm_stop());
    DIRCLR = 1u << PIN;
    REG32(P + 0x500) = 0;
    return harness_failures;
}
