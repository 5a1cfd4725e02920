/*
 * emu.soc._mmio.Cells: the type (see _cells.h).
 */
#include "_fabric.h"

static int cells_index(PyObject *key, int *idx) {
    long off = PyLong_AsLong(key);
    if (off == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (off < 0x100 || off > 0x17C || (off & 3))
        return -1;
    *idx = (int)((off - 0x100) >> 2);
    return 0;
}

static Py_ssize_t Cells_len(Cells *c) {
    return __builtin_popcount(c->keys);
}

static PyObject *Cells_getitem(Cells *c, PyObject *key) {
    int i;
    if (cells_index(key, &i) || !((c->keys >> i) & 1)) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    return PyLong_FromLong((c->bits >> i) & 1);
}

static int Cells_setitem(Cells *c, PyObject *key, PyObject *v) {
    int i;
    if (cells_index(key, &i)) {
        if (v == NULL)
            PyErr_SetObject(PyExc_KeyError, key);
        else
            PyErr_Format(PyExc_KeyError, "%R is not an event register offset", key);
        return -1;
    }
    if (v == NULL) {                    /* del */
        if (!((c->keys >> i) & 1)) {
            PyErr_SetObject(PyExc_KeyError, key);
            return -1;
        }
        c->keys &= ~(1u << i);
        c->bits &= ~(1u << i);
        return 0;
    }
    int t = PyObject_IsTrue(v);
    if (t < 0)
        return -1;
    c->keys |= 1u << i;
    if (t)
        c->bits |= 1u << i;
    else
        c->bits &= ~(1u << i);
    return 0;
}

static int Cells_contains(Cells *c, PyObject *key) {
    int i;
    return cells_index(key, &i) == 0 && ((c->keys >> i) & 1);
}

/* [(offset, value)] in offset order; what = 0 keys, 1 values, 2 items */
static PyObject *cells_list(Cells *c, int what) {
    PyObject *l = PyList_New(0);
    for (int i = 0; l != NULL && i < 32; i++) {
        if (!((c->keys >> i) & 1))
            continue;
        PyObject *x = what == 0 ? PyLong_FromLong(0x100 + 4 * i)
                    : what == 1 ? PyLong_FromLong((c->bits >> i) & 1)
                    : Py_BuildValue("(ll)", 0x100 + 4 * i, (long)((c->bits >> i) & 1));
        if (x == NULL || PyList_Append(l, x)) {
            Py_XDECREF(x);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(x);
    }
    return l;
}

static PyObject *Cells_keys(Cells *c, PyObject *noargs) { return cells_list(c, 0); }
static PyObject *Cells_values(Cells *c, PyObject *noargs) { return cells_list(c, 1); }
static PyObject *Cells_items(Cells *c, PyObject *noargs) { return cells_list(c, 2); }

static PyObject *Cells_iter(Cells *c) {
    PyObject *l = cells_list(c, 0);
    if (l == NULL)
        return NULL;
    PyObject *it = PyObject_GetIter(l);
    Py_DECREF(l);
    return it;
}

static PyObject *Cells_copy(Cells *c, PyObject *noargs) {
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < 32; i++) {
        if (!((c->keys >> i) & 1))
            continue;
        PyObject *k = PyLong_FromLong(0x100 + 4 * i), *v = PyLong_FromLong((c->bits >> i) & 1);
        if (k == NULL || v == NULL || PyDict_SetItem(d, k, v))
            Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *Cells_get(Cells *c, PyObject *args) {
    PyObject *key, *dflt = Py_None;
    if (!PyArg_UnpackTuple(args, "get", 1, 2, &key, &dflt))
        return NULL;
    int i;
    if (cells_index(key, &i) || !((c->keys >> i) & 1)) {
        Py_INCREF(dflt);
        return dflt;
    }
    return PyLong_FromLong((c->bits >> i) & 1);
}

/* replace(mapping): the event registers become exactly those of mapping */
static PyObject *Cells_replace(Cells *c, PyObject *mapping) {
    PyObject *items = PyMapping_Items(mapping);
    if (items == NULL)
        return NULL;
    uint32_t keys = 0, bits = 0;
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *kv = PyList_GET_ITEM(items, j);
        int i, t;
        if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2
            || cells_index(PyTuple_GET_ITEM(kv, 0), &i)
            || (t = PyObject_IsTrue(PyTuple_GET_ITEM(kv, 1))) < 0) {
            Py_DECREF(items);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "event registers are at 0x100-0x17C");
            return NULL;
        }
        keys |= 1u << i;
        if (t)
            bits |= 1u << i;
    }
    Py_DECREF(items);
    c->keys = keys;
    c->bits = bits;
    Py_RETURN_NONE;
}

static PyObject *Cells_richcompare(PyObject *a, PyObject *b, int op) {
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *da = PyObject_TypeCheck(a, &CellsType) ? Cells_copy((Cells *)a, NULL)
                                                      : (Py_INCREF(a), a);
    PyObject *db = PyObject_TypeCheck(b, &CellsType) ? Cells_copy((Cells *)b, NULL)
                                                      : (Py_INCREF(b), b);
    PyObject *r = (da && db) ? PyObject_RichCompare(da, db, op) : NULL;
    Py_XDECREF(da);
    Py_XDECREF(db);
    return r;
}

