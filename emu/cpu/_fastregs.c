/*
 * Regs: the engine's 32-bit registers without ctypes.
 *
 * The Python binding's reg_read/reg_write cost about 1.3 us each, a ctypes
 * call of uc_reg_read about 0.5 us; exception entry and return make a
 * dozen such calls per interrupt.  Regs' methods are builtins calling
 * uc_reg_read/uc_reg_write directly for the register ids marked 32-bit
 * (emu/cpu/fastregs.py lists them), and the binding's own methods for
 * every other id, so behaviour is unchanged.
 */
#include "_core.h"


int regs_err(Regs *r, int err) {
    PyObject *e = PyObject_CallFunction(r->error, "i", err);
    if (e != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return -1;
}

static inline int regs_fast(Regs *r, long id) {
    return id >= 0 && id < (long)sizeof r->is32 && r->is32[id];
}

static PyObject *regs_read1(Regs *r, long id) {
    uint64_t v = 0;
    int err = r->rd(r->uch, (int)id, &v);
    if (err) {
        regs_err(r, err);
        return NULL;
    }
    return PyLong_FromUnsignedLong((uint32_t)v);
}

static int regs_write1(Regs *r, long id, PyObject *value) {
    uint64_t v = PyLong_AsUnsignedLongLongMask(value) & 0xFFFFFFFFu;
    if (PyErr_Occurred())
        return -1;
    int err = r->wr(r->uch, (int)id, &v);
    return err ? regs_err(r, err) : 0;
}

static PyObject *Regs_reg_read(Regs *r, PyObject *const *args, Py_ssize_t n) {
    if (n < 1 || n > 2) {
        PyErr_SetString(PyExc_TypeError, "reg_read(reg_id, aux=None)");
        return NULL;
    }
    long id = PyLong_AsLong(args[0]);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    if ((n == 1 || args[1] == Py_None) && regs_fast(r, id))
        return regs_read1(r, id);
    return PyObject_Vectorcall(r->slow_read, args, (size_t)n, NULL);
}

static PyObject *Regs_reg_write(Regs *r, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "reg_write(reg_id, value)");
        return NULL;
    }
    long id = PyLong_AsLong(args[0]);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    if (!regs_fast(r, id))
        return PyObject_Vectorcall(r->slow_write, args, 2, NULL);
    if (regs_write1(r, id, args[1]))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Regs_reg_read_batch(Regs *r, PyObject *ids) {
    PyObject *seq = PySequence_Fast(ids, "reg_read_batch needs a sequence of ids");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        long id = PyLong_AsLong(items[i]);
        if ((id == -1 && PyErr_Occurred()) || !regs_fast(r, id)) {
            Py_DECREF(seq);
            PyErr_Clear();
            return PyObject_CallOneArg(r->slow_read_batch, ids);
        }
    }
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *v = regs_read1(r, PyLong_AsLong(items[i]));
        if (v == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *Regs_reg_write_batch(Regs *r, PyObject *pairs) {
    PyObject *seq = PySequence_Fast(pairs, "reg_write_batch needs (id, value) pairs");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = items[i];
        long id = (PyTuple_Check(p) && PyTuple_GET_SIZE(p) == 2)
                  ? PyLong_AsLong(PyTuple_GET_ITEM(p, 0)) : -1;
        if ((id == -1 && PyErr_Occurred()) || !regs_fast(r, id)) {
            PyErr_Clear();
            PyObject *res = PyObject_CallOneArg(r->slow_write_batch, seq);
            Py_DECREF(seq);
            return res;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = items[i];
        if (regs_write1(r, PyLong_AsLong(PyTuple_GET_ITEM(p, 0)), PyTuple_GET_ITEM(p, 1))) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static int Regs_init(Regs *r, PyObject *args, PyObject *kwds) {
    unsigned long long uch, rd, wr;
    PyObject *fast_ids, *sr, *sw, *srb, *swb, *err;
    if (!PyArg_ParseTuple(args, "KKKOOOOOO", &uch, &rd, &wr, &fast_ids, &sr, &sw, &srb, &swb,
                          &err))
        return -1;
    r->uch = (void *)(uintptr_t)uch;
    r->rd = (uc_reg_fn)(uintptr_t)rd;
    r->wr = (uc_reg_fn)(uintptr_t)wr;
    memset(r->is32, 0, sizeof r->is32);
    PyObject *it = PyObject_GetIter(fast_ids), *x;
    if (it == NULL)
        return -1;
    while ((x = PyIter_Next(it)) != NULL) {
        long id = PyLong_AsLong(x);
        Py_DECREF(x);
        if (id < 0 || id >= (long)sizeof r->is32) {
            Py_DECREF(it);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "register id %ld out of range", id);
            return -1;
        }
        r->is32[id] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return -1;
    Py_INCREF(sr); Py_XSETREF(r->slow_read, sr);
    Py_INCREF(sw); Py_XSETREF(r->slow_write, sw);
    Py_INCREF(srb); Py_XSETREF(r->slow_read_batch, srb);
    Py_INCREF(swb); Py_XSETREF(r->slow_write_batch, swb);
    Py_INCREF(err); Py_XSETREF(r->error, err);
    return 0;
}

static int Regs_traverse(Regs *r, visitproc visit, void *arg) {
    Py_VISIT(r->slow_read);
    Py_VISIT(r->slow_write);
    Py_VISIT(r->slow_read_batch);
    Py_VISIT(r->slow_write_batch);
    Py_VISIT(r->error);
    return 0;
}

static int Regs_clear(Regs *r) {
    Py_CLEAR(r->slow_read);
    Py_CLEAR(r->slow_write);
    Py_CLEAR(r->slow_read_batch);
    Py_CLEAR(r->slow_write_batch);
    Py_CLEAR(r->error);
    return 0;
}

static void Regs_dealloc(Regs *r) {
    PyObject_GC_UnTrack(r);
    Regs_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* Exception entry and return, the register and memory part (ARMv7-M
 * B1.5.6/B1.5.8), as CortexM.exception_entry/_enter/exception_return do it
 * in Python, step for step (same reads, same writes, same order); the NVIC
 * bookkeeping (pending, active, tail-chaining, SLEEPONEXIT) stays in
 * Python.  emu/cpu/cortexm.py uses these unless running pure Python, and
 * tests/cpu/test_cpu_exception_frames.py checks both give the same machine.
 */
uint32_t xr(Regs *r, int i, int *err) {
    uint64_t v = 0;
    int e = r->rd(r->uch, r->xid[i], &v);
    if (e && !*err) *err = e;
    return (uint32_t)v;
}

void xw(Regs *r, int i, uint32_t value, int *err) {
    uint64_t v = value;
    int e = r->wr(r->uch, r->xid[i], &v);
    if (e && !*err) *err = e;
}

static PyObject *Regs_set_exc(Regs *r, PyObject *args) {
    unsigned long long mrd, mwr;
    PyObject *ids;
    if (!PyArg_ParseTuple(args, "KKO", &mrd, &mwr, &ids))
        return NULL;
    PyObject *seq = PySequence_Fast(ids, "set_exc needs a sequence of register ids");
    if (seq == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != X_NIDS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "set_exc needs %d register ids", (int)X_NIDS);
        return NULL;
    }
    for (int i = 0; i < X_NIDS; i++) {
        long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if ((id == -1 && PyErr_Occurred()) || !regs_fast(r, id)) {
            Py_DECREF(seq);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "register id %ld is not a 32-bit one", id);
            return NULL;
        }
        r->xid[i] = (int)id;
    }
    Py_DECREF(seq);
    r->mem_rd = (uc_mem_fn)(uintptr_t)mrd;
    r->mem_wr = (uc_mem_fn)(uintptr_t)mwr;
    Py_RETURN_NONE;
}

/* IPSR, CONTROL and both stack pointers, as CortexM._set_mode writes them.
 * Unicorn ignores MSP, PSP and CONTROL writes in unprivileged thread mode
 * (an unprivileged MSR): going to thread mode with CONTROL.nPRIV set, the
 * stack pointers and SPSEL are written while still privileged, nPRIV last. */
static void set_mode(Regs *r, uint32_t ipsr, uint32_t control, uint32_t msp, uint32_t psp,
                     int *err) {
    if (ipsr == 0 && (control & 1)) {
        xw(r, X_CONTROL, control & ~1u, err);           /* handler mode: nPRIV cleared */
        xw(r, X_IPSR, 0, err);
        xw(r, X_CONTROL, control & ~1u, err);           /* privileged thread: SPSEL */
        xw(r, X_MSP, msp, err);
        xw(r, X_PSP, psp, err);
        xw(r, X_CONTROL, control, err);
        return;
    }
    xw(r, X_IPSR, ipsr, err);
    xw(r, X_CONTROL, control, err);
    xw(r, X_MSP, msp, err);
    xw(r, X_PSP, psp, err);
}

/* exc_push(return_addr, ipsr, align_enabled, m4, m0)
 *   -> (0, exc_return, msp, psp, control) with the frame pushed, or
 *      (err, newsp) when the stacking write failed (nothing else changed) */
PyObject *Regs_exc_push(Regs *r, PyObject *const *a, Py_ssize_t n) {
    if (n != 5 || r->mem_wr == NULL) {
        PyErr_SetString(PyExc_TypeError, "exc_push(return_addr, ipsr, align, m4, m0) after set_exc");
        return NULL;
    }
    uint32_t ret_addr = (uint32_t)PyLong_AsUnsignedLongLongMask(a[0]);
    uint32_t ipsr = (uint32_t)PyLong_AsUnsignedLongMask(a[1]);
    int align_on = PyObject_IsTrue(a[2]), m4 = PyObject_IsTrue(a[3]), m0 = PyObject_IsTrue(a[4]);
    if (PyErr_Occurred())
        return NULL;
    int err = 0;
    uint32_t w[26];
    w[0] = xr(r, X_R0, &err); w[1] = xr(r, X_R1, &err); w[2] = xr(r, X_R2, &err);
    w[3] = xr(r, X_R3, &err); w[4] = xr(r, X_R12, &err); w[5] = xr(r, X_LR, &err);
    uint32_t xpsr = xr(r, X_XPSR, &err), control = xr(r, X_CONTROL, &err);
    int thread = ipsr == 0;
    /* Unprivileged thread mode (CONTROL.nPRIV): Unicorn's register API reads
     * MSP and PSP as 0, as an unprivileged MRS would.  Handler mode is
     * privileged: read them there (writing IPSR swaps the banked SP, as
     * exc_enter's write does) and go back to thread mode after. */
    int unpriv = thread && (control & 1);
    if (unpriv)
        xw(r, X_IPSR, 1, &err);
    uint32_t msp = xr(r, X_MSP, &err), psp = xr(r, X_PSP, &err);
    if (unpriv)
        xw(r, X_IPSR, 0, &err);
    if (err)
        return regs_err(r, err), NULL;
    int use_psp = thread && (control & 2);
    int fpca = m4 && (control & 4);
    uint32_t sp = use_psp ? psp : msp;
    uint32_t framesize = fpca ? 0x68 : 0x20;
    uint32_t align = (align_on || m0) ? (sp >> 2) & 1 : 0;
    uint32_t newsp = (sp - framesize) & ~4u;
    w[6] = ret_addr & ~1u;
    w[7] = (xpsr & ~(0x1FFu | (1u << 9))) | ipsr | (align << 9) | (1u << 24);
    if (fpca) {
        for (int i = 0; i < 16; i++)
            w[8 + i] = xr(r, X_S0 + i, &err);
        w[24] = xr(r, X_FPSCR, &err);
        w[25] = 0;
        if (err)
            return regs_err(r, err), NULL;
    }
    unsigned char buf[0x68];
    for (uint32_t i = 0; i < framesize / 4; i++) {       /* little-endian words */
        buf[4 * i] = (unsigned char)w[i];
        buf[4 * i + 1] = (unsigned char)(w[i] >> 8);
        buf[4 * i + 2] = (unsigned char)(w[i] >> 16);
        buf[4 * i + 3] = (unsigned char)(w[i] >> 24);
    }
    int e = r->mem_wr(r->uch, newsp, buf, framesize);
    if (e)
        return Py_BuildValue("(iK)", e, (unsigned long long)newsp);
    if (use_psp) psp = newsp; else msp = newsp;
    uint32_t exc_return = fpca ? 0xFFFFFFE1u : 0xFFFFFFF1u;
    if (thread) exc_return |= 0x8;
    if (use_psp) exc_return |= 0x4;
    if (m0) exc_return |= 0x10;
    return Py_BuildValue("(iKKKK)", 0, (unsigned long long)exc_return, (unsigned long long)msp,
                         (unsigned long long)psp, (unsigned long long)control);
}

/* exc_enter(exc, exc_return, msp, psp, control, vector_address, it_mask) -> vector
 *   (0xFFFFFFFF when the vector cannot be read); PC is written only for a
 *   valid vector (odd, not 0 or 0xFFFFFFFF), as CortexM._enter does */
PyObject *Regs_exc_enter(Regs *r, PyObject *const *a, Py_ssize_t n) {
    if (n != 7 || r->mem_rd == NULL) {
        PyErr_SetString(PyExc_TypeError, "exc_enter(exc, exc_return, msp, psp, control, "
                                         "vector_address, it_mask) after set_exc");
        return NULL;
    }
    uint32_t v[7];
    for (int i = 0; i < 7; i++)
        v[i] = (uint32_t)PyLong_AsUnsignedLongLongMask(a[i]);
    if (PyErr_Occurred())
        return NULL;
    unsigned char b[4];
    uint32_t vec = 0xFFFFFFFFu;
    if (r->mem_rd(r->uch, v[5], b, 4) == 0)
        vec = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    int err = 0;
    uint32_t xpsr = xr(r, X_XPSR, &err);
    if (xpsr & v[6])
        xw(r, X_XPSR, xpsr & ~v[6], &err);
    xw(r, X_IPSR, v[0], &err);
    xw(r, X_CONTROL, v[4] & ~0x6u, &err);
    xw(r, X_MSP, v[2], &err);
    xw(r, X_PSP, v[3], &err);
    xw(r, X_NZCV, xr(r, X_NZCV, &err), &err);        /* _refresh_flags */
    xw(r, X_LR, v[1], &err);
    if (!(vec == 0xFFFFFFFFu || vec == 0 || !(vec & 1)))
        xw(r, X_PC, vec & ~1u, &err);
    if (err)
        return regs_err(r, err), NULL;
    return PyLong_FromUnsignedLong(vec);
}

/* The unstacking of exc_pop: 0 with *out = the new IPSR, a positive
 * uc_err with *out = the SP when the frame cannot be read (nothing
 * changed), -1 with a Python exception set. */
int exc_pop_c(Regs *r, int use_psp, int fp, int to_thread, uint32_t *out) {
    int err = 0;
    uint32_t msp = xr(r, X_MSP, &err), psp = xr(r, X_PSP, &err), control = xr(r, X_CONTROL, &err);
    if (err)
        return regs_err(r, err);
    uint32_t sp = use_psp ? psp : msp;
    uint32_t framesize = fp ? 0x68 : 0x20;
    unsigned char buf[0x68];
    int e = r->mem_rd(r->uch, sp, buf, framesize);
    if (e) {
        *out = sp;
        return e > 0 ? e : 1;
    }
    uint32_t w[26];
    for (uint32_t i = 0; i < framesize / 4; i++)
        w[i] = buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 | (uint32_t)buf[4 * i + 2] << 16
               | (uint32_t)buf[4 * i + 3] << 24;
    uint32_t pc = w[6], xpsr = w[7];
    uint32_t newsp = sp + framesize;
    if (xpsr & (1u << 9))
        newsp += 4;
    if (use_psp) psp = newsp; else msp = newsp;
    uint32_t ipsr = xpsr & 0x1FF;
    if (to_thread && ipsr != 0)
        ipsr = 0;
    control &= ~0x6u;
    if (to_thread && use_psp)
        control |= 2;
    if (fp)
        control |= 4;
    set_mode(r, ipsr, control, msp, psp, &err);        /* _set_mode, refresh below */
    xw(r, X_R0, w[0], &err); xw(r, X_R1, w[1], &err); xw(r, X_R2, w[2], &err);
    xw(r, X_R3, w[3], &err); xw(r, X_R12, w[4], &err); xw(r, X_LR, w[5], &err);
    if (fp) {
        for (int i = 0; i < 16; i++)
            xw(r, X_S0 + i, w[8 + i], &err);
        xw(r, X_FPSCR, w[24], &err);
    }
    xw(r, X_XPSR, (xpsr & ~0x1FFu) | ipsr | (1u << 24), &err);
    xw(r, X_NZCV, xr(r, X_NZCV, &err), &err);        /* _refresh_flags */
    xw(r, X_PC, pc & ~1u, &err);
    if (err)
        return regs_err(r, err);
    *out = ipsr;
    return 0;
}

/* exc_pop(use_psp, fp_frame, to_thread) -> (0, ipsr) with the frame
 *   unstacked and the mode, registers, xPSR and PC restored, or (err, sp)
 *   when the frame cannot be read (nothing changed) */
static PyObject *Regs_exc_pop(Regs *r, PyObject *const *a, Py_ssize_t n) {
    if (n != 3 || r->mem_rd == NULL) {
        PyErr_SetString(PyExc_TypeError, "exc_pop(use_psp, fp_frame, to_thread) after set_exc");
        return NULL;
    }
    int use_psp = PyObject_IsTrue(a[0]), fp = PyObject_IsTrue(a[1]), to_thread = PyObject_IsTrue(a[2]);
    if (PyErr_Occurred())
        return NULL;
    uint32_t out;
    int e = exc_pop_c(r, use_psp, fp, to_thread, &out);
    if (e < 0)
        return NULL;
    if (e)
        return Py_BuildValue("(iK)", e, (unsigned long long)out);   /* not reached by firmware: the Python return's unreadable frame (native_returns off) */
    return Py_BuildValue("(iI)", 0, out);
}

static PyMethodDef Regs_methods[] = {
    {"set_exc", (PyCFunction)Regs_set_exc, METH_VARARGS,
     "set_exc(uc_mem_read, uc_mem_write, register_ids): enable exc_push/exc_enter/exc_pop"},
    {"exc_push", (PyCFunction)(void (*)(void))Regs_exc_push, METH_FASTCALL,
     "exc_push(return_addr, ipsr, align, m4, m0) -> (0, exc_return, msp, psp, control) | (err, sp)"},
    {"exc_enter", (PyCFunction)(void (*)(void))Regs_exc_enter, METH_FASTCALL,
     "exc_enter(exc, exc_return, msp, psp, control, vector_address, it_mask) -> vector"},
    {"exc_pop", (PyCFunction)(void (*)(void))Regs_exc_pop, METH_FASTCALL,
     "exc_pop(use_psp, fp_frame, to_thread) -> (0, ipsr) | (err, sp)"},
    {"reg_read", (PyCFunction)(void (*)(void))Regs_reg_read, METH_FASTCALL, "reg_read(id, aux=None)"},
    {"reg_write", (PyCFunction)(void (*)(void))Regs_reg_write, METH_FASTCALL, "reg_write(id, value)"},
    {"reg_read_batch", (PyCFunction)Regs_reg_read_batch, METH_O, "reg_read_batch(ids) -> tuple"},
    {"reg_write_batch", (PyCFunction)Regs_reg_write_batch, METH_O, "reg_write_batch(pairs)"},
    {NULL}
};

PyTypeObject RegsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.cpu._core.Regs",
    .tp_doc = "Regs(uc_handle, uc_reg_read, uc_reg_write, fast_ids, slow_read, slow_write, "
              "slow_read_batch, slow_write_batch, error_type)",
    .tp_basicsize = sizeof(Regs),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Regs_init,
    .tp_dealloc = (destructor)Regs_dealloc,
    .tp_traverse = (traverseproc)Regs_traverse,
    .tp_clear = (inquiry)Regs_clear,
    .tp_methods = Regs_methods,
};

