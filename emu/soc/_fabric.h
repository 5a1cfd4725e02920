/*
 * emu.soc._mmio: the register-access fabric in C, the module's own header.
 *
 * The native uc_mmio_map callbacks for the peripheral bus
 * (emu/soc/bus.py).  A firmware busy-polling a register spends most of its
 * time crossing from Unicorn into Python; here Unicorn calls C directly,
 * and C carries out the common accesses itself, without running Python:
 *
 *   _slot.c     a slot's callbacks (slot_read, slot_write): they count the
 *               access, ask once per offset and direction for its op
 *               (``resolve(offset, is_write)``: an emu.soc.ops.Op derived
 *               from the model's register table, or None), keep it in a
 *               table, bring the clock up to timed accesses (CortexM's
 *               sync_time in C), note a polling loop's accesses for the
 *               block hook, and hand anything else to the model's Python
 *               ``read``/``write``;
 *   _ops.c      the op interpreter: an op carried out on the model's own
 *               state, its Cells (events, INTEN, the line, the RTC's
 *               counter base: no GIL) or its attributes and dictionaries
 *               through the C API; emu/soc/ops.py is the pure-Python
 *               interpreter of the same ops (the reference);
 *   _cells.c    Cells (_cells.h), a peripheral's hot state in C memory;
 *   _streams.c  the legacy SPI's byte streams to the display and the NOR;
 *   _mmio.c     the module: map(), the op kinds and layouts for Python.
 *
 * An op that would change an interrupt line, or whose guard says a lazy
 * completion is due, *bails*: nothing was changed, and the access goes to
 * the model as if there were no op.  An exception escaping a handler goes
 * to ``error(offset, exception)`` (logged with the guest PC) and the read
 * returns 0: nothing propagates into Unicorn.  Each handler runs exactly
 * once per guest access, as in the Python path.
 *
 * This module has no knowledge of peripherals, of the CPU beyond the
 * cycle counter and slice time base it is given (_loopcells.h), or of any
 * machine: every piece of state hangs off a Slot, a StreamSet or a Cells,
 * each owned by one machine's bus.
 *
 * The callbacks run inside uc_emu_start, which the unicorn binding calls
 * through ctypes with the GIL released: they take the GIL.  The library
 * does not link against libunicorn; Python passes uc_mmio_map's address.
 */
#ifndef EMU_SOC_FABRIC_H
#define EMU_SOC_FABRIC_H

#include "../_pyhelp.h"
#include "../_clock.h"
#include "_cells.h"
#include "_loopcells.h"

typedef uint64_t (*mmio_read_cb)(void *uc, uint64_t offset, unsigned size, void *user_data);
typedef void (*mmio_write_cb)(void *uc, uint64_t offset, unsigned size, uint64_t value,
                              void *user_data);
typedef int (*uc_mmio_map_fn)(void *uc, uint64_t address, size_t size, mmio_read_cb read_cb,
                              void *user_data_read, mmio_write_cb write_cb,
                              void *user_data_write);

/* Op kinds: emu/soc/ops.py declares them; the module exports these as
 * OP_KINDS and emu/native.py refuses a build whose numbers differ. */
#define OP_KINDS(X) \
    X(K_UNKNOWN, 0) X(K_GENERIC, 1) \
    X(R_CALL, 2) X(R_VALUE, 3) X(R_EVENT, 4) X(R_ATTR, 5) X(R_CONST, 6) X(R_COUNTER, 7) \
    X(R_CYCLES, 8) \
    X(W_EVENT, 20) X(W_INTENSET, 21) X(W_INTENCLR, 22) X(W_INTEN, 23) X(W_VALUE, 24) \
    X(W_TXD, 25) X(W_BITS, 26) X(W_CALL, 27) X(W_FEED, 28) \
    X(MODE_RW, 0) X(MODE_W1S, 1) X(MODE_W1C, 2)
#define OP_KIND_ENUM(name, value) name = value,
enum { OP_KINDS(OP_KIND_ENUM) };

#define NOFF 1024            /* word offsets in a 4 KiB slot */

/* A watchdog's reload request (W_FEED, emu/soc/ops.py): the cells it reads
 * and writes, in the order of the op's names (args[2:]). */
enum { FEED_RUNNING, FEED_DEADLINE, FEED_PAUSED, FEED_RELOADED_CELL, FEED_MASK, FEED_PERIOD,
       FEED_CELLS };
#define FEED_RELOADED 4          /* feed_write: the deadline moved (a timed write) */
#define NBANK 16             /* op tables a slot keeps (Slot.select) */

