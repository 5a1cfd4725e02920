/* A Bluetooth LE peripheral's link layer on the RADIO, TIMER0 and PPI, driven
 * the way a controller drives them (NimBLE's nRF52 PHY and LL: TIMER0 at
 * 1 MHz, the pre-programmed PPI channels, SHORTS for the T_IFS turn-round),
 * connected by the host-side central emu/blelink.py (tests/peripherals/test_radio_conn.py).
 * Core spec v5.x Vol 6 Part B.
 *   1. advertise a connectable ADV_IND on channel 37 (AdvA c7:05:04:03:02:01,
 *      random) and turn round to RX with DISABLED_RXEN: the central's
 *      CONNECT_IND comes T_IFS after it; its END time is captured in TIMER0
 *      CC[2] through PPI channel 27;
 *   2. parse LLData and set the RADIO up for the data channels: BASE0/PREFIX0
 *      from the access address, CRCINIT, FREQUENCY and DATAWHITEIV per channel;
 *   3. follow the connection: each event's channel by channel selection
 *      algorithm #1, RXEN from TIMER0 CC[0] (PPI 21) a window widening before
 *      the anchor (the first in the transmit window), the RX timeout from
 *      CC[1] (PPI 22; the ADDRESS capture through PPI 26 overwrites CC[1] when
 *      a packet comes, so the timeout never matches), the answer T_IFS after
 *      through END_DISABLE + DISABLED_TXEN, SN/NESN acknowledgement and
 *      retransmission, MD;
 *   4. data: LL_VERSION_IND, then LL_PERIPHERAL_FEATURE_REQ (the central
 *      answers both), an ATT Handle Value Notification (handle 0x0010,
 *      "hello") on L2CAP CID 4, the central's L2CAP PDU reassembled from its
 *      fragments and echoed back on its CID; control PDUs from the central
 *      answered;
 *   5. after at least 12 events and all of that, LL_TERMINATE_IND (0x13) and,
 *      once the central acknowledges it, the end.  Built with
 *      -DTERMINATE_ENDS_EVENT (build/periph_radio_conn_s132term.elf) it sends
 *      LL_TERMINATE_IND as Nordic's S132 does, with MD set and no listening
 *      after it in that event.
 * Sleeps are WFE with SCR.SEVONPEND on the RADIO and TIMER0 interrupts
 * (enabled in the peripherals, not in the NVIC). */
#include "harness.h"
#include "cm4.h"
HARNESS_STATE

#define RADIO  0x40001000u
#define TIMER0 0x40008000u
#define PPI    0x4001F000u
#define R(off) REG32(RADIO + (off))
#define T(off) REG32(TIMER0 + (off))

/* RADIO (PS 23.14): event i at 0x100 + 4i is INTEN bit i */
#define TASK_TXEN     0x000
#define TASK_DISABLE  0x010
#define EV(i)         (0x100 + 4 * (i))
#define ADDRESS       1
#define END           3
#define DISABLED      4
#define BIT(i)        (1u << (i))
#define SHORTS        0x200
#define INTENSET      0x304
#define INTENCLR      0x308
#define CRCSTATUS     0x400
#define PACKETPTR     0x504
#define FREQUENCY     0x508
#define BASE0         0x51C
#define PREFIX0       0x524
#define CRCINIT       0x53C
#define DATAWHITEIV   0x554
#define READY_START   BIT(0)
#define END_DISABLE   BIT(1)
#define DISABLED_TXEN BIT(2)
#define DISABLED_RXEN BIT(3)

/* TIMER0 at 1 MHz: CC[0] -> RXEN (PPI 21), CC[1] RX timeout -> DISABLE
 * (PPI 22) and the ADDRESS time (PPI 26), CC[2] the END time (PPI 27),
 * CC[3] now and the wake-up of a wait */
#define CC(n)        T(0x540 + 4 * (n))
#define COMPARE(n)   T(0x140 + 4 * (n))
#define PPI_CHENSET  REG32(PPI + 0x504)
#define PPI_CHENCLR  REG32(PPI + 0x508)
#define CH_RXEN      (1u << 21)
#define CH_TIMEOUT   (1u << 22)
#define CH_ADDRESS   (1u << 26)
#define CH_END       (1u << 27)

