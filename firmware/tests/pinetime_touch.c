/* CST816S on TWI1 after a GPIOTE interrupt (IN[0] on TP_INT P0.28, falling
 * edge, pull-up), as wasp-os reads it: 6 bytes from register 0x01.  Reports
 * "TOUCH <gesture> <x> <y>" for each event; exits after three. */
#include "pinetime.h"
#include "cm4.h"

static volatile int touched;
void IRQ6_Handler(void) {                /* GPIOTE */
    if (GPIOTE_EVENTS_IN(0)) { GPIOTE_EVENTS_IN(0) = 0; touched++; }
}

int main(void) {
    pt_gpio_init();
    pt_twi_init();
    GPIO_PIN_CNF(PIN_TP_INT) = 0x0000000C;          /* input, connected, pull-up */
    GPIO_OUTCLR = 1u << PIN_TP_RST;                 /* reset pulse */
    for (volatile int i = 0; i < 100; i++) ;
    GPIO_OUTSET = 1u << PIN_TP_RST;
    GPIOTE_CONFIG(0) = 1u | (PIN_TP_INT << 8) | (2u << 16);   /* Event, HiToLo */
    GPIOTE_EVENTS_IN(0) = 0;
    GPIOTE_INTENSET = 1;
    NVIC_ISER(0) = 1u << 6;
    uint8_t v[4];
    CHECK_EQ("touch_version_read", pt_twi_read(0x15, 0xA6, v, 4), 0);
    CHECK_EQ("touch_chip_id", v[1], 0xB4);
    semihost_puts("READY\n");
    int seen = 0;
    while (seen < 3) {
        __asm volatile("cpsid i");
        if (touched == seen) __asm volatile("wfi");
        __asm volatile("cpsie i");
        if (touched > seen) {
            seen++;
            uint8_t d[6];
            int rc = pt_twi_read(0x15, 0x01, d, 6);
            CHECK_EQ("touch_read", rc, 0);
            semihost_puts("TOUCH ");
            put_dec(d[0]); semihost_puts(" ");
            put_dec(((d[2] & 0x0F) << 8) | d[3]); semihost_puts(" ");
            put_dec(((d[4] & 0x0F) << 8) | d[5]); semihost_puts("\n");
        }
    }
    /* sleep: the controller stops acknowledging its address */
    uint8_t sleep = 0x03;
    pt_twi_write(0x15, 0xA5, &sleep, 1);
    CHECK("touch_asleep_nacks", pt_twi_read(0x15, 0x01, v, 1) != 0);
    return harness_failures;
}
