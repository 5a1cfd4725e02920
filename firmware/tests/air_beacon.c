/* An advertiser on the bare RADIO (firmware/common/air.h): COUNT
 * ADV_NONCONN_IND packets on channel 37, one every PERIOD us from START
 * us after power-on (TIMER0 compares), AdvA = FICR.DEVICEADDR, a counter
 * in the manufacturer data, the name "emu"; TXPOWER from UICR.  Sleeps
 * with WFE between packets.  Parameters: UICR.CUSTOMER[0] PERIOD (10000),
 * [1] COUNT (20), [2] TXPOWER register value (0: 0 dBm), [3] START (1000),
 * [4] PING (0): 1 turns round to receive after each packet (DISABLED_RXEN)
 * and prints "PONG n=<counter> crc=<1|0> tifs=<us>" for the answer of
 * air_ponger.c: its first bit's time less our packet's last bit's
 * (TIMER0 captures at END and ADDRESS through the PPI), or "NOPONG n=".
 * air_listener.c on another chip hears them (tests/machine/test_air_nodes.py). */
#include "air.h"
HARNESS_STATE

static uint8_t pdu[40];

int main(void) {
    uint32_t period = param(0, 10000), count = param(1, 20), start = param(3, 1000);
    SCB_SCR |= 1u << 4;                              /* SEVONPEND */
    T_BITMODE(TIMER0) = 3;
    T_PRESCALER(TIMER0) = 4;                         /* 1 MHz */
    REG32(TIMER0 + 0x304) = 1u << 16;                /* INTENSET COMPARE0 (pends, wakes WFE) */
    T_START(TIMER0) = 1;
    air_setup(2, 37);
    R(0x50C) = param(2, 0);                          /* TXPOWER */
    uint32_t a0 = FICR_DEVICEADDR0, a1 = FICR_DEVICEADDR1;
    pdu[0] = 0x42;                                   /* ADV_NONCONN_IND, TxAdd random */
    pdu[1] = 6 + 6 + 5;
    for (int i = 0; i < 4; i++) pdu[2 + i] = a0 >> (8 * i);
    pdu[6] = a1; pdu[7] = (a1 >> 8) | 0xC0;
    pdu[8] = 5; pdu[9] = 0xFF; pdu[10] = 0x59; pdu[11] = 0x00;   /* manufacturer: Nordic */
    pdu[14] = 4; pdu[15] = 0x09; pdu[16] = 'e'; pdu[17] = 'm'; pdu[18] = 'u';
    R(0x504) = (uint32_t)pdu;
    R(0x200) = (1u << 0) | (1u << 1);                /* READY_START, END_DISABLE */
    R(0x304) = 1u << 4;                              /* INTENSET DISABLED */
    uint32_t ping = param(4, 0);
    static uint8_t rx[40];
    if (ping) {
        REG32(0x4001F000u + 0x510) = RADIO + 0x10C;  /* PPI CH[0]: END -> CAPTURE[1] */
        REG32(0x4001F000u + 0x514) = TIMER0 + 0x044;
        REG32(0x4001F000u + 0x518) = RADIO + 0x104;  /* CH[1]: ADDRESS -> CAPTURE[2] */
        REG32(0x4001F000u + 0x51C) = TIMER0 + 0x048;
        REG32(0x4001F000u + 0x504) = 3;               /* CHENSET 0, 1 */
    }
    for (uint32_t k = 0; k < count; k++) {
        pdu[12] = k; pdu[13] = k >> 8;
        T_CC(TIMER0, 0) = start + k * period;
        T_COMPARE(TIMER0, 0) = 0;
        REG32(0xE000E280) = 1u << 8;                 /* ICPR: TIMER0 */
        sleep_until(&T_COMPARE(TIMER0, 0));
        T_COMPARE(TIMER0, 0) = 0;                    /* (a level: it would keep the IRQ pending) */
        R(0x110) = 0;
        R(0x504) = (uint32_t)pdu;
        if (ping)
            R(0x200) = (1u << 0) | (1u << 1) | (1u << 3);   /* ... DISABLED_RXEN: turn round */
        R(0x000) = 1;                                /* TXEN */
        REG32(0xE000E280) = 1u << 1;                 /* ICPR: RADIO */
        sleep_until(&R(0x110));
        R(0x110) = 0;                                /* (a level: it would keep the IRQ pending) */
        if (!ping)
            continue;
        uint32_t tx_end = T_CC(TIMER0, 1);           /* captured at our END */
        R(0x504) = (uint32_t)rx;                     /* (RX takes the pointer at START) */
        R(0x200) = (1u << 0);                        /* READY_START only from here */
        R(0x10C) = 0;
        T_CC(TIMER0, 3) = tx_end + 1000;             /* give up 1 ms later */
        T_COMPARE(TIMER0, 3) = 0;
        REG32(TIMER0 + 0x304) = 1u << 19;
        REG32(0x40001304) = 1u << 3;                 /* INTENSET END */
        REG32(0xE000E280) = (1u << 1) | (1u << 8);
        while (!R(0x10C) && !T_COMPARE(TIMER0, 3))
            __asm volatile("wfe");
        REG32(0x40001308) = 1u << 3;
        REG32(TIMER0 + 0x308) = 1u << 19;
        if (R(0x10C)) {
            uint32_t rx_addr = T_CC(TIMER0, 2);
            semihost_puts("PONG n="); put_dec(rx[12] | (rx[13] << 8));
            semihost_puts(" crc="); put_dec(R(0x400));
            /* our last bit: END + 4 us; its first bit: ADDRESS - 6 us chain - 40 us */
            semihost_puts(" tifs="); put_dec((rx_addr - 46) - (tx_end + 4));
            semihost_puts("\n");
        } else {
            semihost_puts("NOPONG n="); put_dec(k); semihost_puts("\n");
        }
        R(0x10C) = 0;
        R(0x110) = 0;
        REG32(0xE000E280) = 1u << 1;
        R(0x010) = 1;                                /* DISABLE */
        sleep_until(&R(0x110));
        R(0x110) = 0;
    }
    semihost_puts("SENT "); put_dec(count); semihost_puts("\n");
    for (;;)
        __asm volatile("wfe");
}