/* times in microseconds */
#define T_IFS        150
#define RAMPUP       40     /* TXEN/RXEN -> READY with MODECNF0.RU = Fast */
#define AA_US        40     /* preamble + access address at 1 Mbit */
#define RX_DELAY     6      /* RX ADDRESS and END come 6 us after their bits */
#define TX_END_EARLY 4      /* TX END comes 4 us before the last bit */
#define UNIT         1250
#define MAX_EVENTS   40

#define ADV_AA       0x8E89BED6u
#define LLID_CONT 1
#define LLID_START 2
#define LLID_CTRL 3

static const uint8_t adva[6] = {0x01, 0x02, 0x03, 0x04, 0x05, 0xC7};
static const uint8_t our_version[6] = {0x0C, 9, 0xFF, 0xFF, 0x34, 0x12};   /* 5.0, 0xffff, 0x1234 */
static uint8_t advbuf[40], rxbuf[40], txbuf[40];

static inline void wfe(void) { __asm volatile("wfe" ::: "memory"); }
static uint32_t now_us(void) { T(0x04C) = 1; return CC(3); }   /* CAPTURE[3] */
static int later(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }

static void put_hexd(uint32_t v, int digits) {
    char buf[9];
    for (int i = 0; i < digits; i++) {
        int d = (v >> (4 * (digits - 1 - i))) & 0xF;
        buf[i] = d < 10 ? '0' + d : 'a' + d - 10;
    }
    buf[digits] = 0;
    semihost_puts(buf);
}

/* "PASS event 3: heard on channel 21" */
static void check_event(uint32_t n, const char *what, uint32_t v, int ok) {
    if (!ok) harness_failures++;
    semihost_puts(ok ? "PASS event " : "FAIL event ");
    put_dec(n);
    semihost_puts(": ");
    semihost_puts(what);
    semihost_puts(" ");
    put_dec(v);
    semihost_puts("\n");
}

static void clear_radio_events(void) {
    for (int i = 0; i < 14; i++) R(EV(i)) = 0;
}

/* Sleep until one of the RADIO events in ``mask`` (INTEN bits) or TIMER0
 * reaching ``deadline``: the events seen, 0 at the deadline. */
static uint32_t wait_radio(uint32_t mask, uint32_t deadline) {
    uint32_t t = now_us();
    if (!later(deadline, t)) deadline = t + 2;
    R(INTENCLR) = 0xFFFFFFFFu;
    R(INTENSET) = mask;
    COMPARE(3) = 0;
    CC(3) = deadline;
    T(0x304) = 1u << 19;                       /* TIMER0 INTENSET COMPARE[3] */
    for (;;) {
        uint32_t got = 0;
        for (int i = 0; i < 14; i++)
            if ((mask >> i) & 1 && R(EV(i))) got |= 1u << i;
        if (got || COMPARE(3)) {
            R(INTENCLR) = 0xFFFFFFFFu;
            T(0x308) = 1u << 19;
            COMPARE(3) = 0;
            return got;
        }
        NVIC_ICPR(0) = (1u << 1) | (1u << 8);  /* a new pending wakes WFE (SEVONPEND) */
        wfe();
    }
}

static void set_channel(uint32_t ch) {
    R(FREQUENCY) = ch == 37 ? 2 : ch == 38 ? 26 : ch == 39 ? 80
                 : ch <= 10 ? 4 + 2 * ch : 28 + 2 * (ch - 11);
    R(DATAWHITEIV) = ch;
}

static void set_access_address(uint32_t aa, uint32_t crcinit) {
    R(BASE0) = aa << 8;
    R(PREFIX0) = aa >> 24;
    R(CRCINIT) = crcinit;
}

/* ---- the connection's parameters (LLData) and channel selection #1 ---- */
static uint32_t aa, crc_init, win_size, win_offset, interval, latency, timeout, hop, sca;
static uint8_t chm[5], used[37], n_used, last_unmapped;
static const uint16_t sca_ppm[8] = {500, 250, 150, 100, 75, 50, 30, 20};

static uint32_t next_channel(void) {
    last_unmapped = (last_unmapped + hop) % 37;
    if ((chm[last_unmapped >> 3] >> (last_unmapped & 7)) & 1)
        return last_unmapped;
    return used[last_unmapped % n_used];
}

/* window widening after ``dt`` us without an anchor: both sleep clocks' drift
 * (the central's SCA, ours 50 ppm) plus 16 us of jitter */
static uint32_t widening(uint32_t dt) {
    return 16 + ((sca_ppm[sca] + 50) * (dt / 1000) + 999) / 1000;
}

