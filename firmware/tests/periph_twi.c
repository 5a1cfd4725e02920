/* I2C masters: legacy TWI1 polled with BB_SUSPEND/BB_STOP (nrfx/wasp-os
 * style: write a register pointer, read 6 bytes), an address NACK, and
 * TWIM0 EasyDMA write-then-read chained by SHORTS.  The Python side puts a
 * register-file device at 0x15 on a bus on SCL P0.07 / SDA P0.06 and one at
 * 0x18 on a bus on SCL P0.27 / SDA P0.26. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define TWI1  0x40004000u
#define TWIM0 0x40003000u

static int wait(uint32_t ev) {
    for (int i = 0; i < 10000; i++)            /* the wasp-os driver's limit */
        if (REG32(ev)) { REG32(ev) = 0; return 1; }
    return 0;
}

static uint8_t wbuf[2] = {0x20, 0}, rbuf[4];

int main(void) {
    REG32(TWI1 + 0x508) = 7; REG32(TWI1 + 0x50C) = 6;
    REG32(TWI1 + 0x524) = 0x06680000u;   /* K400 */
    REG32(TWI1 + 0x588) = 0x15;
    REG32(TWI1 + 0x500) = 5;
    REG32(TWI1 + 0x51C) = 0x01;          /* register pointer */
    REG32(TWI1 + 0x008) = 1;             /* STARTTX */
    CHECK("twi TXDSENT", wait(TWI1 + 0x11C));
    uint8_t got[6];
    REG32(TWI1 + 0x200) = 1;             /* BB_SUSPEND */
    REG32(TWI1 + 0x000) = 1;             /* STARTRX */
    int ok = 1;
    for (int i = 0; i < 6; i++) {
        if (i == 5) REG32(TWI1 + 0x200) = 2;   /* BB_STOP for the last byte */
        if (i > 0) REG32(TWI1 + 0x020) = 1;    /* RESUME */
        ok &= wait(TWI1 + 0x108);
        got[i] = REG32(TWI1 + 0x518);
    }
    CHECK("twi 6 RXDREADY within the polling limit", ok);
    CHECK("twi STOPPED", wait(TWI1 + 0x104));
    ok = 1;
    for (int i = 0; i < 6; i++) ok &= got[i] == 1 + i;
    CHECK("twi bytes are registers 1..6", ok);
    CHECK_EQ("twi no error", REG32(TWI1 + 0x4C4), 0);
    REG32(TWI1 + 0x200) = 0;
    REG32(TWI1 + 0x588) = 0x33;          /* nobody */
    REG32(TWI1 + 0x008) = 1;
    CHECK("twi ERROR on address NACK", wait(TWI1 + 0x124));
    CHECK_EQ("twi ERRORSRC.ANACK", REG32(TWI1 + 0x4C4), 2);
    REG32(TWI1 + 0x4C4) = 2;
    REG32(TWI1 + 0x014) = 1;
    CHECK("twi STOPPED after STOP", wait(TWI1 + 0x104));
    REG32(TWI1 + 0x500) = 0;

    REG32(TWIM0 + 0x508) = 27; REG32(TWIM0 + 0x50C) = 26;
    REG32(TWIM0 + 0x524) = 0x06400000u;  /* TWIM K400 */
    REG32(TWIM0 + 0x588) = 0x18;
    REG32(TWIM0 + 0x544) = (uint32_t)wbuf; REG32(TWIM0 + 0x548) = 1;
    REG32(TWIM0 + 0x534) = (uint32_t)rbuf; REG32(TWIM0 + 0x538) = 4;
    REG32(TWIM0 + 0x200) = (1u << 7) | (1u << 12);   /* LASTTX_STARTRX, LASTRX_STOP */
    REG32(TWIM0 + 0x500) = 6;
    REG32(TWIM0 + 0x008) = 1;
    CHECK("twim STOPPED", wait(TWIM0 + 0x104));
    CHECK_EQ("twim RXD.AMOUNT", REG32(TWIM0 + 0x53C), 4);
    CHECK_EQ("twim rbuf", rbuf[0] | rbuf[1] << 8 | rbuf[2] << 16 | (uint32_t)rbuf[3] << 24,
             0x23222120);
    return harness_failures;
}
