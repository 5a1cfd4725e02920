/*
 * The MPU (emu/cpu/mpu.py) as exception entry and return in C need it:
 * Mpu.access for the stacking check (a frame the MPU forbids goes to the
 * Python, which raises MSTKERR), off_now, and sync's key: the page
 * protections are reapplied (Mpu.sync, Python) only when the privilege or
 * the MPU's being in force changed, as sync itself decides.  See _core.h.
 */
#include "_core.h"

static const int MPU_AP[8][2] = {{0, 0}, {3, 0}, {3, 1}, {3, 3}, {0, 0}, {1, 0}, {1, 1}, {1, 1}};

static int mpu_load(PyObject *mpu, MpuRegs *m) {
    if (attr_ll(mpu, str_mpu_ctrl, &m->ctrl))
        return -1;
    PyObject *rb = PyObject_GetAttr(mpu, str_rbar), *ra = rb ? PyObject_GetAttr(mpu, str_rasr) : NULL;
    int rc = -1;
    if (ra == NULL || !PyList_Check(rb) || !PyList_Check(ra) || PyList_GET_SIZE(rb) < 8
        || PyList_GET_SIZE(ra) < 8) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "the MPU's rbar and rasr: lists of 8");
        goto out;
    }
    for (int i = 0; i < 8; i++) {
        m->rbar[i] = (uint32_t)PyLong_AsUnsignedLongMask(PyList_GET_ITEM(rb, i));
        m->rasr[i] = (uint32_t)PyLong_AsUnsignedLongMask(PyList_GET_ITEM(ra, i));
    }
    rc = PyErr_Occurred() ? -1 : 0;
out:
    Py_XDECREF(rb);
    Py_XDECREF(ra);
    return rc;
}

/* Mpu.access: R|W|X (1|2|4) the regions allow at addr */
static int mpu_access(const MpuRegs *m, uint32_t addr, int privileged) {
    for (int i = 7; i >= 0; i--) {
        uint32_t rasr = m->rasr[i];
        if (!(rasr & 1))
            continue;
        int size_log = (int)((rasr >> 1) & 0x1F) + 1;
        if (size_log < 5)
            continue;
        uint64_t size = 1ULL << size_log;
        uint64_t base = (uint64_t)m->rbar[i] & ~(size - 1) & 0xFFFFFFFFull;
        if (!(base <= addr && addr < base + size))
            continue;
        if (size_log >= 8 && ((rasr >> (8 + ((addr - base) >> (size_log - 3)))) & 1))
            continue;                                 /* subregion disabled */
        int data = MPU_AP[(rasr >> 24) & 7][privileged ? 0 : 1];
        if ((data & 1) && !(rasr & (1u << 28)))
            data |= 4;
        return data;
    }
    return (privileged && (m->ctrl & 4)) ? 7 : 0;
}

/* Mpu.off_now: not in force at the current execution priority */
static int mpu_off_now(ExcHook *h, const MpuRegs *m, Nvic *n, int *err) {
    if (!(m->ctrl & 1))
        return 1;
    if (m->ctrl & 2)
        return 0;
    return nv_exec_prio(h, n, n->active, 1, err) < 0;
}

/* Before an entry at exception level ipsr: 1 the frame may be stacked, 0
 * the Python must enter (MSTKERR), -1 a Python error */
int mpu_stack_ok(ExcHook *h, PyObject *mpu, Nvic *n, long long ipsr) {
    MpuRegs m;
    int err = 0;
    if (mpu_load(mpu, &m))
        return -1;
    int off = mpu_off_now(h, &m, n, &err);
    if (err)
        return regs_err(h->regs, err);
    if (off || FAULT(h->mpu_bug))
        return 1;
    Regs *r = h->regs;
    uint32_t control = xr(r, X_CONTROL, &err);
    int thread = ipsr == 0, unpriv = thread && (control & 1);
    if (unpriv)                                       /* as exc_push reads them */
        xw(r, X_IPSR, 1, &err);
    uint32_t msp = xr(r, X_MSP, &err), psp = xr(r, X_PSP, &err);
    if (unpriv)
        xw(r, X_IPSR, 0, &err);
    if (err)
        return regs_err(r, err);
    uint32_t sp = (thread && (control & 2)) ? psp : msp;
    uint32_t framesize = (h->m4 && (control & 4)) ? 0x68 : 0x20;
    uint32_t newsp = (sp - framesize) & ~4u;
    for (uint64_t a = newsp & ~31u; a < (uint64_t)newsp + framesize; a += 32)
        if ((mpu_access(&m, (uint32_t)a, !unpriv) & 2) != 2)
            return 0;
    return 1;
}

/* After an entry or a return: Mpu.sync when its key (configuration,
 * privilege, off) is not the one applied; 0 or -1 */
int mpu_sync_c(ExcHook *h, PyObject *mpu) {
    MpuRegs m;
    Nvic n;
    PyObject *prio = NULL;
    int err = 0;
    if (mpu_load(mpu, &m) || nvic_load(h, &n, &prio)) {
        Py_XDECREF(prio);
        return -1;
    }
    int off = mpu_off_now(h, &m, &n, &err);
    Py_XDECREF(prio);
    long long ipsr;
    if (hg_ll(h, str_ipsr_attr, &ipsr))
        return -1;
    uint32_t control = xr(h->regs, X_CONTROL, &err);
    if (err)
        return regs_err(h->regs, err);
    int priv = !(ipsr == 0 && (control & 1));
    PyObject *cfg = PyObject_GetAttr(mpu, str_mpu_config);
    PyObject *applied = cfg ? PyObject_GetAttr(mpu, str_mpu_applied) : NULL;
    PyObject *key = applied ? Py_BuildValue("(OOO)", cfg, priv ? Py_True : Py_False,
                                            off ? Py_True : Py_False) : NULL;
    int same = key ? PyObject_RichCompareBool(key, applied, Py_EQ) : -1;
    Py_XDECREF(cfg);
    Py_XDECREF(applied);
    Py_XDECREF(key);
    if (same < 0)
        return -1;
    if (same)                    /* sync's first step, then its early return */
        return hs(h, s_mpu_dirty, Py_False);
    PyObject *x = PyObject_CallMethodNoArgs(mpu, str_mpu_sync);
    Py_XDECREF(x);
    return x ? 0 : -1;
}

/* 1: the return is done (the slice goes on, or ends as the Python hook
 * would end it); 0: the Python hook must decide (nothing changed); -1: a
 * Python exception (state may have changed: raised out of emu_start). */
