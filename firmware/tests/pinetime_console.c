/* The PineTime's console as Zephyr's pinetime_devkit0 wires it: UART0 with
 * TX on P0.11 and RX on P0.30, 115200 baud.  Says it is ready, then echoes
 * what it receives in upper case until a '.', and exits. */
#include "harness.h"
HARNESS_STATE

#define U 0x40002000u

static void put(char c) {
    REG32(U + 0x51C) = (uint8_t)c;
    while (!REG32(U + 0x11C)) ;
    REG32(U + 0x11C) = 0;
}

int main(void) {
    REG32(U + 0x50C) = 11; REG32(U + 0x514) = 30;  /* PSELTXD, PSELRXD */
    REG32(U + 0x524) = 0x01D7E000u;                /* 115200 */
    REG32(U + 0x500) = 4;                          /* UART */
    REG32(U + 0x008) = 1;                          /* STARTTX */
    REG32(U + 0x000) = 1;                          /* STARTRX */
    for (const char *s = "console ready\n"; *s; s++)
        put(*s);
    for (;;) {
        while (!REG32(U + 0x108)) ;                /* RXDRDY */
        REG32(U + 0x108) = 0;
        char c = (char)REG32(U + 0x518);
        put(c >= 'a' && c <= 'z' ? c - 32 : c);
        if (c == '.')
            break;
    }
    put('\n');
    return 0;
}
