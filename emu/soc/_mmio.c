/*
 * Native uc_mmio_map callbacks for the peripheral bus (emu/soc/bus.py).
 *
 * A firmware busy-polling a register spends most of its time crossing from
 * Unicorn into Python.  Here Unicorn calls C directly, and C carries out
 * the common accesses itself, without running Python code:
 *
 *   - it counts the access (Slot.count, and per word offset in stats());
 *   - an aligned word access asks, once per offset and direction, for the
 *     offset's op (``resolve(offset, is_write)``, an emu.soc.ops.Op derived
 *     from the model's register table, or None) and keeps it in a table;
 *   - it carries the op out on the model's own state: on its Cells (events,
 *     INTEN, the line, the RTC's counter base: C memory, no GIL taken) or
 *     through the C API on its attributes and dictionaries (``values[off]``,
 *     a CALL of a model method); the semantics are those of
 *     emu/soc/ops.py, which is the pure-Python interpreter of the same ops;
 *   - an op that would change an interrupt line, or whose guard says a
 *     lazy completion is due, *bails*: nothing was changed, and the access
 *     goes to the model as if there were no op;
 *   - anything else (no op, sub-word or unaligned) brings the clock up to
 *     the access and calls ``read(offset, size)`` / ``write(offset, size,
 *     value)`` (Python: dispatch to the model, errors).
 *
 * Timed ops and model calls first bring the clock up to the access:
 * CortexM.sync_time written in C when the slot knows where the native cycle
 * counter lives (``cycles_addr``):
 *       now = cpu._cycle_base_ticks + (cycles - cpu._cycle_base) * cycle_ticks
 *       if now > clock.now: clock.now = now
 * else through ``sync()``.
 *
 * This file has no knowledge of peripherals.  An exception escaping a
 * handler is passed to ``error(offset, exception)`` (which logs it with the
 * guest PC) and the read returns 0: nothing propagates into Unicorn.  Each
 * handler runs exactly once per guest access, as in the Python path.
 *
 * The callbacks run inside uc_emu_start, which the unicorn binding calls
 * through ctypes with the GIL released: they take the GIL.  The library
 * does not link against libunicorn; Python passes uc_mmio_map's address.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>
#include <structmember.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

typedef uint64_t (*mmio_read_cb)(void *uc, uint64_t offset, unsigned size, void *user_data);
typedef void (*mmio_write_cb)(void *uc, uint64_t offset, unsigned size, uint64_t value,
                              void *user_data);
typedef int (*uc_mmio_map_fn)(void *uc, uint64_t address, size_t size, mmio_read_cb read_cb,
                              void *user_data_read, mmio_write_cb write_cb,
                              void *user_data_write);

/* ======================================================================
 * Cells: the state the common accesses touch, in C memory.
 *
 * An nRF peripheral's EVENTS_* registers, its INTEN and its interrupt line
 * live here (NrfPeripheral.events is this object, a mapping offset -> 0/1
 * for the event registers at 0x100 + 4n; ``inten`` and ``irq_line_level``
 * are properties over its members), and so do up to eight integer cells a
 * model names in NATIVE_CELLS (the RTC's counter base).  Python reads and
 * writes them as before; the MMIO callbacks read and write them without
 * taking the GIL, so a polled event, an INTENSET/INTENCLR that leaves the
 * line as it is, or an RTC COUNTER read costs no Python at all.
 * ====================================================================== */
#define NCELLS 8
typedef struct {
    PyObject_HEAD
    uint32_t keys;      /* bit n: an event register at 0x100 + 4n exists */
    uint32_t bits;      /* bit n: that event is set */
    unsigned long long inten;
    long long line;     /* the interrupt line's level (0/1) */
    long long cell[NCELLS];
    /* a streaming serial master (the legacy SPI): bytes completed in C, not
     * yet handed to the device (see "Streams" below) */
    unsigned char *pend;
    Py_ssize_t pend_n, pend_cap;
    long long last_txd;  /* the last TXD written in C, or -1 */
    /* the device's answers to the next bytes (bytes, NULL: 0xFF to each) and
     * how many of them the queued bytes used */
    PyObject *answers;
    Py_ssize_t ans_i;
} Cells;

static PyTypeObject CellsType;

static int cells_index(PyObject *key, int *idx) {
    long off = PyLong_AsLong(key);
    if (off == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (off < 0x100 || off > 0x17C || (off & 3))
        return -1;
    *idx = (int)((off - 0x100) >> 2);
    return 0;
}

static Py_ssize_t Cells_len(Cells *c) {
    return __builtin_popcount(c->keys);
}

static PyObject *Cells_getitem(Cells *c, PyObject *key) {
    int i;
    if (cells_index(key, &i) || !((c->keys >> i) & 1)) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    return PyLong_FromLong((c->bits >> i) & 1);
}

static int Cells_setitem(Cells *c, PyObject *key, PyObject *v) {
    int i;
    if (cells_index(key, &i)) {
        if (v == NULL)
            PyErr_SetObject(PyExc_KeyError, key);
        else
            PyErr_Format(PyExc_KeyError, "%R is not an event register offset", key);
        return -1;
    }
    if (v == NULL) {                    /* del */
        if (!((c->keys >> i) & 1)) {
            PyErr_SetObject(PyExc_KeyError, key);
            return -1;
        }
        c->keys &= ~(1u << i);
        c->bits &= ~(1u << i);
        return 0;
    }
    int t = PyObject_IsTrue(v);
    if (t < 0)
        return -1;
    c->keys |= 1u << i;
    if (t)
        c->bits |= 1u << i;
    else
        c->bits &= ~(1u << i);
    return 0;
}

static int Cells_contains(Cells *c, PyObject *key) {
    int i;
    return cells_index(key, &i) == 0 && ((c->keys >> i) & 1);
}

/* [(offset, value)] in offset order; what = 0 keys, 1 values, 2 items */
static PyObject *cells_list(Cells *c, int what) {
    PyObject *l = PyList_New(0);
    for (int i = 0; l != NULL && i < 32; i++) {
        if (!((c->keys >> i) & 1))
            continue;
        PyObject *x = what == 0 ? PyLong_FromLong(0x100 + 4 * i)
                    : what == 1 ? PyLong_FromLong((c->bits >> i) & 1)
                    : Py_BuildValue("(ll)", 0x100 + 4 * i, (long)((c->bits >> i) & 1));
        if (x == NULL || PyList_Append(l, x)) {
            Py_XDECREF(x);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(x);
    }
    return l;
}

static PyObject *Cells_keys(Cells *c, PyObject *noargs) { return cells_list(c, 0); }
static PyObject *Cells_values(Cells *c, PyObject *noargs) { return cells_list(c, 1); }
static PyObject *Cells_items(Cells *c, PyObject *noargs) { return cells_list(c, 2); }

static PyObject *Cells_iter(Cells *c) {
    PyObject *l = cells_list(c, 0);
    if (l == NULL)
        return NULL;
    PyObject *it = PyObject_GetIter(l);
    Py_DECREF(l);
    return it;
}

static PyObject *Cells_copy(Cells *c, PyObject *noargs) {
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < 32; i++) {
        if (!((c->keys >> i) & 1))
            continue;
        PyObject *k = PyLong_FromLong(0x100 + 4 * i), *v = PyLong_FromLong((c->bits >> i) & 1);
        if (k == NULL || v == NULL || PyDict_SetItem(d, k, v))
            Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *Cells_get(Cells *c, PyObject *args) {
    PyObject *key, *dflt = Py_None;
    if (!PyArg_UnpackTuple(args, "get", 1, 2, &key, &dflt))
        return NULL;
    int i;
    if (cells_index(key, &i) || !((c->keys >> i) & 1)) {
        Py_INCREF(dflt);
        return dflt;
    }
    return PyLong_FromLong((c->bits >> i) & 1);
}

/* replace(mapping): the event registers become exactly those of mapping */
static PyObject *Cells_replace(Cells *c, PyObject *mapping) {
    PyObject *items = PyMapping_Items(mapping);
    if (items == NULL)
        return NULL;
    uint32_t keys = 0, bits = 0;
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *kv = PyList_GET_ITEM(items, j);
        int i, t;
        if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2
            || cells_index(PyTuple_GET_ITEM(kv, 0), &i)
            || (t = PyObject_IsTrue(PyTuple_GET_ITEM(kv, 1))) < 0) {
            Py_DECREF(items);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "event registers are at 0x100-0x17C");
            return NULL;
        }
        keys |= 1u << i;
        if (t)
            bits |= 1u << i;
    }
    Py_DECREF(items);
    c->keys = keys;
    c->bits = bits;
    Py_RETURN_NONE;
}

static PyObject *Cells_richcompare(PyObject *a, PyObject *b, int op) {
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *da = PyObject_TypeCheck(a, &CellsType) ? Cells_copy((Cells *)a, NULL)
                                                      : (Py_INCREF(a), a);
    PyObject *db = PyObject_TypeCheck(b, &CellsType) ? Cells_copy((Cells *)b, NULL)
                                                      : (Py_INCREF(b), b);
    PyObject *r = (da && db) ? PyObject_RichCompare(da, db, op) : NULL;
    Py_XDECREF(da);
    Py_XDECREF(db);
    return r;
}

static PyObject *Cells_repr(Cells *c) {
    PyObject *d = Cells_copy(c, NULL);
    if (d == NULL)
        return NULL;
    PyObject *r = PyObject_Repr(d);
    Py_DECREF(d);
    return r;
}

static PyMappingMethods Cells_as_mapping = {
    (lenfunc)Cells_len, (binaryfunc)Cells_getitem, (objobjargproc)Cells_setitem,
};
static PySequenceMethods Cells_as_sequence = {
    .sq_contains = (objobjproc)Cells_contains,
};

/* take_pending() -> (bytes, last TXD or -1): the bytes completed in C, emptied */
static PyObject *Cells_take_pending(Cells *c, PyObject *noargs) {
    PyObject *b = PyBytes_FromStringAndSize((const char *)c->pend, c->pend_n);
    if (b == NULL)
        return NULL;
    long long last = c->last_txd;
    c->pend_n = 0;
    c->last_txd = -1;
    Py_CLEAR(c->answers);
    c->ans_i = 0;
    PyObject *r = Py_BuildValue("(NL)", b, last);
    return r;
}

static int Cells_init(Cells *c, PyObject *args, PyObject *kwds) {
    if (!_PyArg_NoPositional("Cells", args) || !_PyArg_NoKeywords("Cells", kwds))
        return -1;
    c->last_txd = -1;
    return 0;
}

/* set_answers(bytes or None): what the device answers to the next bytes
 * streamed (None: 0xFF to each, without limit); streaming stops (the model
 * takes over) when they run out.  Cleared by take_pending(). */
static PyObject *Cells_set_answers(Cells *c, PyObject *a) {
    if (a != Py_None && !PyBytes_Check(a)) {
        PyErr_SetString(PyExc_TypeError, "answers must be bytes or None");
        return NULL;
    }
    Py_XSETREF(c->answers, a == Py_None ? NULL : Py_NewRef(a));
    c->ans_i = 0;
    Py_RETURN_NONE;
}

static void Cells_dealloc(Cells *c) {
    Py_CLEAR(c->answers);
    PyMem_RawFree(c->pend);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *Cells_level(Cells *c, PyObject *noargs) {
    return PyBool_FromLong((c->bits & c->keys & (uint32_t)c->inten) != 0);
}

static PyMethodDef Cells_methods[] = {
    {"level", (PyCFunction)Cells_level, METH_NOARGS, "any(event & INTEN bit): the line's level"},
    {"set_answers", (PyCFunction)Cells_set_answers, METH_O,
     "set_answers(bytes or None): the device's answers to the next streamed bytes"},
    {"take_pending", (PyCFunction)Cells_take_pending, METH_NOARGS,
     "(bytes completed in C and not yet given to the device, last TXD or -1)"},
    {"keys", (PyCFunction)Cells_keys, METH_NOARGS, "event offsets"},
    {"values", (PyCFunction)Cells_values, METH_NOARGS, "event values"},
    {"items", (PyCFunction)Cells_items, METH_NOARGS, "(offset, value) pairs"},
    {"copy", (PyCFunction)Cells_copy, METH_NOARGS, "the events as a dict"},
    {"get", (PyCFunction)Cells_get, METH_VARARGS, "get(offset, default=None)"},
    {"replace", (PyCFunction)Cells_replace, METH_O, "replace(mapping): set the events"},
    {NULL}
};

static PyMemberDef Cells_members[] = {
    {"inten", T_ULONGLONG, offsetof(Cells, inten), 0, "INTEN"},
    {"line", T_LONGLONG, offsetof(Cells, line), 0, "interrupt line level"},
    {"cell0", T_LONGLONG, offsetof(Cells, cell[0]), 0, NULL},
    {"cell1", T_LONGLONG, offsetof(Cells, cell[1]), 0, NULL},
    {"cell2", T_LONGLONG, offsetof(Cells, cell[2]), 0, NULL},
    {"cell3", T_LONGLONG, offsetof(Cells, cell[3]), 0, NULL},
    {"cell4", T_LONGLONG, offsetof(Cells, cell[4]), 0, NULL},
    {"cell5", T_LONGLONG, offsetof(Cells, cell[5]), 0, NULL},
    {"cell6", T_LONGLONG, offsetof(Cells, cell[6]), 0, NULL},
    {"cell7", T_LONGLONG, offsetof(Cells, cell[7]), 0, NULL},
    {NULL}
};

static PyTypeObject CellsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.Cells",
    .tp_doc = "A peripheral's events, INTEN, interrupt line and model cells in C memory.",
    .tp_basicsize = sizeof(Cells),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Cells_init,
    .tp_dealloc = (destructor)Cells_dealloc,
    .tp_as_mapping = &Cells_as_mapping,
    .tp_as_sequence = &Cells_as_sequence,
    .tp_iter = (getiterfunc)Cells_iter,
    .tp_richcompare = Cells_richcompare,
    .tp_repr = (reprfunc)Cells_repr,
    .tp_methods = Cells_methods,
    .tp_members = Cells_members,
    .tp_hash = PyObject_HashNotImplemented,
};

#include "_clock.h"

static int attr_ll(PyObject *o, PyObject *name, long long *out);
static int set_ll(PyObject *o, PyObject *name, long long v);
static PyObject *str_now;

/* clock.now, from the C clock's field (or the Python clock's attribute) */
static inline int clock_get_now(PyObject *clock, long long *out) {
    if (is_clock(clock)) {
        *out = ((ClockObject *)clock)->now;
        return 0;
    }
    return attr_ll(clock, str_now, out);
}

static inline int clock_set_now(PyObject *clock, long long v) {
    if (is_clock(clock)) {
        ((ClockObject *)clock)->now = v;
        return 0;
    }
    return set_ll(clock, str_now, v);
}

/* Op kinds: the numbers of emu/soc/ops.py. */
enum {
    K_UNKNOWN = 0, K_GENERIC = 1,
    R_CALL = 2, R_VALUE = 3, R_EVENT = 4, R_ATTR = 5, R_CONST = 6, R_COUNTER = 7,
    R_CYCLES = 8,
    W_EVENT = 20, W_INTENSET = 21, W_INTENCLR = 22, W_INTEN = 23, W_VALUE = 24, W_TXD = 25,
    W_BITS = 26, W_CALL = 27,
};
enum { MODE_RW = 0, MODE_W1S = 1, MODE_W1C = 2 };
#define NOFF 1024            /* word offsets in a 4 KiB slot */
#define NBANK 16             /* op tables a slot keeps (Slot.select) */

/* The run loop's slice time base (fields of the block hook's bh_state). */
typedef struct {
    int64_t base_ticks;
    uint64_t base_cycles;
    uint64_t synced_cycles;
    uint32_t in_slice;
} SyncCells;

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

/* The block hook's polling-loop fields (bh_state in emu/cpu/_blockhook.c,
 * from skip_on on): a loop iteration's MMIO accesses are noted here. */
typedef struct {
    uint32_t skip_on, unstable, nreads, nregs, trust_all, nwrites;
    void *rslot[8];
    uint32_t roff[8];        /* | LOOP_WRITE: a write */
    uint64_t horizon;        /* a counter read's next change, in cycles */
} LoopCells;
#define LOOP_WRITE 0x80000000u

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
    struct StreamSet *streams;         /* this machine's streaming masters, or NULL */
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

/* An access for the block hook's polling-loop watch (loop_step in
 * _blockhook.c): a read whose value only a clock event or Python can change
 * is recorded (up to 8 an iteration), anything else makes the iteration
 * unstable. */
static inline void loop_note(Slot *s, uint64_t offset, int stable) {
    volatile LoopCells *l = s->loop;
    if (l == NULL || !l->skip_on)
        return;
    if (l->trust_all & 1)
        stable = 1;
    if (!stable || l->nreads >= 8) {
        l->unstable = 1;
        return;
    }
    l->rslot[l->nreads] = s;
    l->roff[l->nreads] = (uint32_t)offset;
    l->nreads++;
}

/* A write a loop may repeat: carried out on the Cells without the GIL and
 * without moving the interrupt line (an event, INTENSET/INTENCLR/INTEN):
 * state only, so the same writes again leave the same state (loop_step
 * counts it against the iteration's stores). */
static inline void loop_note_write(Slot *s, uint64_t offset) {
    volatile LoopCells *l = s->loop;
    if (l == NULL || !l->skip_on)
        return;
    if (l->nreads >= 8) {
        l->unstable = 1;
        return;
    }
    l->rslot[l->nreads] = s;
    l->roff[l->nreads] = (uint32_t)offset | LOOP_WRITE;
    l->nreads++;
    l->nwrites++;
}

/* Any other write: unstable (trust_all & 2, companion tests only: taken
 * as repeatable too). */
static inline void loop_note_other_write(Slot *s, uint64_t offset) {
    volatile LoopCells *l = s->loop;
    if (l != NULL && (l->trust_all & 2))
        loop_note_write(s, offset);
    else
        loop_note(s, offset, 0);
}

static inline int in_slice(Slot *s);
static inline long long slice_now(Slot *s);

/* A COUNTER read (the RTC's) inside a slice: its value holds until the
 * next period boundary, so the iterations up to that cycle may be counted
 * (the horizon); outside a slice, unstable. */
static inline void loop_note_counter(Slot *s, uint64_t offset, COp *op) {
    volatile LoopCells *l = s->loop;
    if (l == NULL || !l->skip_on)
        return;
    if (!in_slice(s) || s->cycle_ticks <= 0) {
        l->unstable = 1;
        return;
    }
    Cells *c = op->cells;
    long long running = c->cell[op->ci[0]], base_time = c->cell[op->ci[1]],
              period = c->cell[op->ci[2]];
    if (running && period > 0 && !(l->trust_all & 1)) {   /* (trust_all: companions) */
        long long now = slice_now(s);
        long long next = now < base_time + period ? base_time + period
                         : base_time + ((now - base_time) / period + 1) * period;
        const volatile SyncCells *sc = s->cells;
        long long dt = next - sc->base_ticks;
        uint64_t h = dt <= 0 ? 0 : sc->base_cycles
                     + (uint64_t)((dt + s->cycle_ticks - 1) / s->cycle_ticks);
        if (h < l->horizon)
            l->horizon = h;
    }
    loop_note(s, offset, 1);
}

static inline int op_stable_read(COp *op) {
    return op->steady;           /* declared once, in Python: emu/soc/ops.py Op.steady */
}

/* A skipped loop's reads of one register, counted as done (n of them). */
static void slot_replay(void *slot, uint32_t offset, uint64_t n) {
    Slot *s = (Slot *)slot;
    s->count += n;
    s->stat[((offset & ~LOOP_WRITE) >> 2) * 4 + (offset & LOOP_WRITE ? 2 : 0)] += n;
}

static PyObject *str_base_ticks, *str_base_cycles, *str_values, *str_kind,
                *str_obj, *str_args, *str_timed, *str_mask, *str_slow_bits, *str_guard;

/* CortexM.sync_time in C, through the Python attributes; 0 on success, -1 with an exception set. */
static int sync_attrs(Slot *s) {
    PyObject *bt = PyObject_GetAttr(s->cpu, str_base_ticks);
    if (bt == NULL)
        return -1;
    long long base_ticks = PyLong_AsLongLong(bt);
    Py_DECREF(bt);
    PyObject *bc = PyObject_GetAttr(s->cpu, str_base_cycles);
    if (bc == NULL)
        return -1;
    long long base_cycles = PyLong_AsLongLong(bc);
    Py_DECREF(bc);
    if (PyErr_Occurred())
        return -1;
    long long now_prev;
    if (clock_get_now(s->clock, &now_prev))
        return -1;
    long long now = base_ticks + ((long long)*s->cycles - base_cycles) * s->cycle_ticks;
    if (now > now_prev)
        return clock_set_now(s->clock, now);
    return 0;
}

/* Inside a slice clock.now was set to base_ticks at its start and only
 * syncs move it, to this same formula: it is the time of the access, and
 * clock.now needs writing only when the cycles moved since the last sync. */
static inline long long slice_now(Slot *s) {
    const volatile SyncCells *c = s->cells;
    return c->base_ticks + (long long)(*s->cycles - c->base_cycles) * s->cycle_ticks;
}

static int sync_native(Slot *s) {
    volatile SyncCells *c = s->cells;
    if (!c->in_slice)
        return sync_attrs(s);
    uint64_t cyc = *s->cycles;
    if (cyc == c->synced_cycles)
        return 0;
    int err = clock_set_now(s->clock, slice_now(s));
    if (err == 0)
        c->synced_cycles = cyc;
    return err;
}

static void report(Slot *s, PyObject *off) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *r = NULL;
    if (s->error != NULL)
        r = PyObject_CallFunctionObjArgs(s->error, off ? off : Py_None,
                                         value ? value : Py_None, NULL);
    if (r == NULL)
        PyErr_WriteUnraisable(s->error);
    Py_XDECREF(r);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* Bring the clock up to the access: in C, or through sync(). */
static int do_sync(Slot *s) {
    if (s->cycles != NULL)
        return sync_native(s);
    PyObject *t = PyObject_CallNoArgs(s->sync);
    Py_XDECREF(t);
    return t == NULL ? -1 : 0;
}

/* -- ops ------------------------------------------------------------------ */

static void op_clear(COp *op) {
    Py_CLEAR(op->obj);
    Py_CLEAR(op->key);
    for (int i = 0; i < 4; i++)
        Py_CLEAR(op->a[i]);
    Py_CLEAR(op->g_busy);
    Py_CLEAR(op->g_due);
    Py_CLEAR(op->g_cells);
    Py_CLEAR(op->cells);
    Py_CLEAR(op->bits_cells);
    Py_CLEAR(op->slow);
    memset(op, 0, sizeof *op);     /* kind K_UNKNOWN, nogil 0 */
}

static PyObject *str_cells_attr, *str_native_cells, *str_inten_name, *str_stream, *str_slow,
                *str_steady;
static int cells_read(Slot *s, COp *op, uint64_t *v, int gil);
static int cells_write(Cells *c, COp *op, uint64_t value);
static int cells_lower(Slot *s, COp *op, uint64_t value);

/* After op_resolve: can the op run on obj's Cells alone (no guard, C Cells)? */
static int op_bind_cells(COp *op, uint64_t offset) {
    switch (op->stream ? R_EVENT : op->kind) {
    case R_EVENT: case W_EVENT: case W_INTENSET: case W_INTENCLR: case W_INTEN:
        break;
    case R_ATTR:                          /* INTEN, or a cell named in NATIVE_CELLS */
        if (PyUnicode_Compare(op->a[0], str_inten_name) != 0) {
            PyErr_Clear();
            PyObject *names = PyObject_GetAttr(op->obj, str_native_cells);
            op->bit = 0;
            if (names != NULL && PyTuple_Check(names))
                for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names) && j < NCELLS; j++)
                    if (PyUnicode_Check(op->a[0])
                        && PyUnicode_Compare(PyTuple_GET_ITEM(names, j), op->a[0]) == 0)
                        op->bit = (int)j + 1;     /* cell[bit - 1]; 0 is INTEN */
            Py_XDECREF(names);
            PyErr_Clear();
            if (op->bit == 0)
                return 0;
        }
        break;
    case R_COUNTER:
        break;
    default:
        return 0;
    }
    PyObject *c = PyObject_GetAttr(op->obj, str_cells_attr);
    if (c == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (!PyObject_TypeCheck(c, &CellsType)) {
        Py_DECREF(c);
        return 0;
    }
    if (op->kind == R_COUNTER) {
        PyObject *names = PyObject_GetAttr(op->obj, str_native_cells);
        int ok = names != NULL && PyTuple_Check(names);
        for (int i = 0; ok && i < 4; i++) {
            op->ci[i] = -1;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names) && j < NCELLS; j++)
                if (PyUnicode_Check(op->a[i])
                    && PyUnicode_Compare(PyTuple_GET_ITEM(names, j), op->a[i]) == 0)
                    op->ci[i] = (int)j;
            ok = op->ci[i] >= 0;
        }
        Py_XDECREF(names);
        PyErr_Clear();
        if (!ok) {
            Py_DECREF(c);
            return 0;
        }
    }
    if ((op->kind == R_EVENT || op->kind == W_EVENT) && !op->stream) {
        if (offset < 0x100 || offset > 0x17C) {
            Py_DECREF(c);
            return 0;
        }
        op->bit = (int)((offset - 0x100) >> 2);
    }
    if (op->kind == R_EVENT || op->kind == W_EVENT)
        op->bit = (int)((offset - 0x100) >> 2);
    op->cells = (Cells *)c;
    op->nogil = op->g_busy == NULL;
    return 0;
}

static int get_u32(PyObject *o, PyObject *name, uint32_t *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = (uint32_t)PyLong_AsUnsignedLongMask(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

/* Fill op from resolve(offset, is_write); kind GENERIC when it returns None. */
static int op_resolve(Slot *s, COp *op, uint64_t offset, int is_write) {
    op_clear(op);
    PyObject *r = PyObject_CallFunction(s->resolve, "Ki", (unsigned long long)offset, is_write);
    if (r == NULL)
        return -1;
    op->key = PyLong_FromUnsignedLongLong(offset);
    if (op->key == NULL) {
        Py_DECREF(r);
        return -1;
    }
    if (r == Py_None) {
        Py_DECREF(r);
        op->kind = K_GENERIC;
        return 0;
    }
    uint32_t kind = 0, timed = 0;
    PyObject *args = NULL, *guard = NULL;
    if (get_u32(r, str_kind, &kind) || get_u32(r, str_timed, &timed)
        || get_u32(r, str_mask, &op->mask) || get_u32(r, str_slow_bits, &op->slow_bits))
        goto fail;
    uint32_t stream = 0, steady = 0;
    if (get_u32(r, str_stream, &stream))
        goto fail;
    if (!is_write && get_u32(r, str_steady, &steady)) {
        PyErr_Clear();           /* an op without the property: never steady */
        steady = 0;
    }
    op->obj = PyObject_GetAttr(r, str_obj);
    PyObject *slow = PyObject_GetAttr(r, str_slow);
    if (slow == NULL)
        goto fail;
    if (slow != Py_None)
        op->slow = slow;
    else
        Py_DECREF(slow);
    args = PyObject_GetAttr(r, str_args);
    guard = PyObject_GetAttr(r, str_guard);
    if (op->obj == NULL || args == NULL || guard == NULL || !PyTuple_Check(args))
        goto fail;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n && i < 4; i++) {
        op->a[i] = PyTuple_GET_ITEM(args, i);
        Py_INCREF(op->a[i]);
    }
    if ((kind == R_CALL || kind == R_ATTR || kind == W_CALL) && n < 1)
        goto bad;
    if (kind == R_ATTR && n >= 2) {  /* (name, shift): (attribute >> shift) & mask */
        op->shift = (int)PyLong_AsLong(op->a[1]);
        if (PyErr_Occurred())
            goto fail;
        if (op->shift < 0 || op->shift > 63)
            goto bad;
        Py_CLEAR(op->a[1]);
    }
    if (kind == R_COUNTER && n < 4)
        goto bad;
    if (kind == R_CYCLES) {
        if (n < 1)
            goto bad;
        op->base64 = PyLong_AsUnsignedLongLongMask(op->a[0]);
        if (PyErr_Occurred())
            goto fail;
    }
    if (kind == W_BITS) {          /* (name, mode, shift, bail or None, bail_shift) */
        if (n < 5 || !PyUnicode_Check(op->a[0]))
            goto bad;
        op->mode = (uint32_t)PyLong_AsUnsignedLongMask(PyTuple_GET_ITEM(args, 1));
        op->shift = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 2));
        op->bail_shift = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 4));
        if (PyErr_Occurred())
            goto fail;
        if (op->shift < 0 || op->shift > 63 || op->bail_shift < -63 || op->bail_shift > 63)
            goto bad;
        Py_CLEAR(op->a[1]);        /* a[3]: the bail attribute (None: never) */
        Py_CLEAR(op->a[2]);
        /* the attribute a cell_property over the model's C Cells: the cell itself */
        PyObject *names = PyObject_GetAttr(op->obj, str_native_cells);
        PyObject *c = names != NULL ? PyObject_GetAttr(op->obj, str_cells_attr) : NULL;
        if (c != NULL && PyTuple_Check(names) && PyObject_TypeCheck(c, &CellsType)) {
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names) && j < NCELLS; j++)
                if (PyUnicode_Compare(PyTuple_GET_ITEM(names, j), op->a[0]) == 0) {
                    op->bits_cell = (int)j;
                    op->bits_cells = (Cells *)c;
                    Py_INCREF(c);
                }
        }
        Py_XDECREF(c);
        Py_XDECREF(names);
        PyErr_Clear();
    }
    if ((kind == W_EVENT || kind == W_INTENSET || kind == W_INTENCLR || kind == W_INTEN)
        && n >= 3) {              /* (cpu, irq, listeners): lowering the line here */
        long irq = PyLong_AsLong(op->a[1]);
        if (PyErr_Occurred())
            goto fail;
        if (irq < 0 || irq > 63 || !PyList_Check(op->a[2]))
            goto bad;
        op->lower = 1;
        op->lower_bit = 1ULL << irq;
    }
    if (kind == R_CONST || kind == W_VALUE) {
        if (n < 1)
            goto bad;
        uint32_t v = (uint32_t)PyLong_AsUnsignedLongMask(op->a[0]);
        if (PyErr_Occurred())
            goto fail;
        if (kind == R_CONST) op->cval = v; else op->mode = v;
    }
    if (guard != Py_None) {
        if (!PyTuple_Check(guard) || (PyTuple_GET_SIZE(guard) != 2 && PyTuple_GET_SIZE(guard) != 4))
            goto bad;
        op->g_busy = PyTuple_GET_ITEM(guard, 0);
        op->g_due = PyTuple_GET_ITEM(guard, 1);
        Py_INCREF(op->g_busy);
        Py_INCREF(op->g_due);
        if (PyTuple_GET_SIZE(guard) == 4) {     /* (busy, due, busy cell, due cell) */
            PyObject *c = PyObject_GetAttr(op->obj, str_cells_attr);
            if (c == NULL)
                goto fail;
            long b = PyLong_AsLong(PyTuple_GET_ITEM(guard, 2)),
                 d = PyLong_AsLong(PyTuple_GET_ITEM(guard, 3));
            if (PyErr_Occurred() || !PyObject_TypeCheck(c, &CellsType)
                || b < 0 || b >= NCELLS || d < 0 || d >= NCELLS) {
                Py_DECREF(c);
                if (PyErr_Occurred())
                    goto fail;
                goto bad;
            }
            op->g_cells = (Cells *)c;
            op->g_ci[0] = (int)b;
            op->g_ci[1] = (int)d;
        }
    }
    switch (kind) {
    case R_CALL: case R_VALUE: case R_EVENT: case R_ATTR: case R_CONST: case R_COUNTER:
    case R_CYCLES:
        if (is_write) goto bad;
        break;
    case W_EVENT: case W_INTENSET: case W_INTENCLR: case W_INTEN: case W_VALUE: case W_TXD:
    case W_BITS: case W_CALL:
        if (!is_write) goto bad;
        break;
    default:
        goto bad;
    }
    op->kind = (int)kind;
    op->stream = stream != 0;
    op->timed = timed != 0 || op->g_busy != NULL;
    op->steady = steady != 0 && !op->timed && !op->stream;
    Py_DECREF(args);
    Py_DECREF(guard);
    Py_DECREF(r);
    if (op->kind == R_CYCLES) {
        op->nogil = s->cycles != NULL;
        return 0;
    }
    return op_bind_cells(op, offset);
