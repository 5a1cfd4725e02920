/*
 * WdtCore: the watchdog's reload (RR[n] written with 0x6E524635) without
 * Python, in the case Wdt.write does in its own few lines: RR[0] with only
 * RR[0] enabled in RREN, the watchdog running and not paused, its timeout
 * event armed: ``reloaded`` = 0 and ``deadline`` moved to now + (max(CRV,
 * 15) + 1) LFCLK periods (the event moves itself there when it comes).
 * wasp-os feeds the dog at every 1 kHz tick (970 writes an emulated
 * second).  And the writes _handle_rr returns from (a value other than the
 * reload, the dog not running, RR[n] not enabled in RREN): nothing to do
 * (the Adafruit bootloader writes all eight RR in its DFU-mode loop).  Any
 * other write goes to the model's write.
 */
#include "_cores.h"
typedef struct {
    PyObject_HEAD
    PyObject *model;     /* the Wdt */
    PyObject *ev;        /* its timeout Event */
    PyObject *clock;
    long long lfclk;
    unsigned long long fed, idle;
} WdtCore;


static PyObject *WdtCore_write_rr(WdtCore *r, PyObject *const *args, Py_ssize_t nargs) {
    long off;
    unsigned long long value;
    if (call_args(args, nargs, "write_rr", &off, &value))
        return NULL;
    if (off < 0x600 || off >= 0x620 || (off & 3))
        goto model;     /* not reached by firmware: the op is on RR[0..7] only */
    if ((value & 0xFFFFFFFFull) != 0x6E524635ull) {
        r->idle++;
        Py_RETURN_NONE;                        /* _handle_rr: not the reload value */
    }
    long long rren = 0, crv = 0, now = 0;
    PyObject *running = PyObject_GetAttr(r->model, str_running);
    if (running == NULL)
        return NULL;
    int run = PyObject_IsTrue(running);
    Py_DECREF(running);
    if (run < 0)
        return NULL;
    if (!run) {
        r->idle++;
        Py_RETURN_NONE;                        /* _handle_rr: not running */
    }
    PyObject *values = model_values(r->model);
    if (values == NULL)
        return NULL;
    int err = values_ll(values, 0x508, &rren) || values_ll(values, 0x504, &crv);
    Py_DECREF(values);
    if (err)
        return NULL;
    if (!((rren >> ((off - 0x600) >> 2)) & 1)) {
        r->idle++;
        Py_RETURN_NONE;                        /* _handle_rr: RR[n] not enabled */
    }
    if (off == 0x600 && (rren & 0xFF) == 1) {
        PyObject *paused = PyObject_GetAttr(r->model, str_paused_left);
        PyObject *when = PyObject_GetAttr(r->ev, str_when);
        if (paused == NULL || when == NULL) {
            Py_XDECREF(paused);
            Py_XDECREF(when);
            return NULL;
        }
        int fast = paused == Py_None && when != Py_None;
        Py_DECREF(paused);
        Py_DECREF(when);
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
model:
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
    {"idle", T_ULONGLONG, offsetof(WdtCore, idle), 0,
     "RR writes that reload nothing, done in C"},
    {NULL}
};

PyTypeObject WdtCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.peripherals._cores.WdtCore",
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

