/*
 * A slot's MMIO callbacks and the Slot type (see _fabric.h): the access
 * counted, its op found (resolved once per offset and direction), the
 * clock brought up to it, a polling loop's accesses noted for the block
 * hook, and the model's Python for anything the ops do not carry out.
 */
#include "_fabric.h"

#define SLOT_NAMES(X) X(str_base_ticks, "_cycle_base_ticks") X(str_base_cycles, "_cycle_base")
SLOT_NAMES(NAME_DECL)

int slot_intern(void) {
    SLOT_NAMES(NAME_INTERN)
    return 0;
}

/* An access for the block hook's polling-loop watch (loop_step in
 * _blockhook.c): a read whose value only a clock event or Python can change
 * is recorded (up to LOOP_NOTES an iteration), anything else makes the
 * iteration unstable. */
static inline void loop_note(Slot *s, uint64_t offset, int stable) {
    volatile LoopCells *l = s->loop;
    if (l == NULL || !l->skip_on)
        return;
    if (FAULT(l->trust_all & 1))
        stable = 1;
    if (!stable || l->nreads >= LOOP_NOTES) {
        l->unstable = 1;
        return;
    }
    l->rslot[l->nreads] = s;
    l->roff[l->nreads] = (uint32_t)offset;
    l->nreads++;
}

/* A write a loop may repeat: carried out on the Cells without the GIL and
 * without moving the interrupt line (an event, INTENSET/INTENCLR/INTEN, a
 * watchdog's feed): state only, so the same writes again leave the same
 * state (loop_step counts it against the iteration's stores); ``timed``
 * (LOOP_TIMED): the state is the write's time plus a constant (a reload),
 * which slot_replay moves to the last iteration a skip counts. */
static inline void loop_note_write(Slot *s, uint64_t offset, uint32_t timed) {
    volatile LoopCells *l = s->loop;
    if (l == NULL || !l->skip_on)
        return;
    if (l->nreads >= LOOP_NOTES) {
        l->unstable = 1;
        return;
    }
    l->rslot[l->nreads] = s;
    l->roff[l->nreads] = (uint32_t)offset | LOOP_WRITE | timed;
    l->nreads++;
    l->nwrites++;
}

/* Any other write: unstable (trust_all & 2, companion tests only: taken
 * as repeatable too). */
static inline void loop_note_other_write(Slot *s, uint64_t offset) {
    volatile LoopCells *l = s->loop;
    if (l != NULL && FAULT(l->trust_all & 2))
        loop_note_write(s, offset, 0);
    else
        loop_note(s, offset, 0);
}

/* A COUNTER read (the RTC's) inside a slice: its value holds until the
 * next period boundary, so the iterations up to that cycle may be counted
 * (the horizon); outside a slice, unstable. */
static inline void loop_note_counter(Slot *s, uint64_t offset, COp *op) {
    volatile LoopCells *l = s->loop;
    if (l == NULL || !l->skip_on)
        return;   /* not reached by firmware: COUNTER reads are noted only while the loop watch is on */
    if (!in_slice(s) || s->cycle_ticks <= 0) {
        l->unstable = 1;   /* not reached by firmware: the loop watch is on only inside a slice */
        return;   /* not reached by firmware: the loop watch is on only inside a slice */
    }
    Cells *c = op->cells;
    long long running = c->cell[op->ci[0]], base_time = c->cell[op->ci[1]],
              period = c->cell[op->ci[2]];
    if (running && period > 0 && !(FAULT(l->trust_all & 1))) {   /* (trust_all: companions) */
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

/* A skipped loop's accesses of one register, counted as done (n of them,
 * in as many iterations of ``cycles`` / n cycles each); a timed write's
 * effect moved by ``cycles``: the last of them happened that much later
 * than the one noted (feed_replay). */
void slot_replay(void *slot, uint32_t offset, uint64_t n, uint64_t cycles) {
    Slot *s = (Slot *)slot;
    uint32_t off = offset & ~LOOP_FLAGS;
    s->count += n;
    s->stat[(off >> 2) * 4 + (offset & LOOP_WRITE ? 2 : 0)] += n;
    if ((offset & LOOP_TIMED) && !FAULT(s->loop != NULL && (s->loop->trust_all & 32)))
        feed_replay(&s->wops[off >> 2], (long long)cycles * s->cycle_ticks);
}


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
        return clock_set_now(s->clock, now);   /* not reached by firmware: between runs the clock was synced at the run's end */
    return 0;
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

void report(Slot *s, PyObject *off) {      /* error path: a model raised */
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
int do_sync(Slot *s) {
    if (s->cycles != NULL)
        return sync_native(s);
    PyObject *t = PyObject_CallNoArgs(s->sync);   /* not reached by firmware: a native bus runs with the native cycle counter */
    Py_XDECREF(t);
    return t == NULL ? -1 : 0;   /* not reached by firmware: a native bus runs with the native cycle counter */
}

static COp *slot_op(Slot *s, uint64_t offset, int is_write) {
    COp *op = &(is_write ? s->wops : s->rops)[offset >> 2];
    if (op->kind == K_UNKNOWN) {
        if (op_resolve(s, op, offset, is_write)) {
            report(s, NULL);     /* a broken op declaration: use the model */
            op_clear(op);   /* not reached by firmware: error path: a broken op declaration */
            op->kind = K_GENERIC;   /* not reached by firmware: error path: a broken op declaration */
        }
        if (s->nused < 2 * NOFF)  /* after resolving: it may have flushed */
            s->used[s->nused++] = (uint16_t)((offset >> 2) | (is_write ? NOFF : 0));
    }
    return op;
}

uint64_t slot_read(void *uc, uint64_t offset, unsigned size, void *user_data) {
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
            v = 0;   /* not reached by firmware: error path: the model's read raised */
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

void slot_write(void *uc, uint64_t offset, unsigned size, uint64_t value,
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
        } else if (op->nogil && op->kind == W_FEED) {
            if (in_slice(s)) {               /* the time without the GIL */
                int r = feed_write(op, value, slice_now(s));
                if (r != 1) {
                    s->count++;
                    s->stat[(offset >> 2) * 4 + 2]++;
                    loop_note_write(s, offset, r == FEED_RELOADED ? LOOP_TIMED : 0);
                    return;
                }
                bailed = 1;                  /* the model decides */
            }
        } else if (op->nogil) {
            int r = cells_write(op->cells, op, value);
            if (r == 0) {                 /* (cells_write does EVENT and INTEN* only: */
                s->count++;                   /*  state, which a loop may write again) */
                s->stat[(offset >> 2) * 4 + 2]++;
                loop_note_write(s, offset, 0);
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

PyTypeObject SlotType = {
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
