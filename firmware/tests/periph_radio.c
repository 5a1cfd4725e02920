/* The RADIO driven the way a BLE controller drives it (NimBLE's nRF52 PHY):
 * BLE 1 Mbit, S0/LENGTH/S1-in-RAM layout, 3-byte CRC over the PDU, whitening
 * IV = channel, fast ramp-up, TIFS = 150 us, PPI channels 26/27 capturing
 * TIMER0 at ADDRESS and END.
 *   1. advertise: an ADV_IND on channel 37 with READY_START | END_DISABLE |
 *      DISABLED_RXEN, so the radio turns round to receive;
 *   2. the host-side peer (tests/peripherals/test_radio.py) answers with a
 *      SCAN_REQ 150 us after the advertisement ends; the radio receives it: ADDRESS,
 *      BCMATCH after the header, END, CRCSTATUS ok, RXMATCH 0, the PDU in RAM;
 *   3. answers with a SCAN_RSP through DISABLED_TXEN: it must start 150 us
 *      after the request ends (TIFS);
 *   4. listens again on channel 38 where the peer sends a packet with a bad
 *      CRC: CRCERROR and CRCSTATUS 0;
 *   5. RSSI: RSSISTART -> RSSIEND, RSSISAMPLE = 60 (-60 dBm);
 *   6. DISABLE in the Disabled state fires DISABLED again (drivers wait for it).
 * Times come from TIMER0 at 1 MHz captured through the PPI. */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RADIO  0x40001000u
#define TIMER0 0x40008000u
#define PPI    0x4001F000u
#define R(off) REG32(RADIO + (off))
#define T(off) REG32(TIMER0 + (off))

static uint8_t tx[40], rx[40];
static const uint8_t adva[6] = {0x11, 0x22, 0x33, 0x44, 0x55, 0xC6};

static void clear_events(void) {
    for (uint32_t off = 0x100; off <= 0x134; off += 4) R(off) = 0;
}

static int wait_event(uint32_t off, uint32_t limit) {
    uint32_t n = 0;
    while (!R(off) && n < limit) n++;
    return R(off) != 0;
}

static void channel(int freq_off, int index) {
    R(0x508) = freq_off;                 /* FREQUENCY: 2400 + */
    R(0x554) = index;                    /* DATAWHITEIV: bit 6 reads back as 1 */
}

