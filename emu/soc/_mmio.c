/*
 * Native uc_mmio_map callbacks for the peripheral bus (emu/soc/bus.py).
 *
 * A firmware busy-polling a register spends most of its time crossing from
 * Unicorn into Python.  Registered through ctypes, every access pays for
 * libffi's closure trampoline, ctypes' argument conversion and a Python
 * frame that only counts the access and looks the offset up.  Here Unicorn
 * calls C directly, and C does that part:
 *
 *   - counts the access (Slot.count);
 *   - an aligned word read whose offset is in ``untimed`` calls
 *     ``fn(offset)`` (a model's read handler, value independent of time);
 *     one in ``timed`` brings the clock up to the access and then calls
 *     ``fn(offset)``.  The clock sync is CortexM.sync_time written in C when
 *     the slot knows where the native cycle counter lives (``cycles_addr``):
 *       now = cpu._cycle_base_ticks + (cycles - cpu._cycle_base) * cycle_ticks
 *       if now > clock.now: clock.now = now
 *     else it calls ``sync()``;
 *   - any other read syncs the clock and calls ``read(offset, size)``, every
 *     write syncs it and calls ``write(offset, size, value)`` (Python:
 *     dispatch to the model, errors).
 *
 * The dictionaries are owned by bus.py, which fills them; this file has no
 * knowledge of peripherals.  An exception escaping a handler is passed to
 * ``error(offset, exception)`` (which logs it with the guest PC) and the
 * read returns 0: nothing propagates into Unicorn.  Each handler runs
 * exactly once per guest access, as in the Python path.
 *
 * The callbacks run inside uc_emu_start, which the unicorn binding calls
 * through ctypes with the GIL released: they take the GIL.  The library
 * does not link against libunicorn; Python passes uc_mmio_map's address.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

typedef uint64_t (*mmio_read_cb)(void *uc, uint64_t offset, unsigned size, void *user_data);
typedef void (*mmio_write_cb)(void *uc, uint64_t offset, unsigned size, uint64_t value,
                              void *user_data);
typedef int (*uc_mmio_map_fn)(void *uc, uint64_t address, size_t size, mmio_read_cb read_cb,
                              void *user_data_read, mmio_write_cb write_cb,
                              void *user_data_write);

typedef struct {
    PyObject_HEAD
    PyObject *untimed;   /* dict: offset -> fn(offset) */
    PyObject *timed;     /* dict: offset -> fn(offset), after sync() */
    PyObject *sync;      /* sync() */
    PyObject *read;      /* read(offset, size) -> int */
    PyObject *write;     /* write(offset, size, value) */
    PyObject *error;     /* error(offset, exception) */
    PyObject *cpu;       /* for the C clock sync: _cycle_base_ticks, _cycle_base */
    PyObject *clock;     /* clock.now */
    const volatile uint64_t *cycles;   /* the native block hook's cycle counter, or NULL */
    long long cycle_ticks;
    unsigned long long count;
} Slot;

static PyObject *str_base_ticks, *str_base_cycles, *str_now;

/* CortexM.sync_time in C; 0 on success, -1 with an exception set. */
static int sync_native(Slot *s) {
    PyObject *bt = PyObject_GetAttr(s->cpu, str_base_ticks);
    if (bt == NULL)
        return -1;
    long long base_ticks = PyLong_AsLongLong(bt);
    Py_DECREF(bt);
    PyObject *bc = PyObject_GetAttr(s->cpu, str_base_cycles);
    if (bc == NULL)
        return -1;
    long long base_cycles = PyLong_AsLongLong(bc);
    Py_DECREF(bc);
    PyObject *cur = PyObject_GetAttr(s->clock, str_now);
    if (cur == NULL)
        return -1;
    long long now_prev = PyLong_AsLongLong(cur);
    Py_DECREF(cur);
    if (PyErr_Occurred())
        return -1;
    long long now = base_ticks + ((long long)*s->cycles - base_cycles) * s->cycle_ticks;
    if (now > now_prev) {
        PyObject *n = PyLong_FromLongLong(now);
        if (n == NULL)
            return -1;
        int err = PyObject_SetAttr(s->clock, str_now, n);
        Py_DECREF(n);
        return err;
    }
    return 0;
}

