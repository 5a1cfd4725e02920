/* SAADC: battery channel as on the PineTime (AIN7, gain 1/4, VDD/4, 12 bit);
 * the Python side supplies 1.95 V on AIN7; also a PWM0 motor pulse. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define A 0x40007000u
static volatile int16_t result;

int main(void) {
    REG32(A + 0x500) = 1;
    REG32(A + 0x510) = 8;                           /* CH[0].PSELP = AIN7 */
    REG32(A + 0x518) = (2u << 8) | (1u << 12) | (2u << 16);
    REG32(A + 0x5F0) = 2;                           /* 12 bit */
    REG32(A + 0x62C) = (uint32_t)&result; REG32(A + 0x630) = 1;
    REG32(A + 0x000) = 1;
    while (!REG32(A + 0x100)) ;
    REG32(A + 0x004) = 1;
    while (!REG32(A + 0x104)) ;
    CHECK_EQ("saadc battery result", result, 2420);  /* 1.95 V / 3.3 V * 4096 */
    REG32(A + 0x008) = 1;
    while (!REG32(A + 0x114)) ;
    CHECK("saadc STOPPED", 1);
    return harness_failures;
}