bad:
    PyErr_Format(PyExc_ValueError, "bad %s op at +0x%llx", is_write ? "write" : "read",
                 (unsigned long long)offset);
fail:
    Py_XDECREF(args);
    Py_XDECREF(guard);
    Py_DECREF(r);
    op_clear(op);
    return -1;
}

static int attr_ll(PyObject *o, PyObject *name, long long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* The time of the access (after do_sync for timed ops). */
static int clock_now(Slot *s, long long *now) {
    if (s->cycles != NULL && s->cells->in_slice) {
        *now = slice_now(s);
        return 0;
    }
    return clock_get_now(s->clock, now);
}

/* Bring the clock up to the access before a timed op: inside a slice the
 * op computes the time itself (clock_now), so nothing needs doing. */
static int op_sync(Slot *s) {
    if (s->cycles != NULL && s->cells->in_slice)
        return 0;
    return do_sync(s);
}

/* 1: the guard is hit (a completion is due: the model must run), 0: not, -1: error */
static int guard_hit(Slot *s, COp *op) {
    if (op->g_busy == NULL)
        return 0;
    if (op->g_cells != NULL) {            /* busy: a cell, -1 standing for None */
        long long now;
        if (op->g_cells->cell[op->g_ci[0]] < 0)
            return 0;
        if (clock_now(s, &now))
            return -1;
        return now >= op->g_cells->cell[op->g_ci[1]];
    }
    PyObject *busy = PyObject_GetAttr(op->obj, op->g_busy);
    if (busy == NULL)
        return -1;
    int none = busy == Py_None;
    Py_DECREF(busy);
    if (none)
        return 0;
    long long due, now;
    if (attr_ll(op->obj, op->g_due, &due) || clock_now(s, &now))
        return -1;
    return now >= due;
}

static int dict_attr_get(PyObject *obj, PyObject *name, PyObject *key, PyObject **dict,
                         PyObject **val) {
    *dict = PyObject_GetAttr(obj, name);
    if (*dict == NULL)
        return -1;
    if (!PyDict_Check(*dict)) {
        PyErr_SetString(PyExc_TypeError, "register storage is not a dict");
        Py_CLEAR(*dict);
        return -1;
    }
    *val = PyDict_GetItemWithError(*dict, key);   /* borrowed */
    if (*val == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, key);
        Py_CLEAR(*dict);
        return -1;
    }
    return 0;
}

/* 0: done (*v set), 1: bail to the model, -1: error.  Events, INTEN and
 * COUNTER are carried out on the model's Cells (op->cells); a model without
 * C Cells gets those accesses from its own code (bail). */
static int exec_read(Slot *s, COp *op, uint64_t *v) {
    int g = guard_hit(s, op);
    if (g)
        return g;
    if ((op->cells != NULL && op->kind != R_CALL) || op->kind == R_CYCLES)
        return cells_read(s, op, v, 1);
    PyObject *obj = op->obj, *d = NULL, *x = NULL;
    switch (op->kind) {
    case R_CALL:
        x = PyObject_Vectorcall(op->a[0], &op->key, 1, NULL);
        if (x == NULL)
            return -1;
        *v = PyLong_AsUnsignedLongLongMask(x) & 0xFFFFFFFFu;
        Py_DECREF(x);
        return PyErr_Occurred() ? -1 : 0;
    case R_VALUE:
        if (dict_attr_get(obj, str_values, op->key, &d, &x))
            return -1;
        *v = PyLong_AsUnsignedLongLongMask(x) & 0xFFFFFFFFu;
        Py_DECREF(d);
        return PyErr_Occurred() ? -1 : 0;
    case R_ATTR:
        x = PyObject_GetAttr(obj, op->a[0]);
        if (x == NULL)
            return -1;
        *v = (PyLong_AsUnsignedLongLongMask(x) >> op->shift) & op->mask & 0xFFFFFFFFu;
        Py_DECREF(x);
        return PyErr_Occurred() ? -1 : 0;
    case R_CONST:
        *v = op->cval;
        return 0;
    }
    return 1;
}

/* 0: done, 1: bail to the model, -1: error (events and INTEN: see exec_read) */
static int exec_write(Slot *s, COp *op, uint64_t value) {
    if (op->kind == W_TXD)
        return 1;                /* not streaming: the model */
    int g = guard_hit(s, op);
    if (g)
        return g;
    if (op->cells != NULL)
        return cells_lower(s, op, value);
    PyObject *obj = op->obj, *d = NULL, *x = NULL;
    int rc = -1;
    switch (op->kind) {
    case W_CALL: {               /* fn(offset, value): a model callable (in C: RtcCore) */
        PyObject *v = PyLong_FromUnsignedLongLong(value & 0xFFFFFFFFu);
        if (v == NULL)
            return -1;
        PyObject *a[2] = {op->key, v};
        x = PyObject_Vectorcall(op->a[0], a, 2, NULL);
        Py_DECREF(v);
        if (x == NULL)
            return -1;
        Py_DECREF(x);
        return 0;
    }
    case W_VALUE: {
        /* args (mode[, offset]): the register the bits go to, if not this one */
        PyObject *vkey = op->a[1] != NULL ? op->a[1] : op->key;
        if (dict_attr_get(obj, str_values, vkey, &d, &x))
            return -1;
        uint64_t old = PyLong_AsUnsignedLongLongMask(x), m = op->mask, nw;
        if (PyErr_Occurred())
            goto out;
        if (op->mode == MODE_W1S)
            nw = old | (value & m);
        else if (op->mode == MODE_W1C)
            nw = old & ~(value & m);
        else
            nw = (old & ~m) | (value & m);
        if ((old ^ nw) & op->slow_bits) {
            rc = 1;                         /* a change the model must see (GPIO OUT) */
            goto out;
        }
        PyObject *n = PyLong_FromUnsignedLongLong(nw & 0xFFFFFFFFu);
        if (n == NULL)
            goto out;
        rc = PyDict_SetItem(d, vkey, n);
        Py_DECREF(n);
        goto out;
    }
    case W_BITS: {
        uint64_t bits = (value & op->mask) << op->shift;
        if (op->a[3] != NULL && op->a[3] != Py_None) {
            x = PyObject_GetAttr(obj, op->a[3]);
            if (x == NULL)
                return -1;
            uint64_t b = PyLong_AsUnsignedLongLongMask(x);
            Py_DECREF(x);
            if (PyErr_Occurred())
                return -1;
            b = op->bail_shift >= 0 ? b >> op->bail_shift : b << -op->bail_shift;
            if (bits & b)
                return 1;                   /* the model decides (a pending IRQ enabled, TICK) */
        }
        if (op->bits_cells != NULL) {        /* a cell: cell_property's int() */
            long long *cell = &op->bits_cells->cell[op->bits_cell];
            uint64_t cur = (uint64_t)*cell;
            *cell = (long long)(op->mode == MODE_W1S ? (cur | bits)
                                : op->mode == MODE_W1C ? (cur & ~bits)
                                : ((cur & ~((uint64_t)op->mask << op->shift)) | bits));
            return 0;
        }
        x = PyObject_GetAttr(obj, op->a[0]);
        if (x == NULL)
            return -1;
        uint64_t cur = PyLong_AsUnsignedLongLongMask(x);
        Py_DECREF(x);
        if (PyErr_Occurred())
            return -1;
        uint64_t nw = op->mode == MODE_W1S ? (cur | bits)
                      : op->mode == MODE_W1C ? (cur & ~bits)
                      : ((cur & ~((uint64_t)op->mask << op->shift)) | bits);
        if (nw == cur)
            return 0;
        PyObject *n = PyLong_FromUnsignedLongLong(nw);
        if (n == NULL)
            return -1;
        rc = PyObject_SetAttr(obj, op->a[0], n);
        Py_DECREF(n);
        return rc;
    }
    }
    return 1;
out:
    Py_XDECREF(d);
    return rc;
}

/* -- the same ops on the Cells, without the GIL ------------------------- */

static inline int in_slice(Slot *s) {
    return s->cycles != NULL && s->cells->in_slice;
}

/* 0: done (*v set); 1: needs the GIL path (gil: held, -1 on error) */
static int cells_read(Slot *s, COp *op, uint64_t *v, int gil) {
    Cells *c = op->cells;
    switch (op->kind) {
    case R_CYCLES:                        /* the DWT's CYCCNT: no Cells, the counter */
        if (s->cycles == NULL)
            return 1;                     /* the model */
        *v = (uint32_t)(*s->cycles - op->base64);
        return 0;
    case R_EVENT:
        *v = (c->bits >> op->bit) & 1;
        return 0;
    case R_ATTR:
        *v = (op->bit ? (unsigned long long)c->cell[op->bit - 1] : c->inten) & 0xFFFFFFFFu;
        return 0;
    case R_COUNTER: {
        long long now;
        if (in_slice(s))
            now = slice_now(s);
        else if (!gil)
            return 1;
        else if (clock_now(s, &now))
            return -1;
        long long running = c->cell[op->ci[0]],
                  base_time = c->cell[op->ci[1]], period = c->cell[op->ci[2]],
                  base_value = c->cell[op->ci[3]];
        if (!running || now < base_time + period || period <= 0)
            *v = (uint64_t)base_value & 0xFFFFFFFFu;
        else
            *v = (uint64_t)(base_value + (now - base_time) / period) & op->mask;
        return 0;
    }
    }
    return 1;
}

/* 0: done; 1: the line would change (or a slow bit): the model must run;
 * 2: the line would go down and the op may lower it (cells_lower, with the
 * GIL): nothing changed yet.  apply: 1 carries a lowering write out (the
 * Cells' part of it). */
static int cells_write_x(Cells *c, COp *op, uint64_t value, int apply) {
    uint32_t keys = c->keys, bits = c->bits, inten = (uint32_t)c->inten;
    int line = c->line != 0;
    switch (op->kind) {
    case W_EVENT: {
        uint32_t nb = (value & 1) ? (bits | (1u << op->bit)) : (bits & ~(1u << op->bit));
        int level = (nb & keys & inten) != 0;
        if (level != line) {
            if (!(line && op->lower))
                return 1;
            if (!apply)
                return 2;
            c->line = 0;
        }
        c->bits = nb;
        return 0;
    }
    case W_INTENSET:
    case W_INTENCLR:
    case W_INTEN: {
        uint32_t v = (uint32_t)value;
        uint32_t ni = op->kind == W_INTENSET ? (inten | v)
                    : op->kind == W_INTENCLR ? (inten & ~v) : v;
        if ((inten ^ ni) & op->slow_bits)
            return op->slow != NULL ? 3 : 1;
        int level = (bits & keys & ni) != 0;
        if (level != line) {
            if (!(line && op->lower))
                return 1;
            if (!apply)
                return 2;
            c->line = 0;
        }
        c->inten = ni;
        return 0;
    }
    }
    return 1;
}

static int cells_write(Cells *c, COp *op, uint64_t value) {
    return cells_write_x(c, op, value, 0);
}

/* A write that lowers the line (cells_write gave 2), with the GIL: what the
 * model's write does (NrfPeripheral._set_irq(False) -> the SoC's set_irq ->
 * CortexM.set_irq_level: the IRQ's bit of irq_level cleared; pending stays),
 * or 1 (the model) while the SoC has irq listeners.  0 done, -1 error. */
static PyObject *str_irq_level;

static int do_sync(Slot *s);

static int cells_lower(Slot *s, COp *op, uint64_t value) {
    int r = cells_write(op->cells, op, value);      /* again: under the GIL now */
    if (r == 3) {                                   /* slow bits: the op's slow(), at */
        if (do_sync(s))                             /* the access's time, as the model */
            return -1;
        PyObject *v = PyLong_FromUnsignedLongLong(value & 0xFFFFFFFFu);
        if (v == NULL)
            return -1;
        PyObject *a[2] = {op->key, v};
        PyObject *x = PyObject_Vectorcall(op->slow, a, 2, NULL);
        Py_DECREF(v);
        if (x == NULL)
            return -1;
        Py_DECREF(x);
        return 0;
    }
    if (r != 2)
        return r;
    if (PyList_GET_SIZE(op->a[2]) != 0)
        return 1;
    PyObject *cur = PyObject_GetAttr(op->a[0], str_irq_level);
    if (cur == NULL)
        return -1;
    PyObject *bit = PyLong_FromUnsignedLongLong(op->lower_bit), *nw = NULL;
    if (bit != NULL) {
        PyObject *both = PyNumber_And(cur, bit);
        if (both != NULL) {
            nw = PyNumber_Xor(cur, both);        /* cur & ~bit */
            Py_DECREF(both);
        }
        Py_DECREF(bit);
    }
    Py_DECREF(cur);
    if (nw == NULL)
        return -1;
    int err = PyObject_SetAttr(op->a[0], str_irq_level, nw);
    Py_DECREF(nw);
    if (err)
        return -1;
    cells_write_x(op->cells, op, value, 1);
    return 0;
}

/* -- Streams ----------------------------------------------------------------
 *
 * The legacy SPI shifting pixel data to the display or reading the NOR:
 * TXD, READY, RXD for every byte.  While its model has put it in streaming
 * mode (cell 6 = 1: no READY interrupt, no PPI, and the selected device takes
 * a byte stream whose answers are known in advance: 0xFF from the ST7789 in
 * RAMWR, the next bytes of the array from the NOR in READ, given with
 * set_answers() and streaming stops when they run out), C does the model's work for
 * those registers (cells: 0 shifting byte or -1, 1 TXD buffer or -1, 2 due
 * tick, 3 RXD FIFO fill, 4-5 FIFO, 6 streaming, 7 ticks per byte) and queues
 * the completed bytes in the Cells.  Any entry into Python from an MMIO
 * access (any slot), and the end of every slice, first ends streaming and
 * hands the queued bytes to the model's flush(), so no Python code ever sees
 * the device behind the bus; the model turns streaming on again when it next
 * handles an access and finds the conditions still true.
 * ------------------------------------------------------------------------- */
#define MAX_STREAMS 16
typedef struct StreamSet {
    PyObject_HEAD
    int n;
    Cells *cells[MAX_STREAMS];
    PyObject *flush[MAX_STREAMS];
} StreamSet;                     /* one machine's streaming masters (its bus owns it) */
static PyTypeObject StreamSetType;
enum { S_SHIFT = 0, S_TXBUF = 1, S_DUE = 2, S_RXN = 3, S_RX0 = 4, S_RX1 = 5, S_ON = 6,
       S_BYTE = 7 };
#define SPI_READY_BIT 2          /* EVENTS_READY at 0x108 */

/* End streaming and hand queued bytes over (GIL held); 0 or -1. */
static int streams_off_c(StreamSet *ss) {
    int rc = 0;
    for (int i = 0; ss != NULL && i < ss->n; i++) {
        Cells *c = ss->cells[i];
        c->cell[S_ON] = 0;
        if (c->pend_n > 0 || c->last_txd >= 0) {
            PyObject *r = PyObject_CallNoArgs(ss->flush[i]);
            if (r == NULL) {
                PyErr_WriteUnraisable(ss->flush[i]);
                rc = -1;
            }
            Py_XDECREF(r);
        }
    }
    return rc;
}

static PyObject *StreamSet_register(StreamSet *ss, PyObject *args) {
    PyObject *cells, *flush;
    if (!PyArg_ParseTuple(args, "O!O", &CellsType, &cells, &flush))
        return NULL;
    if (ss->n == MAX_STREAMS) {
        PyErr_SetString(PyExc_RuntimeError, "too many streaming serial masters");
        return NULL;
    }
    Py_INCREF(cells);
    Py_INCREF(flush);
    ss->cells[ss->n] = (Cells *)cells;
    ss->flush[ss->n] = flush;
    ss->n++;
    Py_RETURN_NONE;
}

static PyObject *StreamSet_off(StreamSet *ss, PyObject *noargs) {
    streams_off_c(ss);
    Py_RETURN_NONE;
}

static int StreamSet_traverse(StreamSet *ss, visitproc visit, void *arg) {
    for (int i = 0; i < ss->n; i++) {
        Py_VISIT((PyObject *)ss->cells[i]);
        Py_VISIT(ss->flush[i]);
    }
    return 0;
}

static int StreamSet_clear(StreamSet *ss) {
    for (int i = 0; i < ss->n; i++) {
        Py_CLEAR(ss->cells[i]);
        Py_CLEAR(ss->flush[i]);
    }
    ss->n = 0;
    return 0;
}

static void StreamSet_dealloc(StreamSet *ss) {
    PyObject_GC_UnTrack(ss);
    StreamSet_clear(ss);
    Py_TYPE(ss)->tp_free((PyObject *)ss);
}

static PyMethodDef StreamSet_methods[] = {
    {"register", (PyCFunction)StreamSet_register, METH_VARARGS,
     "register(cells, flush): a streaming serial master and its hand-over"},
    {"off", (PyCFunction)StreamSet_off, METH_NOARGS,
     "end streaming and hand every queued byte to its model (after each slice)"},
    {NULL}
};

static PyTypeObject StreamSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.StreamSet",
    .tp_doc = "One machine's streaming serial masters (see _mmio.c, Streams).",
    .tp_basicsize = sizeof(StreamSet),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)StreamSet_dealloc,
    .tp_traverse = (traverseproc)StreamSet_traverse,
    .tp_clear = (inquiry)StreamSet_clear,
    .tp_methods = StreamSet_methods,
};

/* Complete the bytes due by now; 1: the model must (RXD overflow, no memory). */
static int stream_complete(Cells *c, long long now) {
    while (c->cell[S_SHIFT] >= 0 && now >= c->cell[S_DUE]) {
        if (c->cell[S_RXN] >= 2)
            return 1;
        int answer = 0xFF;                          /* the stream's answer */
        if (c->answers != NULL) {
            if (c->ans_i >= PyBytes_GET_SIZE(c->answers))
                return 1;                           /* known answers used up */
            answer = (unsigned char)PyBytes_AS_STRING(c->answers)[c->ans_i];
        }
        if (c->pend_n == c->pend_cap) {
            Py_ssize_t cap = c->pend_cap ? 2 * c->pend_cap : 4096;
            unsigned char *p = PyMem_RawRealloc(c->pend, (size_t)cap);
            if (p == NULL)
                return 1;
            c->pend = p;
            c->pend_cap = cap;
        }
        c->pend[c->pend_n++] = (unsigned char)c->cell[S_SHIFT];
        c->cell[S_SHIFT] = -1;
        if (c->answers != NULL)
            c->ans_i++;
        c->cell[S_RX0 + c->cell[S_RXN]] = answer;
        c->cell[S_RXN]++;
        if (c->cell[S_TXBUF] >= 0) {               /* back to back on the wire */
            c->cell[S_SHIFT] = c->cell[S_TXBUF];
            c->cell[S_TXBUF] = -1;
            c->cell[S_DUE] += c->cell[S_BYTE];
        }
        if (c->cell[S_RXN] == 1)
            c->bits |= 1u << SPI_READY_BIT;
    }
    return 0;
}

/* A streaming access: 0 done, 1 the model must (stream off, or bail). */
static int stream_access(Slot *s, COp *op, int is_write, uint64_t value, uint64_t *v) {
    Cells *c = op->cells;
    if (!c->cell[S_ON] || !in_slice(s))
        return 1;
    long long now = slice_now(s);
    if (stream_complete(c, now))
        return 1;
    switch (op->kind) {
    case R_EVENT:                        /* EVENTS_READY */
        *v = (c->bits >> SPI_READY_BIT) & 1;
        return 0;
    case W_EVENT:
        if (value & 1)
            c->bits |= 1u << SPI_READY_BIT;
        else
            c->bits &= ~(1u << SPI_READY_BIT);
        return 0;
    case R_CALL:                         /* RXD */
        if (c->cell[S_RXN] == 0) {
            *v = 0;
            return 0;
        }
        *v = (uint64_t)c->cell[S_RX0] & 0xFF;
        c->cell[S_RX0] = c->cell[S_RX1];
        if (--c->cell[S_RXN] > 0)
            c->bits |= 1u << SPI_READY_BIT;
        return 0;
    case W_TXD:
        if (c->cell[S_SHIFT] < 0) {
            c->cell[S_SHIFT] = (long long)(value & 0xFF);
            c->cell[S_DUE] = now + c->cell[S_BYTE];
        } else if (c->cell[S_TXBUF] < 0) {
            c->cell[S_TXBUF] = (long long)(value & 0xFF);
        } else {
            return 1;                    /* both buffers full: the model logs it */
        }
        c->last_txd = (long long)(value & 0xFF);
        return 0;
    }
    return 1;
}

static COp *slot_op(Slot *s, uint64_t offset, int is_write) {
    COp *op = &(is_write ? s->wops : s->rops)[offset >> 2];
    if (op->kind == K_UNKNOWN) {
        if (op_resolve(s, op, offset, is_write)) {
            report(s, NULL);     /* a broken op declaration: use the model */
            op_clear(op);
            op->kind = K_GENERIC;
        }
        if (s->nused < 2 * NOFF)  /* after resolving: it may have flushed */
            s->used[s->nused++] = (uint16_t)((offset >> 2) | (is_write ? NOFF : 0));
    }
    return op;
}

static uint64_t slot_read(void *uc, uint64_t offset, unsigned size, void *user_data) {
    Slot *s = (Slot *)user_data;
    uint64_t v = 0;
    if (size == 4 && !(offset & 3) && offset < 4 * NOFF) {
        COp *op = &s->rops[offset >> 2];     /* resolved ones only: resolving needs the GIL */
        if (op->stream && op->cells != NULL) {
            if (stream_access(s, op, 0, 0, &v) == 0) {
                s->count++;
                s->stat[(offset >> 2) * 4]++;
                loop_note(s, offset, 0);
                return v;
            }
        } else if (op->nogil && cells_read(s, op, &v, 0) == 0) {
            s->count++;
            s->stat[(offset >> 2) * 4]++;
            if (op->kind == R_COUNTER)
                loop_note_counter(s, offset, op);
            else
                loop_note(s, offset, op_stable_read(op));
            return v;
        }
    }
    PyGILState_STATE g = PyGILState_Ensure();
    s->count++;
    int noted = 0;
    streams_off_c(s->streams);   /* Python is about to run: no bytes left in C */
    int aligned = size == 4 && !(offset & 3) && offset < 4 * NOFF;
    if (aligned) {
        COp *op = slot_op(s, offset, 0);
        if (op->kind >= R_CALL) {
            int r = (op->timed && (op->kind == R_CALL ? do_sync(s) : op_sync(s))) ? -1
                    : exec_read(s, op, &v);
            if (r == 0) {
                s->stat[(offset >> 2) * 4 + (op->kind == R_CALL)]++;
                loop_note(s, offset, op_stable_read(op));
                noted = 1;
                goto out;
            }
            if (r < 0) {
                v = 0;
                report(s, op->key);
                goto out;
            }
        }
        s->stat[(offset >> 2) * 4 + 1]++;
    }
    PyObject *off = PyLong_FromUnsignedLongLong(offset), *r = NULL;
    if (off == NULL) {
        report(s, NULL);
        goto out;
    }
    if (do_sync(s)) {
        report(s, off);
    } else {
        PyObject *args[2] = {off, PyLong_FromUnsignedLong(size)};
        if (args[1] != NULL) {
            r = PyObject_Vectorcall(s->read, args, 2, NULL);
            Py_DECREF(args[1]);
            if (r != NULL)
                v = PyLong_AsUnsignedLongLongMask(r);
        }
        if (r == NULL || PyErr_Occurred()) {
            v = 0;
            report(s, off);
        }
        Py_XDECREF(r);
    }
    Py_DECREF(off);
out:
    if (!noted)
        loop_note(s, offset, 0);
    PyGILState_Release(g);
    return v;
}

static void slot_write(void *uc, uint64_t offset, unsigned size, uint64_t value,
                       void *user_data) {
    Slot *s = (Slot *)user_data;
    int bailed = 0;
    if (size == 4 && !(offset & 3) && offset < 4 * NOFF) {
        COp *op = &s->wops[offset >> 2];
        if (op->stream && op->cells != NULL) {
            uint64_t unused;
            if (stream_access(s, op, 1, value, &unused) == 0) {
                s->count++;
                s->stat[(offset >> 2) * 4 + 2]++;
                loop_note_other_write(s, offset);
                return;
            }
        } else if (op->nogil) {
            int r = cells_write(op->cells, op, value);
            if (r == 0) {
                s->count++;
                s->stat[(offset >> 2) * 4 + 2]++;
                if (op->kind <= W_INTEN)      /* EVENT, INTEN*: state only */
                    loop_note_write(s, offset);
                else
                    loop_note_other_write(s, offset);
                return;
            }
            if (r == 1)
                bailed = 1;      /* the model decides: straight to it */
            /* 2: lowers the line, 3: slow bits with a slow(): the op again
             * with the GIL (cells_lower) */
        }
    }
    loop_note_other_write(s, offset);
    PyGILState_STATE g = PyGILState_Ensure();
    s->count++;
    streams_off_c(s->streams);   /* Python is about to run: no bytes left in C */
    if (size == 4 && !(offset & 3) && offset < 4 * NOFF && !bailed) {
        COp *op = slot_op(s, offset, 1);
        if (op->kind >= W_EVENT) {
            int r = (op->timed && (op->kind == W_CALL ? do_sync(s) : op_sync(s))) ? -1
                    : exec_write(s, op, value);
            if (r == 0) {
                s->stat[(offset >> 2) * 4 + 2]++;
                goto out;
            }
            if (r < 0) {
                report(s, op->key);
                goto out;
            }
        }
        s->stat[(offset >> 2) * 4 + 3]++;
    } else if (bailed) {
        s->stat[(offset >> 2) * 4 + 3]++;
    }
    if (do_sync(s)) {
        report(s, NULL);
    } else {
        PyObject *args[3] = {PyLong_FromUnsignedLongLong(offset), PyLong_FromUnsignedLong(size),
                             PyLong_FromUnsignedLongLong(value)};
        if (args[0] && args[1] && args[2]) {
            PyObject *r = PyObject_Vectorcall(s->write, args, 3, NULL);
            if (r == NULL)
                report(s, args[0]);
            Py_XDECREF(r);
        } else {
            report(s, NULL);
        }
        Py_XDECREF(args[0]);
        Py_XDECREF(args[1]);
        Py_XDECREF(args[2]);
    }
out:
    PyGILState_Release(g);
}

/* The op a `used` entry names in a table (index, | NOFF for writes). */
static inline COp *table_op(COp *rops, COp *wops, int u) {
    return u & NOFF ? &wops[u & (NOFF - 1)] : &rops[u];
}

static void table_clear(COp *rops, COp *wops, uint16_t *used, int nused) {
    for (int i = 0; i < nused; i++)
        op_clear(table_op(rops, wops, used[i]));
}

static int table_traverse(COp *rops, COp *wops, uint16_t *used, int nused, visitproc visit,
                          void *arg) {
    for (int i = 0; i < nused; i++) {
        COp *op = table_op(rops, wops, used[i]);
        Py_VISIT(op->obj);
        Py_VISIT((PyObject *)op->cells);
        Py_VISIT((PyObject *)op->bits_cells);
        Py_VISIT(op->slow);
        for (int k = 0; k < 4; k++)
            Py_VISIT(op->a[k]);
    }
    return 0;
}

/* Forget every op resolved, in the current table and the parked ones. */
static void slot_flush(Slot *s) {
    if (s->rops != NULL)
        table_clear(s->rops, s->wops, s->used, s->nused);
    s->nused = 0;
    for (int b = 0; b < NBANK; b++)
        if (b != s->cur && s->park[b].rops != NULL) {
            table_clear(s->park[b].rops, s->park[b].wops, s->park[b].used, s->park[b].nused);
            s->park[b].nused = 0;
        }
}

