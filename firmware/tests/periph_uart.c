/* UART: legacy UART0 polled hello, then UARTE0 echo (ENDRX interrupt,
 * EasyDMA) of what the host sends. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define U 0x40002000u
static volatile int rx_done;
void IRQ2_Handler(void) {
    if (REG32(U + 0x110)) { REG32(U + 0x110) = 0; (void)REG32(U + 0x110); rx_done = 1; }
}
static uint8_t buf[8];

int main(void) {
    REG32(U + 0x50C) = 6; REG32(U + 0x514) = 8;
    REG32(U + 0x524) = 0x01D7E000u;      /* 115200 */
    REG32(U + 0x500) = 4;                /* legacy UART */
    REG32(U + 0x008) = 1;                /* STARTTX */
    const char *s = "hi\n";
    int ok = 1;
    for (int i = 0; s[i]; i++) {
        REG32(U + 0x51C) = s[i];
        int n = 0;
        while (!REG32(U + 0x11C) && n < 100000) n++;
        ok &= n > 10 && n < 100000;      /* a byte takes ~87 us */
        REG32(U + 0x11C) = 0;
    }
    CHECK("uart TXDRDY per byte after a byte time", ok);
    REG32(U + 0x00C) = 1;
    REG32(U + 0x500) = 0;

    REG32(U + 0x500) = 8;                /* UARTE */
    REG32(U + 0x534) = (uint32_t)buf; REG32(U + 0x538) = 4;
    REG32(U + 0x304) = 1u << 4;          /* INTENSET.ENDRX */
    irq_enable(2);
    REG32(U + 0x000) = 1;                /* STARTRX */
    while (!rx_done) __asm volatile("wfi");
    CHECK_EQ("uarte RXD.AMOUNT", REG32(U + 0x53C), 4);
    REG32(U + 0x544) = (uint32_t)buf; REG32(U + 0x548) = 4;
    REG32(U + 0x008) = 1;
    while (!REG32(U + 0x120)) ;
    CHECK_EQ("uarte TXD.AMOUNT", REG32(U + 0x54C), 4);
    return harness_failures;
}
