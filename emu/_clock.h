/*
 * emu._clock.Clock and .Event: emu/clock.py's Clock and Event in C, the
 * scheduler's steps (this header) and its Python types (emu/_clock.c).
 *
 * The same API and the same steps as the Python classes (which stay the
 * reference: the pure-Python path uses them; the registry of twins,
 * emu/twins.py, pairs each function here with the method it stands for),
 * with the time, the heap and each event's due tick in C memory, so that
 * the native bus, the peripherals' cores and the run loop in C schedule,
 * cancel and fire events and read and move ``now`` without a Python
 * attribute access, a tuple or a heapq call.
 *
 * The heap holds (when, seq, event) entries ordered by (when, seq); seq is
 * unique (the clock's counter), so the events fire in the order heapq's
 * heap gives them.  ``_heap`` reads as a list of those tuples and can be
 * assigned one (snapshots restore the clock so).
 *
 * Header only: every native module that schedules (emu.soc._mmio,
 * emu.cpu._core, emu.peripherals._cores) compiles these same steps; the
 * types are emu._clock's, found at import.  Only the C clock is driven
 * from C: a machine on emu.clock.Clock (the pure-Python reference) runs
 * the Python steps throughout.
 */
#ifndef EMU_CLOCK_H
#define EMU_CLOCK_H

#include "_pyhelp.h"

typedef struct ClockObject ClockObject;

typedef struct {
    PyObject_HEAD
    ClockObject *clock;
    PyObject *name, *fn;
    long long when;          /* valid when has */
    long long seq;
    int has;
} EventObject;

typedef struct { long long when, seq; EventObject *ev; } HEnt;

struct ClockObject {
    PyObject_HEAD
    long long now, next_deadline, seq, compact_at;
    HEnt *heap;
    Py_ssize_t n, cap;
    PyObject *on_earlier;    /* NULL: None */
    PyObject *events;        /* dict name -> Event */
    PyObject *firing;        /* NULL: None */
    PyObject *dict;          /* other attributes */
};

#define CLK_NEVER (1LL << 62)

/* The two types, defined by emu/_clock.c; a module that includes this
 * header finds them at its import (clock_import).  The pointers are the
 * module's own, defined once in it by CLOCK_TYPES_DEFINE (constant after
 * import). */
EMU_INTERNAL extern PyTypeObject *ClockType_p, *EventType_p;
EMU_INTERNAL extern PyObject *clock_str_now;        /* "now", for a Python clock */
#define CLOCK_TYPES_DEFINE \
    PyTypeObject *ClockType_p, *EventType_p; \
    PyObject *clock_str_now;

static inline int clock_import(void) {
    if ((clock_str_now = PyUnicode_InternFromString("now")) == NULL)
        return -1;
    return (import_type("emu._clock", "Clock", &ClockType_p)
            || import_type("emu._clock", "Event", &EventType_p)) ? -1 : 0;
}

static inline int is_clock(PyObject *o) { return ClockType_p && Py_IS_TYPE(o, ClockType_p); }
static inline int is_event(PyObject *o) { return EventType_p && Py_IS_TYPE(o, EventType_p); }