/* ---- PDUs to send, received and acknowledged ---- */
enum { TAG_ANSWER, TAG_VERSION, TAG_FEATURE, TAG_NOTIFY, TAG_ECHO, TAG_TERMINATE };
typedef struct { uint8_t llid, len, tag, data[27]; } pdu_t;
#define QN 8
static pdu_t txq[QN], rxd[QN], acked[QN];
static uint32_t txq_head, txq_n, rxd_n, acked_n;
static uint32_t sn, nesn, head_sent;     /* head_sent: our last packet was txq's head */
static uint32_t last_valid;              /* end of the last packet with a good CRC */

static void queue(uint8_t llid, uint8_t tag, const uint8_t *d, uint32_t len) {
    if (txq_n == QN || len > 27) {
        harness_failures++;
        semihost_puts("FAIL transmit queue full\n");
        return;
    }
    pdu_t *p = &txq[(txq_head + txq_n++) % QN];
    p->llid = llid; p->tag = tag; p->len = len;
    for (uint32_t i = 0; i < len; i++) p->data[i] = d[i];
}

/* an L2CAP PDU in 27-byte LL payloads: LLID start, then continuations */
static uint32_t queue_l2cap(uint16_t cid, const uint8_t *d, uint32_t len, uint8_t tag) {
    uint8_t pdu[80];
    uint32_t n = 4 + len, frags = 0;
    if (n > sizeof pdu) return 0;
    pdu[0] = len; pdu[1] = len >> 8; pdu[2] = cid; pdu[3] = cid >> 8;
    for (uint32_t i = 0; i < len; i++) pdu[4 + i] = d[i];
    for (uint32_t off = 0; off < n; off += 27, frags++)
        queue(off ? LLID_CONT : LLID_START, tag, pdu + off, n - off > 27 ? 27 : n - off);
    return frags;
}

static void copy_pdu(pdu_t *dst, const pdu_t *src) {
    dst->llid = src->llid; dst->len = src->len; dst->tag = src->tag;
    for (uint32_t i = 0; i < src->len; i++) dst->data[i] = src->data[i];
}

/* ---- one connection event ---- */
struct event {
    int heard, packets, crc_errors, stuck;
    uint32_t anchor;          /* the first packet's first bit */
    int tifs_n, central_tifs_n;
    uint32_t tifs, central_tifs;   /* the worst (furthest from 150 us) seen */
};

static void keep_worst(uint32_t *worst, int *n, uint32_t v) {
    int32_t d = (int32_t)v - T_IFS, w = (int32_t)*worst - T_IFS;
    if (!*n || (d < 0 ? -d : d) > (w < 0 ? -w : w)) *worst = v;
    ++*n;
}

/* Listen from ``rx_on`` (TIMER0 us; RXEN by CC[0]) until ``rx_until`` (DISABLE
 * by CC[1]) for the central's packet; answer each packet T_IFS after it and
 * go on while either side has more data. */
