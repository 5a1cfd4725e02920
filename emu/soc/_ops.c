/*
 * The op interpreter (see _fabric.h and emu/soc/ops.py, the pure-Python
 * interpreter of the same ops): an op resolved from the model's
 * declaration, then carried out on the model's Cells without the GIL, or
 * on its attributes and dictionaries through the C API; 1 (bail) when the
 * model must run instead.
 */
#include "_fabric.h"

#define OPS_NAMES(X) \
    X(str_values, "values") X(str_kind, "kind") X(str_obj, "obj") X(str_args, "args") \
    X(str_timed, "timed") X(str_mask, "mask") X(str_slow_bits, "slow_bits") \
    X(str_guard, "guard") X(str_cells_attr, "_cells") X(str_native_cells, "NATIVE_CELLS") \
    X(str_inten_name, "inten") X(str_stream, "stream") X(str_slow, "slow") \
    X(str_steady, "steady") X(str_irq_level, "irq_level")
OPS_NAMES(NAME_DECL)

int ops_intern(void) {
    OPS_NAMES(NAME_INTERN)
    return 0;
}

void op_clear(COp *op) {
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
    case R_COUNTER: case W_FEED:
        break;
    default:
        return 0;
    }
    PyObject *c = PyObject_GetAttr(op->obj, str_cells_attr);
    if (c == NULL) {
        PyErr_Clear();
        return 0;   /* not reached by firmware: every model with ops has Cells (NrfPeripheral) */
    }
    if (!PyObject_TypeCheck(c, &CellsType)) {
        Py_DECREF(c);
        return 0;   /* not reached by firmware: a model on the pure-Python path has no Slot */
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
            return 0;   /* not reached by firmware: every COUNTER op names NATIVE_CELLS (the RTC's) */
        }
    }
    if ((op->kind == R_EVENT || op->kind == W_EVENT) && !op->stream) {
        if (offset < 0x100 || offset > 0x17C) {
            Py_DECREF(c);
            return 0;   /* not reached by firmware: event ops are declared at 0x100-0x17C only */
        }
        op->bit = (int)((offset - 0x100) >> 2);
    }
    if (op->kind == R_EVENT || op->kind == W_EVENT)
        op->bit = (int)((offset - 0x100) >> 2);
    op->cells = (Cells *)c;
    op->nogil = op->g_busy == NULL;
    return 0;
}


/* Fill op from resolve(offset, is_write); kind GENERIC when it returns None. */
int op_resolve(Slot *s, COp *op, uint64_t offset, int is_write) {
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
        steady = 0;   /* not reached by firmware: every op is emu.soc.ops.Op, which has steady */
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
    if (kind == W_FEED) {   /* (reload value, RR[0]'s offset, the FEED_* cells' names) */
        if (n != 2 + FEED_CELLS)
            goto bad;
        op->cval = (uint32_t)PyLong_AsUnsignedLongMask(PyTuple_GET_ITEM(args, 0));
        long long base = PyLong_AsLongLong(PyTuple_GET_ITEM(args, 1));
        if (PyErr_Occurred())
            goto fail;
        if (base < 0 || (unsigned long long)base > offset || ((offset - base) & 3)
            || offset - base >= 4 * 32)
            goto bad;
        op->bit = (int)((offset - base) >> 2);
        PyObject *names = PyObject_GetAttr(op->obj, str_native_cells);
        if (names == NULL)
            goto fail;
        int ok = PyTuple_Check(names);
        for (int i = 0; ok && i < FEED_CELLS; i++) {
            op->fi[i] = -1;
            PyObject *want = PyTuple_GET_ITEM(args, 2 + i);
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names) && j < NCELLS; j++)
                if (PyUnicode_Check(want)
                    && PyUnicode_Compare(PyTuple_GET_ITEM(names, j), want) == 0)
                    op->fi[i] = (int)j;
            ok = op->fi[i] >= 0;
        }
        Py_DECREF(names);
        PyErr_Clear();
        if (!ok)
            goto bad;
    }
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
    case W_BITS: case W_CALL: case W_FEED:
        if (!is_write) goto bad;
        break;
    default:   /* not reached by firmware: a kind emu/soc/ops.py does not declare */
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
    op_clear(op);   /* not reached by firmware: error path: a broken op declaration */
    return -1;
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
int op_sync(Slot *s) {
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


/* 0: done (*v set), 1: bail to the model, -1: error.  Events, INTEN and
 * COUNTER are carried out on the model's Cells (op->cells); a model without
 * C Cells gets those accesses from its own code (bail). */
int exec_read(Slot *s, COp *op, uint64_t *v) {
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
    return 1;   /* not reached by firmware: a kind op_resolve binds to the Cells */
}

/* 0: done, 1: bail to the model, -1: error (events and INTEN: see exec_read) */
int exec_write(Slot *s, COp *op, uint64_t value) {
    if (op->kind == W_TXD)
        return 1;                /* not streaming: the model */
    int g = guard_hit(s, op);
    if (g)
        return g;
    if (op->kind == W_FEED) {
        long long now;
        if (op->cells == NULL)
            return 1;   /* not reached by firmware: a model on the pure-Python path has no Slot */
        if (clock_now(s, &now))
            return -1;
        return feed_write(op, value, now) == 1;
    }
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
                                : ((cur & ~((uint64_t)op->mask << op->shift)) | bits));   /* not reached by firmware: no register writes a cell whole through a BITS op */
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
    return 1;   /* not reached by firmware: a kind op_resolve binds to the Cells */
out:
    Py_XDECREF(d);
    return rc;
}

