/*
 * emu.soc._mmio: the register-access fabric in C (see _fabric.h for the
 * whole of it).  This file is the module: uc_mmio_map's registration of a
 * slot's callbacks, slot_replay's address for the block hook, the op kinds
 * for Python's check, and the types of _cells.c, _slot.c and _streams.c.
 */
#include "_fabric.h"

CLOCK_TYPES_DEFINE
CELLS_TYPE_DEFINE

static PyObject *mmio_map(PyObject *module, PyObject *args) {
    unsigned long long fnaddr, uch, base, size;
    PyObject *slot;
    if (!PyArg_ParseTuple(args, "KKKKO!", &fnaddr, &uch, &base, &size, &SlotType, &slot))
        return NULL;
    uc_mmio_map_fn map = (uc_mmio_map_fn)(uintptr_t)fnaddr;
    int err = map((void *)(uintptr_t)uch, base, (size_t)size, slot_read, slot, slot_write, slot);
    return PyLong_FromLong(err);
}

static PyObject *mmio_replay_address(PyObject *module, PyObject *noargs) {
    return PyLong_FromVoidPtr((void *)&slot_replay);
}

/* {name: number} of every op kind and write mode: emu/native.py compares
 * them with emu/soc/ops.py's when it loads this module */
static PyObject *op_kinds(void) {
    PyObject *d = PyDict_New();
#define OP_KIND_ITEM(name, value) \
    if (d != NULL) { \
        PyObject *v = PyLong_FromLong(value); \
        if (v == NULL || PyDict_SetItemString(d, #name, v)) \
            Py_CLEAR(d); \
        Py_XDECREF(v); \
    }
    OP_KINDS(OP_KIND_ITEM)
#undef OP_KIND_ITEM
    return d;
}

static PyMethodDef methods[] = {
    {"replay_address", mmio_replay_address, METH_NOARGS,
     "replay_address() -> the address of slot_replay (for the block hook's loop skip)"},
    {"map", mmio_map, METH_VARARGS,
     "map(uc_mmio_map_address, uc_handle, base, size, slot) -> uc_err: register the "
     "native callbacks for one slot (keep the Slot alive as long as the engine)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_mmio",
    "The register-access fabric in C: native uc_mmio_map callbacks, the op interpreter, "
    "Cells and streams (emu/soc/_fabric.h).", -1, methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__mmio(void) {
    if (clock_import() || slot_intern() || ops_intern())
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    PyTypeObject *types[] = {&SlotType, &CellsType, &StreamSetType};
    const char *names[] = {"Slot", "Cells", "StreamSet"};
    PyObject *kinds = op_kinds();
    if (kinds == NULL || PyModule_AddObject(m, "OP_KINDS", kinds) < 0) {
        Py_XDECREF(kinds);
        Py_DECREF(m);
        return NULL;
    }
    if (add_types(m, types, names, 3)) {
        Py_DECREF(m);
        return NULL;
    }
    CellsType_p = &CellsType;
    return m;
}
