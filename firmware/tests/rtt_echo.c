/* RTT through the probe (tests/machine/test_rtt.py): a control block with two up
 * rings and one down ring (firmware/common/rtt.h), as J-Link or OpenOCD
 * would read it.
 * - up 0 "Terminal", 64 bytes, blocking: 360 bytes of text go through it,
 *   so the write completes only if the host drains it as the firmware waits;
 * - up 1 "Log", 32 bytes, skip when full: 12 messages of 12 bytes written in
 *   a burst; only whole messages may reach the host (the count is printed);
 * - down 0 "Terminal", 16 bytes: the host types "ok!" and the firmware
 *   echoes it on up 0 as "echo:ok!".
 * Variants (companions that break it): rtt_bad_id.c writes the id wrong (no
 * probe may find it: the blocking write gives up), rtt_bad_wroff.c puts a
 * WrOff beyond the Log ring's size (the probe must say so and skip it). */
#include "harness.h"
#include "cm4.h"
#include "rtt.h"
HARNESS_STATE

#ifndef RTT_ID
#define RTT_ID "SEGGER RTT"
#endif

static char up0[64], up1[32], down0[16];
static volatile uint32_t log_written;

static uint32_t cycles(void) { return DWT_CYCCNT; }

int main(void) {
    DEMCR |= 1u << 24; DWT_CTRL |= 1u;
    rtt_init_header();
    rtt_set_ring(&_SEGGER_RTT.up[0], "Terminal", up0, sizeof up0, RTT_BLOCK);
    rtt_set_ring(&_SEGGER_RTT.up[1], "Log", up1, sizeof up1, RTT_SKIP);
    rtt_set_ring(&_SEGGER_RTT.down[0], "Terminal", down0, sizeof down0, RTT_SKIP);
    rtt_block_limit = 1000000;            /* about 0.2 emulated s: 20 host polls */
    rtt_publish(RTT_ID);

    uint32_t sent = rtt_puts(0, "hello from rtt\n");
    char line[] = "line 00: abcdefghijklmnopqrstuvwxyz\n";   /* 36 bytes */
    for (int i = 0; i < 10; i++) {
        line[5] = '0' + i / 10; line[6] = '0' + i % 10;
        sent += rtt_write(0, line, sizeof line - 1);
    }
    /* a burst on the non-blocking ring: whole messages or nothing */
    char msg[] = "log msg #00\n";                            /* 12 bytes */
    for (int i = 0; i < 12; i++) {
        msg[9] = '0' + i / 10; msg[10] = '0' + i % 10;
        if (rtt_write(1, msg, sizeof msg - 1) == sizeof msg - 1) log_written++;
    }
#ifdef RTT_BAD_WROFF
    _SEGGER_RTT.up[1].wr = sizeof up1 + 8;     /* a firmware bug: beyond the ring */
#endif
    /* the host types into down 0; echo what arrives (a quarter of a second at most) */
    char got[8]; uint32_t n = 0, t0 = cycles();
    while (n < 3 && cycles() - t0 < 16000000u)
        n += rtt_read(0, got + n, 3 - n);
    sent += rtt_puts(0, "echo:");
    sent += rtt_write(0, got, n);
    sent += rtt_puts(0, "\n");
    int drained = rtt_drained(0, 1000000);

    semihost_puts("log_written="); put_dec(log_written);
    semihost_puts(" sent="); put_dec(sent);
    semihost_puts(" timeouts="); put_dec(rtt_block_timeouts);
    semihost_puts("\n");
    CHECK_EQ("blocking writes complete", sent, 15 + 360 + 5 + 3 + 1);
    CHECK_EQ("no blocking write gave up", rtt_block_timeouts, 0);
    CHECK("skip mode dropped some messages", log_written > 0 && log_written < 12);
    CHECK_EQ("down bytes arrived", n, 3);
    CHECK("the host drained up 0", drained);
    return harness_failures;
}