static int Slot_init(Slot *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"resolve", "sync", "read", "write", "error", "cpu",
                             "clock", "cycles_addr", "cycle_ticks", "cells_addr", "streams",
                             "loop_addr", NULL};
    PyObject *resolve, *sync, *read, *write, *error, *cpu = Py_None, *clock = Py_None;
    PyObject *streams = Py_None;
    unsigned long long cycles_addr = 0, cells_addr = 0, loop_addr = 0;
    long long cycle_ticks = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOO|OOKLKOK", kwlist, &resolve, &sync,
                                     &read, &write, &error, &cpu, &clock, &cycles_addr,
                                     &cycle_ticks, &cells_addr, &streams, &loop_addr))
        return -1;
    self->loop = (volatile LoopCells *)(uintptr_t)loop_addr;
    if (streams != Py_None && !PyObject_TypeCheck(streams, &StreamSetType)) {
        PyErr_SetString(PyExc_TypeError, "streams must be a StreamSet or None");
        return -1;
    }
    if (cycles_addr != 0 && (cpu == Py_None || clock == Py_None || cycle_ticks <= 0
                             || cells_addr == 0)) {
        PyErr_SetString(PyExc_ValueError,
                        "cycles_addr needs cpu, clock, cycle_ticks and cells_addr");
        return -1;
    }
    if (clock == Py_None) {
        PyErr_SetString(PyExc_ValueError, "Slot needs the clock");
        return -1;
    }
    if (self->rops == NULL) {
        self->rops = PyMem_Calloc(NOFF, sizeof(COp));
        self->wops = PyMem_Calloc(NOFF, sizeof(COp));
        self->stat = PyMem_Calloc(NOFF * 4, sizeof(uint64_t));
        self->used = PyMem_Calloc(2 * NOFF, sizeof(uint16_t));
        if (!self->rops || !self->wops || !self->stat || !self->used) {
            PyErr_NoMemory();
            return -1;
        }
    }
    slot_flush(self);
    self->cycles = (const volatile uint64_t *)(uintptr_t)cycles_addr;
    self->cells = (volatile SyncCells *)(uintptr_t)cells_addr;
    self->cycle_ticks = cycle_ticks;
    Py_INCREF(cpu); Py_XSETREF(self->cpu, cpu);
    Py_INCREF(clock); Py_XSETREF(self->clock, clock);
    Py_INCREF(resolve); Py_XSETREF(self->resolve, resolve);
    Py_INCREF(sync); Py_XSETREF(self->sync, sync);
    Py_INCREF(read); Py_XSETREF(self->read, read);
    Py_INCREF(write); Py_XSETREF(self->write, write);
    Py_INCREF(error); Py_XSETREF(self->error, error);
    Py_XSETREF(self->streams, streams == Py_None ? NULL : (StreamSet *)Py_NewRef(streams));
    return 0;
}

static int Slot_traverse(Slot *self, visitproc visit, void *arg) {
    Py_VISIT((PyObject *)self->streams);
    Py_VISIT(self->resolve);
    Py_VISIT(self->sync);
    Py_VISIT(self->read);
    Py_VISIT(self->write);
    Py_VISIT(self->error);
    Py_VISIT(self->cpu);
    Py_VISIT(self->clock);
    int r;
    if (self->rops != NULL
        && (r = table_traverse(self->rops, self->wops, self->used, self->nused, visit, arg)))
        return r;
    for (int b = 0; b < NBANK; b++)
        if (b != self->cur && self->park[b].rops != NULL
            && (r = table_traverse(self->park[b].rops, self->park[b].wops, self->park[b].used,
                                   self->park[b].nused, visit, arg)))
            return r;
    return 0;
}

static int Slot_clear(Slot *self) {
    slot_flush(self);
    Py_CLEAR(self->streams);
    Py_CLEAR(self->resolve);
    Py_CLEAR(self->sync);
    Py_CLEAR(self->read);
    Py_CLEAR(self->write);
    Py_CLEAR(self->error);
    Py_CLEAR(self->cpu);
    Py_CLEAR(self->clock);
    self->cycles = NULL;
    self->cells = NULL;
    return 0;
}

static void Slot_dealloc(Slot *self) {
    PyObject_GC_UnTrack(self);
    Slot_clear(self);
    PyMem_Free(self->rops);
    PyMem_Free(self->wops);
    PyMem_Free(self->stat);
    PyMem_Free(self->used);
    for (int b = 0; b < NBANK; b++)
        if (b != self->cur) {
            PyMem_Free(self->park[b].rops);
            PyMem_Free(self->park[b].wops);
            PyMem_Free(self->park[b].used);
        }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Slot_flush(Slot *self, PyObject *noargs) {
    slot_flush(self);
    Py_RETURN_NONE;
}

static PyObject *Slot_select(Slot *self, PyObject *arg) {
    long b = PyLong_AsLong(arg);
    if (b == -1 && PyErr_Occurred())
        return NULL;
    if (b < 0 || b >= NBANK) {
        PyErr_Format(PyExc_ValueError, "op table %ld: 0..%d", b, NBANK - 1);
        return NULL;
    }
    if (b == self->cur || self->rops == NULL)
        Py_RETURN_NONE;
    if (self->park[b].rops == NULL) {
        COp *r = PyMem_Calloc(NOFF, sizeof(COp)), *w = PyMem_Calloc(NOFF, sizeof(COp));
        uint16_t *u = PyMem_Calloc(2 * NOFF, sizeof(uint16_t));
        if (!r || !w || !u) {
            PyMem_Free(r);
            PyMem_Free(w);
            PyMem_Free(u);
            return PyErr_NoMemory();
        }
        self->park[b].rops = r;
        self->park[b].wops = w;
        self->park[b].used = u;
        self->park[b].nused = 0;
    }
    int c = self->cur;
    self->park[c].rops = self->rops;
    self->park[c].wops = self->wops;
    self->park[c].used = self->used;
    self->park[c].nused = self->nused;
    self->rops = self->park[b].rops;
    self->wops = self->park[b].wops;
    self->used = self->park[b].used;
    self->nused = self->park[b].nused;
    self->park[b].rops = self->park[b].wops = NULL;     /* current now */
    self->park[b].used = NULL;
    self->cur = (int)b;
    Py_RETURN_NONE;
}

static PyObject *Slot_stats(Slot *self, PyObject *noargs) {
    PyObject *d = PyDict_New();
    if (d == NULL || self->stat == NULL)
        return d;
    for (int i = 0; i < NOFF; i++) {
        uint64_t *st = &self->stat[i * 4];
        if (!(st[0] | st[1] | st[2] | st[3]))
            continue;
        PyObject *k = PyLong_FromLong(i * 4);
        PyObject *v = Py_BuildValue("(KKKK)", (unsigned long long)st[0],
                                    (unsigned long long)st[1], (unsigned long long)st[2],
                                    (unsigned long long)st[3]);
        if (k == NULL || v == NULL || PyDict_SetItem(d, k, v)) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(k);
        Py_DECREF(v);
    }
    return d;
}

static PyMethodDef Slot_methods[] = {
    {"flush", (PyCFunction)Slot_flush, METH_NOARGS,
     "forget the ops resolved so far (the model's op table changed)"},
    {"select", (PyCFunction)Slot_select, METH_O,
     "select(key): use the op table kept for key (0..15), resolving anew only "
     "offsets not yet resolved under it (the model's ops depend on key alone)"},
    {"stats", (PyCFunction)Slot_stats, METH_NOARGS,
     "{offset: (native reads, model reads, native writes, model writes)} for aligned words"},
    {NULL}
};

static PyMemberDef Slot_members[] = {
    {"count", T_ULONGLONG, offsetof(Slot, count), 0, "guest accesses so far"},
    {NULL}
};

static PyTypeObject SlotType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.Slot",
    .tp_doc = "One peripheral slot's handlers for the native MMIO callbacks.",
    .tp_basicsize = sizeof(Slot),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Slot_init,
    .tp_dealloc = (destructor)Slot_dealloc,
    .tp_traverse = (traverseproc)Slot_traverse,
    .tp_clear = (inquiry)Slot_clear,
    .tp_members = Slot_members,
    .tp_methods = Slot_methods,
};

/* ======================================================================
 * Regs: the engine's 32-bit registers without ctypes.
 *
 * The Python binding's reg_read/reg_write cost about 1.3 us each, a ctypes
 * call of uc_reg_read about 0.5 us; exception entry and return make a
 * dozen such calls per interrupt.  Regs' methods are builtins calling
 * uc_reg_read/uc_reg_write directly for the register ids marked 32-bit
 * (emu/cpu/fastregs.py lists them), and the binding's own methods for
 * every other id, so behaviour is unchanged.
 * ====================================================================== */
typedef int (*uc_reg_fn)(void *uc, int regid, void *value);

typedef int (*uc_mem_fn)(void *uc, uint64_t address, void *bytes, uint64_t size);

/* the register ids exc_push/exc_enter/exc_pop use, in this order
 * (emu/cpu/cortexm.py passes them to set_exc) */
enum { X_R0, X_R1, X_R2, X_R3, X_R12, X_LR, X_XPSR, X_CONTROL, X_MSP, X_PSP, X_IPSR, X_PC,
       X_NZCV, X_S0, X_FPSCR = X_S0 + 16, X_NIDS };

typedef struct {
    PyObject_HEAD
    void *uch;
    uc_reg_fn rd, wr;
    PyObject *slow_read, *slow_write, *slow_read_batch, *slow_write_batch, *error;
    unsigned char is32[1024];
    uc_mem_fn mem_rd, mem_wr;   /* set by set_exc: exception entry and return in C */
    int xid[X_NIDS];
} Regs;

