/* GPIO IN polled as wasp-os and InfiniTime poll the side button: P0.15
 * (BUTTON_EN) driven high, P0.13 (the button) an input with its buffer
 * connected, IN read in a bounded loop until the press the test scripts at
 * 2 ms, then until the release at 4 ms.  While pressed, PIN_CNF[13] with the
 * input buffer disconnected reads 0 in IN and connected again reads 1; a
 * pull-down on a released pin reads 0.  The bus reads IN from the model's
 * kept value (Gpio.read_op: an ATTR op in C), which pin changes, PIN_CNF
 * writes and reset keep up to date; the model's Python reads the same. */
#include "harness.h"
#include "pinetime.h"
HARNESS_STATE

#define BIT (1u << PIN_BUTTON)

static uint32_t wait_for(uint32_t want) {
    for (uint32_t i = 0; i < 2000000u; i++)
        if ((GPIO_IN & BIT) == want)
            return i + 1;
    return 0;
}

int main(void) {
    GPIO_PIN_CNF(PIN_BUTTON_EN) = 1;              /* output, buffer disconnected */
    GPIO_OUTSET = 1u << PIN_BUTTON_EN;
    CHECK_EQ("reset: buffer disconnected, IN reads 0", GPIO_IN & BIT, 0);
    GPIO_PIN_CNF(PIN_BUTTON) = 0;                 /* input, buffer connected, no pull */
    CHECK_EQ("released: 0", GPIO_IN & BIT, 0);
    semihost_puts("READY\n");
    CHECK("the press is seen", wait_for(BIT) != 0);
    GPIO_PIN_CNF(PIN_BUTTON) = 2;                 /* input buffer disconnected */
    CHECK_EQ("pressed, buffer disconnected: 0", GPIO_IN & BIT, 0);
    GPIO_PIN_CNF(PIN_BUTTON) = 0;
    CHECK_EQ("pressed, buffer connected again: 1", GPIO_IN & BIT, BIT);
    CHECK("the release is seen", wait_for(0) != 0);
    GPIO_PIN_CNF(PIN_BUTTON) = 1u << 2;           /* pull-down */
    CHECK_EQ("released with a pull-down: 0", GPIO_IN & BIT, 0);
    GPIO_PIN_CNF(PIN_BUTTON) = 3u << 2;           /* pull-up */
    CHECK_EQ("released with a pull-up: 1", GPIO_IN & BIT, BIT);
    return harness_failures;
}
