/*
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
 */
#include "_cores.h"
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


static int rc_schedule_at(RtcCore *r, long long when) {
    return ev_schedule_at(r->ev, when);
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
        return 0;   /* an edge due, not processed yet: _on_event re-arms; not reached by firmware: an edge due in the block that re-arms (timing) */
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
        return rc_hand_over(r);   /* not reached by firmware: suppress_k is a list of num_cc */
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
    if (!PyArg_ParseTuple(args, "OOOO!iOLL", &model, &ev, &clock, CellsType_p, &cells, &num_cc,
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
    if (check_clock_event(clock, ev, "RtcCore"))
        return -1;
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

PyTypeObject RtcCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.peripherals._cores.RtcCore",
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