static inline int hent_less(const HEnt *a, const HEnt *b) {
    return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static inline void heap_down(HEnt *h, Py_ssize_t n, Py_ssize_t i) {
    HEnt x = h[i];
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hent_less(&h[c + 1], &h[c]))
            c++;
        if (!hent_less(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static inline void heap_up(HEnt *h, Py_ssize_t i) {
    HEnt x = h[i];
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!hent_less(&x, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static inline void heap_heapify(HEnt *h, Py_ssize_t n) {
    for (Py_ssize_t i = n / 2 - 1; i >= 0; i--)
        heap_down(h, n, i);
}

static inline int clk_push(ClockObject *c, long long when, long long seq, EventObject *ev) {
    if (c->n == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 64;
        HEnt *nh = PyMem_Realloc(c->heap, (size_t)cap * sizeof(HEnt));
        if (nh == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->heap = nh;
        c->cap = cap;
    }
    Py_INCREF(ev);
    c->heap[c->n].when = when;
    c->heap[c->n].seq = seq;
    c->heap[c->n].ev = ev;
    heap_up(c->heap, c->n++);
    return 0;
}

/* the top removed; its event returned (a reference the caller owns) */
static inline EventObject *clk_pop(ClockObject *c) {
    EventObject *ev = c->heap[0].ev;
    if (--c->n > 0) {
        c->heap[0] = c->heap[c->n];
        heap_down(c->heap, c->n, 0);
    }
    return ev;
}

static inline int hent_live(const HEnt *e) {
    return e->ev->seq == e->seq && e->ev->has && e->ev->when == e->when;
}

/* Clock._compact */
static inline void clk_compact(ClockObject *c) {
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < c->n; i++) {
        if (hent_live(&c->heap[i]))
            c->heap[j++] = c->heap[i];
        else
            Py_DECREF(c->heap[i].ev);
    }
    c->n = j;
    heap_heapify(c->heap, c->n);
    c->compact_at = 2 * c->n > 256 ? 2 * c->n : 256;
}

/* Clock._clean */
static inline void clk_clean(ClockObject *c) {
    while (c->n && !hent_live(&c->heap[0]))
        Py_DECREF(clk_pop(c));
    c->next_deadline = c->n ? c->heap[0].when : CLK_NEVER;
}

/* Push ev at (when, seq) and move the deadline; 0 or -1 (the
 * earlier-deadline callback's error) */
static inline int clk_schedule_seq(EventObject *ev, long long when, long long seq) {
    ClockObject *c = ev->clock;
    ev->seq = seq;
    ev->when = when;
    ev->has = 1;
    if (clk_push(c, when, seq, ev))
        return -1;
    if (c->n > c->compact_at)
        clk_compact(c);
    if (when < c->next_deadline) {
        c->next_deadline = when;
        if (c->on_earlier != NULL) {
            PyObject *cb = c->on_earlier;
            Py_INCREF(cb);
            PyObject *x = PyObject_CallNoArgs(cb);
            Py_DECREF(cb);
            if (x == NULL)
                return -1;
            Py_DECREF(x);
        }
    }
    return 0;
}

/* Event.schedule_at; 0 or -1 (the earlier-deadline callback's error) */
static inline int clk_schedule(EventObject *ev, long long when) {
    ClockObject *c = ev->clock;
    if (when < c->now)
        when = c->now;
    if (ev->has && ev->when == when)
        return 0;        /* already due then: keep its place among same-time events */
    c->seq++;
    return clk_schedule_seq(ev, when, c->seq);
}

#define CLK_FIRST_KEYS (1LL << 61)

/* Event.schedule_first: before every schedule_at event of that tick, in
 * the order of the keys; 0 or -1 */
static inline int clk_schedule_first(EventObject *ev, long long when, long long key) {
    ClockObject *c = ev->clock;
    if (when < c->now)
        when = c->now;
    return clk_schedule_seq(ev, when, key - 2 * CLK_FIRST_KEYS);
}

static inline void clk_cancel(EventObject *ev) {
    ev->has = 0;
    ev->seq = -1;
}

/* Clock.run_due: the count fired, -1 on an event's error (raised on) */
static inline long clk_run_due(ClockObject *c) {
    long n = 0;
    while (c->n) {
        HEnt *top = &c->heap[0];
        if (!hent_live(top)) {
            Py_DECREF(clk_pop(c));
            continue;
        }
        if (top->when > c->now)
            break;
        long long when = top->when;
        EventObject *ev = clk_pop(c);
        ev->has = 0;
        PyObject *w = PyLong_FromLongLong(when);
        if (w == NULL) {
            Py_DECREF(ev);
            return -1;
        }
        Py_XSETREF(c->firing, w);
        PyObject *fn = ev->fn;
        Py_INCREF(fn);
        PyObject *res = PyObject_CallNoArgs(fn);
        Py_DECREF(fn);
        Py_DECREF(ev);
        Py_CLEAR(c->firing);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
        n++;
    }
    c->next_deadline = c->n ? c->heap[0].when : CLK_NEVER;
    if (c->next_deadline != CLK_NEVER)
        clk_clean(c);
    return n;
}

/* clock.now, from the C clock's field (or a Python clock's attribute) */
static inline int clock_get_now(PyObject *clock, long long *out) {
    if (is_clock(clock)) {
        *out = ((ClockObject *)clock)->now;
        return 0;
    }
    return attr_ll(clock, clock_str_now, out);
}

static inline int clock_set_now(PyObject *clock, long long v) {
    if (is_clock(clock)) {
        ((ClockObject *)clock)->now = v;
        return 0;
    }
    return set_ll(clock, clock_str_now, v);
}

#endif