static int regs_err(Regs *r, int err) {
    PyObject *e = PyObject_CallFunction(r->error, "i", err);
    if (e != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return -1;
}

static inline int regs_fast(Regs *r, long id) {
    return id >= 0 && id < (long)sizeof r->is32 && r->is32[id];
}

static PyObject *regs_read1(Regs *r, long id) {
    uint64_t v = 0;
    int err = r->rd(r->uch, (int)id, &v);
    if (err) {
        regs_err(r, err);
        return NULL;
    }
    return PyLong_FromUnsignedLong((uint32_t)v);
}

static int regs_write1(Regs *r, long id, PyObject *value) {
    uint64_t v = PyLong_AsUnsignedLongLongMask(value) & 0xFFFFFFFFu;
    if (PyErr_Occurred())
        return -1;
    int err = r->wr(r->uch, (int)id, &v);
    return err ? regs_err(r, err) : 0;
}

static PyObject *Regs_reg_read(Regs *r, PyObject *const *args, Py_ssize_t n) {
    if (n < 1 || n > 2) {
        PyErr_SetString(PyExc_TypeError, "reg_read(reg_id, aux=None)");
        return NULL;
    }
    long id = PyLong_AsLong(args[0]);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    if ((n == 1 || args[1] == Py_None) && regs_fast(r, id))
        return regs_read1(r, id);
    return PyObject_Vectorcall(r->slow_read, args, (size_t)n, NULL);
}

static PyObject *Regs_reg_write(Regs *r, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "reg_write(reg_id, value)");
        return NULL;
    }
    long id = PyLong_AsLong(args[0]);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    if (!regs_fast(r, id))
        return PyObject_Vectorcall(r->slow_write, args, 2, NULL);
    if (regs_write1(r, id, args[1]))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Regs_reg_read_batch(Regs *r, PyObject *ids) {
    PyObject *seq = PySequence_Fast(ids, "reg_read_batch needs a sequence of ids");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        long id = PyLong_AsLong(items[i]);
        if ((id == -1 && PyErr_Occurred()) || !regs_fast(r, id)) {
            Py_DECREF(seq);
            PyErr_Clear();
            return PyObject_CallOneArg(r->slow_read_batch, ids);
        }
    }
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *v = regs_read1(r, PyLong_AsLong(items[i]));
        if (v == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *Regs_reg_write_batch(Regs *r, PyObject *pairs) {
    PyObject *seq = PySequence_Fast(pairs, "reg_write_batch needs (id, value) pairs");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = items[i];
        long id = (PyTuple_Check(p) && PyTuple_GET_SIZE(p) == 2)
                  ? PyLong_AsLong(PyTuple_GET_ITEM(p, 0)) : -1;
        if ((id == -1 && PyErr_Occurred()) || !regs_fast(r, id)) {
            PyErr_Clear();
            PyObject *res = PyObject_CallOneArg(r->slow_write_batch, seq);
            Py_DECREF(seq);
            return res;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = items[i];
        if (regs_write1(r, PyLong_AsLong(PyTuple_GET_ITEM(p, 0)), PyTuple_GET_ITEM(p, 1))) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static int Regs_init(Regs *r, PyObject *args, PyObject *kwds) {
    unsigned long long uch, rd, wr;
    PyObject *fast_ids, *sr, *sw, *srb, *swb, *err;
    if (!PyArg_ParseTuple(args, "KKKOOOOOO", &uch, &rd, &wr, &fast_ids, &sr, &sw, &srb, &swb,
                          &err))
        return -1;
    r->uch = (void *)(uintptr_t)uch;
    r->rd = (uc_reg_fn)(uintptr_t)rd;
    r->wr = (uc_reg_fn)(uintptr_t)wr;
    memset(r->is32, 0, sizeof r->is32);
    PyObject *it = PyObject_GetIter(fast_ids), *x;
    if (it == NULL)
        return -1;
    while ((x = PyIter_Next(it)) != NULL) {
        long id = PyLong_AsLong(x);
        Py_DECREF(x);
        if (id < 0 || id >= (long)sizeof r->is32) {
            Py_DECREF(it);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "register id %ld out of range", id);
            return -1;
        }
        r->is32[id] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return -1;
    Py_INCREF(sr); Py_XSETREF(r->slow_read, sr);
    Py_INCREF(sw); Py_XSETREF(r->slow_write, sw);
    Py_INCREF(srb); Py_XSETREF(r->slow_read_batch, srb);
    Py_INCREF(swb); Py_XSETREF(r->slow_write_batch, swb);
    Py_INCREF(err); Py_XSETREF(r->error, err);
    return 0;
}

static int Regs_traverse(Regs *r, visitproc visit, void *arg) {
    Py_VISIT(r->slow_read);
    Py_VISIT(r->slow_write);
    Py_VISIT(r->slow_read_batch);
    Py_VISIT(r->slow_write_batch);
    Py_VISIT(r->error);
    return 0;
}

static int Regs_clear(Regs *r) {
    Py_CLEAR(r->slow_read);
    Py_CLEAR(r->slow_write);
    Py_CLEAR(r->slow_read_batch);
    Py_CLEAR(r->slow_write_batch);
    Py_CLEAR(r->error);
    return 0;
}

static void Regs_dealloc(Regs *r) {
    PyObject_GC_UnTrack(r);
    Regs_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* --------------------------------------------------------------------
 * Exception entry and return, the register and memory part (ARMv7-M
 * B1.5.6/B1.5.8), as CortexM.exception_entry/_enter/exception_return do it
 * in Python, step for step (same reads, same writes, same order); the NVIC
 * bookkeeping (pending, active, tail-chaining, SLEEPONEXIT) stays in
 * Python.  emu/cpu/cortexm.py uses these unless running pure Python, and
 * tests/test_cpu_exc_native.py checks both give the same machine.
 * ------------------------------------------------------------------ */
static inline uint32_t xr(Regs *r, int i, int *err) {
    uint64_t v = 0;
    int e = r->rd(r->uch, r->xid[i], &v);
    if (e && !*err) *err = e;
    return (uint32_t)v;
}

static inline void xw(Regs *r, int i, uint32_t value, int *err) {
    uint64_t v = value;
    int e = r->wr(r->uch, r->xid[i], &v);
    if (e && !*err) *err = e;
}

static PyObject *Regs_set_exc(Regs *r, PyObject *args) {
    unsigned long long mrd, mwr;
    PyObject *ids;
    if (!PyArg_ParseTuple(args, "KKO", &mrd, &mwr, &ids))
        return NULL;
    PyObject *seq = PySequence_Fast(ids, "set_exc needs a sequence of register ids");
    if (seq == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != X_NIDS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "set_exc needs %d register ids", (int)X_NIDS);
        return NULL;
    }
    for (int i = 0; i < X_NIDS; i++) {
        long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if ((id == -1 && PyErr_Occurred()) || !regs_fast(r, id)) {
            Py_DECREF(seq);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "register id %ld is not a 32-bit one", id);
            return NULL;
        }
        r->xid[i] = (int)id;
    }
    Py_DECREF(seq);
    r->mem_rd = (uc_mem_fn)(uintptr_t)mrd;
    r->mem_wr = (uc_mem_fn)(uintptr_t)mwr;
    Py_RETURN_NONE;
}

/* IPSR, CONTROL and both stack pointers, as CortexM._set_mode writes them.
 * Unicorn ignores MSP, PSP and CONTROL writes in unprivileged thread mode
 * (an unprivileged MSR): going to thread mode with CONTROL.nPRIV set, the
 * stack pointers and SPSEL are written while still privileged, nPRIV last. */
static void set_mode(Regs *r, uint32_t ipsr, uint32_t control, uint32_t msp, uint32_t psp,
                     int *err) {
    if (ipsr == 0 && (control & 1)) {
        xw(r, X_CONTROL, control & ~1u, err);           /* handler mode: nPRIV cleared */
        xw(r, X_IPSR, 0, err);
        xw(r, X_CONTROL, control & ~1u, err);           /* privileged thread: SPSEL */
        xw(r, X_MSP, msp, err);
        xw(r, X_PSP, psp, err);
        xw(r, X_CONTROL, control, err);
        return;
    }
    xw(r, X_IPSR, ipsr, err);
    xw(r, X_CONTROL, control, err);
    xw(r, X_MSP, msp, err);
    xw(r, X_PSP, psp, err);
}

/* exc_push(return_addr, ipsr, align_enabled, m4, m0)
 *   -> (0, exc_return, msp, psp, control) with the frame pushed, or
 *      (err, newsp) when the stacking write failed (nothing else changed) */
static PyObject *Regs_exc_push(Regs *r, PyObject *const *a, Py_ssize_t n) {
    if (n != 5 || r->mem_wr == NULL) {
        PyErr_SetString(PyExc_TypeError, "exc_push(return_addr, ipsr, align, m4, m0) after set_exc");
        return NULL;
    }
    uint32_t ret_addr = (uint32_t)PyLong_AsUnsignedLongLongMask(a[0]);
    uint32_t ipsr = (uint32_t)PyLong_AsUnsignedLongMask(a[1]);
    int align_on = PyObject_IsTrue(a[2]), m4 = PyObject_IsTrue(a[3]), m0 = PyObject_IsTrue(a[4]);
    if (PyErr_Occurred())
        return NULL;
    int err = 0;
    uint32_t w[26];
    w[0] = xr(r, X_R0, &err); w[1] = xr(r, X_R1, &err); w[2] = xr(r, X_R2, &err);
    w[3] = xr(r, X_R3, &err); w[4] = xr(r, X_R12, &err); w[5] = xr(r, X_LR, &err);
    uint32_t xpsr = xr(r, X_XPSR, &err), control = xr(r, X_CONTROL, &err);
    int thread = ipsr == 0;
    /* Unprivileged thread mode (CONTROL.nPRIV): Unicorn's register API reads
     * MSP and PSP as 0, as an unprivileged MRS would.  Handler mode is
     * privileged: read them there (writing IPSR swaps the banked SP, as
     * exc_enter's write does) and go back to thread mode after. */
    int unpriv = thread && (control & 1);
    if (unpriv)
        xw(r, X_IPSR, 1, &err);
    uint32_t msp = xr(r, X_MSP, &err), psp = xr(r, X_PSP, &err);
    if (unpriv)
        xw(r, X_IPSR, 0, &err);
    if (err)
        return regs_err(r, err), NULL;
    int use_psp = thread && (control & 2);
    int fpca = m4 && (control & 4);
    uint32_t sp = use_psp ? psp : msp;
    uint32_t framesize = fpca ? 0x68 : 0x20;
    uint32_t align = (align_on || m0) ? (sp >> 2) & 1 : 0;
    uint32_t newsp = (sp - framesize) & ~4u;
    w[6] = ret_addr & ~1u;
    w[7] = (xpsr & ~(0x1FFu | (1u << 9))) | ipsr | (align << 9) | (1u << 24);
    if (fpca) {
        for (int i = 0; i < 16; i++)
            w[8 + i] = xr(r, X_S0 + i, &err);
        w[24] = xr(r, X_FPSCR, &err);
        w[25] = 0;
        if (err)
            return regs_err(r, err), NULL;
    }
    unsigned char buf[0x68];
    for (uint32_t i = 0; i < framesize / 4; i++) {       /* little-endian words */
        buf[4 * i] = (unsigned char)w[i];
        buf[4 * i + 1] = (unsigned char)(w[i] >> 8);
        buf[4 * i + 2] = (unsigned char)(w[i] >> 16);
        buf[4 * i + 3] = (unsigned char)(w[i] >> 24);
    }
    int e = r->mem_wr(r->uch, newsp, buf, framesize);
    if (e)
        return Py_BuildValue("(iK)", e, (unsigned long long)newsp);
    if (use_psp) psp = newsp; else msp = newsp;
    uint32_t exc_return = fpca ? 0xFFFFFFE1u : 0xFFFFFFF1u;
    if (thread) exc_return |= 0x8;
    if (use_psp) exc_return |= 0x4;
    if (m0) exc_return |= 0x10;
    return Py_BuildValue("(iKKKK)", 0, (unsigned long long)exc_return, (unsigned long long)msp,
                         (unsigned long long)psp, (unsigned long long)control);
}

/* exc_enter(exc, exc_return, msp, psp, control, vector_address, it_mask) -> vector
 *   (0xFFFFFFFF when the vector cannot be read); PC is written only for a
 *   valid vector (odd, not 0 or 0xFFFFFFFF), as CortexM._enter does */
static PyObject *Regs_exc_enter(Regs *r, PyObject *const *a, Py_ssize_t n) {
    if (n != 7 || r->mem_rd == NULL) {
        PyErr_SetString(PyExc_TypeError, "exc_enter(exc, exc_return, msp, psp, control, "
                                         "vector_address, it_mask) after set_exc");
        return NULL;
    }
    uint32_t v[7];
    for (int i = 0; i < 7; i++)
        v[i] = (uint32_t)PyLong_AsUnsignedLongLongMask(a[i]);
    if (PyErr_Occurred())
        return NULL;
    unsigned char b[4];
    uint32_t vec = 0xFFFFFFFFu;
    if (r->mem_rd(r->uch, v[5], b, 4) == 0)
        vec = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    int err = 0;
    uint32_t xpsr = xr(r, X_XPSR, &err);
    if (xpsr & v[6])
        xw(r, X_XPSR, xpsr & ~v[6], &err);
    xw(r, X_IPSR, v[0], &err);
    xw(r, X_CONTROL, v[4] & ~0x6u, &err);
    xw(r, X_MSP, v[2], &err);
    xw(r, X_PSP, v[3], &err);
    xw(r, X_NZCV, xr(r, X_NZCV, &err), &err);        /* _refresh_flags */
    xw(r, X_LR, v[1], &err);
    if (!(vec == 0xFFFFFFFFu || vec == 0 || !(vec & 1)))
        xw(r, X_PC, vec & ~1u, &err);
    if (err)
        return regs_err(r, err), NULL;
    return PyLong_FromUnsignedLong(vec);
}

/* The unstacking of exc_pop: 0 with *out = the new IPSR, a positive
 * uc_err with *out = the SP when the frame cannot be read (nothing
 * changed), -1 with a Python exception set. */
static int exc_pop_c(Regs *r, int use_psp, int fp, int to_thread, uint32_t *out) {
    int err = 0;
    uint32_t msp = xr(r, X_MSP, &err), psp = xr(r, X_PSP, &err), control = xr(r, X_CONTROL, &err);
    if (err)
        return regs_err(r, err);
    uint32_t sp = use_psp ? psp : msp;
    uint32_t framesize = fp ? 0x68 : 0x20;
    unsigned char buf[0x68];
    int e = r->mem_rd(r->uch, sp, buf, framesize);
    if (e) {
        *out = sp;
        return e > 0 ? e : 1;
    }
    uint32_t w[26];
    for (uint32_t i = 0; i < framesize / 4; i++)
        w[i] = buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 | (uint32_t)buf[4 * i + 2] << 16
               | (uint32_t)buf[4 * i + 3] << 24;
    uint32_t pc = w[6], xpsr = w[7];
    uint32_t newsp = sp + framesize;
    if (xpsr & (1u << 9))
        newsp += 4;
    if (use_psp) psp = newsp; else msp = newsp;
    uint32_t ipsr = xpsr & 0x1FF;
    if (to_thread && ipsr != 0)
        ipsr = 0;
    control &= ~0x6u;
    if (to_thread && use_psp)
        control |= 2;
    if (fp)
        control |= 4;
    set_mode(r, ipsr, control, msp, psp, &err);        /* _set_mode, refresh below */
    xw(r, X_R0, w[0], &err); xw(r, X_R1, w[1], &err); xw(r, X_R2, w[2], &err);
    xw(r, X_R3, w[3], &err); xw(r, X_R12, w[4], &err); xw(r, X_LR, w[5], &err);
    if (fp) {
        for (int i = 0; i < 16; i++)
            xw(r, X_S0 + i, w[8 + i], &err);
        xw(r, X_FPSCR, w[24], &err);
    }
    xw(r, X_XPSR, (xpsr & ~0x1FFu) | ipsr | (1u << 24), &err);
    xw(r, X_NZCV, xr(r, X_NZCV, &err), &err);        /* _refresh_flags */
    xw(r, X_PC, pc & ~1u, &err);
    if (err)
        return regs_err(r, err);
    *out = ipsr;
    return 0;
}

/* exc_pop(use_psp, fp_frame, to_thread) -> (0, ipsr) with the frame
 *   unstacked and the mode, registers, xPSR and PC restored, or (err, sp)
 *   when the frame cannot be read (nothing changed) */
static PyObject *Regs_exc_pop(Regs *r, PyObject *const *a, Py_ssize_t n) {
    if (n != 3 || r->mem_rd == NULL) {
        PyErr_SetString(PyExc_TypeError, "exc_pop(use_psp, fp_frame, to_thread) after set_exc");
        return NULL;
    }
    int use_psp = PyObject_IsTrue(a[0]), fp = PyObject_IsTrue(a[1]), to_thread = PyObject_IsTrue(a[2]);
    if (PyErr_Occurred())
        return NULL;
    uint32_t out;
    int e = exc_pop_c(r, use_psp, fp, to_thread, &out);
    if (e < 0)
        return NULL;
    if (e)
        return Py_BuildValue("(iK)", e, (unsigned long long)out);
    return Py_BuildValue("(iI)", 0, out);
}

static PyMethodDef Regs_methods[] = {
    {"set_exc", (PyCFunction)Regs_set_exc, METH_VARARGS,
     "set_exc(uc_mem_read, uc_mem_write, register_ids): enable exc_push/exc_enter/exc_pop"},
    {"exc_push", (PyCFunction)(void (*)(void))Regs_exc_push, METH_FASTCALL,
     "exc_push(return_addr, ipsr, align, m4, m0) -> (0, exc_return, msp, psp, control) | (err, sp)"},
    {"exc_enter", (PyCFunction)(void (*)(void))Regs_exc_enter, METH_FASTCALL,
     "exc_enter(exc, exc_return, msp, psp, control, vector_address, it_mask) -> vector"},
    {"exc_pop", (PyCFunction)(void (*)(void))Regs_exc_pop, METH_FASTCALL,
     "exc_pop(use_psp, fp_frame, to_thread) -> (0, ipsr) | (err, sp)"},
    {"reg_read", (PyCFunction)(void (*)(void))Regs_reg_read, METH_FASTCALL, "reg_read(id, aux=None)"},
    {"reg_write", (PyCFunction)(void (*)(void))Regs_reg_write, METH_FASTCALL, "reg_write(id, value)"},
    {"reg_read_batch", (PyCFunction)Regs_reg_read_batch, METH_O, "reg_read_batch(ids) -> tuple"},
    {"reg_write_batch", (PyCFunction)Regs_reg_write_batch, METH_O, "reg_write_batch(pairs)"},
    {NULL}
};

static PyTypeObject RegsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.Regs",
    .tp_doc = "Regs(uc_handle, uc_reg_read, uc_reg_write, fast_ids, slow_read, slow_write, "
              "slow_read_batch, slow_write_batch, error_type)",
    .tp_basicsize = sizeof(Regs),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Regs_init,
    .tp_dealloc = (destructor)Regs_dealloc,
    .tp_traverse = (traverseproc)Regs_traverse,
    .tp_clear = (inquiry)Regs_clear,
    .tp_methods = Regs_methods,
};

/* ======================================================================
 * ExcHook: exception returns in the engine's INTR hook, without Python.
 *
 * The INTR hook (UC_HOOK_INTR) is installed here in C.  An exception return
 * (intno 8) that CortexM._return_in_hook would carry out inside the slice,
 * without the MPU (or in a watched run), is done here with the same steps in the
 * same order: the on_exception listeners told, ``active``/``pending``
 * updated (a line still high pends again), FAULTMASK cleared, the frame
 * popped (Regs' exc_pop), PC's Thumb bit, and the check whether the run
 * loop must act (an entry that can be taken now, a fault handler, sleep, a
 * stop, a run watched by run_until's predicate, which the Python hook hands
 * to the run loop after the slice): then the slice ends (``_trap =
 * ("returned",)``),
 * otherwise the slice goes on, with the block hook's mask watch armed as
 * CortexM._pending_to_enter arms it.  The NVIC state stays the CortexM's
 * Python attributes (pending, active, irq_level, irq_enabled, prio,
 * prigroup, shcsr, scr), read and written here through the C API.
 * A tail-chain (a pending exception that preempts the return's target) is
 * done here as CortexM._exception_return does it: the next exception entered
 * on the same frame (exc_enter with LR the same EXC_RETURN).
 * Anything else (other interrupts, a tail-chain to a fault, faults, NMI,
 * SLEEPONEXIT, the MPU) goes to the Python hook, with nothing changed.
 * ====================================================================== */
static int set_ll(PyObject *o, PyObject *name, long long v);

typedef int (*uc_hook_add_fn2)(void *uc, size_t *hh, int type, void *callback, void *user_data,
                               uint64_t begin, uint64_t end);
typedef int (*uc_emu_stop_fn2)(void *uc);

typedef struct {
    PyObject_HEAD
    PyObject *cpu;            /* the CortexM */
    Regs *regs;               /* its engine's registers (exc_pop) */
    PyObject *fallback;       /* fallback(intno): the Python hook (CortexM._hook_intr) */
    PyObject *uc;             /* the binding's Uc (an exception kept as the binding does) */
    PyObject *trap;           /* ("returned",) */
    void *uch;
    uc_emu_stop_fn2 emu_stop;
    int m4;
    uint32_t prio_mask;
    int id_primask, id_basepri, id_faultmask, id_pc;
    volatile int32_t *mask_watch, *pend_prio, *active_prio;
    volatile uint32_t *prigroup_mask;
    volatile uint64_t *blocks;
    size_t hh;
    int on;                   /* 0: every interrupt to the Python hook */
    unsigned long long returns, handed, entries, chains;
    /* the run loop in C (ExcHook.run, set up by loop_setup) */
    int loop_ready;
    PyObject *clock, *uc_error, *reasons[4];   /* StopReason DEADLINE, BREAK, SLEEP, OFF */
    int (*emu_start)(void *uc, uint64_t begin, uint64_t until, uint64_t timeout, size_t count);
    volatile uint64_t *cs_cycles, *cs_deadline, *cs_base_cycles, *cs_synced;
    volatile int64_t *cs_base_ticks;
    volatile uint32_t *cs_stop_flag, *cs_entry_flag, *cs_reason, *cs_miss_addr, *cs_miss_size,
                      *cs_in_slice, *cs_lp_have;
    unsigned long long slices;
    long long skew;            /* tests only: cycles added to every slice's budget */
    int chain_bug;             /* tests only: 1 leaves a tail-chained exception pending */
    int mpu_bug;               /* tests only: 1 stacks without the MPU's check */
    int pend_bug;              /* tests only: 1 pends without _pending_changed's steps */
    PyObject *pend_fallback;   /* SystemControlSpace.write_word (pend_write's other writes) */
    unsigned long long inside_ns;  /* host time inside uc_emu_start (CLOCK_MONOTONIC) */
    PyObject *cpu_dict, *clock_dict;   /* their __dict__s: plain attributes read and set there */
    /* the invalid-instruction hook (install_insn): the WFEs in C */
    PyObject *insn_fallback;   /* fallback() -> bool: CortexM._hook_insn_invalid */
    size_t hh_insn;
    unsigned long long wfes, wfes_handed;
    int wfe_bug;               /* tests only: 1 leaves a sleeping WFE's trap out */
} ExcHook;

/* An attribute of the cpu or the clock: from its instance dict when there
 * (what generic getattr finds for an attribute no data descriptor of the
 * class shadows: tests/test_native_loop.py checks the names), else through
 * getattr (a class default, a property). */
static PyObject *dg(PyObject *d, PyObject *o, PyObject *name) {
    if (d != NULL) {
        PyObject *v = PyDict_GetItemWithError(d, name);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(o, name);
}

static int ds(PyObject *d, PyObject *o, PyObject *name, PyObject *v) {
    if (d != NULL) {
        int c = PyDict_Contains(d, name);
        if (c < 0)
            return -1;
        if (c)
            return PyDict_SetItem(d, name, v);
    }
    return PyObject_SetAttr(o, name, v);
}

static int dg_ll(PyObject *d, PyObject *o, PyObject *name, long long *out) {
    PyObject *v = dg(d, o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int dg_u64(PyObject *d, PyObject *o, PyObject *name, uint64_t *out) {
    PyObject *v = dg(d, o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

static int dg_truthy(PyObject *d, PyObject *o, PyObject *name) {
    PyObject *v = dg(d, o, name);
    if (v == NULL)
        return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

static int ds_ll(PyObject *d, PyObject *o, PyObject *name, long long x) {
    PyObject *v = PyLong_FromLongLong(x);
    if (v == NULL)
        return -1;
    int r = ds(d, o, name, v);
    Py_DECREF(v);
    return r;
}

static int ds_u64(PyObject *d, PyObject *o, PyObject *name, uint64_t x) {
    PyObject *v = PyLong_FromUnsignedLongLong(x);
    if (v == NULL)
        return -1;
    int r = ds(d, o, name, v);
    Py_DECREF(v);
    return r;
}

#define hg(h, n) dg((h)->cpu_dict, (h)->cpu, n)
#define hs(h, n, v) ds((h)->cpu_dict, (h)->cpu, n, v)
#define hg_ll(h, n, o) dg_ll((h)->cpu_dict, (h)->cpu, n, o)
#define hg_u64(h, n, o) dg_u64((h)->cpu_dict, (h)->cpu, n, o)
#define hg_truthy(h, n) dg_truthy((h)->cpu_dict, (h)->cpu, n)
#define hs_ll(h, n, x) ds_ll((h)->cpu_dict, (h)->cpu, n, x)
#define hs_u64(h, n, x) ds_u64((h)->cpu_dict, (h)->cpu, n, x)
#define cg(h, n) dg((h)->clock_dict, (h)->clock, n)
#define cs_obj(h, n, v) ds((h)->clock_dict, (h)->clock, n, v)
#define cg_ll(h, n, o) dg_ll((h)->clock_dict, (h)->clock, n, o)
#define cs_ll(h, n, x) ds_ll((h)->clock_dict, (h)->clock, n, x)

static PyObject *str_ipsr_attr, *str_fast_returns, *str_watched, *str_scr, *str_mpu,
                *str_installed, *str_on_exception, *str_active, *str_pending, *str_irq_enabled,
                *str_prio, *str_prigroup, *str_shcsr, *str_sleeping_attr, *str_stop_reason,
                *str_returns_in_hook, *str_slice_pc, *str_slice_blocks, *str_trap,
                *str_hook_exception, *str_tail_chains;
static PyObject *str_vtor, *str_ccr, *str_sleeping_prop,
                *str_entries_in_hook, *str_fast_entries, *str_powered_off, *str_halt_in_hook,
                *str_enter_in_hook;

/* The NVIC's state as CortexM holds it */
typedef struct {
    uint64_t pending, active, irq_level, irq_enabled;
    long long shcsr, prigroup, scr;
    PyObject *prio;           /* borrowed from the cpu (a list) */
} Nvic;

static int truthy_attr(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

/* 0, or -1 (a Python error, or state this code does not handle: *odd = 1) */
static int nvic_load(ExcHook *h, Nvic *n, PyObject **prio_ref) {
    if (hg_u64(h, str_pending, &n->pending) || hg_u64(h, str_active, &n->active)
        || hg_u64(h, str_irq_level, &n->irq_level)
        || hg_u64(h, str_irq_enabled, &n->irq_enabled)
        || hg_ll(h, str_shcsr, &n->shcsr) || hg_ll(h, str_prigroup, &n->prigroup)
        || hg_ll(h, str_scr, &n->scr))
        return -1;
    PyObject *p = hg(h, str_prio);
    if (p == NULL)
        return -1;
    if (!PyList_Check(p) || n->prigroup < 0 || n->prigroup > 7) {
        Py_DECREF(p);
        PyErr_SetString(PyExc_ValueError, "unexpected NVIC state");
        return -1;
    }
    n->prio = p;
    *prio_ref = p;
    return 0;
}

static inline long long nv_prio(Nvic *n, int e) {
    return PyLong_AsLongLong(PyList_GET_ITEM(n->prio, e));
}

static inline long long nv_group(ExcHook *h, Nvic *n, long long raw) {     /* group_prio */
    if (raw < 0)
        return raw;
    long long sub = h->m4 ? (2LL << n->prigroup) - 1 : 0;
    return raw & ~sub & 0xFF;
}

/* CortexM.best_pending over ``pend``: 1 with *g, *e set, 0 when none */
static int nv_best(ExcHook *h, Nvic *n, uint64_t pend, long long *g, int *e) {
    long long keep = h->m4 ? (~((2LL << n->prigroup) - 1) & 0xFF) : 0xFF;
    int found = 0;
    long long bg = 0, braw = 0;
    while (pend) {
        int x = __builtin_ctzll(pend);
        pend &= pend - 1;
        int enabled;
        if (x >= 16)
            enabled = (n->irq_enabled >> (x - 16)) & 1;
        else if (x == 4)
            enabled = (n->shcsr >> 16) & 1;
        else if (x == 5)
            enabled = (n->shcsr >> 17) & 1;
        else if (x == 6)
            enabled = (n->shcsr >> 18) & 1;
        else
            enabled = 1;
        if (!enabled || x >= PyList_GET_SIZE(n->prio))
            continue;
        long long raw = nv_prio(n, x);
        long long kg = raw >= 0 ? (raw & keep) : raw;
        if (!found || kg < bg || (kg == bg && raw < braw)) {
            found = 1;
            bg = kg;
            braw = raw;
            *e = x;
        }
    }
    *g = bg;
    return found;
}

static long long nv_active_prio(ExcHook *h, Nvic *n, uint64_t act) {     /* active_priority */
    long long prio = 256;
    while (act) {
        int x = __builtin_ctzll(act);
        act &= act - 1;
        if (x >= PyList_GET_SIZE(n->prio))
            continue;
        long long p = nv_group(h, n, nv_prio(n, x));
        if (p < prio)
            prio = p;
    }
    return prio;
}

static inline uint32_t hreg(ExcHook *h, int id, int *err) {
    uint64_t v = 0;
    int e = h->regs->rd(h->uch, id, &v);
    if (e && !*err) *err = e;
    return (uint32_t)v;
}

/* _priority_after_return (faultmask 0) or execution_priority (faultmask 1) */
static long long nv_exec_prio(ExcHook *h, Nvic *n, uint64_t act, int faultmask, int *err) {
    long long prio = nv_active_prio(h, n, act);
    if (h->m4) {
        uint32_t bp = hreg(h, h->id_basepri, err) & h->prio_mask;
        if (bp && nv_group(h, n, bp) < prio)
            prio = nv_group(h, n, bp);
        if (faultmask && (hreg(h, h->id_faultmask, err) & 1))
            return -1;
    }
    if ((hreg(h, h->id_primask, err) & 1) && prio > 0)
        prio = 0;
    return prio;
}

/* CortexM._pending_to_enter: 1 when an entry is due now, 0 when not (the
 * mask watch armed when only the masks hold the best one back), -1 error */
static int nv_pending_to_enter(ExcHook *h, Nvic *n) {
    long long g;
    int e, err = 0;
    *h->mask_watch = 0;
    if (!nv_best(h, n, n->pending, &g, &e))
        return PyErr_Occurred() ? -1 : 0;
    long long ap = nv_active_prio(h, n, n->active);
    if (g >= ap)
        return 0;
    long long ep = nv_exec_prio(h, n, n->active, 1, &err);
    if (err)
        return regs_err(h->regs, err);
    if (g < ep)
        return 1;
    *h->mask_watch = 1;
    *h->pend_prio = (int32_t)g;
    *h->active_prio = (int32_t)ap;
    long long sub = h->m4 ? (2LL << n->prigroup) - 1 : 0;
    *h->prigroup_mask = (uint32_t)(h->prio_mask & ~sub & 0xFF);
    return PyErr_Occurred() ? -1 : 0;
}

/* The MPU (emu/cpu/mpu.py) as exception entry and return in C need it:
 * Mpu.access/allows for the stacking check (a frame the MPU forbids goes
 * to the Python, which raises MSTKERR), off_now, and sync's key: the page
 * protections are reapplied (Mpu.sync, Python) only when the privilege or
 * the MPU's being in force changed, as sync itself decides. */
static PyObject *str_rbar, *str_rasr, *str_mpu_ctrl, *str_mpu_config, *str_mpu_applied,
                *str_mpu_sync;
static PyObject *s_mpu_dirty;    /* (the run loop's, below) */
static const int MPU_AP[8][2] = {{0, 0}, {3, 0}, {3, 1}, {3, 3}, {0, 0}, {1, 0}, {1, 1}, {1, 1}};

typedef struct { long long ctrl; uint32_t rbar[8], rasr[8]; } MpuRegs;

static int mpu_load(PyObject *mpu, MpuRegs *m) {
    if (attr_ll(mpu, str_mpu_ctrl, &m->ctrl))
        return -1;
    PyObject *rb = PyObject_GetAttr(mpu, str_rbar), *ra = rb ? PyObject_GetAttr(mpu, str_rasr) : NULL;
    int rc = -1;
    if (ra == NULL || !PyList_Check(rb) || !PyList_Check(ra) || PyList_GET_SIZE(rb) < 8
        || PyList_GET_SIZE(ra) < 8) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "the MPU's rbar and rasr: lists of 8");
        goto out;
    }
    for (int i = 0; i < 8; i++) {
        m->rbar[i] = (uint32_t)PyLong_AsUnsignedLongMask(PyList_GET_ITEM(rb, i));
        m->rasr[i] = (uint32_t)PyLong_AsUnsignedLongMask(PyList_GET_ITEM(ra, i));
    }
    rc = PyErr_Occurred() ? -1 : 0;
out:
    Py_XDECREF(rb);
    Py_XDECREF(ra);
    return rc;
}

/* Mpu.access: R|W|X (1|2|4) the regions allow at addr */
static int mpu_access(const MpuRegs *m, uint32_t addr, int privileged) {
    for (int i = 7; i >= 0; i--) {
        uint32_t rasr = m->rasr[i];
        if (!(rasr & 1))
            continue;
        int size_log = (int)((rasr >> 1) & 0x1F) + 1;
        if (size_log < 5)
            continue;
        uint64_t size = 1ULL << size_log;
        uint64_t base = (uint64_t)m->rbar[i] & ~(size - 1) & 0xFFFFFFFFull;
        if (!(base <= addr && addr < base + size))
            continue;
        if (size_log >= 8 && ((rasr >> (8 + ((addr - base) >> (size_log - 3)))) & 1))
            continue;                                 /* subregion disabled */
        int data = MPU_AP[(rasr >> 24) & 7][privileged ? 0 : 1];
        if ((data & 1) && !(rasr & (1u << 28)))
            data |= 4;
        return data;
    }
    return (privileged && (m->ctrl & 4)) ? 7 : 0;
}

/* Mpu.off_now: not in force at the current execution priority */
static int mpu_off_now(ExcHook *h, const MpuRegs *m, Nvic *n, int *err) {
    if (!(m->ctrl & 1))
        return 1;
    if (m->ctrl & 2)
        return 0;
    return nv_exec_prio(h, n, n->active, 1, err) < 0;
}

/* Before an entry at exception level ipsr: 1 the frame may be stacked, 0
 * the Python must enter (MSTKERR), -1 a Python error */
static int mpu_stack_ok(ExcHook *h, PyObject *mpu, Nvic *n, long long ipsr) {
    MpuRegs m;
    int err = 0;
    if (mpu_load(mpu, &m))
        return -1;
    int off = mpu_off_now(h, &m, n, &err);
    if (err)
        return regs_err(h->regs, err);
    if (off || h->mpu_bug)
        return 1;
    Regs *r = h->regs;
    uint32_t control = xr(r, X_CONTROL, &err);
    int thread = ipsr == 0, unpriv = thread && (control & 1);
    if (unpriv)                                       /* as exc_push reads them */
        xw(r, X_IPSR, 1, &err);
    uint32_t msp = xr(r, X_MSP, &err), psp = xr(r, X_PSP, &err);
    if (unpriv)
        xw(r, X_IPSR, 0, &err);
    if (err)
        return regs_err(r, err);
    uint32_t sp = (thread && (control & 2)) ? psp : msp;
    uint32_t framesize = (h->m4 && (control & 4)) ? 0x68 : 0x20;
    uint32_t newsp = (sp - framesize) & ~4u;
    for (uint64_t a = newsp & ~31u; a < (uint64_t)newsp + framesize; a += 32)
        if ((mpu_access(&m, (uint32_t)a, !unpriv) & 2) != 2)
            return 0;
    return 1;
}

/* After an entry or a return: Mpu.sync when its key (configuration,
 * privilege, off) is not the one applied; 0 or -1 */
static int mpu_sync_c(ExcHook *h, PyObject *mpu) {
    MpuRegs m;
    Nvic n;
    PyObject *prio = NULL;
    int err = 0;
    if (mpu_load(mpu, &m) || nvic_load(h, &n, &prio)) {
        Py_XDECREF(prio);
        return -1;
    }
    int off = mpu_off_now(h, &m, &n, &err);
    Py_XDECREF(prio);
    long long ipsr;
    if (hg_ll(h, str_ipsr_attr, &ipsr))
        return -1;
    uint32_t control = xr(h->regs, X_CONTROL, &err);
    if (err)
        return regs_err(h->regs, err);
    int priv = !(ipsr == 0 && (control & 1));
    PyObject *cfg = PyObject_GetAttr(mpu, str_mpu_config);
    PyObject *applied = cfg ? PyObject_GetAttr(mpu, str_mpu_applied) : NULL;
    PyObject *key = applied ? Py_BuildValue("(OOO)", cfg, priv ? Py_True : Py_False,
                                            off ? Py_True : Py_False) : NULL;
    int same = key ? PyObject_RichCompareBool(key, applied, Py_EQ) : -1;
    Py_XDECREF(cfg);
    Py_XDECREF(applied);
    Py_XDECREF(key);
    if (same < 0)
        return -1;
    if (same)                    /* sync's first step, then its early return */
        return hs(h, s_mpu_dirty, Py_False);
    PyObject *x = PyObject_CallMethodNoArgs(mpu, str_mpu_sync);
    Py_XDECREF(x);
    return x ? 0 : -1;
}

/* 1: the return is done (the slice goes on, or ends as the Python hook
 * would end it); 0: the Python hook must decide (nothing changed); -1: a
 * Python exception (state may have changed: raised out of emu_start). */
static int exc_return_here(ExcHook *h) {
    PyObject *cpu = h->cpu, *prio = NULL;
    long long cur;
    int err = 0;
    if (hg_ll(h, str_ipsr_attr, &cur))
        return -1;
    if (cur < 11)                                     /* SVCall and up only */
        return 0;
    int t;
    if ((t = hg_truthy(h, str_fast_returns)) <= 0)
        return t < 0 ? -1 : 0;
    /* a watched run (run_until's predicate at every slice boundary): the
     * return is done here too, and the slice ends after it as the Python
     * hook's would (the run loop then checks the predicate) */
    int watched = hg_truthy(h, str_watched);
    if (watched < 0)
        return -1;
    uint32_t pc = hreg(h, h->id_pc, &err);
    if (err)
        return regs_err(h->regs, err);
    uint32_t exc_return = pc | 1;
    switch (exc_return) {
    case 0xFFFFFFF1u: case 0xFFFFFFF9u: case 0xFFFFFFFDu:
    case 0xFFFFFFE1u: case 0xFFFFFFE9u: case 0xFFFFFFEDu:
        break;
    default:
        return 0;
    }
    PyObject *mpu = hg(h, str_mpu);
    if (mpu == NULL)
        return -1;
    t = mpu == Py_None ? 0 : truthy_attr(mpu, str_installed);
    if (t < 0) {
        Py_DECREF(mpu);
        return -1;
    }
    if (!t)
        Py_CLEAR(mpu);           /* (kept while installed: synced after the return) */
    Nvic n;
    if (nvic_load(h, &n, &prio)) {
        Py_XDECREF(mpu);
        return -1;
    }
    int rc = 0;
    if (n.scr & 0x2)                                  /* SLEEPONEXIT: Python */
        goto out;
    uint64_t bit = 1ULL << cur;
    uint64_t active = n.active & ~bit, pending = n.pending;
    if (cur >= 16 && ((n.irq_level >> (cur - 16)) & 1))
        pending |= bit;
    long long g;
    int e, chain = 0;
    if (nv_best(h, &n, pending, &g, &e)) {            /* a tail-chain (_enter) */
        long long after = nv_exec_prio(h, &n, active, 0, &err);
        if (err) {
            rc = regs_err(h->regs, err);
            goto out;
        }
        if (g < after) {
            if (3 <= e && e <= 6)
                goto out;                             /* to a fault: Python */
            chain = 1;
        }
    }
    if (PyErr_Occurred()) {
        rc = -1;
        goto out;
    }
    /* from here on the return is ours */
    rc = -1;
    PyObject *ls = hg(h, str_on_exception);
    if (ls == NULL)
        goto out;
    PyObject *seq = PySequence_Fast(ls, "on_exception");
    Py_DECREF(ls);
    if (seq == NULL)
        goto out;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *x = PyObject_CallFunction(PySequence_Fast_GET_ITEM(seq, i), "LO", cur, Py_False);
        if (x == NULL) {
            Py_DECREF(seq);
            goto out;
        }
        Py_DECREF(x);
    }
    Py_DECREF(seq);
    if (hs_u64(h, str_active, active) || hs_u64(h, str_pending, pending))
        goto out;
    n.active = active;
    n.pending = pending;
    if (h->m4) {                                      /* FAULTMASK cleared (not NMI) */
        uint64_t zero = 0;
        int ee = h->regs->wr(h->uch, h->id_faultmask, &zero);
        if (ee) {
            regs_err(h->regs, ee);
            goto out;
        }
    }
    uint32_t out;
    if (chain) {
        /* CortexM._exception_return's tail-chain: the next exception is
         * entered on the same frame (_enter: exc_enter with the SPs and
         * CONTROL as they are, LR the same EXC_RETURN) */
        uint64_t eb = 1ULL << e;
        active |= eb;
        if (!h->chain_bug)                            /* tests only: left pending */
            pending &= ~eb;
        if (hs_u64(h, str_pending, pending) || hs_u64(h, str_active, active))
            goto out;
        n.active = active;
        n.pending = pending;
        int er = 0;
        uint32_t msp = xr(h->regs, X_MSP, &er), psp = xr(h->regs, X_PSP, &er);
        uint32_t control = xr(h->regs, X_CONTROL, &er);
        if (er) {
            regs_err(h->regs, er);
            goto out;
        }
        long long tc, vtor;
        if (hg_ll(h, str_tail_chains, &tc) || hs_ll(h, str_tail_chains, tc + 1)
            || hg_ll(h, str_vtor, &vtor))
            goto out;
        PyObject *ea[7];
        ea[0] = PyLong_FromLong(e);
        ea[1] = PyLong_FromUnsignedLong(exc_return);
        ea[2] = PyLong_FromUnsignedLong(msp);
        ea[3] = PyLong_FromUnsignedLong(psp);
        ea[4] = PyLong_FromUnsignedLong(control);
        ea[5] = PyLong_FromLongLong((vtor + 4LL * e) & 0xFFFFFFFFLL);
        ea[6] = PyLong_FromLong((3L << 25) | (0x3FL << 10));
        int ok = 1;
        for (int i = 0; i < 7; i++)
            ok = ok && ea[i] != NULL;
        PyObject *vec = ok ? Regs_exc_enter(h->regs, ea, 7) : NULL;
        for (int i = 0; i < 7; i++)
            Py_XDECREF(ea[i]);
        if (vec == NULL)
            goto out;
        unsigned long v = PyLong_AsUnsignedLong(vec);
        Py_DECREF(vec);
        if (hs_ll(h, str_ipsr_attr, e))
            goto out;
        if (v == 0xFFFFFFFFul || v == 0 || !(v & 1)) {    /* HFSR.VECTTBL and the lockup */
            PyObject *x = PyObject_CallMethod(cpu, "_invalid_vector", "ik", e, v);
            Py_XDECREF(x);
            goto out;                                     /* raised CpuHalt */
        }
        if (hs(h, str_sleeping_prop, Py_False))
            goto out;
        ls = hg(h, str_on_exception);
        if (ls == NULL)
            goto out;
        seq = PySequence_Fast(ls, "on_exception");
        Py_DECREF(ls);
        if (seq == NULL)
            goto out;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *x = PyObject_CallFunction(PySequence_Fast_GET_ITEM(seq, i), "iO", e,
                                                Py_True);
            if (x == NULL) {
                Py_DECREF(seq);
                goto out;
            }
            Py_DECREF(x);
        }
        Py_DECREF(seq);
        h->chains++;
        out = (uint32_t)e;
    } else {
        int to_thread = (exc_return & 8) != 0, use_psp = (exc_return & 4) != 0;
        int fp = h->m4 && !(exc_return & 0x10);
        int pe = exc_pop_c(h->regs, use_psp, fp, to_thread, &out);
        if (pe < 0)
            goto out;
        if (pe) {                                     /* unstacking error: the lockup */
            PyObject *x = PyObject_CallMethod(cpu, "_unstacking_error", "I", out);
            Py_XDECREF(x);
            goto out;                                 /* (it raises CpuHalt) */
        }
        if (hs_ll(h, str_ipsr_attr, out))
            goto out;
    }
    pc = hreg(h, h->id_pc, &err);
    uint64_t thumb = pc | 1u;
    if (!err) {
        int ee = h->regs->wr(h->uch, h->id_pc, &thumb);
        if (ee) err = ee;
    }
    if (err) {
        regs_err(h->regs, err);
        goto out;
    }
    if (mpu != NULL && mpu_sync_c(h, mpu))            /* exception_return's mpu.sync() */
        goto out;
    int stop = (3 <= out && out <= 6) || watched;
    if (!stop) {
        int r = nv_pending_to_enter(h, &n);
        if (r < 0)
            goto out;
        stop = r;
    }
    if (!stop) {
        if ((t = hg_truthy(h, str_sleeping_attr)) < 0)
            goto out;
        stop = t;
    }
    if (!stop) {
        if ((t = hg_truthy(h, str_stop_reason)) < 0)
            goto out;
        stop = t;
    }
    if (stop) {
        if (hs(h, str_trap, h->trap))
            goto out;
        h->emu_stop(h->uch);
    } else {
        long long nr;
        if (hg_ll(h, str_returns_in_hook, &nr) || hs_ll(h, str_returns_in_hook, nr + 1)
            || hs_ll(h, str_slice_pc, pc) || hs_u64(h, str_slice_blocks, *h->blocks))
            goto out;
    }
    h->returns++;
    rc = 1;
out:
    Py_XDECREF(prio);
    Py_XDECREF(mpu);
    return rc;
}

/* Exception entry (CortexM._take_pending / _enter_in_hook, exception_entry
 * and _enter with the native Regs' steps): the best pending exception that
 * preempts now is entered here, the frame pushed (exc_push), pending/active
 * and IPSR updated, the vector taken (exc_enter), ``sleeping`` set False
 * through the CortexM's property (its listeners hear it) and the
 * on_exception listeners told, in the order the Python does them.
 * ``addr``: the return address, or -1 for the current PC.  Returns the
 * exception entered (> 0), 0 when nothing is to be entered now (the mask
 * watch armed as _pending_to_enter arms it), -2 when Python must do it
 * (nothing changed: a frame the MPU forbids (MSTKERR), a fault handler to
 * enter, a stacking error); with the MPU on, its pages are synced after
 * (mpu_sync_c),
 * -3 with only_irq when the best one is a fault (3..6: not entered),
 * -1 with a Python exception set (an invalid vector: the lockup raised). */

static long exc_enter_here(ExcHook *h, long long addr, int only_irq) {
    /* only_irq: the block hook's entry (a fault, or IT bits live: -3) */
    PyObject *cpu = h->cpu, *prio = NULL;
    int t, err = 0;
    uint64_t pend;
    if (hg_u64(h, str_pending, &pend))
        return -1;
    if (pend == 0) {              /* nothing pending: _pending_to_enter's None */
        *h->mask_watch = 0;
        return 0;
    }
    PyObject *mpu = hg(h, str_mpu);
    if (mpu == NULL)
        return -1;
    t = mpu == Py_None ? 0 : truthy_attr(mpu, str_installed);
    if (t < 0) {
        Py_DECREF(mpu);
        return -1;
    }
    if (!t)
        Py_CLEAR(mpu);           /* (kept while installed: the stacking check, the sync) */
    Nvic n;
    if (nvic_load(h, &n, &prio)) {
        Py_XDECREF(mpu);
        return -1;
    }
    long rc = -1;
    int r = nv_pending_to_enter(h, &n);
    if (r <= 0) {
        rc = r;                                       /* 0 nothing, -1 error */
        goto out;
    }
    long long g;
    int e;
    nv_best(h, &n, n.pending, &g, &e);
    if (3 <= e && e <= 6) {
        rc = only_irq ? -3 : -2;
        goto out;
    }
    if (only_irq) {              /* IT state as read inside a block hook: the run loop */
        uint32_t xpsr = xr(h->regs, X_XPSR, &err);
        if (err) {
            regs_err(h->regs, err);
            goto out;
        }
        if (xpsr & ((3u << 25) | (0x3Fu << 10))) {
            rc = -3;
            goto out;
        }
    }
    long long ipsr, ccr, vtor;
    if (hg_ll(h, str_ipsr_attr, &ipsr) || hg_ll(h, str_ccr, &ccr)
        || hg_ll(h, str_vtor, &vtor))
        goto out;
    if (mpu != NULL) {           /* exception_entry's check: MSTKERR is the Python's */
        int ok = mpu_stack_ok(h, mpu, &n, ipsr);
        if (ok <= 0) {
            rc = ok < 0 ? -1 : -2;
            goto out;
        }
    }
    if (addr < 0) {
        addr = hreg(h, h->id_pc, &err);
        if (err) {
            regs_err(h->regs, err);
            goto out;
        }
    }
    /* exc_push */
    PyObject *pa[5] = {NULL, NULL, NULL, h->m4 ? Py_True : Py_False,
                       h->m4 ? Py_False : Py_True};
    pa[0] = PyLong_FromLongLong(addr);
    pa[1] = PyLong_FromLongLong(ipsr);
    pa[2] = PyLong_FromLongLong(ccr & 0x200);
    PyObject *pushed = (pa[0] && pa[1] && pa[2]) ? Regs_exc_push(h->regs, pa, 5) : NULL;
    Py_XDECREF(pa[0]); Py_XDECREF(pa[1]); Py_XDECREF(pa[2]);
    if (pushed == NULL)
        goto out;
    long perr = PyLong_AsLong(PyTuple_GET_ITEM(pushed, 0));
    if (perr) {                                       /* stacking error: Python's lockup */
        Py_DECREF(pushed);
        rc = -2;
        goto out;
    }
    uint64_t bit = 1ULL << e;
    if (hs_u64(h, str_pending, n.pending & ~bit) || hs_u64(h, str_active, n.active | bit)) {
        Py_DECREF(pushed);
        goto out;
    }
    /* _enter: exc_enter(exc, exc_return, msp, psp, control, vector address, IT mask) */
    PyObject *ea[7];
    ea[0] = PyLong_FromLong(e);
    for (int i = 1; i < 5; i++)
        ea[i] = PyTuple_GET_ITEM(pushed, i);
    ea[5] = PyLong_FromLongLong((vtor + 4LL * e) & 0xFFFFFFFFLL);
    ea[6] = PyLong_FromLong((3L << 25) | (0x3FL << 10));
    PyObject *vec = (ea[0] && ea[5] && ea[6]) ? Regs_exc_enter(h->regs, ea, 7) : NULL;
    Py_XDECREF(ea[0]); Py_XDECREF(ea[5]); Py_XDECREF(ea[6]);
    Py_DECREF(pushed);
    if (vec == NULL)
        goto out;
    unsigned long v = PyLong_AsUnsignedLong(vec);
    if (hs_ll(h, str_ipsr_attr, e)) {
        Py_DECREF(vec);
        goto out;
    }
    if (v == 0xFFFFFFFFul || v == 0 || !(v & 1)) {    /* HFSR.VECTTBL and the lockup */
        Py_DECREF(vec);
        PyObject *x = PyObject_CallMethod(cpu, "_invalid_vector", "ik", e, v);
        Py_XDECREF(x);
        goto out;                                     /* raised CpuHalt */
    }
    Py_DECREF(vec);
    if (hs(h, str_sleeping_prop, Py_False))
        goto out;
    PyObject *ls = hg(h, str_on_exception);
    if (ls == NULL)
        goto out;
    PyObject *seq = PySequence_Fast(ls, "on_exception");
    Py_DECREF(ls);
    if (seq == NULL)
        goto out;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *x = PyObject_CallFunction(PySequence_Fast_GET_ITEM(seq, i), "iO", e, Py_True);
        if (x == NULL) {
            Py_DECREF(seq);
            goto out;
        }
        Py_DECREF(x);
    }
    Py_DECREF(seq);
    if (mpu != NULL && mpu_sync_c(h, mpu))            /* exception_entry's mpu.sync() */
        goto out;
    h->entries++;
    rc = e;
out:
    Py_XDECREF(prio);
    Py_XDECREF(mpu);
    return rc;
}

/* take() -> the exception entered at the current PC (> 0), 0 (none), -2
 * (Python must: CortexM._take_pending's own steps) */
static PyObject *ExcHook_take(ExcHook *h, PyObject *noargs) {
    long r = exc_enter_here(h, -1, 0);
    if (r == -1)
        return NULL;
    return PyLong_FromLong(r);
}

/* The block hook's entry callback (bh_state.entry_cb): CortexM._enter_in_hook
 * in C; ENTRY_STOP 0, ENTRY_DONE 1, ENTRY_NONE 2. */
static PyObject *ExcHook_enter_in_hook(ExcHook *h, PyObject *arg) {
    PyObject *cpu = h->cpu;
    long long address = PyLong_AsLongLong(arg), ipsr;
    if (address == -1 && PyErr_Occurred())
        return NULL;
    int t1 = hg_truthy(h, str_fast_entries), t2 = hg_truthy(h, str_watched);
    int t3 = hg_truthy(h, str_stop_reason), t4 = hg_truthy(h, str_powered_off);
    if (t1 < 0 || t2 < 0 || t3 < 0 || t4 < 0 || hg_ll(h, str_ipsr_attr, &ipsr))
        return NULL;
    if (!t1 || t2 || t3 || t4 || (3 <= ipsr && ipsr <= 6))
        return PyLong_FromLong(0);
    long r = exc_enter_here(h, address, 1);
    if (r == -2 || r == -1) {
        if (r == -1) {                                /* CpuHalt: raised after the slice */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (value != NULL && tb != NULL)
                PyException_SetTraceback(value, tb);
            int bad = value == NULL || hs(h, str_halt_in_hook, value);
            Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
            if (bad)
                return NULL;
            return PyLong_FromLong(0);
        }
        return PyObject_CallMethodOneArg(cpu, str_enter_in_hook, arg);   /* Python */
    }
    if (r == 0)
        return PyLong_FromLong(2);                    /* ENTRY_NONE */
    if (r == -3)
        return PyLong_FromLong(0);                    /* a fault: the run loop */
    int err = 0;
    uint32_t pc = hreg(h, h->id_pc, &err);
    uint64_t thumb = pc | 1u;
    if (!err) {
        int ee = h->regs->wr(h->uch, h->id_pc, &thumb);
        if (ee) err = ee;
    }
    if (err)
        return regs_err(h->regs, err), NULL;
    long long ne;
    if (hg_ll(h, str_entries_in_hook, &ne) || hs_ll(h, str_entries_in_hook, ne + 1)
        || hs_ll(h, str_slice_pc, pc) || hs_u64(h, str_slice_blocks, *h->blocks))
        return NULL;
    return PyLong_FromLong(1);                        /* ENTRY_DONE */
}

/* A Python exception out of the hook: kept on the Uc and the engine stopped,
 * as the binding's hooks (and CortexM._raw_hook) do. */
static void hook_keep_exception(ExcHook *h) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *cur = PyObject_GetAttr(h->uc, str_hook_exception);
    if (cur == Py_None && value != NULL)
        PyObject_SetAttr(h->uc, str_hook_exception, value);
    Py_XDECREF(cur);
    PyErr_Clear();
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    h->emu_stop(h->uch);
}

static void exc_intr_hook(void *uc, uint32_t intno, void *user_data) {
    ExcHook *h = (ExcHook *)user_data;
    PyGILState_STATE g = PyGILState_Ensure();
    if (intno == 8 && h->on) {
        int r = exc_return_here(h);
        if (r > 0)
            goto done;
        if (r < 0) {
            hook_keep_exception(h);
            goto done;
        }
    }
    h->handed++;
    PyObject *x = PyObject_CallFunction(h->fallback, "I", intno);
    if (x == NULL)
        hook_keep_exception(h);
    Py_XDECREF(x);
done:
    PyGILState_Release(g);
}

/* -------------------------------------------------------------------------
 * WFE in C.  Unicorn has no WFE: it is an invalid instruction, and
 * CortexM._hook_insn_invalid decides from the PC (InfiniTime's idle, ~440
 * times an emulated second).  Done here, with the same steps, for a PC
 * whose kind the CPU has cached (WFE_AT, or WFE_BEFORE when a code hook left
 * PC past the WFE) when no SEV ran in the block:
 * the WFE that only clears the event register (_wfe_in_hook), and, under the
 * C run loop (where _sleep_in_hook declines), the WFE that sleeps (the trap
 * ("wfe", pc), the slice ends; lc_after_slice puts the core to sleep).
 * Anything else calls the Python hook, with nothing changed.  The CPU's
 * ``_wfe_in_c`` (set at each run: the switch on, none of the steps
 * replaced) turns it on.
 * ------------------------------------------------------------------------- */
static PyObject *s_wfe_in_c, *s_sev_block, *s_wfe_kinds, *s_fast_wfe, *s_wfe_in_hook,
                *s_c_loop;
static PyObject *s_wfe, *s_event_register, *s_sleep_kind;     /* (the run loop's, below) */
static PyObject *s_on_sleep;
#define WFE_AT 1                 /* CortexM.WFE_AT, WFE_BEFORE */
#define WFE_BEFORE 2

/* 1 done (the hook answers true), 0 the Python hook decides, -1 error */
static int wfe_here(ExcHook *h) {
    int t = hg_truthy(h, s_wfe_in_c);
    if (t <= 0)
        return t;
    long long sev;
    if (hg_ll(h, s_sev_block, &sev))
        return -1;
    if ((uint64_t)sev == *h->blocks)
        return 0;                                     /* a SEV ran in this block */
    int e = 0;
    uint32_t pc = hreg(h, h->id_pc, &e);
    if (e)
        return regs_err(h->regs, e);
    PyObject *kinds = hg(h, s_wfe_kinds);
    if (kinds == NULL)
        return -1;
    long kind = -1;
    if (PyDict_Check(kinds)) {
        PyObject *key = PyLong_FromUnsignedLong(pc);
        if (key == NULL) {
            Py_DECREF(kinds);
            return -1;
        }
        PyObject *k = PyDict_GetItemWithError(kinds, key);      /* borrowed */
        Py_DECREF(key);
        if (k != NULL && PyLong_CheckExact(k))
            kind = PyLong_AsLong(k);
    }
    Py_DECREF(kinds);
    if (PyErr_Occurred())
        return -1;
    uint32_t resume, at;                /* where the core goes on; the WFE's address */
    if (kind == WFE_AT) {
        resume = pc + 2;
        at = pc;
    } else if (kind == WFE_BEFORE) {    /* a code hook in the block: PC is past it */
        long long spc, sblocks;
        if (hg_ll(h, str_slice_pc, &spc) || hg_ll(h, str_slice_blocks, &sblocks))
            return -1;
        if ((long long)pc == spc && (long long)*h->blocks - sblocks <= 1)
            return 0;                   /* the slice's first block: an undefined one */
        resume = pc;
        at = pc - 2;
    } else {
        return 0;
    }
    /* _wfe_in_hook(uc, resume) */
    long long ipsr;
    int ev = hg_truthy(h, s_event_register), fast = hg_truthy(h, s_fast_wfe),
        watched = hg_truthy(h, str_watched);
    if (ev < 0 || fast < 0 || watched < 0 || hg_ll(h, str_ipsr_attr, &ipsr))
        return -1;
    if (ev && fast && !watched && !(3 <= ipsr && ipsr <= 6)) {
        long long n;
        if (hs_ll(h, s_event_register, 0))
            return -1;
        e = h->regs->wr(h->uch, h->id_pc, &(uint64_t){resume | 1});
        if (e)
            return regs_err(h->regs, e);
        if (hg_ll(h, s_wfe_in_hook, &n) || hs_ll(h, s_wfe_in_hook, n + 1)
            || hs_ll(h, str_slice_pc, resume) || hs_u64(h, str_slice_blocks, *h->blocks))
            return -1;
        h->wfes++;
        return 1;
    }
    /* _sleep_in_hook declines under the C run loop: the trap */
    int cl = hg_truthy(h, s_c_loop);
    if (cl <= 0)
        return cl;
    PyObject *trap = h->wfe_bug ? Py_NewRef(Py_None)
                                : Py_BuildValue("(Ok)", s_wfe, (unsigned long)at);
    if (trap == NULL)
        return -1;
    int r = hs(h, str_trap, trap);
    Py_DECREF(trap);
    if (r)
        return -1;
    if (kind == WFE_AT) {
        e = h->regs->wr(h->uch, h->id_pc, &(uint64_t){resume});
        if (e)
            return regs_err(h->regs, e);
    }
    h->emu_stop(h->uch);
    h->wfes++;
    return 1;
}

static bool exc_insn_hook(void *uc, void *user_data) {
    ExcHook *h = (ExcHook *)user_data;
    PyGILState_STATE g = PyGILState_Ensure();
    bool answer = false;
    int r = wfe_here(h);
    if (r > 0) {
        answer = true;
    } else if (r < 0) {
        hook_keep_exception(h);                       /* the hook answers false */
    } else {
        h->wfes_handed++;
        PyObject *x = PyObject_CallNoArgs(h->insn_fallback);
        if (x == NULL) {
            hook_keep_exception(h);
        } else {
            answer = PyObject_IsTrue(x) == 1;
            Py_DECREF(x);
        }
    }
    PyGILState_Release(g);
    return answer;
}

/* install_insn(uc_hook_add, UC_HOOK_INSN_INVALID, fallback) -> uc error code:
 * the invalid-instruction hook in C (after install) */
static PyObject *ExcHook_install_insn(ExcHook *h, PyObject *args) {
    unsigned long long hook_add;
    int htype;
    PyObject *fallback;
    if (!PyArg_ParseTuple(args, "KiO", &hook_add, &htype, &fallback))
        return NULL;
    if (!h->on) {
        PyErr_SetString(PyExc_RuntimeError, "install_insn before install");
        return NULL;
    }
    Py_INCREF(fallback);
    Py_XSETREF(h->insn_fallback, fallback);
    int err = ((uc_hook_add_fn2)(uintptr_t)hook_add)(h->uch, &h->hh_insn, htype,
                                                     (void *)&exc_insn_hook, h, 1, 0);
    return PyLong_FromLong(err);
}

/* install(uc_hook_add, uc_handle, UC_HOOK_INTR, uc_emu_stop, cpu, regs, uc, fallback,
 *         m4, prio_mask, (primask, basepri, faultmask, pc ids),
 *         (mask_watch, pend_prio, active_prio, prigroup_mask, blocks addresses)) */
static PyObject *ExcHook_install(ExcHook *h, PyObject *args) {
    unsigned long long hook_add, uch, emu_stop;
    int htype, m4;
    unsigned int prio_mask;
    PyObject *cpu, *regs, *uc, *fallback, *ids, *addrs;
    if (!PyArg_ParseTuple(args, "KKiKOO!OOiIOO", &hook_add, &uch, &htype, &emu_stop, &cpu,
                          &RegsType, &regs, &uc, &fallback, &m4, &prio_mask, &ids, &addrs))
        return NULL;
    long id[4];
    unsigned long long ad[5];
    if (!PyArg_ParseTuple(ids, "llll", &id[0], &id[1], &id[2], &id[3])
        || !PyArg_ParseTuple(addrs, "KKKKK", &ad[0], &ad[1], &ad[2], &ad[3], &ad[4]))
        return NULL;
    if (((Regs *)regs)->mem_rd == NULL) {
        PyErr_SetString(PyExc_ValueError, "install after Regs.set_exc");
        return NULL;
    }
    Py_INCREF(cpu); Py_XSETREF(h->cpu, cpu);
    Py_INCREF(regs); Py_XSETREF(h->regs, (Regs *)regs);
    Py_INCREF(uc); Py_XSETREF(h->uc, uc);
    Py_INCREF(fallback); Py_XSETREF(h->fallback, fallback);
    if (h->trap == NULL && (h->trap = Py_BuildValue("(s)", "returned")) == NULL)
        return NULL;
    h->uch = (void *)(uintptr_t)uch;
    h->emu_stop = (uc_emu_stop_fn2)(uintptr_t)emu_stop;
    h->m4 = m4;
    h->prio_mask = prio_mask;
    h->id_primask = (int)id[0]; h->id_basepri = (int)id[1];
    h->id_faultmask = (int)id[2]; h->id_pc = (int)id[3];
    h->mask_watch = (volatile int32_t *)(uintptr_t)ad[0];
    h->pend_prio = (volatile int32_t *)(uintptr_t)ad[1];
    h->active_prio = (volatile int32_t *)(uintptr_t)ad[2];
    h->prigroup_mask = (volatile uint32_t *)(uintptr_t)ad[3];
    h->blocks = (volatile uint64_t *)(uintptr_t)ad[4];
    h->on = 1;
    int err = ((uc_hook_add_fn2)(uintptr_t)hook_add)(h->uch, &h->hh, htype,
                                                     (void *)&exc_intr_hook, h, 1, 0);
    return PyLong_FromLong(err);
}

static int ExcHook_traverse(ExcHook *h, visitproc visit, void *arg) {
    Py_VISIT(h->pend_fallback);
    Py_VISIT(h->cpu_dict);
    Py_VISIT(h->clock_dict);
    Py_VISIT(h->clock);
    Py_VISIT(h->uc_error);
    for (int i = 0; i < 4; i++)
        Py_VISIT(h->reasons[i]);
    Py_VISIT(h->cpu);
    Py_VISIT((PyObject *)h->regs);
    Py_VISIT(h->uc);
    Py_VISIT(h->fallback);
    Py_VISIT(h->trap);
    Py_VISIT(h->insn_fallback);
    return 0;
}

static int ExcHook_clear(ExcHook *h) {
    h->on = 0;
    h->loop_ready = 0;
    Py_CLEAR(h->pend_fallback);
    Py_CLEAR(h->cpu_dict);
    Py_CLEAR(h->clock_dict);
    Py_CLEAR(h->clock);
    Py_CLEAR(h->uc_error);
    for (int i = 0; i < 4; i++)
        Py_CLEAR(h->reasons[i]);
    Py_CLEAR(h->cpu);
    Py_CLEAR(h->regs);
    Py_CLEAR(h->uc);
    Py_CLEAR(h->fallback);
    Py_CLEAR(h->trap);
    Py_CLEAR(h->insn_fallback);
    return 0;
}

static void ExcHook_dealloc(ExcHook *h) {
    PyObject_GC_UnTrack(h);
    ExcHook_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyObject *ExcHook_run(ExcHook *h, PyObject *args);
static PyObject *ExcHook_loop_setup(ExcHook *h, PyObject *args);
static PyObject *ExcHook_pend_write(ExcHook *h, PyObject *const *a, Py_ssize_t na);
static PyObject *ExcHook_icsr_read(ExcHook *h, PyObject *arg);

static PyMethodDef ExcHook_methods[] = {
    {"icsr_read", (PyCFunction)ExcHook_icsr_read, METH_O,
     "icsr_read(offset) -> ICSR: SystemControlSpace._icsr in C"},
    {"pend_write", (PyCFunction)(void (*)(void))ExcHook_pend_write, METH_FASTCALL,
     "pend_write(offset, value): ISPR and ICSR's PENDSVSET/PENDSTSET pends in C, "
     "anything else pend_fallback(offset, value, lanes)"},
    {"run", (PyCFunction)ExcHook_run, METH_VARARGS,
     "run(until, should_stop[, flags]) -> StopReason: CortexM.run's loop in C (see loop_setup)"},
    {"loop_setup", (PyCFunction)ExcHook_loop_setup, METH_VARARGS,
     "loop_setup(uc_emu_start, clock, UcError, (DEADLINE, BREAK, SLEEP, OFF), (cycles, "
     "deadline, base_cycles, synced_cycles, base_ticks, stop_flag, entry_flag, reason, "
     "miss_addr, miss_size, in_slice, lp_have addresses))"},
    {"take", (PyCFunction)ExcHook_take, METH_NOARGS,
     "take() -> exception entered at PC (> 0), 0 none, -2 (CortexM._take_pending's Python)"},
    {"enter_in_hook", (PyCFunction)ExcHook_enter_in_hook, METH_O,
     "enter_in_hook(address) -> ENTRY_*: CortexM._enter_in_hook (the block hook's entry_cb)"},
    {"install_insn", (PyCFunction)ExcHook_install_insn, METH_VARARGS,
     "install_insn(uc_hook_add, UC_HOOK_INSN_INVALID, fallback() -> bool): the "
     "invalid-instruction hook in C (the WFEs; anything else to fallback)"},
    {"install", (PyCFunction)ExcHook_install, METH_VARARGS,
     "install(uc_hook_add, uc, UC_HOOK_INTR, uc_emu_stop, cpu, regs, Uc, fallback(intno), m4, "
     "prio_mask, (primask, basepri, faultmask, pc ids), (mask_watch, pend_prio, active_prio, "
     "prigroup_mask, blocks addresses)) -> uc_err"},
    {NULL}
};

static PyMemberDef ExcHook_members[] = {
    {"on", T_INT, offsetof(ExcHook, on), 0, "1: returns carried out here; 0: all to Python"},
    {"returns", T_ULONGLONG, offsetof(ExcHook, returns), 0, "exception returns done here"},
    {"handed", T_ULONGLONG, offsetof(ExcHook, handed), 0, "interrupts handed to Python"},
    {"entries", T_ULONGLONG, offsetof(ExcHook, entries), 0, "exception entries done here"},
    {"chains", T_ULONGLONG, offsetof(ExcHook, chains), 0, "returns tail-chained here"},
    {"slices", T_ULONGLONG, offsetof(ExcHook, slices), 0, "emu_start slices run by run()"},
    {"inside_ns", T_ULONGLONG, offsetof(ExcHook, inside_ns), 0,
     "host nanoseconds run() spent inside the engine (uc_emu_start)"},
    {"pend_fallback", T_OBJECT, offsetof(ExcHook, pend_fallback), 0,
     "write_word(offset, value, lanes): the writes pend_write leaves to the model"},
    {"pend_bug", T_INT, offsetof(ExcHook, pend_bug), 0,
     "tests only: 1 makes pend_write set the bit without _pending_changed's steps"},
    {"mpu_bug", T_INT, offsetof(ExcHook, mpu_bug), 0,
     "tests only: 1 stacks a frame in C without the MPU's check (MSTKERR missed)"},
    {"chain_bug", T_INT, offsetof(ExcHook, chain_bug), 0,
     "tests only: 1 leaves a tail-chained exception pending (a broken tail-chain)"},
    {"wfes", T_ULONGLONG, offsetof(ExcHook, wfes), 0, "WFEs carried out by the C hook"},
    {"wfes_handed", T_ULONGLONG, offsetof(ExcHook, wfes_handed), 0,
     "invalid-instruction stops handed to the Python hook"},
    {"wfe_bug", T_INT, offsetof(ExcHook, wfe_bug), 0,
     "tests only: 1 makes a WFE that sleeps end its slice awake (the trap left out)"},
    {"skew", T_LONGLONG, offsetof(ExcHook, skew), 0,
     "tests only: cycles added to each slice's budget by run() (a loop that differs)"},
    {NULL}
};

static PyTypeObject ExcHookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.ExcHook",
    .tp_doc = "The INTR hook: exception returns in C (see _mmio.c).",
    .tp_basicsize = sizeof(ExcHook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)ExcHook_dealloc,
    .tp_traverse = (traverseproc)ExcHook_traverse,
    .tp_clear = (inquiry)ExcHook_clear,
    .tp_methods = ExcHook_methods,
    .tp_members = ExcHook_members,
};

/* ======================================================================
 * FlashGuard: CPU stores into read-only flash, dropped without Python.
 *
 * Flash is mapped read/execute; a store there reaches Unicorn's
 * UC_HOOK_MEM_WRITE_PROT hooks.  When the NVMC is not in write mode the
 * silicon ignores the store; this hook (registered before the Python one
 * in CortexM) drops it, returning true so Unicorn goes on, and counts it.
 * It reads the NVMC's CONFIG from the model itself (``nvmc.values[off]``),
 * so there is no copy of that state to keep in step.  The first dropped
 * store calls ``first(address)`` (the CPU logs it with the guest PC).  In
 * write mode, or before a source is set, it returns false and the Python
 * hook decides (the store then goes through the NVMC model).
 *
 * A store it lets go on (true) leaves the engine's IT state as it was
 * before Unicorn called the hook: Unicorn syncs the CPU state to the
 * storing instruction first (cpu_restore_state, for the PC), and that
 * also sets the IT bits to that instruction's (a conditional store in an
 * IT block: nonzero), while the translated code keeps them zero inside a
 * block and writes them back only when the block ends in an IT block.
 * The next block would be looked up, and translated, with the stale bits:
 * its first instructions conditional on the IT block's condition (Zephyr's
 * z_impl_k_queue_get: "it eq; streq" into a page the stack guard cuts,
 * then the callee's "push {r4, lr}" skipped).  So the hook puts them back
 * to zero (EPSR = T only; ``install``'s uc_reg_write and EPSR id), as
 * CortexM.resume_after_access_hook does for the Python hooks.
 * ====================================================================== */
typedef int (*uc_hook_add_fn)(void *uc, size_t *hh, int type, void *callback, void *user_data,
                              uint64_t begin, uint64_t end, ...);

typedef struct {
    PyObject_HEAD
    PyObject *obj;      /* the NVMC model, or NULL */
    PyObject *key;      /* CONFIG's offset */
    PyObject *first;    /* first(address) */
    unsigned long long count;
    uint64_t below;     /* only stores below this address are flash's (set_below);
                         * RAM pages write-protected by the MPU go to Python */
    /* the MPU's stores into RAM pages a region boundary cuts through
     * (set_mpu): one byte of access bits (R=1, W=2, X=4) per 32-byte granule
     * of RAM, for the current privilege; an allowed store is done here into
     * the RAM's host memory, any other goes on to Python (a fault) */
    PyObject *mpu_perm; /* bytes, or NULL */
    unsigned char *mpu_host;
    uint64_t mpu_base, mpu_size;
    unsigned long long mpu_stores;
    uc_reg_fn reg_write;   /* uc_reg_write, to zero the IT bits (install) */
    int epsr_id;
} FlashGuard;

/* the store goes on: the IT bits back to what the running block keeps */
static inline int guard_go_on(FlashGuard *g, void *uc) {
    if (g->reg_write != NULL) {
        uint64_t t = 1u << 24;                          /* EPSR: T, IT = 0 */
        g->reg_write(uc, g->epsr_id, &t);
    }
    return 1;
}

static int guard_hook(void *uc, int type, uint64_t address, int size, int64_t value,
                      void *user_data) {
    FlashGuard *g = (FlashGuard *)user_data;
    int drop = 0;
    if (g->mpu_perm != NULL && (!g->below || address < g->below))
        return 0;           /* the MPU is on: Python asks it before the NVMC */
    if (g->below && address >= g->below) {
        if (g->mpu_perm == NULL || size <= 0 || address < g->mpu_base
            || address + (uint64_t)size > g->mpu_base + g->mpu_size)
            return 0;
        const unsigned char *perm = (const unsigned char *)PyBytes_AS_STRING(g->mpu_perm);
        uint64_t off = address - g->mpu_base;
        for (uint64_t k = off >> 5; k <= (off + (uint64_t)size - 1) >> 5; k++)
            if (!(perm[k] & 2))
                return 0;                               /* forbidden: Python faults */
        for (int i = 0; i < size; i++)                  /* little-endian store */
            g->mpu_host[off + i] = (unsigned char)((uint64_t)value >> (8 * i));
        g->mpu_stores++;
        return guard_go_on(g, uc);
    }
    PyGILState_STATE st = PyGILState_Ensure();
    if (g->obj != NULL) {
        PyObject *d = NULL, *x = NULL;
        if (dict_attr_get(g->obj, str_values, g->key, &d, &x) == 0) {
            unsigned long cfg = PyLong_AsUnsignedLongMask(x);
            Py_DECREF(d);
            drop = !PyErr_Occurred() && (cfg & 3) != 1;
        }
        if (PyErr_Occurred()) {
            PyErr_WriteUnraisable(g->obj);
            drop = 0;
        }
        if (drop && g->count++ == 0 && g->first != NULL) {
            PyObject *r = PyObject_CallFunction(g->first, "K", (unsigned long long)address);
            if (r == NULL)
                PyErr_WriteUnraisable(g->first);
            Py_XDECREF(r);
        }
    }
    PyGILState_Release(st);
    return drop ? guard_go_on(g, uc) : 0;
}

static PyObject *FlashGuard_install(FlashGuard *g, PyObject *args) {
    unsigned long long fn, uch, type, reg_write = 0, begin = 1, end = 0;
    int epsr_id = 0;
    if (!PyArg_ParseTuple(args, "KKK|KiKK", &fn, &uch, &type, &reg_write, &epsr_id, &begin, &end))
        return NULL;
    g->reg_write = (uc_reg_fn)(uintptr_t)reg_write;
    g->epsr_id = epsr_id;
    size_t hh = 0;
    int err = ((uc_hook_add_fn)(uintptr_t)fn)((void *)(uintptr_t)uch, &hh, (int)type,
                                              (void *)guard_hook, g, (uint64_t)begin,
                                              (uint64_t)end);
    return Py_BuildValue("iK", err, (unsigned long long)hh);
}

static PyObject *FlashGuard_set_source(FlashGuard *g, PyObject *args) {
    PyObject *obj, *key, *first;
    if (!PyArg_ParseTuple(args, "OOO", &obj, &key, &first))
        return NULL;
    Py_INCREF(obj); Py_XSETREF(g->obj, obj);
    Py_INCREF(key); Py_XSETREF(g->key, key);
    Py_INCREF(first); Py_XSETREF(g->first, first);
    Py_RETURN_NONE;
}

static PyObject *FlashGuard_set_mpu(FlashGuard *g, PyObject *args) {
    unsigned long long host, base, size;
    PyObject *perm;
    if (!PyArg_ParseTuple(args, "KKKO", &host, &base, &size, &perm))
        return NULL;
    if (perm == Py_None) {
        Py_CLEAR(g->mpu_perm);
        Py_RETURN_NONE;
    }
    if (!PyBytes_Check(perm) || (uint64_t)PyBytes_GET_SIZE(perm) < (size + 31) / 32) {
        PyErr_SetString(PyExc_ValueError, "set_mpu needs bytes: one per 32-byte granule");
        return NULL;
    }
    Py_INCREF(perm);
    Py_XSETREF(g->mpu_perm, perm);
    g->mpu_host = (unsigned char *)(uintptr_t)host;
    g->mpu_base = base;
    g->mpu_size = size;
    Py_RETURN_NONE;
}

static int FlashGuard_traverse(FlashGuard *g, visitproc visit, void *arg) {
    Py_VISIT(g->mpu_perm);
    Py_VISIT(g->obj);
    Py_VISIT(g->key);
    Py_VISIT(g->first);
    return 0;
}

static int FlashGuard_clear(FlashGuard *g) {
    Py_CLEAR(g->mpu_perm);
    Py_CLEAR(g->obj);
    Py_CLEAR(g->key);
    Py_CLEAR(g->first);
    return 0;
}

static void FlashGuard_dealloc(FlashGuard *g) {
    PyObject_GC_UnTrack(g);
    FlashGuard_clear(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *FlashGuard_set_below(FlashGuard *g, PyObject *args) {
    unsigned long long below;
    if (!PyArg_ParseTuple(args, "K", &below))
        return NULL;
    g->below = below;
    Py_RETURN_NONE;
}

static PyMethodDef FlashGuard_methods[] = {
    {"set_mpu", (PyCFunction)FlashGuard_set_mpu, METH_VARARGS,
     "set_mpu(host_address, ram_base, ram_size, perms|None): the MPU's RAM stores in C"},
    {"set_below", (PyCFunction)FlashGuard_set_below, METH_VARARGS,
     "set_below(address): only stores below address are looked at (0: all)"},
    {"install", (PyCFunction)FlashGuard_install, METH_VARARGS,
     "install(uc_hook_add_address, uc_handle, UC_HOOK_MEM_WRITE_PROT[, uc_reg_write_address, "
     "UC_ARM_REG_EPSR[, begin, end]]) -> (uc_err, hook handle) (keep the guard alive as long "
     "as the engine; with uc_reg_write a store let go on leaves the IT bits zero)"},
    {"set_source", (PyCFunction)FlashGuard_set_source, METH_VARARGS,
     "set_source(nvmc, config_offset, first): drop stores while nvmc.values[config] & 3 != 1"},
    {NULL}
};

static PyMemberDef FlashGuard_members[] = {
    {"count", T_ULONGLONG, offsetof(FlashGuard, count), 0, "stores dropped so far"},
    {"mpu_stores", T_ULONGLONG, offsetof(FlashGuard, mpu_stores), 0,
     "stores into MPU-cut RAM pages done in C"},
    {NULL}
};

static PyTypeObject FlashGuardType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.FlashGuard",
    .tp_doc = "Drops CPU stores into flash while the NVMC is read-only (see _mmio.c).",
    .tp_basicsize = sizeof(FlashGuard),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)FlashGuard_dealloc,
    .tp_traverse = (traverseproc)FlashGuard_traverse,
    .tp_clear = (inquiry)FlashGuard_clear,
    .tp_methods = FlashGuard_methods,
    .tp_members = FlashGuard_members,
};

/* ======================================================================
 * PageMap: the engine's TLB filled from the memory map (UC_TLB_VIRTUAL).
 *
 * With Unicorn's own (CPU) TLB, QEMU's Cortex-M default memory map makes
 * every RAM page executable in the TLB, and QEMU then never marks a RAM
 * page's TLB entry dirty (the entry also serves fetches: stores must look
 * for translated code to invalidate), so every store into RAM leaves the
 * translated code for a helper (two memory-map lookups and a search for
 * translated code on the page): measured the largest single cost of
 * CPU-bound firmware.  This hook fills the TLB instead: RAM pages read and
 * write, executable only from the first fetch there on (the page is marked
 * in ``exec``; a page once executed stays executable, so stores into it
 * still find its translated code); flash and the rest of the code space
 * read/write/execute (the memory's own protections and hooks decide as
 * before: they are checked past the TLB); the execute-never regions of the
 * default map (peripherals 0x40000000-0x5FFFFFFF, device and system space
 * from 0xA0000000) read/write: a fetch there is refused (the engine stops
 * with UC_ERR_EXCEPTION; ``denied`` holds the address, the CPU raises the
 * MemManage fault QEMU's own TLB raised).  A fill from a data access in
 * translated code follows Unicorn's sync of the CPU state to the accessing
 * instruction, IT bits included: they go back to zero as after a store
 * hook (FlashGuard).
 * ====================================================================== */
typedef struct {
    uint64_t paddr;
    uint32_t perms;
} uc_tlb_entry_t;

typedef struct {
    PyObject_HEAD
    uint64_t ram_base, ram_size;    /* one RAM range */
    unsigned char *exec;            /* one byte a 1 KiB page of RAM */
    unsigned long long fills, exec_pages;
    uint64_t denied;                /* the last fetch refused, + 1 (0: none) */
    uc_reg_fn reg_write;
    int epsr_id;
    int (*ctl)(void *uc, uint32_t control, ...);
    int sticky_exec;    /* 0: a data fill of an executed page leaves execute out (for tests) */
} PageMap;

static int pagemap_fill(void *uc, uint64_t vaddr, int type, uc_tlb_entry_t *e, void *user_data) {
    PageMap *m = (PageMap *)user_data;
    uint32_t page = (uint32_t)vaddr & ~0x3FFu;
    m->fills++;
    e->paddr = page;
    if ((uint64_t)page - m->ram_base < m->ram_size) {
        uint64_t i = ((uint64_t)page - m->ram_base) >> 10;
        if (type == 18 /* UC_MEM_FETCH */ && !m->exec[i]) {
            m->exec[i] = 1;
            m->exec_pages++;
            /* entries made for this page before (read/write, dirty: stores
             * that do not look for translated code) go, in every MMU index */
            if (m->ctl != NULL)
                m->ctl(uc, 11 | (1u << 30) /* UC_CTL_WRITE(UC_CTL_TLB_FLUSH, 0) */);
        }
        e->perms = m->exec[i] && (m->sticky_exec || type == 18) ? 7 : 3;
    } else if ((page >= 0x40000000u && page < 0x60000000u)
               || (page >= 0xA0000000u && page < 0xFFFFF000u)) {
        e->perms = 3;
        if (type == 18)
            m->denied = (uint64_t)vaddr + 1;
    } else {
        e->perms = 7;
    }
    if (type != 18 && m->reg_write != NULL) {
        uint64_t t = 1u << 24;                          /* EPSR: T, IT = 0 */
        m->reg_write(uc, m->epsr_id, &t);
    }
    return 1;
}

static PyObject *PageMap_install(PageMap *m, PyObject *args) {
    unsigned long long fn, uch, type, reg_write, base, size, ctl;
    int epsr_id;
    if (!PyArg_ParseTuple(args, "KKKKiKKK", &fn, &uch, &type, &reg_write, &epsr_id, &base, &size,
                          &ctl))
        return NULL;
    m->ctl = (int (*)(void *, uint32_t, ...))(uintptr_t)ctl;
    m->sticky_exec = 1;
    if (m->exec == NULL) {
        m->exec = PyMem_Calloc((size_t)(size >> 10) + 1, 1);
        if (m->exec == NULL)
            return PyErr_NoMemory();
    }
    m->ram_base = base;
    m->ram_size = size;
    m->reg_write = (uc_reg_fn)(uintptr_t)reg_write;
    m->epsr_id = epsr_id;
    size_t hh = 0;
    int err = ((uc_hook_add_fn)(uintptr_t)fn)((void *)(uintptr_t)uch, &hh, (int)type,
                                              (void *)pagemap_fill, m, (uint64_t)1, (uint64_t)0);
    return PyLong_FromLong(err);
}

static PyObject *PageMap_take_denied(PageMap *m, PyObject *noargs) {
    uint64_t d = m->denied;
    m->denied = 0;
    if (!d)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(d - 1);
}

static void PageMap_dealloc(PageMap *m) {
    PyMem_Free(m->exec);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyMethodDef PageMap_methods[] = {
    {"install", (PyCFunction)PageMap_install, METH_VARARGS,
     "install(uc_hook_add_address, uc_handle, UC_HOOK_TLB_FILL, uc_reg_write_address, "
     "UC_ARM_REG_EPSR, ram_base, ram_size) -> uc_err (keep the map alive as long as the engine)"},
    {"take_denied", (PyCFunction)PageMap_take_denied, METH_NOARGS,
     "take_denied() -> the address of the last fetch refused since the last call, or None"},
    {NULL}
};

static PyMemberDef PageMap_members[] = {
    {"fills", T_ULONGLONG, offsetof(PageMap, fills), READONLY, "TLB fills so far"},
    {"exec_pages", T_ULONGLONG, offsetof(PageMap, exec_pages), READONLY,
     "RAM pages code has been fetched from"},
    {"sticky_exec", T_INT, offsetof(PageMap, sticky_exec), 0,
     "1: an executed RAM page stays executable in every fill (0: for the companion test)"},
    {NULL}
};

static PyTypeObject PageMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.PageMap",
    .tp_doc = "Fills the engine's TLB from the memory map (see _mmio.c).",
    .tp_basicsize = sizeof(PageMap),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)PageMap_dealloc,
    .tp_methods = PageMap_methods,
    .tp_members = PageMap_members,
};

/* map(uc_mmio_map_address, uc_handle, base, size, slot) -> uc_err */
/* ======================================================================
 * RtcCore: the RTC's clock event and its CC writes, without Python.
 *
 * emu/peripherals/rtc.py's Rtc keeps its state where C can reach it (the
 * counter's base and EVTEN in its Cells, EVENTS and INTEN there too, CC[n]
 * in ``values``, the N+1 window in ``suppress_k``) and one clock event for
 * its next compare, overflow or TICK.  Rtc._on_event (the event), _rearm
 * (the next edge) and the CC branch of Rtc.write are written here again
 * with the same steps in the same order, so a firmware's periodic tick
 * (wasp-os's 1 kHz RTC1 compare, FreeRTOS's tickless idle) costs no Python
 * frame of the model: the event sets EVENTS_TICK/OVRFLW/COMPARE[n], raises
 * the line through the SoC's set_irq when INTEN asks (the CPU pends it
 * there), and schedules the next edge on the Python clock (its heap, its
 * sequence numbers and on_earlier_deadline, as Event.schedule_at does).
 * Whenever an event that fires is routed to PPI (EVTEN set and a listener)
 * or the energy model watches (power_watch), the event goes to the model's
 * own _on_event instead: nothing here knows PPI.  The pure-Python path uses
 * the model's code throughout (the reference; tests compare both).
 * ====================================================================== */
typedef struct {
    PyObject_HEAD
    PyObject *model;     /* the Rtc */
    PyObject *ev;        /* its clock Event */
    PyObject *clock;
    Cells *cells;
    int num_cc;
    int ci[5];           /* cells of running, base_time, period, base_value, evten */
    long long mask;      /* CC's and COUNTER's mask (24 bits) */
    long long lfclk;     /* ticks per LFCLK cycle */
    unsigned long long fired, handed;   /* events carried out here, handed to the model */
} RtcCore;

static PyObject *str_when, *str_seq, *str_heap, *str_next_deadline, *str_on_earlier,
                *str_suppress_k, *str_event_listeners, *str_power_watch, *str_irq,
                *str_soc, *str_set_irq, *str_on_event, *heappush_fn,
                *str_compact_at, *str_compact;

static inline void rc_count_at(RtcCore *r, long long t, long long *k, long long *cur) {
    long long *cell = r->cells->cell;
    long long bt = cell[r->ci[1]], per = cell[r->ci[2]], bv = cell[r->ci[3]];
    if (!cell[r->ci[0]] || per <= 0 || t < bt + per) {
        *k = 0;
        *cur = bv;
        return;
    }
    *k = (t - bt) / per;
    *cur = (bv + *k) & r->mask;
}

static int set_ll(PyObject *o, PyObject *name, long long v) {
    PyObject *n = PyLong_FromLongLong(v);
    if (n == NULL)
        return -1;
    int err = PyObject_SetAttr(o, name, n);
    Py_DECREF(n);
    return err;
}

/* The helpers the model cores (RtcCore, TimerCore, WdtCore) share. */

/* values[off] of a model's ``values`` dict, as a long long */
static int values_ll(PyObject *values, long off, long long *v) {
    PyObject *key = PyLong_FromLong(off);
    if (key == NULL)
        return -1;
    PyObject *x = PyDict_GetItemWithError(values, key);     /* borrowed */
    Py_DECREF(key);
    if (x == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_KeyError, "+0x%lx", off);
        return -1;
    }
    *v = PyLong_AsLongLong(x);
    return (*v == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int values_set(PyObject *values, long off, long long v) {
    PyObject *key = PyLong_FromLong(off), *x = PyLong_FromLongLong(v);
    int err = key == NULL || x == NULL || PyDict_SetItem(values, key, x);
    Py_XDECREF(key);
    Py_XDECREF(x);
    return err ? -1 : 0;
}

/* the model's ``values`` (a new reference), a dict */
static PyObject *model_values(PyObject *model) {
    PyObject *d = PyObject_GetAttr(model, str_values);
    if (d != NULL && !PyDict_Check(d)) {
        Py_DECREF(d);
        PyErr_Format(PyExc_TypeError, "%s: values is not a dict", Py_TYPE(model)->tp_name);
        return NULL;
    }
    return d;
}

/* ev.when as (has, when) */
static int ev_when(PyObject *ev, int *has, long long *when) {
    if (is_event(ev)) {
        *has = ((EventObject *)ev)->has;
        *when = *has ? ((EventObject *)ev)->when : 0;
        return 0;
    }
    PyObject *w = PyObject_GetAttr(ev, str_when);
    if (w == NULL)
        return -1;
    *has = w != Py_None;
    *when = *has ? PyLong_AsLongLong(w) : 0;
    Py_DECREF(w);
    return PyErr_Occurred() ? -1 : 0;
}

/* Event.cancel */
static int ev_cancel(PyObject *ev) {
    if (is_event(ev)) {
        clk_cancel((EventObject *)ev);
        return 0;
    }
    if (PyObject_SetAttr(ev, str_when, Py_None))
        return -1;
    return set_ll(ev, str_seq, -1);
}

/* A W_CALL op's fn(offset, value): the two arguments, or -1 with TypeError */
static int call_args(PyObject *const *args, Py_ssize_t nargs, const char *name, long *off,
                     unsigned long long *value) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(offset, value)", name);
        return -1;
    }
    *off = PyLong_AsLong(args[0]);
    *value = PyLong_AsUnsignedLongLongMask(args[1]);
    return PyErr_Occurred() ? -1 : 0;
}

