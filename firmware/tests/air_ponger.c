/* The answering end of a two-chip exchange on the bare RADIO
 * (firmware/common/air.h): listens on channel 37 and answers every packet
 * TIFS (150 us) after its end through END_DISABLE and DISABLED_TXEN, with
 * the packet's own bytes (an echo), then listens again (DISABLED_RXEN).
 * air_beacon.c in ping mode (UICR.CUSTOMER[4] = 1) sends and times the
 * answers; this side prints "ECHO n=<counter> crc=<1|0>" for each. */
#include "air.h"
HARNESS_STATE

static uint8_t pdu[40];

int main(void) {
    SCB_SCR |= 1u << 4;                              /* SEVONPEND */
    air_setup(2, 37);
    R(0x544) = 150;                                  /* TIFS */
    R(0x504) = (uint32_t)pdu;
    R(0x304) = 1u << 3;                              /* INTENSET END */
    for (;;) {
        /* listen; the answer goes out by itself TIFS after the packet */
        R(0x200) = (1u << 0) | (1u << 1) | (1u << 2);   /* READY_START END_DISABLE DISABLED_TXEN */
        R(0x10C) = 0;
        R(0x004) = 1;                                /* RXEN */
        REG32(0xE000E280) = 1u << 1;
        sleep_until(&R(0x10C));                      /* the request's END */
        R(0x10C) = 0;
        uint32_t crc = R(0x400);
        R(0x200) = (1u << 0) | (1u << 1);            /* READY_START END_DISABLE: the answer only */
        R(0x110) = 0;
        REG32(0xE000E280) = 1u << 1;
        sleep_until(&R(0x10C));                      /* the answer's END */
        R(0x10C) = 0;
        semihost_puts("ECHO n="); put_dec(pdu[12] | (pdu[13] << 8));
        semihost_puts(" crc="); put_dec(crc); semihost_puts("\n");
        R(0x304) = 1u << 4;                          /* INTENSET DISABLED */
        REG32(0xE000E280) = 1u << 1;
        sleep_until(&R(0x110));                      /* after the answer: Disabled */
        REG32(0x40001308) = 1u << 4;                 /* INTENCLR DISABLED */
    }
}
