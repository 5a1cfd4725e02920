/* The nRF52 DK (PCA10040) as its own firmware sees it: buttons 1-4 on
 * P0.13-P0.16 with the chip's pull-ups, LED1-4 on P0.17-P0.20 (lit low),
 * the console on UART0 TX P0.06 / RX P0.08 at 115200 baud.  The firmware
 * mirrors the buttons onto the LEDs and reports each change on the console
 * until it receives 'q'; the Python test presses the buttons and reads the
 * LEDs and the console (tests/board/test_board_nrf52dk.py). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define GPIO 0x50000000u
#define U    0x40002000u
#define OUTSET (GPIO + 0x508)
#define OUTCLR (GPIO + 0x50C)
#define IN     (GPIO + 0x510)
#define PIN_CNF(n) (GPIO + 0x700 + 4 * (n))

static void put(const char *s) {
    for (; *s; s++) {
        REG32(U + 0x51C) = (uint8_t)*s;
        while (!REG32(U + 0x11C)) ;
        REG32(U + 0x11C) = 0;
    }
}

int main(void) {
    for (int n = 17; n <= 20; n++) {
        REG32(OUTSET) = 1u << n;                   /* off before they become outputs */
        REG32(PIN_CNF(n)) = 1;                     /* output */
    }
    for (int n = 13; n <= 16; n++)
        REG32(PIN_CNF(n)) = (3u << 2);             /* input, connected, pull-up */
    CHECK_EQ("buttons released read high", (REG32(IN) >> 13) & 0xF, 0xF);

    REG32(U + 0x50C) = 6; REG32(U + 0x514) = 8;    /* PSELTXD, PSELRXD */
    REG32(U + 0x524) = 0x01D7E000u;                /* 115200 */
    REG32(U + 0x500) = 4;                          /* UART */
    REG32(U + 0x008) = 1;                          /* STARTTX */
    REG32(U + 0x000) = 1;                          /* STARTRX */
    put("dk ready\n");

    uint32_t shown = 0xF;                          /* released */
    int got_q = 0;
    for (uint32_t spins = 0; spins < 20000000u && !got_q; spins++) {
        uint32_t b = (REG32(IN) >> 13) & 0xF;
        if (b != shown) {
            shown = b;
            REG32(OUTSET) = 0xFu << 17;
            REG32(OUTCLR) = ((~b) & 0xF) << 17;    /* a pressed button lights its LED */
            char msg[] = "buttons ....\n";
            for (int i = 0; i < 4; i++)
                msg[8 + i] = (b >> i) & 1 ? '.' : '1' + i;
            put(msg);
        }
        if (REG32(U + 0x108)) {                    /* RXDRDY */
            REG32(U + 0x108) = 0;
            got_q = REG32(U + 0x518) == 'q';
        }
    }
    CHECK("q received on P0.08", got_q);
    put("bye\n");
    return harness_failures;
}