/* Event.schedule_at (emu/clock.py), the same steps */
static int ev_schedule_at(PyObject *clock, PyObject *ev, long long when) {
    if (is_event(ev) && (PyObject *)((EventObject *)ev)->clock == clock)
        return clk_schedule((EventObject *)ev, when);
    long long now, seq, nd;
    int has;
    long long cur;
    if (clock_get_now(clock, &now))
        return -1;
    if (when < now)
        when = now;
    if (ev_when(ev, &has, &cur))
        return -1;
    if (has && cur == when)
        return 0;
    if (attr_ll(clock, str_seq, &seq))
        return -1;
    seq++;
    if (set_ll(clock, str_seq, seq) || set_ll(ev, str_seq, seq)
        || set_ll(ev, str_when, when))
        return -1;
    PyObject *heap = PyObject_GetAttr(clock, str_heap);
    if (heap == NULL)
        return -1;
    PyObject *entry = Py_BuildValue("(LLO)", when, seq, ev);
    PyObject *res = entry ? PyObject_CallFunctionObjArgs(heappush_fn, heap, entry, NULL) : NULL;
    Py_XDECREF(entry);
    Py_ssize_t size = PyList_Check(heap) ? PyList_GET_SIZE(heap) : 0;
    Py_DECREF(heap);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    long long at;                                     /* Event.schedule_at's compaction */
    if (attr_ll(clock, str_compact_at, &at))
        return -1;
    if (size > at) {
        res = PyObject_CallMethodNoArgs(clock, str_compact);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    if (attr_ll(clock, str_next_deadline, &nd))
        return -1;
    if (when < nd) {
        if (set_ll(clock, str_next_deadline, when))
            return -1;
        PyObject *cb = PyObject_GetAttr(clock, str_on_earlier);
        if (cb == NULL)
            return -1;
        if (cb != Py_None) {
            PyObject *x = PyObject_CallNoArgs(cb);
            Py_DECREF(cb);
            if (x == NULL)
                return -1;
            Py_DECREF(x);
        } else {
            Py_DECREF(cb);
        }
    }
    return 0;
}

static int rc_schedule_at(RtcCore *r, long long when) {
    return ev_schedule_at(r->clock, r->ev, when);
}

/* Rtc._rearm */
static int rc_rearm(RtcCore *r) {
    long long now, when;
    int has;
    if (!r->cells->cell[r->ci[0]])                   /* not running */
        return ev_cancel(r->ev);
    if (clock_get_now(r->clock, &now) || ev_when(r->ev, &has, &when))
        return -1;
    if (has && when <= now)
        return 0;                 /* an edge due, not processed yet: _on_event re-arms */
    long long k, cur, wrap = r->mask + 1, dk;
    rc_count_at(r, now, &k, &cur);
    if (((long long)r->cells->inten | r->cells->cell[r->ci[4]]) & 1) {
        dk = 1;
    } else {
        dk = cur ? wrap - cur : wrap;
        PyObject *values = model_values(r->model);
        if (values == NULL)
            return -1;
        for (int n = 0; n < r->num_cc; n++) {
            long long cc;
            if (values_ll(values, 0x540 + 4 * n, &cc)) {
                Py_DECREF(values);
                return -1;
            }
            long long d = (cc - cur) & r->mask;
            if (!d)
                d = wrap;
            if (d < dk)
                dk = d;
        }
        Py_DECREF(values);
    }
    long long *cell = r->cells->cell;
    return rc_schedule_at(r, cell[r->ci[1]] + (k + dk) * cell[r->ci[2]]);
}

static PyObject *RtcCore_rearm(RtcCore *r, PyObject *noargs) {
    if (rc_rearm(r))
        return NULL;
    Py_RETURN_NONE;
}

/* The model's _on_event (a routed event or a watcher) */
static PyObject *rc_hand_over(RtcCore *r) {
    r->handed++;
    return PyObject_CallMethodNoArgs(r->model, str_on_event);
}

/* A model's fire, the line step for one event: NrfPeripheral.update_irq -> _set_irq */
static int cells_update_irq(PyObject *model, Cells *c) {
    int level = (c->bits & c->keys & (uint32_t)c->inten) != 0;
    if (level == (c->line != 0))
        return 0;
    c->line = level;
    PyObject *irq = PyObject_GetAttr(model, str_irq);
    if (irq == NULL)
        return -1;
    PyObject *soc = PyObject_GetAttr(model, str_soc);
    if (soc == NULL) {
        Py_DECREF(irq);
        return -1;
    }
    int rc = 0;
    if (irq != Py_None && soc != Py_None) {
        PyObject *x = PyObject_CallMethodObjArgs(soc, str_set_irq, irq,
                                                 level ? Py_True : Py_False, NULL);
        if (x == NULL)
            rc = -1;
        Py_XDECREF(x);
    }
    Py_DECREF(irq);
    Py_DECREF(soc);
    return rc;
}

static int rc_update_irq(RtcCore *r) {
    return cells_update_irq(r->model, r->cells);
}

/* Rtc._on_event: the clock event's callback */
static PyObject *RtcCore_fire(RtcCore *r, PyObject *noargs) {
    Cells *c = r->cells;
    long long now, k, cur;
    if (clock_get_now(r->clock, &now))
        return NULL;
    rc_count_at(r, now, &k, &cur);
    long long evten = c->cell[r->ci[4]];
    uint32_t fire = 0;                    /* event indices (offset - 0x100) / 4 */
    uint32_t suppressed = 0;              /* CC[n] whose N+1 window is used up now */
    if (((long long)c->inten | evten) & 1)
        fire |= 1u << 0;                  /* TICK */
    if (cur == 0)
        fire |= 1u << 1;                  /* OVRFLW */
    PyObject *values = model_values(r->model), *supp = NULL;
    if (values == NULL)
        return NULL;
    supp = PyObject_GetAttr(r->model, str_suppress_k);
    if (supp == NULL || !PyList_Check(supp) || PyList_GET_SIZE(supp) < r->num_cc) {
        Py_DECREF(values);
        Py_XDECREF(supp);
        return rc_hand_over(r);
    }
    for (int n = 0; n < r->num_cc; n++) {
        long long cc;
        if (values_ll(values, 0x540 + 4 * n, &cc))
            goto fail;
        if (cc != cur)
            continue;
        PyObject *sk = PyList_GET_ITEM(supp, n);
        if (sk != Py_None) {
            long long kk = PyLong_AsLongLong(sk);
            if (kk == -1 && PyErr_Occurred())
                goto fail;
            if (kk == k) {
                suppressed |= 1u << n;
                continue;
            }
        }
        fire |= 1u << (16 + n);
    }
    Py_DECREF(values);
    values = NULL;
    /* routed to PPI with someone listening, or watched: the model does it all */
    PyObject *pw = PyObject_GetAttr(r->model, str_power_watch);
    if (pw == NULL)
        goto fail;
    int watched = pw != Py_None;
    Py_DECREF(pw);
    int routed = 0;
    if (fire & (uint32_t)evten) {
        PyObject *ls = PyObject_GetAttr(r->model, str_event_listeners);
        if (ls == NULL)
            goto fail;
        routed = !PyList_Check(ls) || PyList_GET_SIZE(ls) > 0;
        Py_DECREF(ls);
    }
    if (watched || routed) {
        Py_DECREF(supp);
        return rc_hand_over(r);
    }
    for (int n = 0; n < r->num_cc; n++)
        if (suppressed & (1u << n))
            if (PyList_SetItem(supp, n, Py_NewRef(Py_None)))
                goto fail;
    Py_CLEAR(supp);
    for (int i = 0; i < 32; i++) {        /* TICK, OVRFLW, COMPARE[0..]: Rtc.fire each */
        if (!(fire & (1u << i)))
            continue;
        c->keys |= 1u << i;
        c->bits |= 1u << i;
        if (rc_update_irq(r))
            return NULL;
    }
    r->fired++;
    if (rc_rearm(r))
        return NULL;
    Py_RETURN_NONE;
fail:
    Py_XDECREF(values);
    Py_XDECREF(supp);
    return NULL;
}

/* The CC branch of Rtc.write (a W_CALL op): fn(offset, value) */
static PyObject *RtcCore_write_cc(RtcCore *r, PyObject *const *args, Py_ssize_t nargs) {
    long off;
    unsigned long long value;
    if (call_args(args, nargs, "write_cc", &off, &value))
        return NULL;
    int n = (int)((off - 0x540) >> 2);
    if (off < 0x540 || (off & 3) || n >= r->num_cc) {
        PyErr_Format(PyExc_ValueError, "+0x%lx is not a CC register", off);
        return NULL;
    }
    PyObject *values = model_values(r->model);
    if (values == NULL)
        return NULL;
    long long old, nw;
    if (values_ll(values, 0x540 + 4 * n, &old))
        goto fail;
    nw = (old & ~r->mask) | ((long long)value & r->mask);
    if (values_set(values, off, nw))
        goto fail;
    if (nw != old && rc_rearm(r))            /* _wr_cc */
        goto fail;
    if (r->cells->cell[r->ci[0]]) {          /* the N+1 window (see Rtc.write) */
        long long now, k, cur;
        if (clock_get_now(r->clock, &now))
            goto fail;
        rc_count_at(r, now, &k, &cur);
        long long *cell = r->cells->cell;
        long long next_inc = cell[r->ci[1]] + (k + 1) * cell[r->ci[2]];
        long long sync_done = (now / r->lfclk + 2) * r->lfclk;
        PyObject *supp = PyObject_GetAttr(r->model, str_suppress_k);
        if (supp == NULL)
            goto fail;
        PyObject *item = (((nw - cur) & r->mask) == 1 && next_inc <= sync_done)
                         ? PyLong_FromLongLong(k + 1) : Py_NewRef(Py_None);
        int err = item == NULL || PySequence_SetItem(supp, n, item);
        Py_XDECREF(item);
        Py_DECREF(supp);
        if (err)
            goto fail;
    }
    Py_DECREF(values);
    Py_RETURN_NONE;
fail:
    Py_DECREF(values);
    return NULL;
}

/* Rtc.write's INTENSET/INTENCLR branch (a W_CALL op): fn(offset, value).
 * NrfPeripheral._intenset raises the line when a newly enabled event is
 * set, _intenclr lowers it through update_irq; a change of TICK's routing
 * (INTEN or EVTEN) re-plans. */
static PyObject *RtcCore_write_inten(RtcCore *r, PyObject *const *args, Py_ssize_t nargs) {
    long off;
    unsigned long long value;
    if (call_args(args, nargs, "write_inten", &off, &value))
        return NULL;
    uint32_t v = (uint32_t)value;
    if (off != 0x304 && off != 0x308) {
        PyErr_Format(PyExc_ValueError, "+0x%lx is not INTENSET/INTENCLR", off);
        return NULL;
    }
    Cells *c = r->cells;
    long long evten = c->cell[r->ci[4]];
    uint32_t old = (uint32_t)c->inten;
    int tick = (int)((old | evten) & 1);
    if (off == 0x304) {
        uint32_t ni = old | v;
        c->inten = ni;
        if (!c->line && ni != old && (c->bits & c->keys & v))
            if (rc_update_irq(r))                     /* _set_irq(True) */
                return NULL;
    } else {
        uint32_t ni = old & ~v;
        c->inten = ni;
        if (c->line && ni != old)
            if (rc_update_irq(r))
                return NULL;
    }
    if ((int)(((long long)c->inten | evten) & 1) != tick && rc_rearm(r))
        return NULL;
    Py_RETURN_NONE;
}

static int RtcCore_init(RtcCore *r, PyObject *args, PyObject *kwds) {
    PyObject *model, *ev, *clock, *cells, *ci;
    int num_cc;
    long long mask, lfclk;
    if (!PyArg_ParseTuple(args, "OOOO!iOLL", &model, &ev, &clock, &CellsType, &cells, &num_cc,
                          &ci, &mask, &lfclk))
        return -1;
    if (!PyTuple_Check(ci) || PyTuple_GET_SIZE(ci) != 5 || num_cc < 0 || num_cc > 16
        || lfclk <= 0) {
        PyErr_SetString(PyExc_ValueError, "RtcCore(model, event, clock, cells, num_cc, "
                        "(running, base_time, period, base_value, evten cells), mask, lfclk)");
        return -1;
    }
    for (int i = 0; i < 5; i++) {
        long v = PyLong_AsLong(PyTuple_GET_ITEM(ci, i));
        if (v < 0 || v >= NCELLS) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "cell index out of range");
            return -1;
        }
        r->ci[i] = (int)v;
    }
    Py_INCREF(model); Py_XSETREF(r->model, model);
    Py_INCREF(ev); Py_XSETREF(r->ev, ev);
    Py_INCREF(clock); Py_XSETREF(r->clock, clock);
    Py_INCREF(cells); Py_XSETREF(r->cells, (Cells *)cells);
    r->num_cc = num_cc;
    r->mask = mask;
    r->lfclk = lfclk;
    return 0;
}

