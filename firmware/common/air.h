/* Bluetooth LE advertising on the bare RADIO, for the programs that test
 * the air between machines (air_beacon.c, air_listener.c): BLE 1 Mbit,
 * the advertising access address and CRC, whitening by channel index,
 * fast ramp-up; parameters from UICR.CUSTOMER[n] (0xFFFFFFFF: a default),
 * which a test writes before the firmware starts. */
#ifndef AIR_H
#define AIR_H
#include "harness.h"
#include "cm4.h"
#include "timer.h"

#define RADIO 0x40001000u
#define R(off) REG32(RADIO + (off))
#define FICR_DEVICEADDR0 REG32(0x100000A4u)
#define FICR_DEVICEADDR1 REG32(0x100000A8u)
#define UICR_CUSTOMER(n) REG32(0x10001080u + 4 * (n))

static inline uint32_t param(int n, uint32_t dflt) {
    uint32_t v = UICR_CUSTOMER(n);
    return v == 0xFFFFFFFFu ? dflt : v;
}

static inline void air_setup(int freq_off, int whiteiv) {
    R(0x510) = 3;                                   /* MODE = Ble_1Mbit */
    R(0x514) = 8 | (1u << 8);                       /* PCNF0: LFLEN 8, S0 1 byte */
    R(0x518) = 37 | (3u << 16) | (1u << 25);         /* PCNF1: MAXLEN 37, BALEN 3, WHITEEN */
    R(0x51C) = 0x89BED600u;                         /* BASE0: the advertising AA */
    R(0x524) = 0x8E;                                /* PREFIX0 */
    R(0x52C) = 0; R(0x530) = 1;                     /* TXADDRESS 0, RXADDRESSES 1 */
    R(0x534) = 0x103; R(0x538) = 0x65B; R(0x53C) = 0x555555;
    R(0x650) = 1;                                   /* MODECNF0: fast ramp-up */
    R(0x508) = freq_off;                            /* FREQUENCY: 2400 + */
    R(0x554) = whiteiv;                             /* DATAWHITEIV */
}

/* Sleep until an event with interrupts off: the enabled events pend their
 * IRQs, and SEVONPEND turns a pend into a wake-up for WFE. */
static inline void sleep_until(volatile uint32_t *ev) {
    while (!*ev) {
        __asm volatile("wfe");
    }
}
#endif
