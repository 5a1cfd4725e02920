/*
 * emu.peripherals._cores: peripherals' steps in C, the module's own header.
 *
 * A model whose own Python would run thousands of times an emulated second
 * has its hot steps written here again, beside it, with the same steps in
 * the same order; the model stays the reference (the pure-Python path runs
 * it, a subclass or a replaced method runs it), and the registry of twins
 * (emu/twins.py) pairs each C function with the method it stands for:
 *
 *   _rtc.c     RtcCore over emu/peripherals/rtc.py's Rtc
 *   _timer.c   TimerCore over emu/peripherals/timer.py's Timer
 *   _wdt.c     WdtCore over emu/peripherals/wdt.py's Wdt
 *   _cores.c   the helpers they share, and the module
 *
 * A core works on its model's own state: its Cells (emu.soc._mmio), its
 * ``values`` dict and attributes, and its clock event, which must be the C
 * clock's (emu._clock): the model asks for a core only on that clock.
 */
#ifndef EMU_PERIPHERALS_CORES_H
#define EMU_PERIPHERALS_CORES_H

#include "../_pyhelp.h"
#include "../_clock.h"
#include "../soc/_cells.h"

#define CORES_NAMES(X) \
    X(str_event_listeners, "event_listeners") \
    X(str_on_event, "_on_event") \
    X(str_power_watch, "power_watch") \
    X(str_suppress_k, "suppress_k") \
    X(str_base_attr, "base") \
    X(str_chen, "_chen") \
    X(str_due, "_due") \
    X(str_map, "_map") \
    X(str_shorts, "shorts") \
    X(str_values, "values") \
    X(str_write_m, "write") \
    X(s_cpu_sleeping, "cpu_sleeping") \
    X(s_debug_halted, "debug_halted") \
    X(s_update_pause, "_update_pause") \
    X(str_deadline, "deadline") \
    X(str_paused_left, "paused_left") \
    X(str_running, "running") \
    X(str_irq, "irq") \
    X(str_set_irq, "set_irq") \
    X(str_soc, "soc")

#define CORES_NAME_EXTERN(var, text) EMU_INTERNAL extern PyObject *var;
CORES_NAMES(CORES_NAME_EXTERN)

/* the event's due tick as (has, when); a C clock's Event (see the header) */
static inline int ev_when(PyObject *ev, int *has, long long *when) {
    *has = ((EventObject *)ev)->has;
    *when = *has ? ((EventObject *)ev)->when : 0;
    return 0;
}

/* Event.cancel */
static inline int ev_cancel(PyObject *ev) {
    clk_cancel((EventObject *)ev);
    return 0;
}

/* Event.schedule_at */
static inline int ev_schedule_at(PyObject *ev, long long when) {
    return clk_schedule((EventObject *)ev, when);
}

/* a core's (clock, event): the C clock and one of its events, else TypeError */
static inline int check_clock_event(PyObject *clock, PyObject *ev, const char *core) {
    if (!is_clock(clock) || !is_event(ev) || (PyObject *)((EventObject *)ev)->clock != clock) {
        PyErr_Format(PyExc_TypeError, "%s needs the C clock (emu._clock.Clock) and an event "
                     "of it", core);
        return -1;
    }
    return 0;
}

extern PyTypeObject RtcCoreType, TimerCoreType, WdtCoreType;

/* _cores.c */
EMU_INTERNAL int values_ll(PyObject *values, long off, long long *v);
EMU_INTERNAL int values_set(PyObject *values, long off, long long v);
EMU_INTERNAL PyObject *model_values(PyObject *model);
EMU_INTERNAL int call_args(PyObject *const *args, Py_ssize_t nargs, const char *name, long *off,
                           unsigned long long *value);
EMU_INTERNAL int cells_update_irq(PyObject *model, Cells *c);

#endif
