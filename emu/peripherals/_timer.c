/*
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
 */
#include "_cores.h"
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


/* Would the listener ``l`` do anything with the events in ``fire`` (bit 16 + n:
 * COMPARE[n])?  1 for anything but the PPI's own Ppi._on_event finding no
 * task for them in its current map (the model's _on_event rebuilds first
 * when CHEN changed: that is a 1 too). */
static int tc_listened(TimerCore *r, PyObject *l, uint32_t fire) {
    if (r->ppi_fn == Py_None || !PyMethod_Check(l) || PyMethod_GET_FUNCTION(l) != r->ppi_fn)
        return 1;   /* not reached by firmware: a listener other than PPI's (an instrument) */
    PyObject *ppi = PyMethod_GET_SELF(l);
    PyObject *values = PyObject_GetAttr(ppi, str_values), *map = NULL;
    long long chen, built;
    int rc = -1;
    if (values == NULL || !PyDict_Check(values))
        goto done;   /* not reached by firmware: PPI's values are a dict */
    if (values_ll(values, 0x500, &chen) || attr_ll(ppi, str_chen, &built))
        goto done;   /* not reached by firmware: PPI's CHEN and _chen are integers */
    if (chen != built) {
        rc = 1;
        goto done;
    }
    map = PyObject_GetAttr(ppi, str_map);
    if (map == NULL || !PyDict_Check(map))
        goto done;   /* not reached by firmware: PPI's map is a dict */
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
        return 0;   /* due, not processed yet: _on_compare re-arms; not reached by firmware: an edge due in the block that re-arms (timing) */
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
    return ev_schedule_at(r->ev, due);
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
            hand = 1;   /* not reached by firmware: event_listeners is a list */
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
    if (!PyArg_ParseTuple(args, "OOOO!iOLLO", &model, &ev, &clock, CellsType_p, &cells, &num_cc,
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
    if (check_clock_event(clock, ev, "TimerCore"))
        return -1;
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

PyTypeObject TimerCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.peripherals._cores.TimerCore",
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