static int RtcCore_traverse(RtcCore *r, visitproc visit, void *arg) {
    Py_VISIT(r->model);
    Py_VISIT(r->ev);
    Py_VISIT(r->clock);
    Py_VISIT(r->cells);
    return 0;
}

static int RtcCore_clear(RtcCore *r) {
    Py_CLEAR(r->model);
    Py_CLEAR(r->ev);
    Py_CLEAR(r->clock);
    Py_CLEAR(r->cells);
    return 0;
}

static void RtcCore_dealloc(RtcCore *r) {
    PyObject_GC_UnTrack(r);
    RtcCore_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMethodDef RtcCore_methods[] = {
    {"fire", (PyCFunction)RtcCore_fire, METH_NOARGS,
     "fire(): the RTC's clock event (Rtc._on_event), or the model's own when routed/watched"},
    {"rearm", (PyCFunction)RtcCore_rearm, METH_NOARGS, "rearm(): Rtc._rearm"},
    {"write_inten", (PyCFunction)(void (*)(void))RtcCore_write_inten, METH_FASTCALL,
     "write_inten(offset, value): a CPU write of INTENSET/INTENCLR changing TICK's routing"},
    {"write_cc", (PyCFunction)(void (*)(void))RtcCore_write_cc, METH_FASTCALL,
     "write_cc(offset, value): a CPU write of CC[n] (the CC branch of Rtc.write)"},
    {NULL}
};

static PyMemberDef RtcCore_members[] = {
    {"fired", T_ULONGLONG, offsetof(RtcCore, fired), 0, "clock events carried out in C"},
    {"handed", T_ULONGLONG, offsetof(RtcCore, handed), 0,
     "clock events handed to the model (routed to PPI, watched)"},
    {NULL}
};

static PyTypeObject RtcCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.RtcCore",
    .tp_doc = "The RTC's clock event and CC writes in C (see _mmio.c).",
    .tp_basicsize = sizeof(RtcCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RtcCore_init,
    .tp_dealloc = (destructor)RtcCore_dealloc,
    .tp_traverse = (traverseproc)RtcCore_traverse,
    .tp_clear = (inquiry)RtcCore_clear,
    .tp_methods = RtcCore_methods,
    .tp_members = RtcCore_members,
};

/* ======================================================================
 * TimerCore: the TIMER's clock event, CC writes and CAPTURE tasks, without
 * Python.
 *
 * emu/peripherals/timer.py's Timer keeps its counter's base in its Cells
 * (running, base_time, base_value), MODE, BITMODE, PRESCALER and CC[n] in
 * ``values``, the planned edge in ``_due``, and one clock event for its
 * next CC match.  Timer._on_compare (the event), _rearm (the next match),
 * the CC branch of its write (CC with its _wr_cc callback) and
 * task_CAPTURE are written here again with the same steps in the same
 * order, so a firmware's ticker (micro:bit MicroPython's TIMER1 compare
 * and its ~1000 CAPTUREs an emulated second to read the time) costs no
 * Python frame of the model.  Whenever an event that fires has a SHORTS
 * bit set, is listened to (PPI: event_listeners) or the energy model
 * watches (power_watch), the model's own _on_compare runs instead; a
 * CAPTURE while power_watch is set goes to the model's write.  The
 * pure-Python path uses the model's code throughout (the reference; tests
 * compare both).
 * ====================================================================== */
typedef struct {
    PyObject_HEAD
    PyObject *model;     /* the Timer */
    PyObject *ev;        /* its clock Event */
    PyObject *clock;
    Cells *cells;
    int num_cc;
    int ci[3];           /* cells of running, base_time, base_value */
    long long hf16;      /* ticks per 16 MHz cycle */
    long long max_mask;  /* the counter's width (the nRF51's TIMER1/2: 16 bits) */
    long long base;      /* the block's address */
    PyObject *ppi_fn;    /* emu.peripherals.ppi.Ppi._on_event (a function), or None */
    unsigned long long fired, handed, captures;
} TimerCore;

static PyObject *str_base_attr, *str_due, *str_shorts, *str_write_m, *str_chen, *str_map;

/* Would the listener ``l`` do anything with the events in ``fire`` (bit 16 + n:
 * COMPARE[n])?  1 for anything but the PPI's own Ppi._on_event finding no
 * task for them in its current map (the model's _on_event rebuilds first
 * when CHEN changed: that is a 1 too). */
static int tc_listened(TimerCore *r, PyObject *l, uint32_t fire) {
    if (r->ppi_fn == Py_None || !PyMethod_Check(l) || PyMethod_GET_FUNCTION(l) != r->ppi_fn)
        return 1;
    PyObject *ppi = PyMethod_GET_SELF(l);
    PyObject *values = PyObject_GetAttr(ppi, str_values), *map = NULL;
    long long chen, built;
    int rc = -1;
    if (values == NULL || !PyDict_Check(values))
        goto done;
    if (values_ll(values, 0x500, &chen) || attr_ll(ppi, str_chen, &built))
        goto done;
    if (chen != built) {
        rc = 1;
        goto done;
    }
    map = PyObject_GetAttr(ppi, str_map);
    if (map == NULL || !PyDict_Check(map))
        goto done;
    rc = 0;
    for (int n = 0; n < 16 && !rc; n++) {
        if (!(fire & (1u << (16 + n))))
            continue;
        PyObject *key = PyLong_FromLongLong(r->base + 0x140 + 4 * n);
        if (key == NULL) {
            rc = -1;
            break;
        }
        PyObject *tasks = PyDict_GetItemWithError(map, key);      /* borrowed */
        Py_DECREF(key);
        if (tasks == NULL) {
            if (PyErr_Occurred())
                rc = -1;
            continue;
        }
        int t = PyObject_IsTrue(tasks);
        rc = t < 0 ? -1 : t;
    }
done:
    if (rc < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "PPI state is not as TimerCore expects");
    Py_XDECREF(values);
    Py_XDECREF(map);
    return rc;
}

/* Timer._mask, _tpc and whether the counter counts time (running, MODE 0) */
typedef struct { long long mask, tpc; int timing; } TcCfg;

static int tc_cfg(TimerCore *r, PyObject *values, TcCfg *cfg) {
    static const long long masks[4] = {0xFFFF, 0xFF, 0xFFFFFF, 0xFFFFFFFF};
    long long mode, bitmode, presc;
    if (values_ll(values, 0x504, &mode) || values_ll(values, 0x508, &bitmode)
        || values_ll(values, 0x510, &presc))
        return -1;
    presc &= 0xF;
    cfg->mask = masks[bitmode & 3] < r->max_mask ? masks[bitmode & 3] : r->max_mask;
    cfg->tpc = r->hf16 << (presc < 9 ? presc : 9);
    cfg->timing = r->cells->cell[r->ci[0]] && (mode & 3) == 0;
    return 0;
}

static inline long long floordiv(long long a, long long b) {
    long long q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Timer._count_at */
static inline void tc_count_at(TimerCore *r, const TcCfg *cfg, long long t,
                               long long *k, long long *cur) {
    long long *cell = r->cells->cell;
    if (!cfg->timing) {
        *k = 0;
        *cur = cell[r->ci[2]] & cfg->mask;
        return;
    }
    *k = floordiv(t - cell[r->ci[1]], cfg->tpc);
    *cur = (cell[r->ci[2]] + *k) & cfg->mask;
}

/* Timer._rearm(at): at < 0 is now */
static int tc_rearm(TimerCore *r, PyObject *values, long long at) {
    TcCfg cfg;
    if (tc_cfg(r, values, &cfg))
        return -1;
    if (!cfg.timing)
        return ev_cancel(r->ev);
    long long now, when, k, cur;
    int has;
    if (at < 0) {
        if (clock_get_now(r->clock, &now))
            return -1;
    } else {
        now = at;
    }
    if (ev_when(r->ev, &has, &when))
        return -1;
    if (has && when <= now)
        return 0;               /* due, not processed yet: _on_compare re-arms */
    tc_count_at(r, &cfg, now, &k, &cur);
    long long best = cfg.mask + 1;
    for (int n = 0; n < r->num_cc; n++) {
        long long cc;
        if (values_ll(values, 0x540 + 4 * n, &cc))
            return -1;
        long long d = (cc - cur) & cfg.mask;
        if (!d)
            d = cfg.mask + 1;
        if (d < best)
            best = d;
    }
    long long due = r->cells->cell[r->ci[1]] + (k + best) * cfg.tpc;
    if (set_ll(r->model, str_due, due))
        return -1;
    return ev_schedule_at(r->clock, r->ev, due);
}

static PyObject *TimerCore_rearm(TimerCore *r, PyObject *const *args, Py_ssize_t nargs) {
    long long at = -1;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "rearm([at])");
        return NULL;
    }
    if (nargs == 1 && ((at = PyLong_AsLongLong(args[0])) == -1 && PyErr_Occurred()))
        return NULL;
    PyObject *values = model_values(r->model);
    if (values == NULL)
        return NULL;
    int err = tc_rearm(r, values, at);
    Py_DECREF(values);
    if (err)
        return NULL;
    Py_RETURN_NONE;
}

