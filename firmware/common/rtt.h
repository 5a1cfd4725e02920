/* A minimal RTT target side (our own code, not SEGGER's): a control block a
 * debug probe finds by its "SEGGER RTT" id, RTT_UP up rings (target -> host)
 * and RTT_DOWN down rings (host -> target), in the layout J-Link, OpenOCD and
 * pinetime-emu (emu/rtt.py) read:
 *
 *   char id[16]; int32 max_up; int32 max_down; ring up[max_up]; ring down[max_down];
 *   ring = { const char *name; char *buf; uint32 size; uint32 wr; uint32 rd; uint32 flags; }
 *
 * The writer of a ring owns wr, the reader owns rd; one byte of each ring
 * stays free so that wr == rd means empty.  flags & 3 is this side's mode when
 * an up ring is full: RTT_SKIP drops the whole write, RTT_TRIM writes what
 * fits, RTT_BLOCK waits for the host to read.  Include it in one file only
 * (it defines the control block, _SEGGER_RTT, as SEGGER's code names it). */
#ifndef RTT_H
#define RTT_H
#include <stdint.h>
#include <string.h>

#ifndef RTT_UP
#define RTT_UP 2
#endif
#ifndef RTT_DOWN
#define RTT_DOWN 1
#endif
#define RTT_SKIP 0u
#define RTT_TRIM 1u
#define RTT_BLOCK 2u

typedef struct {
    const char *name;
    char *buf;
    uint32_t size;
    volatile uint32_t wr;
    volatile uint32_t rd;
    uint32_t flags;
} rtt_ring;

typedef struct {
    char id[16];
    int32_t max_up;
    int32_t max_down;
    rtt_ring up[RTT_UP];
    rtt_ring down[RTT_DOWN];
} rtt_cb;

rtt_cb _SEGGER_RTT __attribute__((aligned(4)));

/* A blocking write gives up after this many polls of rd (0: never), and
 * every later one at once, so a test whose host never reads still ends;
 * SEGGER's code waits forever. */
static uint32_t rtt_block_limit;
static uint32_t rtt_block_timeouts;     /* blocking writes that gave up */

static inline void rtt_barrier(void) { __asm volatile("dmb" ::: "memory"); }

static void rtt_set_ring(rtt_ring *r, const char *name, char *buf, uint32_t size,
                         uint32_t flags) {
    r->name = name; r->buf = buf; r->size = size; r->wr = 0; r->rd = 0; r->flags = flags;
}

/* Write the id last, and not as one string literal: a probe must not find a
 * half-made block, nor a copy of the id in the image's constants. */
static void rtt_publish(const char *id10) {
    rtt_barrier();
    for (int i = 9; i >= 0; i--)
        _SEGGER_RTT.id[i] = id10[i];
    rtt_barrier();
}

static void rtt_init_header(void) {
    memset(&_SEGGER_RTT, 0, sizeof _SEGGER_RTT);
    _SEGGER_RTT.max_up = RTT_UP;
    _SEGGER_RTT.max_down = RTT_DOWN;
}

static uint32_t rtt_room(const rtt_ring *r) {
    uint32_t rd = r->rd, wr = r->wr;
    return rd > wr ? rd - wr - 1 : r->size - 1 - wr + rd;
}

static void rtt_put(rtt_ring *r, const uint8_t *p, uint32_t n) {
    uint32_t wr = r->wr;
    while (n--) {
        r->buf[wr] = (char)*p++;
        if (++wr == r->size) wr = 0;
    }
    rtt_barrier();          /* the data before the offset that publishes it */
    r->wr = wr;
}

/* Bytes written to up ring ``ch`` (fewer than n: skipped or trimmed). */
static uint32_t rtt_write(unsigned ch, const void *data, uint32_t n) {
    rtt_ring *r = &_SEGGER_RTT.up[ch];
    const uint8_t *p = data;
    uint32_t mode = r->flags & 3u, done = 0;
    if (mode == RTT_SKIP) {
        if (rtt_room(r) < n) return 0;
        rtt_put(r, p, n);
        return n;
    }
    if (mode == RTT_TRIM) {
        uint32_t k = rtt_room(r);
        if (k > n) k = n;
        rtt_put(r, p, k);
        return k;
    }
    while (done < n) {      /* RTT_BLOCK: as much as fits, then wait for the host */
        uint32_t k = rtt_room(r), polls = 0;
        while (k == 0) {
            if (rtt_block_limit && (rtt_block_timeouts || ++polls > rtt_block_limit)) {
                rtt_block_timeouts++;
                return done;
            }
            k = rtt_room(r);
        }
        if (k > n - done) k = n - done;
        rtt_put(r, p + done, k);
        done += k;
    }
    return done;
}

static uint32_t rtt_puts(unsigned ch, const char *s) { return rtt_write(ch, s, strlen(s)); }

/* Bytes read from down ring ``ch`` into buf (at most n). */
static uint32_t rtt_read(unsigned ch, void *buf, uint32_t n) {
    rtt_ring *r = &_SEGGER_RTT.down[ch];
    uint8_t *p = buf;
    uint32_t rd = r->rd, wr = r->wr, got = 0;
    rtt_barrier();
    while (rd != wr && got < n) {
        p[got++] = (uint8_t)r->buf[rd];
        if (++rd == r->size) rd = 0;
    }
    rtt_barrier();
    r->rd = rd;
    return got;
}

/* Up ring ``ch`` read empty by the host (polls at most ``limit`` times). */
static int rtt_drained(unsigned ch, uint32_t limit) {
    rtt_ring *r = &_SEGGER_RTT.up[ch];
    for (uint32_t i = 0; i < limit; i++)
        if (r->rd == r->wr) return 1;
    return r->rd == r->wr;
}
#endif
