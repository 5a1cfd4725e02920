/*
 * emu._clock: the Python types of the C clock (Clock, Event); the
 * scheduler's steps are in _clock.h, which the other native modules share.
 * See _clock.h.
 */
#include "_clock.h"

CLOCK_TYPES_DEFINE

static PyTypeObject ClockType, EventType;

/* ---------------------------------------------------------------- Event */

static PyObject *Event_new_c(ClockObject *c, PyObject *name, PyObject *fn) {
    EventObject *e = PyObject_GC_New(EventObject, &EventType);
    if (e == NULL)
        return NULL;
    Py_INCREF(c);
    e->clock = c;
    Py_INCREF(name);
    e->name = name;
    Py_INCREF(fn);
    e->fn = fn;
    e->when = 0;
    e->has = 0;
    e->seq = 0;
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

static PyObject *Event_tp_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
    PyObject *clock, *name, *fn;
    static char *kwlist[] = {"clock", "name", "fn", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OO", kwlist, &ClockType, &clock, &name, &fn))
        return NULL;
    return Event_new_c((ClockObject *)clock, name, fn);
}

static int Event_traverse(EventObject *e, visitproc visit, void *arg) {
    Py_VISIT(e->clock);
    Py_VISIT(e->name);
    Py_VISIT(e->fn);
    return 0;
}

static int Event_clear(EventObject *e) {
    Py_CLEAR(e->clock);
    Py_CLEAR(e->name);
    Py_CLEAR(e->fn);
    return 0;
}

static void Event_dealloc(EventObject *e) {
    PyObject_GC_UnTrack(e);
    Event_clear(e);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyObject *Event_schedule_at(EventObject *e, PyObject *arg) {
    long long when = PyLong_AsLongLong(arg);
    if (when == -1 && PyErr_Occurred())
        return NULL;
    if (e->clock == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "event without a clock");
        return NULL;
    }
    if (clk_schedule(e, when))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Event_schedule_in(EventObject *e, PyObject *arg) {
    long long ticks = PyLong_AsLongLong(arg);
    if (ticks == -1 && PyErr_Occurred())
        return NULL;
    if (e->clock == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "event without a clock");
        return NULL;
    }
    if (clk_schedule(e, e->clock->now + ticks))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Event_schedule_first(EventObject *e, PyObject *args) {
    long long when, key;
    if (!PyArg_ParseTuple(args, "LL:schedule_first", &when, &key))
        return NULL;
    if (key < 0 || key >= CLK_FIRST_KEYS) {
        PyErr_Format(PyExc_ValueError, "key must be 0 to 2**61 - 1, not %lld", key);
        return NULL;
    }
    if (e->clock == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "event without a clock");
        return NULL;
    }
    if (clk_schedule_first(e, when, key))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Event_cancel(EventObject *e, PyObject *unused) {
    clk_cancel(e);
    Py_RETURN_NONE;
}

static PyObject *Event_repr(EventObject *e) {
    if (e->has)
        return PyUnicode_FromFormat("<Event %S at %lld>", e->name, e->when);
    return PyUnicode_FromFormat("<Event %S at None>", e->name);
}

static PyObject *Event_get_when(EventObject *e, void *c) {
    if (!e->has)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(e->when);
}

static int Event_set_when(EventObject *e, PyObject *v, void *c) {
    if (v == NULL || v == Py_None) {
        e->has = 0;
        return 0;
    }
    long long w = PyLong_AsLongLong(v);
    if (w == -1 && PyErr_Occurred())
        return -1;
    e->when = w;
    e->has = 1;
    return 0;
}

static PyObject *Event_get_pending(EventObject *e, void *c) {
    return PyBool_FromLong(e->has);
}

static PyObject *Event_get_clock(EventObject *e, void *c) {
    PyObject *o = e->clock ? (PyObject *)e->clock : Py_None;
    Py_INCREF(o);
    return o;
}

static PyMethodDef Event_methods[] = {
    {"schedule_at", (PyCFunction)Event_schedule_at, METH_O, "schedule_at(tick): due then"},
    {"schedule_in", (PyCFunction)Event_schedule_in, METH_O, "schedule_in(ticks): due after"},
    {"schedule_first", (PyCFunction)Event_schedule_first, METH_VARARGS,
     "schedule_first(tick, key): due then, before the tick's schedule_at events, by key"},
    {"cancel", (PyCFunction)Event_cancel, METH_NOARGS, "cancel(): not due"},
    {NULL}
};

static PyMemberDef Event_members[] = {
    {"name", T_OBJECT_EX, offsetof(EventObject, name), READONLY, NULL},
    {"fn", T_OBJECT_EX, offsetof(EventObject, fn), 0, NULL},
    {"_seq", T_LONGLONG, offsetof(EventObject, seq), 0, NULL},
    {NULL}
};

static PyGetSetDef Event_getset[] = {
    {"when", (getter)Event_get_when, (setter)Event_set_when, "the due tick, or None", NULL},
    {"pending", (getter)Event_get_pending, NULL, "due at some tick", NULL},
    {"clock", (getter)Event_get_clock, NULL, "the clock", NULL},
    {NULL}
};

static PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu._clock.Event",
    .tp_doc = "emu.clock.Event in C (emu/_clock.h).",
    .tp_basicsize = sizeof(EventObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Event_tp_new,
    .tp_traverse = (traverseproc)Event_traverse,
    .tp_clear = (inquiry)Event_clear,
    .tp_dealloc = (destructor)Event_dealloc,
    .tp_repr = (reprfunc)Event_repr,
    .tp_methods = Event_methods,
    .tp_members = Event_members,
    .tp_getset = Event_getset,
};

/* ---------------------------------------------------------------- Clock */

static PyObject *Clock_tp_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Clock() takes no arguments");
        return NULL;
    }
    ClockObject *c = (ClockObject *)t->tp_alloc(t, 0);
    if (c == NULL)
        return NULL;
    c->next_deadline = CLK_NEVER;
    c->compact_at = 256;
    c->events = PyDict_New();
    if (c->events == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static int Clock_traverse(ClockObject *c, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < c->n; i++)
        Py_VISIT(c->heap[i].ev);
    Py_VISIT(c->on_earlier);
    Py_VISIT(c->events);
    Py_VISIT(c->firing);
    Py_VISIT(c->dict);
    return 0;
}

static int Clock_clear(ClockObject *c) {
    Py_ssize_t n = c->n;
    c->n = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_CLEAR(c->heap[i].ev);
    Py_CLEAR(c->on_earlier);
    Py_CLEAR(c->events);
    Py_CLEAR(c->firing);
    Py_CLEAR(c->dict);
    return 0;
}

static void Clock_dealloc(ClockObject *c) {
    PyObject_GC_UnTrack(c);
    Clock_clear(c);
    PyMem_Free(c->heap);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *Clock_event(ClockObject *c, PyObject *args) {
    PyObject *name, *fn;
    if (!PyArg_ParseTuple(args, "OO", &name, &fn))
        return NULL;
    int has = PyDict_Contains(c->events, name);
    if (has < 0)
        return NULL;
    if (has) {
        PyErr_Format(PyExc_ValueError, "two clock events named %R: event names must be "
                     "unique (snapshots restore pending events by name)", name);
        return NULL;
    }
    PyObject *ev = Event_new_c(c, name, fn);
    if (ev == NULL)
        return NULL;
    if (PyDict_SetItem(c->events, name, ev)) {
        Py_DECREF(ev);
        return NULL;
    }
    return ev;
}

static PyObject *Clock_compact(ClockObject *c, PyObject *unused) {
    clk_compact(c);
    Py_RETURN_NONE;
}

static PyObject *Clock_clean_m(ClockObject *c, PyObject *unused) {
    clk_clean(c);
    Py_RETURN_NONE;
}

static PyObject *Clock_next_event_time(ClockObject *c, PyObject *unused) {
    clk_clean(c);
    return PyLong_FromLongLong(c->next_deadline);
}

static PyObject *Clock_run_due(ClockObject *c, PyObject *unused) {
    long n = clk_run_due(c);
    return n < 0 ? NULL : PyLong_FromLong(n);
}

static PyObject *Clock_advance_to(ClockObject *c, PyObject *arg) {
    long long t = PyLong_AsLongLong(arg);
    if (t == -1 && PyErr_Occurred())
        return NULL;
    for (;;) {
        clk_clean(c);
        long long nxt = c->next_deadline;
        if (nxt > t)
            break;
        if (nxt > c->now)
            c->now = nxt;
        if (clk_run_due(c) < 0)
            return NULL;
    }
    if (t > c->now)
        c->now = t;
    Py_RETURN_NONE;
}

static PyObject *Clock_pending_events(ClockObject *c, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < c->n; i++) {
        if (!hent_live(&c->heap[i]))
            continue;
        PyObject *t = Py_BuildValue("(LO)", c->heap[i].when, c->heap[i].ev->name);
        if (t == NULL || PyList_Append(out, t)) {
            Py_XDECREF(t);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(t);
    }
    if (PyList_Sort(out)) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *Clock_get_heap(ClockObject *c, void *unused) {
    PyObject *out = PyList_New(c->n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < c->n; i++) {
        PyObject *t = Py_BuildValue("(LLO)", c->heap[i].when, c->heap[i].seq,
                                    (PyObject *)c->heap[i].ev);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
    }
    return out;
}

static int Clock_set_heap(ClockObject *c, PyObject *v, void *unused) {
    if (v == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the heap cannot be deleted");
        return -1;
    }
    PyObject *seq = PySequence_Fast(v, "the heap: a list of (when, seq, event)");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    HEnt *nh = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(HEnt));
    if (nh == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *ev;
        long long w, s;
        if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "LLO!", &w, &s, &EventType, &ev)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "the heap: (when, seq, event) tuples");
            for (Py_ssize_t j = 0; j < i; j++)
                Py_DECREF(nh[j].ev);
            PyMem_Free(nh);
            Py_DECREF(seq);
            return -1;
        }
        Py_INCREF(ev);
        nh[i].when = w;
        nh[i].seq = s;
        nh[i].ev = (EventObject *)ev;
    }
    Py_DECREF(seq);
    Py_ssize_t old = c->n;
    HEnt *oh = c->heap;
    c->heap = nh;
    c->n = n;
    c->cap = n ? n : 1;
    heap_heapify(c->heap, c->n);
    for (Py_ssize_t i = 0; i < old; i++)
        Py_DECREF(oh[i].ev);
    PyMem_Free(oh);
    return 0;
}

