/*
 * WdtCore: the watchdog's steps at the CPU's sleep and wake-up without
 * Python (cpu_sleep below).  Its reloads are a bus op now (FEED,
 * emu/soc/_ops.c: on the model's Cells, without the GIL, so that a loop
 * that feeds the dog may be counted instead of run).
 */
#include "_cores.h"
typedef struct {
    PyObject_HEAD
    PyObject *model;     /* the Wdt */
} WdtCore;


static int WdtCore_init(WdtCore *r, PyObject *args, PyObject *kwds) {
    PyObject *model;
    if (!PyArg_ParseTuple(args, "O", &model))
        return -1;
    Py_INCREF(model); Py_XSETREF(r->model, model);
    return 0;
}

static int WdtCore_traverse(WdtCore *r, visitproc visit, void *arg) {
    Py_VISIT(r->model);
    return 0;
}

static int WdtCore_clear(WdtCore *r) {
    Py_CLEAR(r->model);
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
    {"cpu_sleep", (PyCFunction)WdtCore_cpu_sleep, METH_O,
     "cpu_sleep(asleep): Wdt._cpu_sleep (the model's _update_pause only when it acts)"},
    {NULL}
};

PyTypeObject WdtCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.peripherals._cores.WdtCore",
    .tp_doc = "The watchdog's steps at the CPU's sleep and wake-up in C.",
    .tp_basicsize = sizeof(WdtCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)WdtCore_init,
    .tp_dealloc = (destructor)WdtCore_dealloc,
    .tp_traverse = (traverseproc)WdtCore_traverse,
    .tp_clear = (inquiry)WdtCore_clear,
    .tp_methods = WdtCore_methods,
};