static void report(Slot *s, PyObject *off) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *r = NULL;
    if (s->error != NULL)
        r = PyObject_CallFunctionObjArgs(s->error, off ? off : Py_None,
                                         value ? value : Py_None, NULL);
    if (r == NULL)
        PyErr_WriteUnraisable(s->error);
    Py_XDECREF(r);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* Bring the clock up to the access: in C, or through sync(). */
static int do_sync(Slot *s) {
    if (s->cycles != NULL)
        return sync_native(s);
    PyObject *t = PyObject_CallNoArgs(s->sync);
    Py_XDECREF(t);
    return t == NULL ? -1 : 0;
}

static uint64_t slot_read(void *uc, uint64_t offset, unsigned size, void *user_data) {
    Slot *s = (Slot *)user_data;
    uint64_t v = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    s->count++;
    PyObject *off = PyLong_FromUnsignedLongLong(offset);
    if (off == NULL) {
        report(s, NULL);
        goto out;
    }
    PyObject *fn = NULL, *r = NULL;
    if (size == 4 && s->untimed != NULL && s->timed != NULL) {
        fn = PyDict_GetItemWithError(s->untimed, off);
        if (fn == NULL && !PyErr_Occurred()) {
            fn = PyDict_GetItemWithError(s->timed, off);
            if (fn != NULL) {
                Py_INCREF(fn);
                if (do_sync(s)) {
                    Py_DECREF(fn);
                    report(s, off);
                    goto done;
                }
            }
        } else if (fn != NULL) {
            Py_INCREF(fn);
        }
        if (PyErr_Occurred()) {
            report(s, off);
            goto done;
        }
    }
    if (fn != NULL) {
        r = PyObject_Vectorcall(fn, &off, 1, NULL);
        Py_DECREF(fn);
        if (r != NULL) {
            v = PyLong_AsUnsignedLongLongMask(r) & 0xFFFFFFFFu;
        }
    } else if (s->read != NULL) {
        if (do_sync(s)) {
            report(s, off);
            goto done;
        }
        PyObject *args[2] = {off, PyLong_FromUnsignedLong(size)};
        if (args[1] != NULL) {
            r = PyObject_Vectorcall(s->read, args, 2, NULL);
            Py_DECREF(args[1]);
            if (r != NULL)
                v = PyLong_AsUnsignedLongLongMask(r);
        }
    }
    if (r == NULL || PyErr_Occurred()) {
        v = 0;
        report(s, off);
    }
    Py_XDECREF(r);
done:
    Py_DECREF(off);
out:
    PyGILState_Release(g);
    return v;
}

static void slot_write(void *uc, uint64_t offset, unsigned size, uint64_t value,
                       void *user_data) {
    Slot *s = (Slot *)user_data;
    PyGILState_STATE g = PyGILState_Ensure();
    s->count++;
    if (s->write != NULL && do_sync(s)) {
        report(s, NULL);
    } else if (s->write != NULL) {
        PyObject *args[3] = {PyLong_FromUnsignedLongLong(offset), PyLong_FromUnsignedLong(size),
                             PyLong_FromUnsignedLongLong(value)};
        if (args[0] && args[1] && args[2]) {
            PyObject *r = PyObject_Vectorcall(s->write, args, 3, NULL);
            if (r == NULL)
                report(s, args[0]);
            Py_XDECREF(r);
        } else {
            report(s, NULL);
        }
        Py_XDECREF(args[0]);
        Py_XDECREF(args[1]);
        Py_XDECREF(args[2]);
    }
    PyGILState_Release(g);
}