#define CLK_LL(field) \
    static PyObject *Clock_get_##field(ClockObject *c, void *u) { \
        return PyLong_FromLongLong(c->field); } \
    static int Clock_set_##field(ClockObject *c, PyObject *v, void *u) { \
        if (v == NULL) { PyErr_SetString(PyExc_AttributeError, "cannot delete"); return -1; } \
        long long x = PyLong_AsLongLong(v); \
        if (x == -1 && PyErr_Occurred()) return -1; \
        c->field = x; return 0; }
CLK_LL(now)
CLK_LL(next_deadline)
CLK_LL(seq)
CLK_LL(compact_at)

#define CLK_OBJ(field) \
    static PyObject *Clock_get_##field(ClockObject *c, void *u) { \
        PyObject *o = c->field ? c->field : Py_None; Py_INCREF(o); return o; } \
    static int Clock_set_##field(ClockObject *c, PyObject *v, void *u) { \
        PyObject *o = (v == NULL || v == Py_None) ? NULL : v; Py_XINCREF(o); \
        Py_XSETREF(c->field, o); return 0; }
CLK_OBJ(on_earlier)
CLK_OBJ(firing)

static PyObject *Clock_get_events(ClockObject *c, void *u) {
    Py_INCREF(c->events);
    return c->events;
}