/* Timer._on_compare: the clock event's callback */
static PyObject *TimerCore_fire(TimerCore *r, PyObject *noargs) {
    Cells *c = r->cells;
    PyObject *values = model_values(r->model);
    if (values == NULL)
        return NULL;
    TcCfg cfg;
    long long now, due, k, cur, shorts;
    if (tc_cfg(r, values, &cfg) || clock_get_now(r->clock, &now)
        || attr_ll(r->model, str_due, &due) || attr_ll(r->model, str_shorts, &shorts))
        goto fail;
    long long t = due < now ? due : now;
    tc_count_at(r, &cfg, t, &k, &cur);
    uint32_t fire = 0;                       /* event indices: COMPARE[n] is 16 + n */
    for (int n = 0; n < r->num_cc; n++) {
        long long cc;
        if (values_ll(values, 0x540 + 4 * n, &cc))
            goto fail;
        if ((cc & cfg.mask) == cur)
            fire |= 1u << (16 + n);
    }
    /* a shortcut, a listener (PPI) or a watcher: the model's fire() */
    int hand = 0;
    if (fire) {
        /* SHORTS bit n: COMPARE[n]_CLEAR, bit 8 + n: COMPARE[n]_STOP */
        for (int n = 0; n < r->num_cc; n++)
            if ((fire >> (16 + n)) & 1 && (shorts >> n | shorts >> (8 + n)) & 1)
                hand = 1;
        PyObject *ls = PyObject_GetAttr(r->model, str_event_listeners);
        if (ls == NULL)
            goto fail;
        if (!PyList_Check(ls)) {
            hand = 1;
        } else {
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ls) && !hand; i++) {
                int l = tc_listened(r, PyList_GET_ITEM(ls, i), fire);
                if (l < 0) {
                    Py_DECREF(ls);
                    goto fail;
                }
                hand = l;
            }
        }
        Py_DECREF(ls);
        PyObject *pw = PyObject_GetAttr(r->model, str_power_watch);
        if (pw == NULL)
            goto fail;
        if (pw != Py_None)
            hand = 1;
        Py_DECREF(pw);
    }
    c->cell[r->ci[2]] = cur;                 /* fold the count into the base */
    c->cell[r->ci[1]] = t;
    if (hand) {
        /* Timer._on_compare with the model's fire() for the events (its
         * PPI, shortcuts and watchers in Python): each CC compared again
         * just before its event (a task fired from an earlier one may have
         * written it), re-armed from t */
        r->handed++;
        for (int n = 0; n < r->num_cc; n++) {
            Py_DECREF(values);
            values = model_values(r->model);
            if (values == NULL)
                return NULL;
            long long cc;
            if (values_ll(values, 0x540 + 4 * n, &cc))
                goto fail;
            if ((cc & cfg.mask) != cur)
                continue;
            PyObject *x = PyObject_CallMethod(r->model, "fire", "i", 0x140 + 4 * n);
            if (x == NULL)
                goto fail;
            Py_DECREF(x);
        }
        Py_DECREF(values);
        values = model_values(r->model);
        if (values == NULL)
            return NULL;
        if (tc_rearm(r, values, t))
            goto fail;
        Py_DECREF(values);
        Py_RETURN_NONE;
    }
    for (int i = 16; i < 32; i++) {          /* Timer.fire each COMPARE[n] */
        if (!(fire & (1u << i)))
            continue;
        c->keys |= 1u << i;
        c->bits |= 1u << i;
        if (cells_update_irq(r->model, c))
            goto fail;
    }
    r->fired++;
    if (tc_rearm(r, values, t))
        goto fail;
    Py_DECREF(values);
    Py_RETURN_NONE;
fail:
    Py_DECREF(values);
    return NULL;
}

/* The CC branch of Timer.write (a W_CALL op): fn(offset, value); CC's
 * register mask is all 32 bits, and _wr_cc re-plans whatever the value */
static PyObject *TimerCore_write_cc(TimerCore *r, PyObject *const *args, Py_ssize_t nargs) {
    long off;
    unsigned long long value;
    if (call_args(args, nargs, "write_cc", &off, &value))
        return NULL;
    int n = (int)((off - 0x540) >> 2);
    if (off < 0x540 || (off & 3) || n >= r->num_cc) {
        PyErr_Format(PyExc_ValueError, "+0x%lx is not a CC register", off);
        return NULL;
    }
    PyObject *values = model_values(r->model);
    if (values == NULL)
        return NULL;
    int err = values_set(values, off, (long long)(value & 0xFFFFFFFFull))
              || tc_rearm(r, values, -1);
    Py_DECREF(values);
    if (err)
        return NULL;
    Py_RETURN_NONE;
}

/* A CPU write of TASKS_CAPTURE[n] (a W_CALL op): fn(offset, value):
 * NrfPeripheral.write's task branch and Timer.task_CAPTURE */
static PyObject *TimerCore_capture(TimerCore *r, PyObject *const *args, Py_ssize_t nargs) {
    long off;
    unsigned long long value;
    if (call_args(args, nargs, "capture", &off, &value))
        return NULL;
    int n = (int)((off - 0x040) >> 2);
    if (off < 0x040 || (off & 3) || n >= r->num_cc) {
        PyErr_Format(PyExc_ValueError, "+0x%lx is not a CAPTURE task", off);
        return NULL;
    }
    if (!(value & 1))
        Py_RETURN_NONE;
    PyObject *pw = PyObject_GetAttr(r->model, str_power_watch);
    if (pw == NULL)
        return NULL;
    int watched = pw != Py_None;
    Py_DECREF(pw);
    if (watched)                              /* the energy model sees the task */
        return PyObject_CallMethodObjArgs(r->model, str_write_m, args[0], args[1], NULL);
    PyObject *values = model_values(r->model);
    if (values == NULL)
        return NULL;
    TcCfg cfg;
    long long now, k, cur;
    int err = tc_cfg(r, values, &cfg) || clock_get_now(r->clock, &now);
    if (!err) {
        tc_count_at(r, &cfg, now, &k, &cur);
        err = values_set(values, 0x540 + 4 * n, cur);
    }
    Py_DECREF(values);
    if (err)
        return NULL;
    r->captures++;
    Py_RETURN_NONE;
}

static int TimerCore_init(TimerCore *r, PyObject *args, PyObject *kwds) {
    PyObject *model, *ev, *clock, *cells, *ci, *ppi_fn;
    int num_cc;
    long long hf16, max_mask;
    if (!PyArg_ParseTuple(args, "OOOO!iOLLO", &model, &ev, &clock, &CellsType, &cells, &num_cc,
                          &ci, &hf16, &max_mask, &ppi_fn))
        return -1;
    if (attr_ll(model, str_base_attr, &r->base))
        return -1;
    if (!PyTuple_Check(ci) || PyTuple_GET_SIZE(ci) != 3 || num_cc < 1 || num_cc > 8
        || hf16 <= 0 || max_mask <= 0 || max_mask > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "TimerCore(model, event, clock, cells, num_cc, "
                        "(running, base_time, base_value cells), ticks per 16 MHz cycle, "
                        "widest mask, Ppi._on_event or None)");
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        long v = PyLong_AsLong(PyTuple_GET_ITEM(ci, i));
        if (v < 0 || v >= NCELLS) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "cell index out of range");
            return -1;
        }
        r->ci[i] = (int)v;
    }
    Py_INCREF(model); Py_XSETREF(r->model, model);
    Py_INCREF(ev); Py_XSETREF(r->ev, ev);
    Py_INCREF(clock); Py_XSETREF(r->clock, clock);
    Py_INCREF(cells); Py_XSETREF(r->cells, (Cells *)cells);
    Py_INCREF(ppi_fn); Py_XSETREF(r->ppi_fn, ppi_fn);
    r->num_cc = num_cc;
    r->hf16 = hf16;
    r->max_mask = max_mask;
    return 0;
}

static int TimerCore_traverse(TimerCore *r, visitproc visit, void *arg) {
    Py_VISIT(r->ppi_fn);
    Py_VISIT(r->model);
    Py_VISIT(r->ev);
    Py_VISIT(r->clock);
    Py_VISIT(r->cells);
    return 0;
}

static int TimerCore_clear(TimerCore *r) {
    Py_CLEAR(r->ppi_fn);
    Py_CLEAR(r->model);
    Py_CLEAR(r->ev);
    Py_CLEAR(r->clock);
    Py_CLEAR(r->cells);
    return 0;
}

static void TimerCore_dealloc(TimerCore *r) {
    PyObject_GC_UnTrack(r);
    TimerCore_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMethodDef TimerCore_methods[] = {
    {"fire", (PyCFunction)TimerCore_fire, METH_NOARGS,
     "fire(): the TIMER's clock event (Timer._on_compare), calling the model's fire() "
     "when a shortcut, a listener or a watcher is involved"},
    {"rearm", (PyCFunction)(void (*)(void))TimerCore_rearm, METH_FASTCALL,
     "rearm([at]): Timer._rearm(at)"},
    {"write_cc", (PyCFunction)(void (*)(void))TimerCore_write_cc, METH_FASTCALL,
     "write_cc(offset, value): a CPU write of CC[n]"},
    {"capture", (PyCFunction)(void (*)(void))TimerCore_capture, METH_FASTCALL,
     "capture(offset, value): a CPU write of TASKS_CAPTURE[n]"},
    {NULL}
};

static PyMemberDef TimerCore_members[] = {
    {"fired", T_ULONGLONG, offsetof(TimerCore, fired), 0, "compare events carried out in C"},
    {"handed", T_ULONGLONG, offsetof(TimerCore, handed), 0,
     "compare events handed to the model (a shortcut, PPI, a watcher)"},
    {"captures", T_ULONGLONG, offsetof(TimerCore, captures), 0, "CAPTURE tasks done in C"},
    {NULL}
};

static PyTypeObject TimerCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.TimerCore",
    .tp_doc = "The TIMER's clock event, CC writes and CAPTURE tasks in C (see _mmio.c).",
    .tp_basicsize = sizeof(TimerCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)TimerCore_init,
    .tp_dealloc = (destructor)TimerCore_dealloc,
    .tp_traverse = (traverseproc)TimerCore_traverse,
    .tp_clear = (inquiry)TimerCore_clear,
    .tp_methods = TimerCore_methods,
    .tp_members = TimerCore_members,
};

/* ======================================================================
 * WdtCore: the watchdog's reload (RR[n] written with 0x6E524635) without
 * Python, in the case Wdt.write does in its own few lines: RR[0] with only
 * RR[0] enabled in RREN, the watchdog running and not paused, its timeout
 * event armed: ``reloaded`` = 0 and ``deadline`` moved to now + (max(CRV,
 * 15) + 1) LFCLK periods (the event moves itself there when it comes).
 * wasp-os feeds the dog at every 1 kHz tick (970 writes an emulated
 * second).  Any other write goes to the model's write.
 * ====================================================================== */
typedef struct {
    PyObject_HEAD
    PyObject *model;     /* the Wdt */
    PyObject *ev;        /* its timeout Event */
    PyObject *clock;
    long long lfclk;
    unsigned long long fed;
} WdtCore;

static PyObject *str_running, *str_paused_left, *str_reloaded, *str_deadline;

static PyObject *WdtCore_write_rr(WdtCore *r, PyObject *const *args, Py_ssize_t nargs) {
    long off;
    unsigned long long value;
    if (call_args(args, nargs, "write_rr", &off, &value))
        return NULL;
    if (off == 0x600 && (value & 0xFFFFFFFFull) == 0x6E524635ull) {
        int fast = 0;
        long long rren = 0, crv = 0, now = 0;
        PyObject *running = PyObject_GetAttr(r->model, str_running);
        if (running == NULL)
            return NULL;
        int run = PyObject_IsTrue(running);
        Py_DECREF(running);
        if (run < 0)
            return NULL;
        if (run) {
            PyObject *values = model_values(r->model);
            if (values == NULL)
                return NULL;
            int err = values_ll(values, 0x508, &rren) || values_ll(values, 0x504, &crv);
            Py_DECREF(values);
            if (err)
                return NULL;
            PyObject *paused = PyObject_GetAttr(r->model, str_paused_left);
            PyObject *when = PyObject_GetAttr(r->ev, str_when);
            if (paused == NULL || when == NULL) {
                Py_XDECREF(paused);
                Py_XDECREF(when);
                return NULL;
            }
            fast = (rren & 0xFF) == 1 && paused == Py_None && when != Py_None;
            Py_DECREF(paused);
            Py_DECREF(when);
        }
        if (fast) {
            if (clock_get_now(r->clock, &now))
                return NULL;
            if (crv < 0xF)
                crv = 0xF;
            if (set_ll(r->model, str_reloaded, 0)
                || set_ll(r->model, str_deadline, now + (crv + 1) * r->lfclk))
                return NULL;
            r->fed++;
            Py_RETURN_NONE;
        }
    }
    return PyObject_CallMethodObjArgs(r->model, str_write_m, args[0], args[1], NULL);
}

static int WdtCore_init(WdtCore *r, PyObject *args, PyObject *kwds) {
    PyObject *model, *ev, *clock;
    long long lfclk;
    if (!PyArg_ParseTuple(args, "OOOL", &model, &ev, &clock, &lfclk))
        return -1;
    if (lfclk <= 0) {
        PyErr_SetString(PyExc_ValueError, "WdtCore(model, timeout event, clock, lfclk)");
        return -1;
    }
    Py_INCREF(model); Py_XSETREF(r->model, model);
    Py_INCREF(ev); Py_XSETREF(r->ev, ev);
    Py_INCREF(clock); Py_XSETREF(r->clock, clock);
    r->lfclk = lfclk;
    return 0;
}

static int WdtCore_traverse(WdtCore *r, visitproc visit, void *arg) {
    Py_VISIT(r->model);
    Py_VISIT(r->ev);
    Py_VISIT(r->clock);
    return 0;
}

static int WdtCore_clear(WdtCore *r) {
    Py_CLEAR(r->model);
    Py_CLEAR(r->ev);
    Py_CLEAR(r->clock);
    return 0;
}

static void WdtCore_dealloc(WdtCore *r) {
    PyObject_GC_UnTrack(r);
    WdtCore_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *s_cpu_sleeping, *s_debug_halted, *s_update_pause;

/* Wdt._cpu_sleep: the CPU's on_sleep listener (InfiniTime idle: ~1 400
 * changes an emulated second).  cpu_sleeping set, then _update_pause's
 * decision made here: the model's _update_pause only when the count must
 * pause or resume (CONFIG.SLEEP clear, or a debug halt), else nothing. */
static PyObject *WdtCore_cpu_sleep(WdtCore *r, PyObject *arg) {
    int asleep = PyObject_IsTrue(arg);
    if (asleep < 0 || PyObject_SetAttr(r->model, s_cpu_sleeping, asleep ? Py_True : Py_False))
        return NULL;
    PyObject *values = model_values(r->model);
    if (values == NULL)
        return NULL;
    long long config;
    int err = values_ll(values, 0x50C, &config);
    Py_DECREF(values);
    if (err)
        return NULL;
    int running = truthy_attr(r->model, str_running),
        halted = truthy_attr(r->model, s_debug_halted);
    if (running < 0 || halted < 0)
        return NULL;
    int pause = running && ((asleep && !(config & 1)) || (halted && !(config & 8)));
    PyObject *left = PyObject_GetAttr(r->model, str_paused_left),
             *deadline = left ? PyObject_GetAttr(r->model, str_deadline) : NULL;
    if (deadline == NULL) {
        Py_XDECREF(left);
        return NULL;
    }
    int act = pause ? (left == Py_None && deadline != Py_None) : left != Py_None;
    Py_DECREF(left);
    Py_DECREF(deadline);
    if (act)
        return PyObject_CallMethodNoArgs(r->model, s_update_pause);
    Py_RETURN_NONE;
}

static PyMethodDef WdtCore_methods[] = {
    {"write_rr", (PyCFunction)(void (*)(void))WdtCore_write_rr, METH_FASTCALL,
     "write_rr(offset, value): a CPU write of RR[n] (the reload in C, else the model's write)"},
    {"cpu_sleep", (PyCFunction)WdtCore_cpu_sleep, METH_O,
     "cpu_sleep(asleep): Wdt._cpu_sleep (the model's _update_pause only when it acts)"},
    {NULL}
};

static PyMemberDef WdtCore_members[] = {
    {"fed", T_ULONGLONG, offsetof(WdtCore, fed), 0, "reloads carried out in C"},
    {NULL}
};

static PyTypeObject WdtCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.WdtCore",
    .tp_doc = "The watchdog's reload in C (see _mmio.c).",
    .tp_basicsize = sizeof(WdtCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)WdtCore_init,
    .tp_dealloc = (destructor)WdtCore_dealloc,
    .tp_traverse = (traverseproc)WdtCore_traverse,
    .tp_clear = (inquiry)WdtCore_clear,
    .tp_methods = WdtCore_methods,
    .tp_members = WdtCore_members,
};

static PyObject *mmio_map(PyObject *module, PyObject *args) {
    unsigned long long fnaddr, uch, base, size;
    PyObject *slot;
    if (!PyArg_ParseTuple(args, "KKKKO!", &fnaddr, &uch, &base, &size, &SlotType, &slot))
        return NULL;
    uc_mmio_map_fn map = (uc_mmio_map_fn)(uintptr_t)fnaddr;
    int err = map((void *)(uintptr_t)uch, base, (size_t)size, slot_read, slot, slot_write, slot);
    return PyLong_FromLong(err);
}

static PyObject *mmio_replay_address(PyObject *module, PyObject *noargs) {
    return PyLong_FromVoidPtr((void *)&slot_replay);
}

static PyMethodDef methods[] = {
    {"replay_address", mmio_replay_address, METH_NOARGS,
     "replay_address() -> the address of slot_replay (for the block hook's loop skip)"},

    {"map", mmio_map, METH_VARARGS,
     "map(uc_mmio_map_address, uc_handle, base, size, slot) -> uc_err: register the "
     "native callbacks for one slot (keep the Slot alive as long as the engine)."},
    {NULL, NULL, 0, NULL}
};

/* ======================================================================
 * The run loop in C (ExcHook.run): CortexM.run's ``while True`` with the
 * same steps in the same order, for the machines that have ExcHook (the
 * native helpers).  Each step is the Python's own, carried out here where
 * it is arithmetic or the C above (Clock.run_due and next_event_time over
 * the clock's heap, _take_pending's entry (exc_enter_here), _idle_to_next_event,
 * _start_slice and _rebase, the engine's slice (uc_emu_start as the
 * binding calls it, the GIL released), sync_time, and _after_slice's
 * common ends: an exception return already done, a WFI, a block to cost),
 * and a call of the CortexM's Python method for everything else (a fault
 * handler's hang check, the wake condition, System OFF, every other trap,
 * an engine error).  CortexM.run calls it only while none of the methods it
 * stands for is replaced (CortexM._native_loop_ok); with it off, or without
 * the native helpers, the Python loop runs: the reference, compared cycle
 * for cycle in tests/test_native_loop.py.
 * ====================================================================== */
static PyObject *heappop_fn;
static PyObject *s_fast_pends, *s_num_irq;
static PyObject *s_idle_to_next, *s_take_pending, *s_check_fault_hang,
                *s_sleep_kind, *s_event_register, *s_fault_since, *s_fault_hang_ticks,
                *s_mpu_dirty, *s_sync, *s_slice_end, *s_div_armed, *s_cost_block,
                *s_after_slice, *s_loop_watch, *s_firing, *s_fn, *s_cycle_ticks, *s_wfe,
                *s_wfi, *s_returned;
#define LOOP_NEVER (1LL << 62)

/* The heap's live top: stale entries (an event moved or cancelled since)
 * popped off it as Clock.run_due and _clean pop them.  1 with the top's
 * tick, its tick object and its event (borrowed), 0 when the heap is
 * empty, -1 on a Python error. */
static int lc_top(PyObject *heap, long long *when, PyObject **wobj, PyObject **ev) {
    while (PyList_GET_SIZE(heap)) {
        PyObject *item = PyList_GET_ITEM(heap, 0);
        *ev = PyTuple_GET_ITEM(item, 2);
        *wobj = PyTuple_GET_ITEM(item, 0);
        *when = PyLong_AsLongLong(*wobj);
        long long seq = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 1));
        PyObject *ew = PyObject_GetAttr(*ev, str_when);
        if (ew == NULL)
            return -1;
        long long es, w = ew == Py_None ? -1 : PyLong_AsLongLong(ew);
        Py_DECREF(ew);
        if (attr_ll(*ev, str_seq, &es))
            return -1;
        if (es == seq && w == *when)
            return 1;
        PyObject *x = PyObject_CallOneArg(heappop_fn, heap);
        if (x == NULL)
            return -1;
        Py_DECREF(x);
    }
    return 0;
}

/* Clock._clean: the stale top popped, next_deadline set; -1 on an error */
static int lc_clean(ExcHook *h, PyObject *heap) {
    long long when;
    PyObject *wobj, *ev;
    int r = lc_top(heap, &when, &wobj, &ev);
    if (r < 0)
        return -1;
    return r ? cs_obj(h, str_next_deadline, wobj) : cs_ll(h, str_next_deadline, LOOP_NEVER);
}

/* Clock.next_event_time */
static int lc_next(ExcHook *h, long long *out) {
    if (is_clock(h->clock)) {
        clk_clean((ClockObject *)h->clock);
        *out = ((ClockObject *)h->clock)->next_deadline;
        return 0;
    }
    PyObject *heap = cg(h, str_heap);
    if (heap == NULL)
        return -1;
    int r = PyList_Check(heap) ? lc_clean(h, heap) : -1;
    if (r < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "the clock's heap is not a list");
    Py_DECREF(heap);
    if (r)
        return r;
    return cg_ll(h, str_next_deadline, out);
}

/* Clock.run_due: -1 on a Python error (an event's own, raised on) */
static int lc_run_due(ExcHook *h) {
    if (is_clock(h->clock))
        return clk_run_due((ClockObject *)h->clock) < 0 ? -1 : 0;
    PyObject *heap = cg(h, str_heap);
    if (heap == NULL)
        return -1;
    int rc = -1;
    if (!PyList_Check(heap)) {
        PyErr_SetString(PyExc_TypeError, "the clock's heap is not a list");
        goto out;
    }
    for (;;) {
        long long when, now;
        PyObject *wobj, *ev;
        int r = lc_top(heap, &when, &wobj, &ev);
        if (r < 0)
            goto out;
        if (r == 0)
            break;
        if (clock_get_now(h->clock, &now))
            goto out;
        if (when > now)
            break;
        Py_INCREF(wobj);
        Py_INCREF(ev);
        PyObject *x = PyObject_CallOneArg(heappop_fn, heap);
        int bad = x == NULL || PyObject_SetAttr(ev, str_when, Py_None)
                  || cs_obj(h, s_firing, wobj);
        Py_XDECREF(x);
        Py_DECREF(wobj);
        if (bad) {
            Py_DECREF(ev);
            goto out;
        }
        PyObject *fn = PyObject_GetAttr(ev, s_fn);
        Py_DECREF(ev);
        PyObject *res = fn ? PyObject_CallNoArgs(fn) : NULL;
        Py_XDECREF(fn);
        /* finally: firing = None (an error of the event's kept) */
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        int e2 = cs_obj(h, s_firing, Py_None);
        if (t != NULL)
            PyErr_Restore(t, v, tb);
        if (res == NULL || e2)
            goto out;
        Py_DECREF(res);
    }
    /* next_deadline from the top, then _clean (as Clock.run_due ends) */
    if (lc_clean(h, heap))
        goto out;
    rc = 0;
out:
    Py_DECREF(heap);
    return rc;
}

/* CortexM.sync_time */
static int lc_sync(ExcHook *h, long long ct) {
    long long bt, bc, now;
    if (attr_ll(h->cpu, str_base_ticks, &bt) || attr_ll(h->cpu, str_base_cycles, &bc)
        || clock_get_now(h->clock, &now))
        return -1;
    long long t = bt + ((long long)*h->cs_cycles - bc) * ct;
    if (t > now)
        return clock_set_now(h->clock, t);
    return 0;
}

/* CortexM._start_slice with _rebase */
static int lc_start_slice(ExcHook *h, long long nxt, uint32_t pc, long long ct) {
    long long now;
    if (clock_get_now(h->clock, &now))
        return -1;
    long long span = nxt - now;
    long long budget = span > 0 ? (span + ct - 1) / ct : 0;   /* -(-(span) // ct) */
    if (span <= 0)
        budget = -((-span) / ct);
    if (budget < 1)
        budget = 1;
    budget += h->skew;          /* 0 but in the companion test */
    if (budget < 1)
        budget = 1;
    uint64_t cycles = *h->cs_cycles;
    if (hs_ll(h, str_base_ticks, now) || hs_u64(h, str_base_cycles, cycles))
        return -1;
    *h->cs_base_ticks = now;
    *h->cs_base_cycles = cycles;
    *h->cs_synced = cycles;
    int lw = hg_truthy(h, s_loop_watch);
    if (lw < 0)
        return -1;
    if (lw)
        *h->cs_lp_have = 0;
    *h->cs_deadline = cycles + (uint64_t)budget;
    *h->cs_stop_flag = 0;
    *h->cs_entry_flag = 0;
    *h->cs_reason = 0;
    if (hs_ll(h, str_slice_pc, pc) || hs_u64(h, str_slice_blocks, *h->blocks))
        return -1;
    return 0;
}