static int Slot_init(Slot *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"untimed", "timed", "sync", "read", "write", "error", "cpu",
                             "clock", "cycles_addr", "cycle_ticks", NULL};
    PyObject *untimed, *timed, *sync, *read, *write, *error, *cpu = Py_None, *clock = Py_None;
    unsigned long long cycles_addr = 0;
    long long cycle_ticks = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!OOOO|OOKL", kwlist, &PyDict_Type,
                                     &untimed, &PyDict_Type, &timed, &sync, &read, &write,
                                     &error, &cpu, &clock, &cycles_addr, &cycle_ticks))
        return -1;
    if (cycles_addr != 0 && (cpu == Py_None || clock == Py_None || cycle_ticks <= 0)) {
        PyErr_SetString(PyExc_ValueError, "cycles_addr needs cpu, clock and cycle_ticks");
        return -1;
    }
    self->cycles = (const volatile uint64_t *)(uintptr_t)cycles_addr;
    self->cycle_ticks = cycle_ticks;
    Py_INCREF(cpu); Py_XSETREF(self->cpu, cpu);
    Py_INCREF(clock); Py_XSETREF(self->clock, clock);
    Py_INCREF(untimed); Py_XSETREF(self->untimed, untimed);
    Py_INCREF(timed); Py_XSETREF(self->timed, timed);
    Py_INCREF(sync); Py_XSETREF(self->sync, sync);
    Py_INCREF(read); Py_XSETREF(self->read, read);
    Py_INCREF(write); Py_XSETREF(self->write, write);
    Py_INCREF(error); Py_XSETREF(self->error, error);
    return 0;
}

static int Slot_traverse(Slot *self, visitproc visit, void *arg) {
    Py_VISIT(self->untimed);
    Py_VISIT(self->timed);
    Py_VISIT(self->sync);
    Py_VISIT(self->read);
    Py_VISIT(self->write);
    Py_VISIT(self->error);
    Py_VISIT(self->cpu);
    Py_VISIT(self->clock);
    return 0;
}

static int Slot_clear(Slot *self) {
    Py_CLEAR(self->untimed);
    Py_CLEAR(self->timed);
    Py_CLEAR(self->sync);
    Py_CLEAR(self->read);
    Py_CLEAR(self->write);
    Py_CLEAR(self->error);
    Py_CLEAR(self->cpu);
    Py_CLEAR(self->clock);
    self->cycles = NULL;
    return 0;
}

static void Slot_dealloc(Slot *self) {
    PyObject_GC_UnTrack(self);
    Slot_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef Slot_members[] = {
    {"count", T_ULONGLONG, offsetof(Slot, count), 0, "guest accesses so far"},
    {NULL}
};

static PyTypeObject SlotType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.soc._mmio.Slot",
    .tp_doc = "One peripheral slot's handlers for the native MMIO callbacks.",
    .tp_basicsize = sizeof(Slot),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Slot_init,
    .tp_dealloc = (destructor)Slot_dealloc,
    .tp_traverse = (traverseproc)Slot_traverse,
    .tp_clear = (inquiry)Slot_clear,
    .tp_members = Slot_members,
};

/* map(uc_mmio_map_address, uc_handle, base, size, slot) -> uc_err */
static PyObject *mmio_map(PyObject *module, PyObject *args) {
    unsigned long long fnaddr, uch, base, size;
    PyObject *slot;
    if (!PyArg_ParseTuple(args, "KKKKO!", &fnaddr, &uch, &base, &size, &SlotType, &slot))
        return NULL;
    uc_mmio_map_fn map = (uc_mmio_map_fn)(uintptr_t)fnaddr;
    int err = map((void *)(uintptr_t)uch, base, (size_t)size, slot_read, slot, slot_write, slot);
    return PyLong_FromLong(err);
}

static PyMethodDef methods[] = {
    {"map", mmio_map, METH_VARARGS,
     "map(uc_mmio_map_address, uc_handle, base, size, slot) -> uc_err: register the "
     "native callbacks for one slot (keep the Slot alive as long as the engine)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_mmio",
    "Native uc_mmio_map callbacks for the peripheral bus.", -1, methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__mmio(void) {
    if (PyType_Ready(&SlotType) < 0)
        return NULL;
    str_base_ticks = PyUnicode_InternFromString("_cycle_base_ticks");
    str_base_cycles = PyUnicode_InternFromString("_cycle_base");
    str_now = PyUnicode_InternFromString("now");
    if (!str_base_ticks || !str_base_cycles || !str_now)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SlotType);
    if (PyModule_AddObject(m, "Slot", (PyObject *)&SlotType) < 0) {
        Py_DECREF(&SlotType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