static void conn_event(struct event *e, uint32_t rx_on, uint32_t rx_until) {
    R(SHORTS) = READY_START | END_DISABLE;
    R(PACKETPTR) = (uint32_t)rxbuf;
    clear_radio_events();
    COMPARE(0) = 0; COMPARE(1) = 0;
    CC(0) = rx_on;
    CC(1) = rx_until;
    PPI_CHENSET = CH_RXEN | CH_TIMEOUT;
    uint32_t tx_last_bit = 0;
    for (;;) {
        uint32_t got = wait_radio(BIT(ADDRESS) | BIT(DISABLED), rx_until + 100);
        PPI_CHENCLR = CH_RXEN | CH_TIMEOUT;
        if (!(got & BIT(ADDRESS))) {            /* the RX timeout disabled the radio */
            if (!got) {
                e->stuck = 1;
                R(TASK_DISABLE) = 1;
                wait_radio(BIT(DISABLED), now_us() + 100);
            }
            R(EV(DISABLED)) = 0;
            break;
        }
        /* a packet: the answer goes out T_IFS after its end */
        R(SHORTS) = READY_START | END_DISABLE | DISABLED_TXEN;
        R(EV(ADDRESS)) = 0;
        uint32_t start = CC(1) - RX_DELAY - AA_US;
        if (!e->heard) {
            e->heard = 1;
            e->anchor = start;
        } else {
            keep_worst(&e->central_tifs, &e->central_tifs_n, start - tx_last_bit);
        }
        if (!(wait_radio(BIT(END), start + 400) & BIT(END))) { e->stuck = 1; break; }
        uint32_t rx_end = CC(2);
        uint32_t crc_ok = R(CRCSTATUS) & 1;
        uint8_t hdr = rxbuf[0];
        uint32_t more = 0, fresh = 0;
        e->packets++;
        if (crc_ok) {
            last_valid = rx_end - RX_DELAY;
            if (((hdr >> 2) & 1) != sn) {       /* NESN moved on: our packet got through */
                sn ^= 1;
                if (head_sent && txq_n) {
                    if (acked_n < QN) copy_pdu(&acked[acked_n++], &txq[txq_head]);
                    txq_head = (txq_head + 1) % QN;
                    txq_n--;
                }
            }
            if (((hdr >> 3) & 1) == nesn) {     /* SN is the one we expect: new data */
                nesn ^= 1;
                fresh = 1;
            }
            more = (hdr >> 4) & 1;              /* the central's MD */
        } else {
            e->crc_errors++;                    /* answered, nothing acknowledged */
        }
        /* the answer: txq's head (again, until acknowledged) or an empty PDU */
        const pdu_t *p = txq_n ? &txq[txq_head] : 0;
        uint32_t md = txq_n > 1;
        more = crc_ok && (more || md);
#ifdef TERMINATE_ENDS_EVENT
        /* as Nordic's S132 does: LL_TERMINATE_IND goes out with MD set and the
         * event ends there, without listening: the central's acknowledgement
         * has to come in a later event */
        if (p && p->tag == TAG_TERMINATE) {
            md = 1;
            more = 0;
        }
#endif
        txbuf[0] = (p ? p->llid : LLID_CONT) | nesn << 2 | sn << 3 | md << 4;
        txbuf[1] = p ? p->len : 0;
        txbuf[2] = 0;
        for (uint32_t i = 0; p && i < p->len; i++) txbuf[3 + i] = p->data[i];
        head_sent = p != 0;
        R(PACKETPTR) = (uint32_t)txbuf;
        R(SHORTS) = READY_START | END_DISABLE | (more ? DISABLED_RXEN : 0);
        R(EV(END)) = 0;
        R(EV(DISABLED)) = 0;                    /* the RX's, at END: TXEN is under way */
        if (fresh && rxbuf[1] && rxd_n < QN) {
            pdu_t *r = &rxd[rxd_n++];
            r->llid = hdr & 3;
            r->len = rxbuf[1] > 27 ? 27 : rxbuf[1];
            r->tag = 0;
            for (uint32_t i = 0; i < r->len; i++) r->data[i] = rxbuf[3 + i];
        }
        /* our packet */
        if (!(wait_radio(BIT(ADDRESS), rx_end + 400) & BIT(ADDRESS))) { e->stuck = 1; break; }
        R(EV(ADDRESS)) = 0;
        keep_worst(&e->tifs, &e->tifs_n, (CC(1) - AA_US) - (rx_end - RX_DELAY));
        R(PACKETPTR) = (uint32_t)rxbuf;         /* for the RX after it: EasyDMA read txbuf */
        if (!(wait_radio(BIT(END), rx_end + 800) & BIT(END))) { e->stuck = 1; break; }
        tx_last_bit = CC(2) + TX_END_EARLY;
        if (!(wait_radio(BIT(DISABLED), tx_last_bit + 50) & BIT(DISABLED))) { e->stuck = 1; break; }
        R(EV(END)) = 0;
        R(EV(DISABLED)) = 0;
        if (!more)
            break;
        /* the central's next packet, T_IFS after ours (RXEN by DISABLED_RXEN) */
        R(SHORTS) = READY_START | END_DISABLE;
        rx_until = tx_last_bit + T_IFS + AA_US + RX_DELAY + 16;
        COMPARE(1) = 0;
        CC(1) = rx_until;
        PPI_CHENSET = CH_TIMEOUT;
    }
    R(SHORTS) = 0;
}

/* ---- what the connection is for ---- */
static int version_acked, got_version, feature_sent, got_features, notify_acked;
static int got_l2cap, echo_frags, echo_acked, terminate_acked, central_terminated;
static uint8_t l2buf[80];
static uint32_t l2have, l2need, l2frags;