/* -- the same ops on the Cells, without the GIL ------------------------- */


/* 0: done (*v set); 1: needs the GIL path (gil: held, -1 on error) */
int cells_read(Slot *s, COp *op, uint64_t *v, int gil) {
    Cells *c = op->cells;
    switch (op->kind) {
    case R_CYCLES:                        /* the DWT's CYCCNT: no Cells, the counter */
        if (s->cycles == NULL)
            return 1;   /* the model; not reached by firmware: a native bus runs with the native cycle counter */
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
    return 1;   /* not reached by firmware: a write kind: not a read */
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
    return 1;   /* not reached by firmware: a read kind: not a write */
}

int cells_write(Cells *c, COp *op, uint64_t value) {
    return cells_write_x(c, op, value, 0);
}

/* A write that lowers the line (cells_write gave 2), with the GIL: what the
 * model's write does (NrfPeripheral._set_irq(False) -> the SoC's set_irq ->
 * CortexM.set_irq_level: the IRQ's bit of irq_level cleared; pending stays),
 * or 1 (the model) while the SoC has irq listeners.  0 done, -1 error. */

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
        return 1;   /* not reached by firmware: with irq listeners (a VCD trace) the model lowers the line */
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


/* -- a watchdog's reload request (W_FEED) ------------------------------- */

/* RR[n] (op->bit) written with ``value`` at tick ``now``, on the Cells:
 * Wdt.write's steps (emu/peripherals/wdt.py) for the cases it takes
 * without the model.  Not the reload value, the watchdog not running, or
 * RR[n] not enabled: nothing (0).  RR[0] the only one enabled, the count
 * not paused, its deadline set: reloaded = 0, deadline = now + period
 * (FEED_RELOADED; the timeout event, at the old deadline, moves itself).
 * Anything else: 1, the model. */
int feed_write(COp *op, uint64_t value, long long now) {
    long long *cell = op->cells->cell;
    if ((value & 0xFFFFFFFFu) != op->cval || !cell[op->fi[FEED_RUNNING]])
        return 0;
    long long mask = cell[op->fi[FEED_MASK]] & 0xFF;
    if (!((mask >> op->bit) & 1))
        return 0;
    if (op->bit == 0 && mask == 1 && cell[op->fi[FEED_PAUSED]] < 0
        && cell[op->fi[FEED_DEADLINE]] >= 0) {
        cell[op->fi[FEED_RELOADED_CELL]] = 0;
        cell[op->fi[FEED_DEADLINE]] = now + cell[op->fi[FEED_PERIOD]];
        return FEED_RELOADED;
    }
    return 1;
}

/* A skipped polling loop's reload (slot_replay, LOOP_TIMED): the last
 * iteration counted fed the dog ``ticks`` after the iteration noted, so
 * the deadline that iteration set moves that much. */
void feed_replay(COp *op, long long ticks) {
    if (op->kind != W_FEED || op->cells == NULL)
        return;   /* not reached by firmware: only a feed is noted as timed */
    long long *deadline = &op->cells->cell[op->fi[FEED_DEADLINE]];
    if (*deadline >= 0)
        *deadline += ticks;
}
