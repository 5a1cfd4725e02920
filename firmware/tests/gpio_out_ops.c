/* GPIO OUT, OUTSET and OUTCLR as a display scan drives them (micro:bit
 * MicroPython sets and clears rows and columns that often already are): a
 * write that changes no pin is a bus op in C (Gpio.write_op, a W_VALUE op
 * into OUT that bails on any change), one that changes a pin goes to the
 * model, which drives it.  P0.20 and P0.21 are outputs with their input
 * buffers connected, so IN shows what the pins do.  Set, set again 500
 * times, clear, clear again 500 times, OUT written with the same value,
 * two pins set where one already is, OUTSET/OUTCLR read back as OUT; the
 * script counts the pin changes its listener hears (8). */
#include "harness.h"
#include "pinetime.h"
HARNESS_STATE

#define GPIO_OUT REG32(GPIO + 0x504)
#define A (1u << 20)
#define B (1u << 21)

int main(void) {
    GPIO_PIN_CNF(20) = 1;                       /* output, input buffer connected */
    GPIO_PIN_CNF(21) = 1;
    CHECK_EQ("both low after reset", GPIO_IN & (A | B), 0);
    GPIO_OUTSET = A;                            /* change 1: A high */
    CHECK_EQ("OUTSET drives A high", GPIO_IN & (A | B), A);
    for (int i = 0; i < 500; i++)
        GPIO_OUTSET = A;                        /* no change */
    CHECK_EQ("A stays high", GPIO_IN & (A | B), A);
    CHECK_EQ("OUT reads A", GPIO_OUT & (A | B), A);
    CHECK_EQ("OUTSET reads OUT", GPIO_OUTSET & (A | B), A);
    CHECK_EQ("OUTCLR reads OUT", GPIO_OUTCLR & (A | B), A);
    GPIO_OUTCLR = A;                            /* change 2: A low */
    CHECK_EQ("OUTCLR drives A low", GPIO_IN & (A | B), 0);
    for (int i = 0; i < 500; i++)
        GPIO_OUTCLR = A | B;                    /* no change */
    CHECK_EQ("both stay low", GPIO_IN & (A | B), 0);
    GPIO_OUT = GPIO_OUT | B;                    /* change 3: B high through OUT */
    CHECK_EQ("OUT drives B high", GPIO_IN & (A | B), B);
    GPIO_OUT = GPIO_OUT;                        /* no change */
    CHECK_EQ("OUT written the same: B stays", GPIO_IN & (A | B), B);
    GPIO_OUTSET = A | B;                        /* change 4: A high, B already */
    CHECK_EQ("OUTSET of both: both high", GPIO_IN & (A | B), A | B);
    GPIO_OUTCLR = B;                            /* change 5: B low */
    GPIO_OUTCLR = A;                            /* change 6: A low */
    GPIO_OUTSET = B;                            /* change 7: B high */
    GPIO_OUTCLR = B;                            /* change 8: B low */
    CHECK_EQ("the last scan step leaves both low", GPIO_IN & (A | B), 0);
    return harness_failures;
}