static void on_acked(const pdu_t *p, uint32_t n) {
    switch (p->tag) {
    case TAG_VERSION: version_acked = 1; break;
    case TAG_NOTIFY:
        notify_acked = 1;
        semihost_puts("notification acknowledged in event ");
        put_dec(n);
        semihost_puts("\n");
        break;
    case TAG_ECHO: echo_acked++; break;
    case TAG_TERMINATE: terminate_acked = 1; break;
    default: break;
    }
}

static void on_control(const uint8_t *c, uint32_t len) {
    static const uint8_t feature_req[9] = {0x0E, 0, 0, 0, 0, 0, 0, 0, 0};
    uint8_t a[9];
    switch (c[0]) {
    case 0x0C:                                  /* LL_VERSION_IND */
        semihost_puts("central LL_VERSION_IND: VersNr ");
        put_dec(c[1]);
        semihost_puts(" CompId 0x");
        put_hexd(c[2] | c[3] << 8, 4);
        semihost_puts(" SubVersNr 0x");
        put_hexd(c[4] | c[5] << 8, 4);
        semihost_puts("\n");
        CHECK_EQ("LL_VERSION_IND length", len, 6);
        CHECK("the central's LL_VERSION_IND answers ours", version_acked && !got_version);
        got_version = 1;
        queue(LLID_CTRL, TAG_FEATURE, feature_req, sizeof feature_req);
        feature_sent = 1;
        break;
    case 0x09:                                  /* LL_FEATURE_RSP */
        semihost_puts("central LL_FEATURE_RSP: features 0x");
        for (int i = 8; i >= 1; i--) put_hexd(c[i], 2);
        semihost_puts("\n");
        CHECK_EQ("LL_FEATURE_RSP length", len, 9);
        CHECK("LL_FEATURE_RSP answers LL_PERIPHERAL_FEATURE_REQ", feature_sent && !got_features);
        got_features = 1;
        break;
    case 0x02:                                  /* LL_TERMINATE_IND */
        semihost_puts("central LL_TERMINATE_IND reason 0x");
        put_hexd(c[1], 2);
        semihost_puts("\n");
        central_terminated = 1;
        break;
    case 0x12:                                  /* LL_PING_REQ */
        a[0] = 0x13;
        queue(LLID_CTRL, TAG_ANSWER, a, 1);
        break;
    case 0x08:                                  /* LL_FEATURE_REQ */
        a[0] = 0x09;
        for (int i = 1; i < 9; i++) a[i] = 0;
        queue(LLID_CTRL, TAG_ANSWER, a, 9);
        break;
    case 0x14:                                  /* LL_LENGTH_REQ: 27 bytes, 328 us */
        a[0] = 0x15; a[1] = 27; a[2] = 0; a[3] = 0x48; a[4] = 1;
        a[5] = 27; a[6] = 0; a[7] = 0x48; a[8] = 1;
        queue(LLID_CTRL, TAG_ANSWER, a, 9);
        break;
    case 0x07: case 0x0D: case 0x11:            /* UNKNOWN_RSP, REJECT_IND, REJECT_EXT_IND */
        semihost_puts("central refused LL opcode 0x");
        put_hexd(c[1], 2);
        semihost_puts("\n");
        break;
    default:
        a[0] = 0x07; a[1] = c[0];
        queue(LLID_CTRL, TAG_ANSWER, a, 2);
        break;
    }
}

static void on_l2cap(uint32_t n) {
    uint32_t len = l2need - 4, cid = l2buf[2] | l2buf[3] << 8;
    char text[80];
    for (uint32_t i = 0; i < len; i++) text[i] = l2buf[4 + i] >= 32 && l2buf[4 + i] < 127 ? l2buf[4 + i] : '.';
    text[len] = 0;
    semihost_puts("L2CAP CID 0x");
    put_hexd(cid, 4);
    semihost_puts(", ");
    put_dec(len);
    semihost_puts(" bytes in ");
    put_dec(l2frags);
    semihost_puts(" fragments (event ");
    put_dec(n);
    semihost_puts("): ");
    semihost_puts(text);
    semihost_puts("\n");
    if (cid == 4)
        return;                                 /* ATT from the central: not served here */
    CHECK_EQ("L2CAP PDU in 27-byte fragments", l2frags, (l2need + 26) / 27);
    got_l2cap = 1;
    echo_frags += queue_l2cap(cid, l2buf + 4, len, TAG_ECHO);
}