int main(void) {
    /* TIMER0: 1 MHz, 32 bit, started */
    T(0x504) = 0; T(0x508) = 3; T(0x510) = 4; T(0x000) = 1;
    REG32(PPI + 0x504) = (1u << 26) | (1u << 27);   /* CHENSET: ADDRESS->CC1, END->CC2 */

    R(0x510) = 3;                                   /* MODE = Ble_1Mbit */
    R(0x514) = 8 | (1u << 8) | (1u << 20);           /* PCNF0: LFLEN 8, S0 1 byte, S1INCL */
    R(0x518) = 37 | (3u << 16) | (1u << 25);         /* PCNF1: MAXLEN 37, BALEN 3, WHITEEN */
    R(0x51C) = 0x89BED600u;                         /* BASE0 = AA << 8 */
    R(0x524) = 0x8E;                                /* PREFIX0 */
    R(0x52C) = 0; R(0x530) = 1;                     /* TXADDRESS 0, RXADDRESSES 1 */
    R(0x534) = 0x103; R(0x538) = 0x65B; R(0x53C) = 0x555555;   /* CRC: 3 bytes, skip addr */
    R(0x544) = 150;                                 /* TIFS */
    R(0x650) = 1;                                   /* MODECNF0: fast ramp-up */
    CHECK_EQ("DATAWHITEIV bit 6 hard-wired", (R(0x554) = 37, R(0x554)), 0x65);
    channel(2, 37);

    /* 1. ADV_IND: header, length, S1 byte (RAM only), AdvA, AD flags */
    tx[0] = 0x40; tx[1] = 9; tx[2] = 0;
    for (int i = 0; i < 6; i++) tx[3 + i] = adva[i];
    tx[9] = 2; tx[10] = 1; tx[11] = 6;
    R(0x504) = (uint32_t)tx;
    R(0x200) = (1u << 0) | (1u << 1) | (1u << 3) | (1u << 6);   /* READY_START END_DISABLE DISABLED_RXEN ADDRESS_BCSTART */
    R(0x560) = 16;                                  /* BCC: the header */
    clear_events();
    CHECK_EQ("STATE Disabled", R(0x550), 0);
    R(0x000) = 1;                                   /* TXEN */
    CHECK_EQ("STATE TxRu", R(0x550), 9);
    CHECK("TX ADDRESS", wait_event(0x104, 100000));
    uint32_t tx_addr = T(0x544);
    R(0x504) = (uint32_t)rx;                        /* receive into rx (DMA at RX START) */
    CHECK("TX END", wait_event(0x10C, 100000));
    uint32_t tx_end = T(0x548);
    /* ADDRESS -> END: header 2 + payload 9 + CRC 3 bytes, less the 4 us chain delay */
    CHECK_EQ("TX ADDRESS to END (us)", tx_end - tx_addr, (2 + 9 + 3) * 8 - 4);
    CHECK("DISABLED after TX", wait_event(0x110, 100000));
    R(0x100) = 0; R(0x104) = 0; R(0x10C) = 0; R(0x110) = 0; R(0x128) = 0;
    /* 2. turned round to RX by the shortcut; the peer's SCAN_REQ arrives */
    R(0x200) = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 6);   /* ... DISABLED_TXEN for the answer */
    CHECK("RX ADDRESS", wait_event(0x104, 200000));
    uint32_t rx_addr = T(0x544);
    CHECK_EQ("STATE Rx", R(0x550), 3);
    CHECK("BCMATCH after the header", wait_event(0x128, 100000));
    CHECK_EQ("header in RAM at BCMATCH", rx[0] & 0xF, 3);
    /* 3. the SCAN_RSP goes out through DISABLED_TXEN: set its buffer now */
    tx[0] = 0x44; tx[1] = 6 + 5; tx[2] = 0;
    tx[9] = 4; tx[10] = 9; tx[11] = 'e'; tx[12] = 'm'; tx[13] = 'u';
    CHECK("RX END", wait_event(0x10C, 100000));
    uint32_t rx_end = T(0x548);
    R(0x504) = (uint32_t)tx;
    CHECK_EQ("CRCSTATUS ok", R(0x400), 1);
    CHECK_EQ("CRCOK", R(0x130), 1);
    CHECK_EQ("RXMATCH", R(0x408), 0);
    CHECK_EQ("SCAN_REQ length", rx[1], 12);
    int same = 1;
    for (int i = 0; i < 6; i++) if (rx[3 + 6 + i] != adva[i]) same = 0;
    CHECK("SCAN_REQ names our AdvA", same);
    /* ADDRESS (6 us after the address) -> END (6 us after the CRC): PDU 14 + CRC 3 bytes */
    CHECK_EQ("RX ADDRESS to END (us)", rx_end - rx_addr, (2 + 12 + 3) * 8);
    R(0x10C) = 0; R(0x104) = 0; R(0x110) = 0;       /* the RX's own DISABLED too */
    CHECK("SCAN_RSP ADDRESS", wait_event(0x104, 200000));
    uint32_t rsp_addr = T(0x544);
    R(0x200) = (1u << 0) | (1u << 1);               /* no turn-round after this one */
    /* request's last bit = rx_end - 6; response's first bit = rsp_addr - 40 */
    CHECK_EQ("TIFS request end to response start (us)", (rsp_addr - 40) - (rx_end - 6), 150);
    CHECK("SCAN_RSP END", wait_event(0x10C, 100000));
    CHECK("DISABLED after SCAN_RSP", wait_event(0x110, 100000));
    R(0x200) = 0;
    clear_events();

    /* 4. listen on channel 38: the peer sends a packet with a bad CRC */
    channel(26, 38);
    R(0x504) = (uint32_t)rx;
    R(0x200) = 1u << 0;                             /* READY_START */
    R(0x004) = 1;                                   /* RXEN */
    CHECK("RX READY", wait_event(0x100, 100000));
    semihost_puts("LISTEN38\n");
    CHECK("bad packet END", wait_event(0x10C, 400000));
    CHECK_EQ("CRCSTATUS bad", R(0x400), 0);
    CHECK_EQ("CRCERROR", R(0x134), 1);

    /* 5. RSSI */
    R(0x014) = 1;
    CHECK("RSSIEND", wait_event(0x11C, 1000));
    CHECK_EQ("RSSISAMPLE", R(0x548), 60);
    R(0x010) = 1;                                   /* DISABLE from RX: at once */
    CHECK_EQ("DISABLED from RX", R(0x110), 1);
    CHECK_EQ("STATE Disabled again", R(0x550), 0);

    /* 6. DISABLE when already disabled: DISABLED fires again, at once */
    R(0x200) = 0;
    R(0x110) = 0;
    (void)R(0x110);
    R(0x010) = 1;
    CHECK_EQ("DISABLED when already disabled", R(0x110), 1);
    CHECK_EQ("STATE still Disabled", R(0x550), 0);
    return harness_failures;
}