/* _after_slice: the common ends here, the rest by the Python (err: a UcError or NULL) */
static int lc_set_sleeping(ExcHook *h, int asleep);

static int lc_after_slice(ExcHook *h, PyObject *err) {
    PyObject *cpu = h->cpu;
    PyObject *halt = hg(h, str_halt_in_hook);
    if (halt == NULL)
        return -1;
    int odd = halt != Py_None || err != NULL;
    Py_DECREF(halt);
    long long ccr;
    if (!odd) {
        if (hg_ll(h, str_ccr, &ccr))
            return -1;
        if (ccr & 0x10) {
            int armed = hg_truthy(h, s_div_armed);
            if (armed < 0)
                return -1;
            odd = !armed;
        }
    }
    PyObject *trap = NULL;
    if (!odd) {
        trap = hg(h, str_trap);
        if (trap == NULL)
            return -1;
        if (trap == Py_None && *h->cs_reason == 3) {      /* REASON_MISS: cost the block */
            Py_DECREF(trap);
            PyObject *x = PyObject_CallMethod(cpu, "_cost_block", "kk",
                                              (unsigned long)*h->cs_miss_addr,
                                              (unsigned long)*h->cs_miss_size);
            Py_XDECREF(x);
            return x ? 0 : -1;
        }
        if (trap != Py_None) {
            int ret = PyTuple_Check(trap) && PyTuple_GET_SIZE(trap) == 1
                      && PyUnicode_Check(PyTuple_GET_ITEM(trap, 0))
                      && PyUnicode_Compare(PyTuple_GET_ITEM(trap, 0), s_returned) == 0;
            int wfe = !ret && PyTuple_Check(trap) && PyTuple_GET_SIZE(trap) == 2
                      && PyUnicode_Check(PyTuple_GET_ITEM(trap, 0))
                      && PyUnicode_Compare(PyTuple_GET_ITEM(trap, 0), s_wfe) == 0;
            Py_DECREF(trap);
            if (ret)
                return hs(h, str_trap, Py_None);
            if (wfe) {                       /* _after_slice's "wfe": asleep, or not */
                if (hs(h, str_trap, Py_None))
                    return -1;
                int ev = hg_truthy(h, s_event_register);
                if (ev < 0)
                    return -1;
                if (ev)
                    return hs_ll(h, s_event_register, 0);
                if (lc_set_sleeping(h, 1))
                    return -1;
                return hs(h, s_sleep_kind, s_wfe);
            }
            odd = 1;
        } else {
            Py_DECREF(trap);
        }
    }
    if (odd) {
        PyObject *x = PyObject_CallMethodOneArg(cpu, s_after_slice, err ? err : Py_None);
        Py_XDECREF(x);
        return x ? 0 : -1;
    }
    if (*h->cs_reason != 0)
        return 0;
    /* Unicorn returned by itself: a WFI when the halfword before PC is one */
    int e = 0;
    uint32_t pc = hreg(h, h->id_pc, &e);
    if (e) {
        regs_err(h->regs, e);
        return -1;
    }
    unsigned char b[2];
    if (h->regs->mem_rd(h->uch, (uint64_t)((pc - 2) & 0xFFFFFFFFu), b, 2) == 0
        && (b[0] | (b[1] << 8)) == 0xBF30) {
        if (hs(h, str_sleeping_prop, Py_True)
            || hs(h, s_sleep_kind, s_wfi))
            return -1;
    }
    return 0;
}

/* CortexM.sleeping's setter (the C loop runs only while it is the class's):
 * ``_sleeping`` set, every on_sleep listener told of a change; 0 or -1 */
static int lc_set_sleeping(ExcHook *h, int asleep) {
    int cur = hg_truthy(h, str_sleeping_attr);
    if (cur < 0)
        return -1;
    if (cur == asleep)
        return 0;
    PyObject *v = asleep ? Py_True : Py_False;
    if (hs(h, str_sleeping_attr, v))
        return -1;
    PyObject *ls = hg(h, s_on_sleep);
    if (ls == NULL)
        return -1;
    PyObject *seq = PySequence_Fast(ls, "on_sleep");
    Py_DECREF(ls);
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *x = PyObject_CallOneArg(PySequence_Fast_GET_ITEM(seq, i), v);
        if (x == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        Py_DECREF(x);
    }
    Py_DECREF(seq);
    return 0;
}

/* CortexM._wake_condition: WFE (``wfe``) wakes when a pending exception
 * would be taken (PRIMASK, BASEPRI, FAULTMASK included), WFI when one would
 * preempt the active ones and BASEPRI; 1, 0, or -1 error */
static int lc_wake_condition(ExcHook *h, int wfe) {
    Nvic n;
    PyObject *prio_ref = NULL;
    if (nvic_load(h, &n, &prio_ref)) {
        Py_XDECREF(prio_ref);
        return -1;
    }
    long long g;
    int e, err = 0, wake = 0;
    if (nv_best(h, &n, n.pending, &g, &e)) {
        long long p;
        if (wfe) {
            p = nv_exec_prio(h, &n, n.active, 1, &err);
        } else {
            p = nv_active_prio(h, &n, n.active);
            if (h->m4) {
                uint32_t bp = hreg(h, h->id_basepri, &err) & h->prio_mask;
                if (bp && nv_group(h, &n, bp) < p)
                    p = nv_group(h, &n, bp);
            }
        }
        wake = g < p;
    }
    Py_DECREF(prio_ref);
    if (err)
        return regs_err(h->regs, err);
    return PyErr_Occurred() ? -1 : wake;
}

static PyObject *lc_reason(ExcHook *h, int i) {
    Py_INCREF(h->reasons[i]);
    return h->reasons[i];
}

/* CortexM._idle_to_next_event: 1 with *stop set (a new reference), 0 go on, -1 error */
static int lc_idle(ExcHook *h, long long until, int forever, PyObject **stop) {
    long long nxt, now;
    if (lc_next(h, &nxt) || clock_get_now(h->clock, &now))
        return -1;
    if (nxt >= until) {
        if (until >= LOOP_NEVER) {
            *stop = lc_reason(h, forever);
            return 1;
        }
        if (clock_set_now(h->clock, now > until ? now : until))
            return -1;
        *stop = lc_reason(h, 0);
        return 1;
    }
    if (clock_set_now(h->clock, now > nxt ? now : nxt))
        return -1;
    return 0;
}

static PyObject *ExcHook_run(ExcHook *h, PyObject *args) {
    long long until;
    PyObject *should_stop, *flags = NULL;
    if (!PyArg_ParseTuple(args, "LO|O!", &until, &should_stop, &PyTuple_Type, &flags))
        return NULL;
    Py_ssize_t nflags = flags != NULL ? PyTuple_GET_SIZE(flags) : 0;
    for (Py_ssize_t i = 0; i < nflags; i++) {
        PyObject *f = PyTuple_GET_ITEM(flags, i);
        if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 2
            || !PyUnicode_Check(PyTuple_GET_ITEM(f, 1))) {
            PyErr_SetString(PyExc_TypeError, "flags: (object, attribute name) pairs");
            return NULL;
        }
    }
    if (!h->loop_ready || h->cpu == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ExcHook.run before loop_setup");
        return NULL;
    }
    PyObject *cpu = h->cpu, *stop = NULL;
    long long ct;
    if (hg_ll(h, s_cycle_ticks, &ct))
        return NULL;
    if (ct <= 0) {
        PyErr_SetString(PyExc_ValueError, "cycle_ticks must be positive");
        return NULL;
    }
    for (;;) {
        if (PyErr_CheckSignals())                    /* Ctrl-C, as between Python's steps */
            return NULL;
        if (lc_run_due(h))
            return NULL;
        for (Py_ssize_t i = 0; i < nflags; i++) {    /* a reset or a halt asked for */
            PyObject *f = PyTuple_GET_ITEM(flags, i);
            int t = truthy_attr(PyTuple_GET_ITEM(f, 0), PyTuple_GET_ITEM(f, 1));
            if (t < 0)
                return NULL;
            if (t)
                return lc_reason(h, 1);
        }
        if (should_stop != Py_None) {
            PyObject *r = PyObject_CallNoArgs(should_stop);
            if (r == NULL)
                return NULL;
            int t = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (t < 0)
                return NULL;
            if (t)
                return lc_reason(h, 1);
        }
        PyObject *sr = hg(h, str_stop_reason);
        if (sr == NULL)
            return NULL;
        int t = PyObject_IsTrue(sr);
        if (t) {
            if (t < 0) {
                Py_DECREF(sr);
                return NULL;
            }
            return sr;
        }
        Py_DECREF(sr);
        if ((t = hg_truthy(h, str_powered_off)) < 0)
            return NULL;
        if (t) {
            PyObject *r = PyObject_CallMethod(cpu, "_idle_to_next_event", "LO", until,
                                              h->reasons[3]);
            if (r == NULL)
                return NULL;
            if (PyObject_IsTrue(r))
                return r;
            Py_DECREF(r);
            continue;
        }
        long r = exc_enter_here(h, -1, 0);                /* _take_pending */
        if (r == -1)
            return NULL;
        if (r == -2) {
            PyObject *x = PyObject_CallMethodNoArgs(cpu, s_take_pending);
            if (x == NULL)
                return NULL;
            Py_DECREF(x);
        }
        long long ipsr;
        if (hg_ll(h, str_ipsr_attr, &ipsr))
            return NULL;
        if (3 <= ipsr && ipsr <= 6) {
            PyObject *x = PyObject_CallMethodNoArgs(cpu, s_check_fault_hang);
            if (x == NULL)
                return NULL;
            Py_DECREF(x);
        }
        if ((t = hg_truthy(h, str_sleeping_attr)) < 0)
            return NULL;
        if (t) {
            int wake = 0, wfe = 0;
            PyObject *sk = hg(h, s_sleep_kind);
            if (sk == NULL)
                return NULL;
            wfe = PyUnicode_Check(sk) && PyUnicode_Compare(sk, s_wfe) == 0;
            Py_DECREF(sk);
            wake = lc_wake_condition(h, wfe);             /* _wake_condition */
            if (wake < 0)
                return NULL;
            if (!wake && wfe && (t = hg_truthy(h, s_event_register)) != 0) {
                if (t < 0)
                    return NULL;
                wake = 1;
            }
            if (wake) {
                if (wfe && hs_ll(h, s_event_register, 0))
                    return NULL;
                if (lc_set_sleeping(h, 0))
                    return NULL;
                continue;
            }
            int s = lc_idle(h, until, 2, &stop);
            if (s < 0)
                return NULL;
            if (s)
                return stop;
            continue;
        }
        long long now, nxt;
        if (clock_get_now(h->clock, &now))
            return NULL;
        if (now >= until)
            return lc_reason(h, 0);
        if (lc_next(h, &nxt))
            return NULL;
        if (nxt > until)
            nxt = until;
        if (3 <= ipsr && ipsr <= 6) {
            PyObject *since = hg(h, s_fault_since);
            if (since == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                    return NULL;
                PyErr_Clear();
            } else {
                int st = PyObject_IsTrue(since);
                long long at = 0, fh = 0;
                if (st > 0) {
                    PyObject *a = PySequence_GetItem(since, 1);
                    if (a == NULL) {
                        Py_DECREF(since);
                        return NULL;
                    }
                    at = PyLong_AsLongLong(a);
                    Py_DECREF(a);
                    if (hg_ll(h, s_fault_hang_ticks, &fh)) {
                        Py_DECREF(since);
                        return NULL;
                    }
                    if (at + fh < nxt)
                        nxt = at + fh;
                }
                Py_DECREF(since);
                if (st < 0 || PyErr_Occurred())
                    return NULL;
            }
        }
        if (hs(h, str_trap, Py_None))
            return NULL;
        if ((t = hg_truthy(h, s_mpu_dirty)) < 0)
            return NULL;
        if (t) {
            PyObject *mpu = hg(h, str_mpu);
            PyObject *x = mpu ? PyObject_CallMethodNoArgs(mpu, s_sync) : NULL;
            Py_XDECREF(mpu);
            if (x == NULL)
                return NULL;
            Py_DECREF(x);
        }
        int e = 0;
        uint32_t pc = hreg(h, h->id_pc, &e);
        if (e)
            return regs_err(h->regs, e), NULL;
        if (lc_start_slice(h, nxt, pc, ct))
            return NULL;
        *h->cs_in_slice = 1;
        if (PyObject_SetAttr(h->uc, str_hook_exception, Py_None))
            return NULL;
        int st;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        Py_BEGIN_ALLOW_THREADS
        st = h->emu_start(h->uch, (uint64_t)(pc | 1u), 0xFFFFFFFFull, 0, 0);
        Py_END_ALLOW_THREADS
        clock_gettime(CLOCK_MONOTONIC, &t1);
        h->inside_ns += (unsigned long long)((t1.tv_sec - t0.tv_sec) * 1000000000LL
                                             + (t1.tv_nsec - t0.tv_nsec));
        h->slices++;
        *h->cs_in_slice = 0;
        PyObject *x = PyObject_CallMethodNoArgs(cpu, s_slice_end);   /* finally: */
        if (x == NULL)
            return NULL;
        Py_DECREF(x);
        PyObject *err = NULL;
        if (st != 0) {
            err = PyObject_CallFunction(h->uc_error, "i", st);
            if (err == NULL)
                return NULL;
        } else {
            PyObject *he = PyObject_GetAttr(h->uc, str_hook_exception);
            if (he == NULL)
                return NULL;
            if (he != Py_None) {                          /* raised out of emu_start */
                PyErr_SetObject((PyObject *)Py_TYPE(he), he);
                Py_DECREF(he);
                return NULL;
            }
            Py_DECREF(he);
        }
        if (lc_sync(h, ct) || lc_after_slice(h, err)) {
            Py_XDECREF(err);
            return NULL;
        }
        Py_XDECREF(err);
    }
}

/* loop_setup(uc_emu_start, clock, UcError, (DEADLINE, BREAK, SLEEP, OFF),
 *            (cycles, deadline, base_cycles, synced_cycles, base_ticks, stop_flag,
 *             entry_flag, reason, miss_addr, miss_size, in_slice, lp_have addresses)) */
static PyObject *ExcHook_loop_setup(ExcHook *h, PyObject *args) {
    unsigned long long start;
    PyObject *clock, *uc_error, *reasons, *addrs;
    if (!PyArg_ParseTuple(args, "KOOO!O!", &start, &clock, &uc_error, &PyTuple_Type, &reasons,
                          &PyTuple_Type, &addrs))
        return NULL;
    unsigned long long a[12];
    if (PyTuple_GET_SIZE(reasons) != 4
        || !PyArg_ParseTuple(addrs, "KKKKKKKKKKKK", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5],
                             &a[6], &a[7], &a[8], &a[9], &a[10], &a[11])) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "four stop reasons");
        return NULL;
    }
    if (h->cpu == NULL) {
        PyErr_SetString(PyExc_ValueError, "loop_setup after install");
        return NULL;
    }
    PyObject *cd = PyObject_GenericGetDict(clock, NULL);
    PyObject *pd = PyObject_GenericGetDict(h->cpu, NULL);
    if (cd == NULL || pd == NULL) {
        Py_XDECREF(cd);
        Py_XDECREF(pd);
        return NULL;
    }
    Py_XSETREF(h->clock_dict, cd);
    Py_XSETREF(h->cpu_dict, pd);
    Py_INCREF(clock); Py_XSETREF(h->clock, clock);
    Py_INCREF(uc_error); Py_XSETREF(h->uc_error, uc_error);
    for (int i = 0; i < 4; i++) {
        PyObject *r = PyTuple_GET_ITEM(reasons, i);
        Py_INCREF(r);
        Py_XSETREF(h->reasons[i], r);
    }
    h->emu_start = (void *)(uintptr_t)start;
    h->cs_cycles = (volatile uint64_t *)(uintptr_t)a[0];
    h->cs_deadline = (volatile uint64_t *)(uintptr_t)a[1];
    h->cs_base_cycles = (volatile uint64_t *)(uintptr_t)a[2];
    h->cs_synced = (volatile uint64_t *)(uintptr_t)a[3];
    h->cs_base_ticks = (volatile int64_t *)(uintptr_t)a[4];
    h->cs_stop_flag = (volatile uint32_t *)(uintptr_t)a[5];
    h->cs_entry_flag = (volatile uint32_t *)(uintptr_t)a[6];
    h->cs_reason = (volatile uint32_t *)(uintptr_t)a[7];
    h->cs_miss_addr = (volatile uint32_t *)(uintptr_t)a[8];
    h->cs_miss_size = (volatile uint32_t *)(uintptr_t)a[9];
    h->cs_in_slice = (volatile uint32_t *)(uintptr_t)a[10];
    h->cs_lp_have = (volatile uint32_t *)(uintptr_t)a[11];
    h->loop_ready = 1;
    Py_RETURN_NONE;
}

/* ======================================================================
 * Pends from the NVIC's ISPR words and ICSR's PENDSVSET/PENDSTSET in C
 * (ExcHook.pend_write, the SCS page's W_CALL op for those registers):
 * CortexM.set_pending and _pending_changed step for step (the pending bit
 * set; the event register set when asleep or SEVONPEND; inside a slice an
 * entry asked of the block hook, or the mask watch armed, or the slice
 * ended).  Any other ICSR bit, and every other register, goes to
 * SystemControlSpace.write_word (``fallback``).  micro:bit MicroPython pends
 * its SWI through ISPR ~170 times an emulated second; FreeRTOS and Zephyr
 * pend PendSV through ICSR at every yield.
 * ====================================================================== */

/* CortexM._pending_changed */
static int pend_changed(ExcHook *h) {
    int t = hg_truthy(h, str_sleeping_attr);
    long long scr, ipsr;
    if (t < 0 || hg_ll(h, str_scr, &scr))
        return -1;
    if ((t || (scr & 0x10)) && hs_ll(h, s_event_register, 1))
        return -1;
    if (*h->cs_in_slice) {
        int fp = hg_truthy(h, s_fast_pends), w = hg_truthy(h, str_watched);
        if (fp < 0 || w < 0 || hg_ll(h, str_ipsr_attr, &ipsr))
            return -1;
        if (fp && !w && !(3 <= ipsr && ipsr <= 6)) {
            Nvic n;
            PyObject *prio = NULL;
            if (nvic_load(h, &n, &prio))
                return -1;
            int r = nv_pending_to_enter(h, &n);
            Py_XDECREF(prio);
            if (r < 0)
                return -1;
            if (r == 0)
                return 0;
            int fe = hg_truthy(h, str_fast_entries);
            if (fe < 0)
                return -1;
            if (fe) {
                *h->cs_entry_flag = 1;
                return 0;
            }
        }
    }
    *h->cs_stop_flag = 1;
    return 0;
}

/* CortexM.set_pending */
static int pend_one(ExcHook *h, int exc) {
    uint64_t pending;
    if (hg_u64(h, str_pending, &pending))
        return -1;
    if ((pending >> exc) & 1)
        return 0;
    if (hs_u64(h, str_pending, pending | (1ULL << exc)))
        return -1;
    return h->pend_bug ? 0 : pend_changed(h);       /* pend_bug: tests only */
}

/* pend_write(offset, value): see above (``pend_fallback``: write_word) */
static PyObject *ExcHook_pend_write(ExcHook *h, PyObject *const *a, Py_ssize_t na) {
    if (na != 2 || h->pend_fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "pend_write(offset, value) after pend_fallback is set");
        return NULL;
    }
    long off = PyLong_AsLong(a[0]);
    unsigned long long value = PyLong_AsUnsignedLongLongMask(a[1]) & 0xFFFFFFFFull;
    if (PyErr_Occurred())
        return NULL;
    if (!h->loop_ready || h->cpu == NULL)
        goto fallback;
    if (off == 0xD04) {
        if (value & ((1ull << 31) | (1ull << 27) | (1ull << 25)))
            goto fallback;                      /* NMI, a clear: the model */
        if ((value & (1ull << 28)) && pend_one(h, 14))
            return NULL;
        if ((value & (1ull << 26)) && pend_one(h, 15))
            return NULL;
        Py_RETURN_NONE;
    }
    if (0x200 <= off && off < 0x280) {
        long long nirq;
        if (hg_ll(h, s_num_irq, &nirq))
            return NULL;
        int word = (int)((off - 0x200) >> 2);
        for (int i = 0; i < 32; i++) {
            int irq = 32 * word + i;
            if (!((value >> i) & 1) || irq >= nirq || irq > 47)
                continue;
            if (pend_one(h, 16 + irq))
                return NULL;
        }
        Py_RETURN_NONE;
    }
fallback:
    return PyObject_CallFunction(h->pend_fallback, "lKk", off, value, 0xFFFFFFFFul);
}

/* icsr_read(offset): SystemControlSpace._icsr in C (VECTACTIVE, VECTPENDING,
 * ISRPENDING, RETTOBASE, PENDSTSET, PENDSVSET, NMIPENDSET); FreeRTOS reads
 * ICSR around every PendSV (InfiniTime: ~390 an emulated second). */
static PyObject *ExcHook_icsr_read(ExcHook *h, PyObject *arg) {
    (void)arg;
    if (h->cpu == NULL) {
        PyErr_SetString(PyExc_ValueError, "icsr_read before install");
        return NULL;
    }
    long long ipsr;
    if (hg_ll(h, str_ipsr_attr, &ipsr))
        return NULL;
    ipsr &= 0x1FF;
    Nvic n;
    PyObject *prio = NULL;
    if (nvic_load(h, &n, &prio))
        return NULL;
    uint64_t v = (uint64_t)ipsr;
    long long g;
    int e;
    if (nv_best(h, &n, n.pending, &g, &e))
        v |= ((uint64_t)e & 0x1FF) << 12;
    Py_XDECREF(prio);
    if (PyErr_Occurred())
        return NULL;
    if (n.pending >> 16)
        v |= 1ull << 22;
    uint64_t others = ipsr < 64 ? n.active & ~(1ull << ipsr) : n.active;
    if (ipsr && !others)
        v |= 1ull << 11;                              /* RETTOBASE */
    if ((n.pending >> 15) & 1)
        v |= 1ull << 26;
    if ((n.pending >> 14) & 1)
        v |= 1ull << 28;
    if ((n.pending >> 2) & 1)
        v |= 1ull << 31;
    return PyLong_FromUnsignedLongLong(v);
}

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_mmio",
    "Native uc_mmio_map callbacks for the peripheral bus.", -1, methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__mmio(void) {
    if (PyType_Ready(&SlotType) < 0 || PyType_Ready(&RegsType) < 0
        || PyType_Ready(&FlashGuardType) < 0 || PyType_Ready(&CellsType) < 0
        || PyType_Ready(&StreamSetType) < 0 || PyType_Ready(&PageMapType) < 0
        || PyType_Ready(&RtcCoreType) < 0 || PyType_Ready(&ExcHookType) < 0
        || PyType_Ready(&TimerCoreType) < 0 || PyType_Ready(&WdtCoreType) < 0
        || PyType_Ready(&ClockType) < 0 || PyType_Ready(&EventType) < 0)
        return NULL;
    struct { PyObject **p; const char *s; } names[] = {
        {&str_base_ticks, "_cycle_base_ticks"}, {&str_base_cycles, "_cycle_base"},
        {&str_now, "now"}, {&str_values, "values"}, {&str_kind, "kind"},
        {&str_obj, "obj"}, {&str_args, "args"}, {&str_timed, "timed"}, {&str_mask, "mask"},
        {&str_slow_bits, "slow_bits"}, {&str_guard, "guard"}, {&str_cells_attr, "_cells"},
        {&str_native_cells, "NATIVE_CELLS"}, {&str_inten_name, "inten"},
        {&str_stream, "stream"}, {&str_slow, "slow"}, {&str_steady, "steady"}, {&str_irq_level, "irq_level"}, {&str_when, "when"},
        {&str_seq, "_seq"}, {&str_heap, "_heap"}, {&str_next_deadline, "next_deadline"},
        {&str_on_earlier, "on_earlier_deadline"}, {&str_suppress_k, "suppress_k"},
        {&str_event_listeners, "event_listeners"}, {&str_power_watch, "power_watch"},
        {&str_irq, "irq"}, {&str_soc, "soc"}, {&str_set_irq, "set_irq"},
        {&str_on_event, "_on_event"}, {&str_ipsr_attr, "_ipsr"},
        {&str_fast_returns, "fast_returns"}, {&str_watched, "_boundaries_watched"},
        {&str_scr, "scr"}, {&str_mpu, "mpu"}, {&str_installed, "_installed"},
        {&str_rbar, "rbar"}, {&str_rasr, "rasr"}, {&str_mpu_ctrl, "ctrl"},
        {&str_mpu_config, "_config"}, {&str_mpu_applied, "_applied"}, {&str_mpu_sync, "sync"},
        {&str_on_exception, "on_exception"}, {&str_active, "active"}, {&str_pending, "pending"},
        {&str_irq_enabled, "irq_enabled"}, {&str_prio, "prio"}, {&str_prigroup, "prigroup"},
        {&str_shcsr, "shcsr"}, {&str_sleeping_attr, "_sleeping"},
        {&str_stop_reason, "stop_reason"}, {&str_returns_in_hook, "returns_in_hook"},
        {&str_slice_pc, "_slice_pc"}, {&str_slice_blocks, "_slice_blocks"},
        {&str_trap, "_trap"}, {&str_hook_exception, "_hook_exception"},
        {&str_vtor, "vtor"}, {&str_ccr, "ccr"}, {&str_sleeping_prop, "sleeping"},
        {&str_entries_in_hook, "entries_in_hook"}, {&str_fast_entries, "fast_entries"},
        {&str_powered_off, "powered_off"}, {&str_halt_in_hook, "_halt_in_hook"},
        {&str_enter_in_hook, "_enter_in_hook"}, {&str_due, "_due"}, {&str_shorts, "shorts"},
        {&str_write_m, "write"}, {&str_chen, "_chen"},
        {&str_map, "_map"}, {&str_base_attr, "base"}, {&str_running, "running"},
        {&str_paused_left, "paused_left"}, {&str_reloaded, "reloaded"},
        {&str_deadline, "deadline"}, {&str_compact_at, "_compact_at"},
        {&str_tail_chains, "tail_chains"},
        /* the run loop's (ExcHook.run) */
        {&s_idle_to_next, "_idle_to_next_event"}, {&s_take_pending, "_take_pending"},
        {&s_check_fault_hang, "_check_fault_hang"},
        {&s_sleep_kind, "sleep_kind"}, {&s_event_register, "event_register"},
        {&s_fault_since, "_fault_handler_since"}, {&s_fault_hang_ticks, "fault_hang_ticks"},
        {&s_mpu_dirty, "mpu_dirty"}, {&s_sync, "sync"}, {&s_slice_end, "slice_end"},
        {&s_div_armed, "_div_armed"}, {&s_cost_block, "_cost_block"},
        {&s_after_slice, "_after_slice"}, {&s_loop_watch, "_loop_watch"},
        {&s_firing, "firing"}, {&s_fn, "fn"}, {&s_cycle_ticks, "cycle_ticks"},
        {&s_wfe, "wfe"}, {&s_wfi, "wfi"}, {&s_returned, "returned"},
        {&s_fast_pends, "fast_pends"}, {&s_num_irq, "num_irq"},
        {&str_compact, "_compact"},
        {&s_wfe_in_c, "_wfe_in_c"}, {&s_sev_block, "_sev_block"}, {&s_wfe_kinds, "_wfe_kinds"},
        {&s_fast_wfe, "fast_wfe"}, {&s_wfe_in_hook, "wfe_in_hook"}, {&s_c_loop, "_c_loop"},
        {&s_cpu_sleeping, "cpu_sleeping"}, {&s_debug_halted, "debug_halted"},
        {&s_update_pause, "_update_pause"}, {&s_on_sleep, "on_sleep"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].p = PyUnicode_InternFromString(names[i].s)) == NULL)
            return NULL;
    PyObject *hq = PyImport_ImportModule("_heapq");      /* emu/clock.py's heap */
    if (hq == NULL)
        return NULL;
    heappush_fn = PyObject_GetAttrString(hq, "heappush");
    heappop_fn = PyObject_GetAttrString(hq, "heappop");   /* the run loop's run_due */
    Py_DECREF(hq);
    if (heappush_fn == NULL || heappop_fn == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SlotType);
    if (PyModule_AddObject(m, "Slot", (PyObject *)&SlotType) < 0) {
        Py_DECREF(&SlotType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&RegsType);
    Py_INCREF(&FlashGuardType);
    Py_INCREF(&CellsType);
    Py_INCREF(&StreamSetType);
    Py_INCREF(&PageMapType);
    Py_INCREF(&TimerCoreType);
    Py_INCREF(&WdtCoreType);
    Py_INCREF(&ClockType);
    Py_INCREF(&EventType);
    if (PyModule_AddObject(m, "StreamSet", (PyObject *)&StreamSetType) < 0 || PyModule_AddObject(m, "Regs", (PyObject *)&RegsType) < 0
        || PyModule_AddObject(m, "FlashGuard", (PyObject *)&FlashGuardType) < 0
        || PyModule_AddObject(m, "Cells", (PyObject *)&CellsType) < 0
        || PyModule_AddObject(m, "PageMap", (PyObject *)&PageMapType) < 0
        || PyModule_AddObject(m, "RtcCore", (PyObject *)&RtcCoreType) < 0
        || PyModule_AddObject(m, "TimerCore", (PyObject *)&TimerCoreType) < 0
        || PyModule_AddObject(m, "WdtCore", (PyObject *)&WdtCoreType) < 0
        || PyModule_AddObject(m, "ExcHook", (PyObject *)&ExcHookType) < 0
        || PyModule_AddObject(m, "Clock", (PyObject *)&ClockType) < 0
        || PyModule_AddObject(m, "Event", (PyObject *)&EventType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
