/*
 * FlashGuard: CPU stores into read-only flash, dropped without Python.
 *
 * Flash is mapped read/execute; a store there reaches Unicorn's
 * UC_HOOK_MEM_WRITE_PROT hooks.  When the NVMC is not in write mode the
 * silicon ignores the store; this hook (registered before the Python one
 * in CortexM) drops it, returning true so Unicorn goes on, and counts it.
 * It reads the NVMC's CONFIG from the model itself (``nvmc.values[off]``),
 * so there is no copy of that state to keep in step.  The first dropped
 * store calls ``first(address)`` (the CPU logs it with the guest PC).  In
 * write mode, or before a source is set, it returns false and the Python
 * hook decides (the store then goes through the NVMC model).
 *
 * A store it lets go on (true) leaves the engine's IT state as it was
 * before Unicorn called the hook: Unicorn syncs the CPU state to the
 * storing instruction first (cpu_restore_state, for the PC), and that
 * also sets the IT bits to that instruction's (a conditional store in an
 * IT block: nonzero), while the translated code keeps them zero inside a
 * block and writes them back only when the block ends in an IT block.
 * The next block would be looked up, and translated, with the stale bits:
 * its first instructions conditional on the IT block's condition (Zephyr's
 * z_impl_k_queue_get: "it eq; streq" into a page the stack guard cuts,
 * then the callee's "push {r4, lr}" skipped).  So the hook puts them back
 * to zero (EPSR = T only; ``install``'s uc_reg_write and EPSR id), as
 * CortexM.resume_after_access_hook does for the Python hooks.
 */
#include "_core.h"
typedef struct {
    PyObject_HEAD
    PyObject *obj;      /* the NVMC model, or NULL */
    PyObject *key;      /* CONFIG's offset */
    PyObject *first;    /* first(address) */
    unsigned long long count;
    uint64_t below;     /* only stores below this address are flash's (set_below);
                         * RAM pages write-protected by the MPU go to Python */
    /* the MPU's stores into RAM pages a region boundary cuts through
     * (set_mpu): one byte of access bits (R=1, W=2, X=4) per 32-byte granule
     * of RAM, for the current privilege; an allowed store is done here into
     * the RAM's host memory, any other goes on to Python (a fault) */
    PyObject *mpu_perm; /* bytes, or NULL */
    unsigned char *mpu_host;
    uint64_t mpu_base, mpu_size;
    unsigned long long mpu_stores;
    uc_reg_fn reg_write;   /* uc_reg_write, to zero the IT bits (install) */
    int epsr_id;
} FlashGuard;

/* the store goes on: the IT bits back to what the running block keeps */
static inline int guard_go_on(FlashGuard *g, void *uc) {
    if (g->reg_write != NULL) {
        uint64_t t = 1u << 24;                          /* EPSR: T, IT = 0 */
        g->reg_write(uc, g->epsr_id, &t);
    }
    return 1;
}

static int guard_hook(void *uc, int type, uint64_t address, int size, int64_t value,
                      void *user_data) {
    FlashGuard *g = (FlashGuard *)user_data;
    int drop = 0;
    if (g->mpu_perm != NULL && (!g->below || address < g->below))
        return 0;           /* the MPU is on: Python asks it before the NVMC */
    if (g->below && address >= g->below) {
        if (g->mpu_perm == NULL || size <= 0 || address < g->mpu_base
            || address + (uint64_t)size > g->mpu_base + g->mpu_size)
            return 0;
        const unsigned char *perm = (const unsigned char *)PyBytes_AS_STRING(g->mpu_perm);
        uint64_t off = address - g->mpu_base;
        for (uint64_t k = off >> 5; k <= (off + (uint64_t)size - 1) >> 5; k++)
            if (!(perm[k] & 2))
                return 0;                               /* forbidden: Python faults */
        for (int i = 0; i < size; i++)                  /* little-endian store */
            g->mpu_host[off + i] = (unsigned char)((uint64_t)value >> (8 * i));
        g->mpu_stores++;
        return guard_go_on(g, uc);
    }
    PyGILState_STATE st = PyGILState_Ensure();
    if (g->obj != NULL) {
        PyObject *d = NULL, *x = NULL;
        if (dict_attr_get(g->obj, str_values, g->key, &d, &x) == 0) {
            unsigned long cfg = PyLong_AsUnsignedLongMask(x);
            Py_DECREF(d);
            drop = !PyErr_Occurred() && (cfg & 3) != 1;
        }
        if (PyErr_Occurred()) {
            PyErr_WriteUnraisable(g->obj);
            drop = 0;   /* not reached by firmware: error path: the NVMC's CONFIG unreadable */
        }
        if (drop && g->count++ == 0 && g->first != NULL) {
            PyObject *r = PyObject_CallFunction(g->first, "K", (unsigned long long)address);
            if (r == NULL)
                PyErr_WriteUnraisable(g->first);
            Py_XDECREF(r);
        }
    }
    PyGILState_Release(st);
    return drop ? guard_go_on(g, uc) : 0;
}