static void on_data(const pdu_t *p, uint32_t n) {
    if (p->llid == LLID_CTRL) {
        on_control(p->data, p->len);
        return;
    }
    if (p->llid == LLID_START) {
        l2have = l2frags = 0;
        l2need = p->len >= 2 ? 4 + (p->data[0] | p->data[1] << 8) : 0;
        if (l2need > sizeof l2buf) {
            semihost_puts("FAIL L2CAP PDU too long for the test\n");
            harness_failures++;
            l2need = 0;
        }
    } else if (!l2need) {
        semihost_puts("FAIL continuation without a start\n");
        harness_failures++;
        return;
    }
    for (uint32_t i = 0; i < p->len && l2have < sizeof l2buf; i++) l2buf[l2have++] = p->data[i];
    l2frags++;
    if (l2need && l2have >= l2need) {
        on_l2cap(n);
        l2need = 0;
    }
}

/* ---- advertising: ADV_IND, then the CONNECT_IND T_IFS after it ---- */
#ifndef ADV_ATTEMPTS
#define ADV_ATTEMPTS 10          /* advertising events, 20 ms apart, before giving up */
#endif
static uint32_t ci_end;                  /* the CONNECT_IND's last bit */

static int advertise(void) {
    /* header (ADV_IND, TxAdd random), length, S1 byte (RAM only), AdvA,
     * flags, complete name "emu-conn" */
    static const uint8_t ad[13] = {2, 1, 6, 9, 9, 'e', 'm', 'u', '-', 'c', 'o', 'n', 'n'};
    advbuf[0] = 0x40; advbuf[1] = 6 + sizeof ad; advbuf[2] = 0;
    for (int i = 0; i < 6; i++) advbuf[3 + i] = adva[i];
    for (uint32_t i = 0; i < sizeof ad; i++) advbuf[9 + i] = ad[i];
    set_access_address(ADV_AA, 0x555555);
    for (int attempt = 0; attempt < ADV_ATTEMPTS; attempt++) {
        set_channel(37);
        R(PACKETPTR) = (uint32_t)advbuf;
        R(SHORTS) = READY_START | END_DISABLE | DISABLED_RXEN;
        clear_radio_events();
        uint32_t t0 = now_us();
        R(TASK_TXEN) = 1;
        if (!wait_radio(BIT(ADDRESS), t0 + 400)) break;
        R(PACKETPTR) = (uint32_t)rxbuf;         /* EasyDMA read advbuf at START */
        if (!wait_radio(BIT(END), t0 + 800)) break;
        uint32_t adv_end = CC(2) + TX_END_EARLY;
        if (!wait_radio(BIT(DISABLED), adv_end + 50)) break;
        /* turned round by DISABLED_RXEN: no answer after what comes */
        R(SHORTS) = READY_START | END_DISABLE;
        clear_radio_events();
        COMPARE(1) = 0;
        CC(1) = adv_end + T_IFS + AA_US + RX_DELAY + 16;
        PPI_CHENSET = CH_TIMEOUT;
        uint32_t got = wait_radio(BIT(ADDRESS) | BIT(DISABLED), adv_end + 400);
        PPI_CHENCLR = CH_TIMEOUT;
        if (got & BIT(ADDRESS)) {
            uint32_t start = CC(1) - RX_DELAY - AA_US;
            if (!wait_radio(BIT(END), start + 600)) break;
            ci_end = CC(2) - RX_DELAY;
            uint32_t crc_ok = R(CRCSTATUS) & 1;
            int ours = 1;
            for (int i = 0; i < 6; i++) if (rxbuf[3 + 6 + i] != adva[i]) ours = 0;
            if (crc_ok && (rxbuf[0] & 0xF) == 5 && ours) {
                CHECK_EQ("CONNECT_IND CRC ok", crc_ok, 1);
                CHECK_EQ("PDU type CONNECT_IND", rxbuf[0] & 0xF, 5);
                CHECK_EQ("CONNECT_IND length", rxbuf[1], 34);
                CHECK("CONNECT_IND AdvA is ours", ours);
                CHECK_EQ("RxAdd: our address is random", (rxbuf[0] >> 7) & 1, 1);
                CHECK_EQ("ChSel 0: channel selection algorithm #1", (rxbuf[0] >> 5) & 1, 0);
                CHECK_EQ("CONNECT_IND T_IFS after the ADV_IND (us)", start - adv_end, T_IFS);
                semihost_puts("InitA ");
                for (int i = 5; i >= 0; i--) {
                    put_hexd(rxbuf[3 + i], 2);
                    if (i) semihost_puts(":");
                }
                semihost_puts((rxbuf[0] >> 6) & 1 ? " random\n" : " public\n");
                wait_radio(BIT(DISABLED), ci_end + 50);
                clear_radio_events();
                return 1;
            }
            semihost_puts("not a CONNECT_IND for us\n");
            wait_radio(BIT(DISABLED), now_us() + 50);
        }
        /* the next advertising event, 20 ms on */
        R(SHORTS) = 0;
        wait_radio(0, t0 + 20000);
    }
    R(SHORTS) = 0;
    return 0;
}

