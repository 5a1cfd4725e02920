/* A scanner on the bare RADIO (firmware/common/air.h): listens on channel
 * 37 for LISTEN us (UICR.CUSTOMER[0], default 300000) with
 * ADDRESS_RSSISTART, and prints one line per packet:
 *   RX <AdvA's first two bytes> n=<counter> crc=<1|0> rssi=<RSSISAMPLE>
 * then "DONE ok=<n> bad=<n>" and exits 0.  Sleeps with WFE between
 * packets (END and the TIMER0 limit pend their IRQs).  air_beacon.c is the
 * sender.  UICR.CUSTOMER[1]: how long (us) to wait before turning the
 * receiver on (default 0). */
#include "air.h"
HARNESS_STATE

static uint8_t pdu[40];

int main(void) {
    uint32_t listen = param(0, 300000), delay = param(1, 0);
    uint32_t ok = 0, bad = 0;
    SCB_SCR |= 1u << 4;                              /* SEVONPEND */
    T_BITMODE(TIMER0) = 3;
    T_PRESCALER(TIMER0) = 4;
    REG32(TIMER0 + 0x304) = 1u << 16;
    T_CC(TIMER0, 0) = listen;
    T_START(TIMER0) = 1;
    air_setup(2, 37);
    R(0x504) = (uint32_t)pdu;
    R(0x200) = (1u << 0) | (1u << 4);                /* READY_START, ADDRESS_RSSISTART */
    R(0x304) = 1u << 3;                              /* INTENSET END */
    if (delay) {                                     /* the receiver off until then */
        T_CC(TIMER0, 1) = delay;
        REG32(TIMER0 + 0x304) = 1u << 17;
        while (!T_COMPARE(TIMER0, 1))
            __asm volatile("wfe");
        T_COMPARE(TIMER0, 1) = 0;
        REG32(TIMER0 + 0x308) = 1u << 17;
    }
    R(0x004) = 1;                                    /* RXEN */
    while (!T_COMPARE(TIMER0, 0)) {
        REG32(0xE000E280) = (1u << 1) | (1u << 8);   /* ICPR: RADIO, TIMER0 */
        while (!R(0x10C) && !T_COMPARE(TIMER0, 0))
            __asm volatile("wfe");
        if (!R(0x10C))
            break;
        R(0x10C) = 0;
        uint32_t crc = R(0x400), rssi = R(0x548);
        if (crc) ok++; else bad++;
        semihost_puts("RX ");
        put_hex((pdu[2] << 8) | pdu[3]);
        semihost_puts(" n="); put_dec(pdu[12] | (pdu[13] << 8));
        semihost_puts(" crc="); put_dec(crc);
        semihost_puts(" rssi="); put_dec(rssi);
        semihost_puts("\n");
        R(0x008) = 1;                                /* START: listen again */
    }
    semihost_puts("DONE ok="); put_dec(ok); semihost_puts(" bad="); put_dec(bad);
    semihost_puts("\n");
    semihost_exit(0);
    return 0;
}