typedef struct {
    int kind;
    int timed;
    uint32_t mask, slow_bits, cval, mode;
    PyObject *obj;           /* the model the op acts on */
    PyObject *key;           /* the offset as an int (dictionary key, CALL argument) */
    PyObject *a[4];          /* CALL: fn; ATTR: name; COUNTER: attribute names */
    PyObject *g_busy, *g_due;
    Cells *g_cells;          /* the guard's attributes are these cells (g_ci), or NULL */
    int g_ci[2];
    Cells *cells;            /* obj's Cells, when the op works on them */
    int nogil;               /* ... and can run without the GIL (no guard) */
    int bit;                 /* event index (offset - 0x100) / 4 */
    int ci[4];               /* COUNTER: cell indices of running, base_time, period, base_value */
    int fi[FEED_CELLS];      /* FEED: cell indices, in the op's order (FEED_*) */
    int stream;              /* an access of a streaming serial master (see Streams) */
    int steady;              /* a read a polling loop may take as unchanged (Op.steady) */
    uint64_t base64;         /* CYCLES: the cycle count at which the value was 0 */
    int shift, bail_shift;   /* BITS: where the written bits go; the bail attribute's shift */
    /* EVENT/INTEN*: a write that lowers the line is carried out here too when
     * the model declares where the line goes (args (cpu, irq, listeners):
     * the SoC's set_irq(irq, False) is cpu.irq_level's bit cleared and its
     * listeners told; the op bails while any listens) */
    int lower;               /* 1: a[0] cpu, a[2] the listeners list */
    unsigned long long lower_bit;
    PyObject *slow;          /* INTEN*: slow(offset, value) for a write touching slow_bits,
                              * instead of the model's write (None/NULL: the model) */
    Cells *bits_cells;       /* BITS on an attribute kept in a cell (NATIVE_CELLS): */
    int bits_cell;           /* its Cells and index, written here without Python */
} COp;

#define MAX_STREAMS 16
typedef struct StreamSet {
    PyObject_HEAD
    int n;
    Cells *cells[MAX_STREAMS];
    PyObject *flush[MAX_STREAMS];
} StreamSet;                     /* one machine's streaming masters (its bus owns it) */
enum { S_SHIFT = 0, S_TXBUF = 1, S_DUE = 2, S_RXN = 3, S_RX0 = 4, S_RX1 = 5, S_ON = 6,
       S_BYTE = 7 };
#define SPI_READY_BIT 2          /* EVENTS_READY at 0x108 */

typedef struct {
    PyObject_HEAD
    PyObject *resolve;   /* resolve(offset, is_write) -> Op or None */
    PyObject *sync;      /* sync() */
    PyObject *read;      /* read(offset, size) -> int */
    PyObject *write;     /* write(offset, size, value) */
    PyObject *error;     /* error(offset, exception) */
    PyObject *cpu;       /* for the C clock sync: _cycle_base_ticks, _cycle_base */
    PyObject *clock;     /* clock.now */
    const volatile uint64_t *cycles;   /* the native block hook's cycle counter, or NULL */
    volatile SyncCells *cells;         /* and its slice time base (with cycles) */
    long long cycle_ticks;
    unsigned long long count;
    COp *rops, *wops;                  /* NOFF each, filled on first use */
    StreamSet *streams;         /* this machine's streaming masters, or NULL */
    uint64_t *stat;                    /* NOFF x 4: native reads, model reads, native writes, model writes */
    uint16_t *used;                    /* the ops resolved (index, | NOFF for writes): */
    int nused;                         /* flush and GC visit only these */
    /* Op tables parked by select(): a model whose ops depend on one small
     * key (the shared-ID multiplexer's ENABLE) keeps a table per key, so
     * switching back and forth resolves nothing again.  The current table
     * is rops/wops/used/nused above; park[cur] is unused while it is current. */
    struct { COp *rops, *wops; uint16_t *used; int nused; } park[NBANK];
    int cur;
    volatile LoopCells *loop;          /* the block hook's loop fields, or NULL */
} Slot;

extern PyTypeObject CellsType, SlotType, StreamSetType;

/* Inside a slice clock.now was set to base_ticks at its start and only
 * syncs move it, to this same formula: it is the time of the access, and
 * clock.now needs writing only when the cycles moved since the last sync. */
static inline int in_slice(Slot *s) {
    return s->cycles != NULL && s->cells->in_slice;
}

static inline long long slice_now(Slot *s) {
    const volatile SyncCells *c = s->cells;
    return c->base_ticks + (long long)(*s->cycles - c->base_cycles) * s->cycle_ticks;
}

/* _slot.c */
EMU_INTERNAL int do_sync(Slot *s);
EMU_INTERNAL void report(Slot *s, PyObject *off);
EMU_INTERNAL void slot_replay(void *slot, uint32_t offset, uint64_t n, uint64_t cycles);
EMU_INTERNAL uint64_t slot_read(void *uc, uint64_t offset, unsigned size, void *user_data);
EMU_INTERNAL void slot_write(void *uc, uint64_t offset, unsigned size, uint64_t value,
                             void *user_data);
EMU_INTERNAL int slot_intern(void);
/* _ops.c */
EMU_INTERNAL void op_clear(COp *op);
EMU_INTERNAL int op_resolve(Slot *s, COp *op, uint64_t offset, int is_write);
EMU_INTERNAL int op_sync(Slot *s);
EMU_INTERNAL int exec_read(Slot *s, COp *op, uint64_t *v);
EMU_INTERNAL int exec_write(Slot *s, COp *op, uint64_t value);
EMU_INTERNAL int cells_read(Slot *s, COp *op, uint64_t *v, int gil);
EMU_INTERNAL int cells_write(Cells *c, COp *op, uint64_t value);
EMU_INTERNAL int feed_write(COp *op, uint64_t value, long long now);
EMU_INTERNAL void feed_replay(COp *op, long long ticks);
EMU_INTERNAL int ops_intern(void);
/* _streams.c */
EMU_INTERNAL int streams_off_c(StreamSet *ss);
EMU_INTERNAL int stream_access(Slot *s, COp *op, int is_write, uint64_t value, uint64_t *v);

#endif