static PyObject *FlashGuard_install(FlashGuard *g, PyObject *args) {
    unsigned long long fn, uch, type, reg_write = 0, begin = 1, end = 0;
    int epsr_id = 0;
    if (!PyArg_ParseTuple(args, "KKK|KiKK", &fn, &uch, &type, &reg_write, &epsr_id, &begin, &end))
        return NULL;
    g->reg_write = (uc_reg_fn)(uintptr_t)reg_write;
    g->epsr_id = epsr_id;
    size_t hh = 0;
    int err = ((uc_hook_add_fn)(uintptr_t)fn)((void *)(uintptr_t)uch, &hh, (int)type,
                                              (void *)guard_hook, g, (uint64_t)begin,
                                              (uint64_t)end);
    return Py_BuildValue("iK", err, (unsigned long long)hh);
}

static PyObject *FlashGuard_set_source(FlashGuard *g, PyObject *args) {
    PyObject *obj, *key, *first;
    if (!PyArg_ParseTuple(args, "OOO", &obj, &key, &first))
        return NULL;
    Py_INCREF(obj); Py_XSETREF(g->obj, obj);
    Py_INCREF(key); Py_XSETREF(g->key, key);
    Py_INCREF(first); Py_XSETREF(g->first, first);
    Py_RETURN_NONE;
}

static PyObject *FlashGuard_set_mpu(FlashGuard *g, PyObject *args) {
    unsigned long long host, base, size;
    PyObject *perm;
    if (!PyArg_ParseTuple(args, "KKKO", &host, &base, &size, &perm))
        return NULL;
    if (perm == Py_None) {
        Py_CLEAR(g->mpu_perm);
        Py_RETURN_NONE;
    }
    if (!PyBytes_Check(perm) || (uint64_t)PyBytes_GET_SIZE(perm) < (size + 31) / 32) {
        PyErr_SetString(PyExc_ValueError, "set_mpu needs bytes: one per 32-byte granule");
        return NULL;
    }
    Py_INCREF(perm);
    Py_XSETREF(g->mpu_perm, perm);
    g->mpu_host = (unsigned char *)(uintptr_t)host;
    g->mpu_base = base;
    g->mpu_size = size;
    Py_RETURN_NONE;
}

static int FlashGuard_traverse(FlashGuard *g, visitproc visit, void *arg) {
    Py_VISIT(g->mpu_perm);
    Py_VISIT(g->obj);
    Py_VISIT(g->key);
    Py_VISIT(g->first);
    return 0;
}

static int FlashGuard_clear(FlashGuard *g) {
    Py_CLEAR(g->mpu_perm);
    Py_CLEAR(g->obj);
    Py_CLEAR(g->key);
    Py_CLEAR(g->first);
    return 0;
}

static void FlashGuard_dealloc(FlashGuard *g) {
    PyObject_GC_UnTrack(g);
    FlashGuard_clear(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *FlashGuard_set_below(FlashGuard *g, PyObject *args) {
    unsigned long long below;
    if (!PyArg_ParseTuple(args, "K", &below))
        return NULL;
    g->below = below;
    Py_RETURN_NONE;
}

static PyMethodDef FlashGuard_methods[] = {
    {"set_mpu", (PyCFunction)FlashGuard_set_mpu, METH_VARARGS,
     "set_mpu(host_address, ram_base, ram_size, perms|None): the MPU's RAM stores in C"},
    {"set_below", (PyCFunction)FlashGuard_set_below, METH_VARARGS,
     "set_below(address): only stores below address are looked at (0: all)"},
    {"install", (PyCFunction)FlashGuard_install, METH_VARARGS,
     "install(uc_hook_add_address, uc_handle, UC_HOOK_MEM_WRITE_PROT[, uc_reg_write_address, "
     "UC_ARM_REG_EPSR[, begin, end]]) -> (uc_err, hook handle) (keep the guard alive as long "
     "as the engine; with uc_reg_write a store let go on leaves the IT bits zero)"},
    {"set_source", (PyCFunction)FlashGuard_set_source, METH_VARARGS,
     "set_source(nvmc, config_offset, first): drop stores while nvmc.values[config] & 3 != 1"},
    {NULL}
};

static PyMemberDef FlashGuard_members[] = {
    {"count", T_ULONGLONG, offsetof(FlashGuard, count), 0, "stores dropped so far"},
    {"mpu_stores", T_ULONGLONG, offsetof(FlashGuard, mpu_stores), 0,
     "stores into MPU-cut RAM pages done in C"},
    {NULL}
};

PyTypeObject FlashGuardType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.cpu._core.FlashGuard",
    .tp_doc = "Drops CPU stores into flash while the NVMC is read-only (see _mmio.c).",
    .tp_basicsize = sizeof(FlashGuard),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)FlashGuard_dealloc,
    .tp_traverse = (traverseproc)FlashGuard_traverse,
    .tp_clear = (inquiry)FlashGuard_clear,
    .tp_methods = FlashGuard_methods,
    .tp_members = FlashGuard_members,
};

