/*
 * emu.peripherals._cores: the helpers the cores share, and the module (see
 * _cores.h).
 */
#include "_cores.h"

CLOCK_TYPES_DEFINE
CELLS_TYPE_DEFINE

#define CORES_NAME_DEF(var, text) PyObject *var;
CORES_NAMES(CORES_NAME_DEF)

/* values[off] of a model's ``values`` dict, as a long long */
int values_ll(PyObject *values, long off, long long *v) {
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

int values_set(PyObject *values, long off, long long v) {
    PyObject *key = PyLong_FromLong(off), *x = PyLong_FromLongLong(v);
    int err = key == NULL || x == NULL || PyDict_SetItem(values, key, x);
    Py_XDECREF(key);
    Py_XDECREF(x);
    return err ? -1 : 0;
}

/* the model's ``values`` (a new reference), a dict */
PyObject *model_values(PyObject *model) {
    PyObject *d = PyObject_GetAttr(model, str_values);
    if (d != NULL && !PyDict_Check(d)) {
        Py_DECREF(d);
        PyErr_Format(PyExc_TypeError, "%s: values is not a dict", Py_TYPE(model)->tp_name);
        return NULL;
    }
    return d;
}



/* A W_CALL op's fn(offset, value): the two arguments, or -1 with TypeError */
int call_args(PyObject *const *args, Py_ssize_t nargs, const char *name, long *off,
                     unsigned long long *value) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(offset, value)", name);
        return -1;
    }
    *off = PyLong_AsLong(args[0]);
    *value = PyLong_AsUnsignedLongLongMask(args[1]);
    return PyErr_Occurred() ? -1 : 0;
}



/* A model's fire, the line step for one event: NrfPeripheral.update_irq -> _set_irq */
int cells_update_irq(PyObject *model, Cells *c) {
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

static struct PyModuleDef cores_module = {
    PyModuleDef_HEAD_INIT, "_cores",
    "Peripherals' hot steps in C: RtcCore, TimerCore, WdtCore (emu/peripherals/_cores.h).",
    -1, NULL, NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__cores(void) {
    CORES_NAMES(NAME_INTERN_NULL)
    if (clock_import() || cells_import())
        return NULL;
    PyObject *m = PyModule_Create(&cores_module);
    if (m == NULL)
        return NULL;
    PyTypeObject *types[] = {&RtcCoreType, &TimerCoreType, &WdtCoreType};
    const char *names[] = {"RtcCore", "TimerCore", "WdtCore"};
    if (add_types(m, types, names, 3)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