static void parse_lldata(const uint8_t *ll) {
    aa = ll[0] | ll[1] << 8 | ll[2] << 16 | (uint32_t)ll[3] << 24;
    crc_init = ll[4] | ll[5] << 8 | ll[6] << 16;
    win_size = ll[7];
    win_offset = ll[8] | ll[9] << 8;
    interval = ll[10] | ll[11] << 8;
    latency = ll[12] | ll[13] << 8;
    timeout = ll[14] | ll[15] << 8;
    for (int i = 0; i < 5; i++) chm[i] = ll[16 + i];
    chm[4] &= 0x1F;                             /* 37 data channels */
    hop = ll[21] & 0x1F;
    sca = ll[21] >> 5;
    n_used = 0;
    for (int c = 0; c < 37; c++)
        if ((chm[c >> 3] >> (c & 7)) & 1) used[n_used++] = c;
    semihost_puts("LLData AA 0x");
    put_hexd(aa, 8);
    semihost_puts(" CRCInit 0x");
    put_hexd(crc_init, 6);
    semihost_puts(" WinSize ");
    put_dec(win_size);
    semihost_puts(" WinOffset ");
    put_dec(win_offset);
    semihost_puts(" Interval ");
    put_dec(interval);
    semihost_puts(" Latency ");
    put_dec(latency);
    semihost_puts(" Timeout ");
    put_dec(timeout);
    semihost_puts(" ChM 0x");
    put_hexd(chm[4], 2);
    put_hexd(chm[0] | chm[1] << 8 | chm[2] << 16 | (uint32_t)chm[3] << 24, 8);
    semihost_puts(" Hop ");
    put_dec(hop);
    semihost_puts(" SCA ");
    put_dec(sca);
    semihost_puts("\n");
    int run = 1, longest = 1;
    for (int b = 1; b < 32; b++) {
        run = ((aa >> b) & 1) == ((aa >> (b - 1)) & 1) ? run + 1 : 1;
        if (run > longest) longest = run;
    }
    CHECK("access address is not the advertising one", aa != ADV_AA);
    CHECK("access address: at most six equal bits in a row", longest <= 6);
    CHECK("WinSize 1..8", win_size >= 1 && win_size <= 8);
    CHECK("Interval 7.5 ms..4 s", interval >= 6 && interval <= 3200);
    CHECK("WinOffset within the interval", win_offset <= interval);
    CHECK("Hop 5..16", hop >= 5 && hop <= 16);
    CHECK("two used channels at least", n_used >= 2);
    CHECK("supervision timeout over two intervals (with latency)",
          timeout * 10000u > (1 + latency) * interval * UNIT * 2u);
}