static PyObject *Cells_repr(Cells *c) {
    PyObject *d = Cells_copy(c, NULL);
    if (d == NULL)
        return NULL;
    PyObject *r = PyObject_Repr(d);
    Py_DECREF(d);
    return r;
}

static PyMappingMethods Cells_as_mapping = {
    (lenfunc)Cells_len, (binaryfunc)Cells_getitem, (objobjargproc)Cells_setitem,
};
static PySequenceMethods Cells_as_sequence = {
    .sq_contains = (objobjproc)Cells_contains,
};

/* take_pending() -> (bytes, last TXD or -1): the bytes completed in C, emptied */
static PyObject *Cells_take_pending(Cells *c, PyObject *noargs) {
    PyObject *b = PyBytes_FromStringAndSize((const char *)c->pend, c->pend_n);
    if (b == NULL)
        return NULL;
    long long last = c->last_txd;
    c->pend_n = 0;
    c->last_txd = -1;
    Py_CLEAR(c->answers);
    c->ans_i = 0;
    PyObject *r = Py_BuildValue("(NL)", b, last);
    return r;
}

static int Cells_init(Cells *c, PyObject *args, PyObject *kwds) {
    if (!_PyArg_NoPositional("Cells", args) || !_PyArg_NoKeywords("Cells", kwds))
        return -1;
    c->last_txd = -1;
    return 0;
}

/* set_answers(bytes or None): what the device answers to the next bytes
 * streamed (None: 0xFF to each, without limit); streaming stops (the model
 * takes over) when they run out.  Cleared by take_pending(). */
static PyObject *Cells_set_answers(Cells *c, PyObject *a) {
    if (a != Py_None && !PyBytes_Check(a)) {
        PyErr_SetString(PyExc_TypeError, "answers must be bytes or None");
        return NULL;
    }
    Py_XSETREF(c->answers, a == Py_None ? NULL : Py_NewRef(a));
    c->ans_i = 0;
    Py_RETURN_NONE;
}

static void Cells_dealloc(Cells *c) {
    Py_CLEAR(c->answers);
    PyMem_RawFree(c->pend);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *Cells_level(Cells *c, PyObject *noargs) {
    return PyBool_FromLong((c->bits & c->keys & (uint32_t)c->inten) != 0);
}

static PyMethodDef Cells_methods[] = {
    {"level", (PyCFunction)Cells_level, METH_NOARGS, "any(event & INTEN bit): the line's level"},
    {"set_answers", (PyCFunction)Cells_set_answers, METH_O,
     "set_answers(bytes or None): the device's answers to the next streamed bytes"},
    {"take_pending", (PyCFunction)Cells_take_pending, METH_NOARGS,
     "(bytes completed in C and not yet given to the device, last TXD or -1)"},
    {"keys", (PyCFunction)Cells_keys, METH_NOARGS, "event offsets"},
    {"values", (PyCFunction)Cells_values, METH_NOARGS, "event values"},
    {"items", (PyCFunction)Cells_items, METH_NOARGS, "(offset, value) pairs"},
    {"copy", (PyCFunction)Cells_copy, METH_NOARGS, "the events as a dict"},
    {"get", (PyCFunction)Cells_get, METH_VARARGS, "get(offset, default=None)"},
    {"replace", (PyCFunction)Cells_replace, METH_O, "replace(mapping): set the events"},
    {NULL}
};

static PyMemberDef Cells_members[] = {
    {"inten", T_ULONGLONG, offsetof(Cells, inten), 0, "INTEN"},
    {"line", T_LONGLONG, offsetof(Cells, line), 0, "interrupt line level"},
    {"cell0", T_LONGLONG, offsetof(Cells, cell[0]), 0, NULL},
    {"cell1", T_LONGLONG, offsetof(Cells, cell[1]), 0, NULL},
    {"cell2", T_LONGLONG, offsetof(Cells, cell[2]), 0, NULL},
    {"cell3", T_LONGLONG, offsetof(Cells, cell[3]), 0, NULL},
    {"cell4", T_LONGLONG, offsetof(Cells, cell[4]), 0, NULL},
    {"cell5", T_LONGLONG, offsetof(Cells, cell[5]), 0, NULL},
    {"cell6", T_LONGLONG, offsetof(Cells, cell[6]), 0, NULL},
    {"cell7", T_LONGLONG, offsetof(Cells, cell[7]), 0, NULL},
    {NULL}
};

PyTypeObject CellsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.Cells",
    .tp_doc = "A peripheral's events, INTEN, interrupt line and model cells in C memory.",
    .tp_basicsize = sizeof(Cells),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Cells_init,
    .tp_dealloc = (destructor)Cells_dealloc,
    .tp_as_mapping = &Cells_as_mapping,
    .tp_as_sequence = &Cells_as_sequence,
    .tp_iter = (getiterfunc)Cells_iter,
    .tp_richcompare = Cells_richcompare,
    .tp_repr = (reprfunc)Cells_repr,
    .tp_methods = Cells_methods,
    .tp_members = Cells_members,
    .tp_hash = PyObject_HashNotImplemented,
};