static int Clock_set_events(ClockObject *c, PyObject *v, void *u) {
    if (v == NULL || !PyDict_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "events: a dict");
        return -1;
    }
    Py_INCREF(v);
    Py_SETREF(c->events, v);
    return 0;
}

static PyMethodDef Clock_methods[] = {
    {"event", (PyCFunction)Clock_event, METH_VARARGS, "event(name, fn) -> a new Event"},
    {"_compact", (PyCFunction)Clock_compact, METH_NOARGS, NULL},
    {"_clean", (PyCFunction)Clock_clean_m, METH_NOARGS, NULL},
    {"next_event_time", (PyCFunction)Clock_next_event_time, METH_NOARGS,
     "the earliest pending event's tick, or NEVER"},
    {"run_due", (PyCFunction)Clock_run_due, METH_NOARGS,
     "fire every event due at or before now, in time order; the count"},
    {"advance_to", (PyCFunction)Clock_advance_to, METH_O,
     "advance_to(t): now moved to t, due events fired on the way"},
    {"pending_events", (PyCFunction)Clock_pending_events, METH_NOARGS,
     "(when, name) of every live event, sorted"},
    {NULL}
};

static PyGetSetDef Clock_getset[] = {
    {"now", (getter)Clock_get_now, (setter)Clock_set_now, "the time, in ticks", NULL},
    {"next_deadline", (getter)Clock_get_next_deadline, (setter)Clock_set_next_deadline,
     NULL, NULL},
    {"_seq", (getter)Clock_get_seq, (setter)Clock_set_seq, NULL, NULL},
    {"_compact_at", (getter)Clock_get_compact_at, (setter)Clock_set_compact_at, NULL, NULL},
    {"_heap", (getter)Clock_get_heap, (setter)Clock_set_heap,
     "the heap as (when, seq, event) tuples", NULL},
    {"on_earlier_deadline", (getter)Clock_get_on_earlier, (setter)Clock_set_on_earlier,
     NULL, NULL},
    {"firing", (getter)Clock_get_firing, (setter)Clock_set_firing, NULL, NULL},
    {"events", (getter)Clock_get_events, (setter)Clock_set_events, NULL, NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}
};

static PyTypeObject ClockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu._clock.Clock",
    .tp_doc = "emu.clock.Clock in C (emu/_clock.h).",
    .tp_basicsize = sizeof(ClockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Clock_tp_new,
    .tp_traverse = (traverseproc)Clock_traverse,
    .tp_clear = (inquiry)Clock_clear,
    .tp_dealloc = (destructor)Clock_dealloc,
    .tp_methods = Clock_methods,
    .tp_getset = Clock_getset,
    .tp_dictoffset = offsetof(ClockObject, dict),
};

static struct PyModuleDef clock_module = {
    PyModuleDef_HEAD_INIT, "_clock",
    "emu.clock's Clock and Event in C (emu/_clock.h): the scheduler the native modules share.",
    -1, NULL, NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__clock(void) {
    if ((clock_str_now = PyUnicode_InternFromString("now")) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&clock_module);
    if (m == NULL)
        return NULL;
    PyTypeObject *types[] = {&ClockType, &EventType};
    const char *names[] = {"Clock", "Event"};
    if (add_types(m, types, names, 2)) {
        Py_DECREF(m);
        return NULL;
    }
    ClockType_p = &ClockType;
    EventType_p = &EventType;
    return m;
}