int main(void) {
    SCB_SCR |= 1u << 4;                         /* SEVONPEND: pending IRQs wake WFE */
    T(0x504) = 0; T(0x508) = 3; T(0x510) = 4;   /* TIMER0: timer, 32 bit, 1 MHz */
    T(0x000) = 1;
    PPI_CHENSET = CH_ADDRESS | CH_END;          /* ADDRESS -> CC[1], END -> CC[2] */

    R(0x510) = 3;                               /* MODE = Ble_1Mbit */
    R(0x514) = 8 | (1u << 8) | (1u << 20);      /* PCNF0: LFLEN 8, S0 1 byte, S1INCL */
    R(0x518) = 37 | (3u << 16) | (1u << 25);    /* PCNF1: MAXLEN 37, BALEN 3, WHITEEN */
    R(0x52C) = 0; R(0x530) = 1;                 /* TXADDRESS 0, RXADDRESSES 1 */
    R(0x534) = 0x103; R(0x538) = 0x65B;         /* CRC: 3 bytes, skip the address */
    R(0x544) = T_IFS;
    R(0x650) = 1;                               /* MODECNF0: fast ramp-up */

    int connected = advertise();
    CHECK("CONNECT_IND received", connected);
    if (!connected)
        return harness_failures;
    parse_lldata(rxbuf + 3 + 12);
    set_access_address(aa, crc_init);

    queue(LLID_CTRL, TAG_VERSION, our_version, sizeof our_version);
    static const uint8_t notify[8] = {0x1B, 0x10, 0x00, 'h', 'e', 'l', 'l', 'o'};
    queue_l2cap(4, notify, sizeof notify, TAG_NOTIFY);

    uint32_t interval_us = interval * UNIT;
    uint32_t win_start = ci_end + UNIT + win_offset * UNIT;
    uint32_t anchor = 0, anchor_event = 0, heard = 0;
    int have_anchor = 0, established = 0, lost = 0, stuck = 0, terminating = 0;
    last_valid = ci_end;
    for (uint32_t n = 0; n < MAX_EVENTS && !terminate_acked && !central_terminated; n++) {
        uint32_t ch = next_channel();
        uint32_t expect, w, rx_until;
        if (have_anchor) {
            expect = anchor + (n - anchor_event) * interval_us;
            w = widening(expect - anchor);
            rx_until = expect + w + AA_US + RX_DELAY + 2;
        } else {                  /* the transmit window, every interval until heard */
            expect = win_start + n * interval_us;
            w = widening(expect - ci_end);
            rx_until = expect + win_size * UNIT + w + AA_US + RX_DELAY + 2;
        }
        if (established ? later(expect - last_valid, timeout * 10000u) : n >= 6) {
            lost = 1;
            break;
        }
        uint32_t rx_on = expect - w - RAMPUP;
        if (!later(rx_on, now_us() + 20)) {
            check_event(n, "scheduled in time, channel", ch, 0);
            continue;
        }
        set_channel(ch);
        struct event e = {0};
        rxd_n = acked_n = 0;
        conn_event(&e, rx_on, rx_until);
        check_event(n, "heard on channel", ch, e.heard);
        if (e.stuck) {
            check_event(n, "radio events in time, packets", e.packets, 0);
            stuck = 1;
        }
        if (e.heard) {
            heard++;
            if (!have_anchor)
                check_event(n, "anchor in the transmit window, us after its start",
                            e.anchor - expect, !later(expect, e.anchor)
                            && !later(e.anchor, expect + win_size * UNIT));
            else
                check_event(n, "anchor after the last one (us)", e.anchor - anchor,
                            e.anchor - anchor == (n - anchor_event) * interval_us);
            anchor = e.anchor;
            anchor_event = n;
            have_anchor = 1;
            check_event(n, "CRC ok, packets", e.packets, e.crc_errors == 0);
            if (e.tifs_n)
                check_event(n, "answered T_IFS after (us)", e.tifs, e.tifs == T_IFS);
            if (e.central_tifs_n)
                check_event(n, "central's next packet T_IFS after ours (us)", e.central_tifs,
                            e.central_tifs == T_IFS);
            if (e.packets > e.crc_errors)
                established = 1;
        }
        for (uint32_t i = 0; i < acked_n; i++) on_acked(&acked[i], n);
        for (uint32_t i = 0; i < rxd_n; i++) on_data(&rxd[i], n);
        if (!terminating && n >= 11 && got_version && got_features && notify_acked && got_l2cap
            && echo_acked == echo_frags && !txq_n) {
            static const uint8_t terminate[2] = {0x02, 0x13};   /* remote user terminated */
            queue(LLID_CTRL, TAG_TERMINATE, terminate, sizeof terminate);
            terminating = 1;
        }
    }
    R(SHORTS) = 0;
    PPI_CHENCLR = CH_RXEN | CH_TIMEOUT | CH_ADDRESS | CH_END;
    CHECK("connection established", established);
    CHECK("no supervision timeout", !lost);
    CHECK("no radio event missing", !stuck);
    CHECK("12 connection events heard", heard >= 12);
    CHECK("LL_VERSION_IND exchanged", version_acked && got_version);
    CHECK("LL_PERIPHERAL_FEATURE_REQ answered", got_features);
    CHECK("notification acknowledged", notify_acked);
    CHECK("L2CAP PDU from the central reassembled", got_l2cap);
    CHECK("echo acknowledged", echo_frags > 0 && echo_acked == echo_frags);
    CHECK("not terminated by the central", !central_terminated);
    CHECK("LL_TERMINATE_IND acknowledged", terminate_acked);
    return harness_failures;
}
