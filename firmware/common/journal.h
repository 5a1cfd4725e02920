/* A journaling writer on the NVMC (internal flash) and on the PineTime's
 * SPI NOR, for the power-cut campaigns (emu/powercut.py,
 * tests/machine/test_powercut.py).  Each store keeps a counter in a
 * record {magic, seq, value, check}:
 *
 *   safe (journal_safe.c): two slots; an update erases the slot that does
 *   not hold the newest record, writes seq, value and check, and the magic
 *   last; boot takes the valid record with the highest seq;
 *   unsafe (journal_unsafe.c, JOURNAL_UNSAFE): one slot, erased and then
 *   written: a cut between the two loses the counter.
 *
 * The console says what the campaign's "journal" check reads:
 *   RECOVERED <store> <value|none>   at boot
 *   COMMITTED <store> <value>        once an update is durable
 *   DONE                             when both stores reached COUNT. */
#ifndef JOURNAL_H
#define JOURNAL_H
#include "pinetime.h"

#define COUNT 3
#define MAGIC 0x4A524E4Cu                       /* "JRNL" */

#define NVMC_READY     REG32(0x4001E400)
#define NVMC_CONFIG    REG32(0x4001E504)
#define NVMC_ERASEPAGE REG32(0x4001E508)

typedef struct { uint32_t magic, seq, value, check; } record_t;

static uint32_t check_of(const record_t *r) {
    return ~(r->magic ^ (r->seq * 0x9E3779B9u) ^ (r->value * 0x85EBCA6Bu));
}
static int valid(const record_t *r) { return r->magic == MAGIC && r->check == check_of(r); }

/* -- the NVMC -------------------------------------------------------------- */
static const uint32_t nvmc_slot[2] = {0x0007D000u, 0x0007E000u};

static void nvmc_wait(void) { while (!NVMC_READY) { } }
static void nvmc_read(int s, record_t *r) { *r = *(const volatile record_t *)nvmc_slot[s]; }
static void nvmc_write(int s, const record_t *r) {
    volatile uint32_t *w = (volatile uint32_t *)nvmc_slot[s];
    NVMC_CONFIG = 2; NVMC_ERASEPAGE = nvmc_slot[s]; nvmc_wait();
    NVMC_CONFIG = 1;
    w[1] = r->seq; nvmc_wait();
    w[2] = r->value; nvmc_wait();
    w[3] = r->check; nvmc_wait();
    w[0] = r->magic; nvmc_wait();                 /* the magic last: a record is whole */
    NVMC_CONFIG = 0;
}

/* -- the NOR (XT25F32B on SPI0, CS P0.05) ---------------------------------- */
static const uint32_t nor_slot[2] = {0x00020000u, 0x00021000u};

static void nor_begin(void) { GPIO_OUTCLR = 1u << PIN_NOR_CS; }
static void nor_end(void) { GPIO_OUTSET = 1u << PIN_NOR_CS; }
static void nor_cmd(uint8_t c) { nor_begin(); pt_spi_xfer(c); nor_end(); }
static void nor_addr(uint8_t c, uint32_t a) {
    pt_spi_xfer(c); pt_spi_xfer(a >> 16); pt_spi_xfer(a >> 8); pt_spi_xfer(a);
}
static void nor_wait(void) {
    for (;;) {
        nor_begin(); pt_spi_xfer(0x05); uint8_t st = pt_spi_xfer(0); nor_end();
        if (!(st & 1)) return;
        for (volatile int i = 0; i < 3000; i++) { }   /* ~0.3 ms between polls */
    }
}
static void nor_read(int s, record_t *r) {
    uint8_t *b = (uint8_t *)r;
    nor_begin(); nor_addr(0x03, nor_slot[s]);
    for (unsigned i = 0; i < sizeof *r; i++) b[i] = pt_spi_xfer(0);
    nor_end();
}
static void nor_write(int s, const record_t *r) {
    const uint8_t *b = (const uint8_t *)r;
    nor_cmd(0x06); nor_begin(); nor_addr(0x20, nor_slot[s]); nor_end(); nor_wait();
    nor_cmd(0x06); nor_begin(); nor_addr(0x02, nor_slot[s] + 4);      /* seq, value, check */
    for (unsigned i = 4; i < sizeof *r; i++) pt_spi_xfer(b[i]);
    nor_end(); nor_wait();
    nor_cmd(0x06); nor_begin(); nor_addr(0x02, nor_slot[s]);          /* the magic last */
    for (unsigned i = 0; i < 4; i++) pt_spi_xfer(b[i]);
    nor_end(); nor_wait();
}

/* -- the journal ------------------------------------------------------------ */
typedef struct {
    const char *name;
    void (*read)(int, record_t *);
    void (*write)(int, const record_t *);
} store_t;

static int newest(const store_t *st, record_t *out) {
    record_t r[2];
    st->read(0, &r[0]);
    st->read(1, &r[1]);
#ifdef JOURNAL_UNSAFE
    r[1].magic = 0;                               /* one slot only */
#endif
    int best = -1;
    for (int i = 0; i < 2; i++)
        if (valid(&r[i]) && (best < 0 || r[i].seq > r[best].seq))
            best = i;
    if (best >= 0)
        *out = r[best];
    return best;
}

static void update(const store_t *st, uint32_t value) {
    record_t cur, next;
    int at = newest(st, &cur);
    next.magic = MAGIC;
    next.seq = at >= 0 ? cur.seq + 1 : 1;
    next.value = value;
    next.check = check_of(&next);
#ifdef JOURNAL_UNSAFE
    st->write(0, &next);                          /* erase the only copy, then write */
#else
    st->write(at == 0 ? 1 : 0, &next);            /* the other slot: the newest survives */
#endif
}

static void journal(const store_t *st) {
    record_t r;
    int at = newest(st, &r);
    semihost_puts("RECOVERED "); semihost_puts(st->name); semihost_puts(" ");
    if (at < 0) semihost_puts("none"); else put_dec(r.value);
    semihost_puts("\n");
    for (uint32_t v = at < 0 ? 1 : r.value + 1; v <= COUNT; v++) {
        update(st, v);
        semihost_puts("COMMITTED "); semihost_puts(st->name); semihost_puts(" ");
        put_dec(v); semihost_puts("\n");
    }
}

static int journal_main(void) {
    static const store_t nvmc = {"nvmc", nvmc_read, nvmc_write};
    static const store_t nor = {"nor", nor_read, nor_write};
    pt_gpio_init();
    pt_spi_init();
    nor_cmd(0xAB);                                /* release from deep power-down */
    journal(&nvmc);
    journal(&nor);
    semihost_puts("DONE\n");
    return 0;
}
#endif
