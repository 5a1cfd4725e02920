/*
 * ExcHook: exception returns in the engine's INTR hook, and the entries the
 * run loop and the block hook ask for, in C (see _core.h for the whole).
 */
#include "_core.h"

static int exc_return_here(ExcHook *h) {
    PyObject *cpu = h->cpu, *prio = NULL;
    long long cur;
    int err = 0;
    if (hg_ll(h, str_ipsr_attr, &cur))
        return -1;
    if (cur < 11)                                     /* SVCall and up only */
        return 0;
    int t;
    if ((t = hg_truthy(h, str_fast_returns)) <= 0)
        return t < 0 ? -1 : 0;   /* not reached by firmware: fast_returns off: the tests' slow path */
    /* a watched run (run_until's predicate at every slice boundary): the
     * return is done here too, and the slice ends after it as the Python
     * hook's would (the run loop then checks the predicate) */
    int watched = hg_truthy(h, str_watched);
    if (watched < 0)
        return -1;
    uint32_t pc = hreg(h, h->id_pc, &err);
    if (err)
        return regs_err(h->regs, err);
    uint32_t exc_return = pc | 1;
    switch (exc_return) {
    case 0xFFFFFFF1u: case 0xFFFFFFF9u: case 0xFFFFFFFDu:
    case 0xFFFFFFE1u: case 0xFFFFFFE9u: case 0xFFFFFFEDu:
        break;
    default:   /* not reached by firmware: a bad EXC_RETURN from SVCall or later */
        return 0;   /* not reached by firmware: a bad EXC_RETURN from SVCall or later */
    }
    PyObject *mpu = hg(h, str_mpu);
    if (mpu == NULL)
        return -1;
    t = mpu == Py_None ? 0 : truthy_attr(mpu, str_installed);
    if (t < 0) {
        Py_DECREF(mpu);
        return -1;
    }
    if (!t)
        Py_CLEAR(mpu);           /* (kept while installed: synced after the return) */
    Nvic n;
    if (nvic_load(h, &n, &prio)) {
        Py_XDECREF(mpu);
        return -1;
    }
    int rc = 0;
    if (n.scr & 0x2)                                  /* SLEEPONEXIT: Python */
        goto out;
    uint64_t bit = 1ULL << cur;
    uint64_t active = n.active & ~bit, pending = n.pending;
    if (cur >= 16 && ((n.irq_level >> (cur - 16)) & 1))
        pending |= bit;
    long long g;
    int e, chain = 0;
    if (nv_best(h, &n, pending, &g, &e)) {            /* a tail-chain (_enter) */
        long long after = nv_exec_prio(h, &n, active, 0, &err);
        if (err) {
            rc = regs_err(h->regs, err);
            goto out;
        }
        if (g < after) {
            if (3 <= e && e <= 6)
                goto out;                             /* to a fault: Python */
            chain = 1;
        }
    }
    if (PyErr_Occurred()) {
        rc = -1;
        goto out;
    }
    /* from here on the return is ours */
    rc = -1;
    PyObject *ls = hg(h, str_on_exception);
    if (ls == NULL)
        goto out;
    PyObject *seq = PySequence_Fast(ls, "on_exception");
    Py_DECREF(ls);
    if (seq == NULL)
        goto out;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *x = PyObject_CallFunction(PySequence_Fast_GET_ITEM(seq, i), "LO", cur, Py_False);
        if (x == NULL) {
            Py_DECREF(seq);
            goto out;
        }
        Py_DECREF(x);
    }
    Py_DECREF(seq);
    if (hs_u64(h, str_active, active) || hs_u64(h, str_pending, pending))
        goto out;
    n.active = active;
    n.pending = pending;
    if (h->m4) {                                      /* FAULTMASK cleared (not NMI) */
        uint64_t zero = 0;
        int ee = h->regs->wr(h->uch, h->id_faultmask, &zero);
        if (ee) {
            regs_err(h->regs, ee);
            goto out;
        }
    }
    uint32_t out;
    if (chain) {
        /* CortexM._exception_return's tail-chain: the next exception is
         * entered on the same frame (_enter: exc_enter with the SPs and
         * CONTROL as they are, LR the same EXC_RETURN) */
        uint64_t eb = 1ULL << e;
        active |= eb;
        if (!FAULT(h->chain_bug))                      /* a test build's fault: left pending */
            pending &= ~eb;
        if (hs_u64(h, str_pending, pending) || hs_u64(h, str_active, active))
            goto out;
        n.active = active;
        n.pending = pending;
        int er = 0;
        uint32_t msp = xr(h->regs, X_MSP, &er), psp = xr(h->regs, X_PSP, &er);
        uint32_t control = xr(h->regs, X_CONTROL, &er);
        if (er) {
            regs_err(h->regs, er);
            goto out;
        }
        long long tc, vtor;
        if (hg_ll(h, str_tail_chains, &tc) || hs_ll(h, str_tail_chains, tc + 1)
            || hg_ll(h, str_vtor, &vtor))
            goto out;
        PyObject *ea[7];
        ea[0] = PyLong_FromLong(e);
        ea[1] = PyLong_FromUnsignedLong(exc_return);
        ea[2] = PyLong_FromUnsignedLong(msp);
        ea[3] = PyLong_FromUnsignedLong(psp);
        ea[4] = PyLong_FromUnsignedLong(control);
        ea[5] = PyLong_FromLongLong((vtor + 4LL * e) & 0xFFFFFFFFLL);
        ea[6] = PyLong_FromLong((3L << 25) | (0x3FL << 10));
        int ok = 1;
        for (int i = 0; i < 7; i++)
            ok = ok && ea[i] != NULL;
        PyObject *vec = ok ? Regs_exc_enter(h->regs, ea, 7) : NULL;
        for (int i = 0; i < 7; i++)
            Py_XDECREF(ea[i]);
        if (vec == NULL)
            goto out;
        unsigned long v = PyLong_AsUnsignedLong(vec);
        Py_DECREF(vec);
        if (hs_ll(h, str_ipsr_attr, e))
            goto out;
        if (v == 0xFFFFFFFFul || v == 0 || !(v & 1)) {    /* HFSR.VECTTBL and the lockup */
            PyObject *x = PyObject_CallMethod(cpu, "_invalid_vector", "ik", e, v);
            Py_XDECREF(x);
            goto out;                                     /* raised CpuHalt */
        }
        if (hs(h, str_sleeping_prop, Py_False))
            goto out;
        ls = hg(h, str_on_exception);
        if (ls == NULL)
            goto out;
        seq = PySequence_Fast(ls, "on_exception");
        Py_DECREF(ls);
        if (seq == NULL)
            goto out;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *x = PyObject_CallFunction(PySequence_Fast_GET_ITEM(seq, i), "iO", e,   /* not reached by firmware: a tail-chain with on_exception listeners */
                                                Py_True);
            if (x == NULL) {   /* not reached by firmware: a tail-chain with on_exception listeners */
                Py_DECREF(seq);
                goto out;
            }
            Py_DECREF(x);
        }
        Py_DECREF(seq);
        h->chains++;
        out = (uint32_t)e;
    } else {
        int to_thread = (exc_return & 8) != 0, use_psp = (exc_return & 4) != 0;
        int fp = h->m4 && !(exc_return & 0x10);
        int pe = exc_pop_c(h->regs, use_psp, fp, to_thread, &out);
        if (pe < 0)
            goto out;
        if (pe) {                                     /* unstacking error: the lockup */
            PyObject *x = PyObject_CallMethod(cpu, "_unstacking_error", "I", out);
            Py_XDECREF(x);
            goto out;                                 /* (it raises CpuHalt) */
        }
        if (hs_ll(h, str_ipsr_attr, out))
            goto out;
    }
    pc = hreg(h, h->id_pc, &err);
    uint64_t thumb = pc | 1u;
    if (!err) {
        int ee = h->regs->wr(h->uch, h->id_pc, &thumb);
        if (ee) err = ee;
    }
    if (err) {
        regs_err(h->regs, err);
        goto out;
    }
    if (mpu != NULL && mpu_sync_c(h, mpu))            /* exception_return's mpu.sync() */
        goto out;
    int stop = (3 <= out && out <= 6) || watched;
    if (!stop) {
        int r = nv_pending_to_enter(h, &n);
        if (r < 0)
            goto out;
        stop = r;
    }
    if (!stop) {
        if ((t = hg_truthy(h, str_sleeping_attr)) < 0)
            goto out;
        stop = t;
    }
    if (!stop) {
        if ((t = hg_truthy(h, str_stop_reason)) < 0)
            goto out;
        stop = t;
    }
    if (stop) {
        if (hs(h, str_trap, h->trap))
            goto out;
        h->emu_stop(h->uch);
    } else {
        long long nr;
        if (hg_ll(h, str_returns_in_hook, &nr) || hs_ll(h, str_returns_in_hook, nr + 1)
            || hs_ll(h, str_slice_pc, pc) || hs_u64(h, str_slice_blocks, h->bh->blocks))
            goto out;
    }
    h->returns++;
    rc = 1;
out:
    Py_XDECREF(prio);
    Py_XDECREF(mpu);
    return rc;
}

/* Exception entry (CortexM._take_pending / _enter_in_hook, exception_entry
 * and _enter with the native Regs' steps): the best pending exception that
 * preempts now is entered here, the frame pushed (exc_push), pending/active
 * and IPSR updated, the vector taken (exc_enter), ``sleeping`` set False
 * through the CortexM's property (its listeners hear it) and the
 * on_exception listeners told, in the order the Python does them.
 * ``addr``: the return address, or -1 for the current PC.  Returns the
 * exception entered (> 0), 0 when nothing is to be entered now (the mask
 * watch armed as _pending_to_enter arms it), -2 when Python must do it
 * (nothing changed: a frame the MPU forbids (MSTKERR), a fault handler to
 * enter, a stacking error); with the MPU on, its pages are synced after
 * (mpu_sync_c),
 * -3 with only_irq when the best one is a fault (3..6: not entered),
 * -1 with a Python exception set (an invalid vector: the lockup raised). */

long exc_enter_here(ExcHook *h, long long addr, int only_irq) {
    /* only_irq: the block hook's entry (a fault, or IT bits live: -3) */
    PyObject *cpu = h->cpu, *prio = NULL;
    int t, err = 0;
    uint64_t pend;
    if (hg_u64(h, str_pending, &pend))
        return -1;
    if (pend == 0) {              /* nothing pending: _pending_to_enter's None */
        MASKW(h, mask_watch) = 0;
        return 0;
    }
    PyObject *mpu = hg(h, str_mpu);
    if (mpu == NULL)
        return -1;
    t = mpu == Py_None ? 0 : truthy_attr(mpu, str_installed);
    if (t < 0) {
        Py_DECREF(mpu);
        return -1;
    }
    if (!t)
        Py_CLEAR(mpu);           /* (kept while installed: the stacking check, the sync) */
    Nvic n;
    if (nvic_load(h, &n, &prio)) {
        Py_XDECREF(mpu);
        return -1;
    }
    long rc = -1;
    int r = nv_pending_to_enter(h, &n);
    if (r <= 0) {
        rc = r;                                       /* 0 nothing, -1 error */
        goto out;
    }
    long long g;
    int e;
    nv_best(h, &n, n.pending, &g, &e);
    if (3 <= e && e <= 6) {
        rc = only_irq ? -3 : -2;   /* not reached by firmware: a configurable fault is entered or escalated at once */
        goto out;
    }
    if (only_irq) {              /* IT state as read inside a block hook: the run loop */
        uint32_t xpsr = xr(h->regs, X_XPSR, &err);
        if (err) {
            regs_err(h->regs, err);
            goto out;
        }
        if (xpsr & ((3u << 25) | (0x3Fu << 10))) {
            rc = -3;   /* not reached by firmware: IT bits live at the start of a translated block */
            goto out;
        }
    }
    long long ipsr, ccr, vtor;
    if (hg_ll(h, str_ipsr_attr, &ipsr) || hg_ll(h, str_ccr, &ccr)
        || hg_ll(h, str_vtor, &vtor))
        goto out;
    if (mpu != NULL) {           /* exception_entry's check: MSTKERR is the Python's */
        int ok = mpu_stack_ok(h, mpu, &n, ipsr);
        if (ok <= 0) {
            rc = ok < 0 ? -1 : -2;
            goto out;
        }
    }
    if (addr < 0) {
        addr = hreg(h, h->id_pc, &err);
        if (err) {
            regs_err(h->regs, err);
            goto out;
        }
    }
    /* exc_push */
    PyObject *pa[5] = {NULL, NULL, NULL, h->m4 ? Py_True : Py_False,
                       h->m4 ? Py_False : Py_True};
    pa[0] = PyLong_FromLongLong(addr);
    pa[1] = PyLong_FromLongLong(ipsr);
    pa[2] = PyLong_FromLongLong(ccr & 0x200);
    PyObject *pushed = (pa[0] && pa[1] && pa[2]) ? Regs_exc_push(h->regs, pa, 5) : NULL;
    Py_XDECREF(pa[0]); Py_XDECREF(pa[1]); Py_XDECREF(pa[2]);
    if (pushed == NULL)
        goto out;
    long perr = PyLong_AsLong(PyTuple_GET_ITEM(pushed, 0));
    if (perr) {                                       /* stacking error: Python's lockup */
        Py_DECREF(pushed);
        rc = -2;
        goto out;
    }
    uint64_t bit = 1ULL << e;
    if (hs_u64(h, str_pending, n.pending & ~bit) || hs_u64(h, str_active, n.active | bit)) {
        Py_DECREF(pushed);
        goto out;
    }
    /* _enter: exc_enter(exc, exc_return, msp, psp, control, vector address, IT mask) */
    PyObject *ea[7];
    ea[0] = PyLong_FromLong(e);
    for (int i = 1; i < 5; i++)
        ea[i] = PyTuple_GET_ITEM(pushed, i);
    ea[5] = PyLong_FromLongLong((vtor + 4LL * e) & 0xFFFFFFFFLL);
    ea[6] = PyLong_FromLong((3L << 25) | (0x3FL << 10));
    PyObject *vec = (ea[0] && ea[5] && ea[6]) ? Regs_exc_enter(h->regs, ea, 7) : NULL;
    Py_XDECREF(ea[0]); Py_XDECREF(ea[5]); Py_XDECREF(ea[6]);
    Py_DECREF(pushed);
    if (vec == NULL)
        goto out;
    unsigned long v = PyLong_AsUnsignedLong(vec);
    if (hs_ll(h, str_ipsr_attr, e)) {
        Py_DECREF(vec);
        goto out;
    }
    if (v == 0xFFFFFFFFul || v == 0 || !(v & 1)) {    /* HFSR.VECTTBL and the lockup */
        Py_DECREF(vec);
        PyObject *x = PyObject_CallMethod(cpu, "_invalid_vector", "ik", e, v);
        Py_XDECREF(x);
        goto out;                                     /* raised CpuHalt */
    }
    Py_DECREF(vec);
    if (hs(h, str_sleeping_prop, Py_False))
        goto out;
    PyObject *ls = hg(h, str_on_exception);
    if (ls == NULL)
        goto out;
    PyObject *seq = PySequence_Fast(ls, "on_exception");
    Py_DECREF(ls);
    if (seq == NULL)
        goto out;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *x = PyObject_CallFunction(PySequence_Fast_GET_ITEM(seq, i), "iO", e, Py_True);
        if (x == NULL) {
            Py_DECREF(seq);
            goto out;
        }
        Py_DECREF(x);
    }
    Py_DECREF(seq);
    if (mpu != NULL && mpu_sync_c(h, mpu))            /* exception_entry's mpu.sync() */
        goto out;
    h->entries++;
    rc = e;
out:
    Py_XDECREF(prio);
    Py_XDECREF(mpu);
    return rc;
}

/* take() -> the exception entered at the current PC (> 0), 0 (none), -2
 * (Python must: CortexM._take_pending's own steps) */
static PyObject *ExcHook_take(ExcHook *h, PyObject *noargs) {
    long r = exc_enter_here(h, -1, 0);
    if (r == -1)
        return NULL;
    return PyLong_FromLong(r);
}

/* The block hook's entry callback (bh_state.entry_cb): CortexM._enter_in_hook
 * in C; ENTRY_STOP 0, ENTRY_DONE 1, ENTRY_NONE 2. */
static PyObject *ExcHook_enter_in_hook(ExcHook *h, PyObject *arg) {
    PyObject *cpu = h->cpu;
    long long address = PyLong_AsLongLong(arg), ipsr;
    if (address == -1 && PyErr_Occurred())
        return NULL;
    int t1 = hg_truthy(h, str_fast_entries), t2 = hg_truthy(h, str_watched);
    int t3 = hg_truthy(h, str_stop_reason), t4 = hg_truthy(h, str_powered_off);
    if (t1 < 0 || t2 < 0 || t3 < 0 || t4 < 0 || hg_ll(h, str_ipsr_attr, &ipsr))
        return NULL;
    if (!t1 || t2 || t3 || t4 || (3 <= ipsr && ipsr <= 6))
        return PyLong_FromLong(0);   /* not reached by firmware: the block hook asks only when an entry can be made */
    long r = exc_enter_here(h, address, 1);
    if (r == -2 || r == -1) {
        if (r == -1) {                                /* CpuHalt: raised after the slice */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (value != NULL && tb != NULL)
                PyException_SetTraceback(value, tb);
            int bad = value == NULL || hs(h, str_halt_in_hook, value);
            Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
            if (bad)
                return NULL;
            return PyLong_FromLong(0);
        }
        return PyObject_CallMethodOneArg(cpu, str_enter_in_hook, arg);   /* Python */
    }
    if (r == 0)
        return PyLong_FromLong(2);   /* ENTRY_NONE; not reached by firmware: the block hook asks only when an entry is due */
    if (r == -3)
        return PyLong_FromLong(0);   /* a fault: the run loop; not reached by firmware: a configurable fault is entered or escalated at once */
    int err = 0;
    uint32_t pc = hreg(h, h->id_pc, &err);
    uint64_t thumb = pc | 1u;
    if (!err) {
        int ee = h->regs->wr(h->uch, h->id_pc, &thumb);
        if (ee) err = ee;
    }
    if (err)
        return regs_err(h->regs, err), NULL;
    long long ne;
    if (hg_ll(h, str_entries_in_hook, &ne) || hs_ll(h, str_entries_in_hook, ne + 1)
        || hs_ll(h, str_slice_pc, pc) || hs_u64(h, str_slice_blocks, h->bh->blocks))
        return NULL;
    return PyLong_FromLong(1);                        /* ENTRY_DONE */
}

/* A Python exception out of the hook: kept on the Uc and the engine stopped,
 * as the binding's hooks (and CortexM._raw_hook) do. */
void hook_keep_exception(ExcHook *h) {    /* error path: Python raised in a hook */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *cur = PyObject_GetAttr(h->uc, str_hook_exception);
    if (cur == Py_None && value != NULL)
        PyObject_SetAttr(h->uc, str_hook_exception, value);
    Py_XDECREF(cur);
    PyErr_Clear();
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    h->emu_stop(h->uch);
}

static void exc_intr_hook(void *uc, uint32_t intno, void *user_data) {
    ExcHook *h = (ExcHook *)user_data;
    PyGILState_STATE g = PyGILState_Ensure();
    if (intno == 8 && h->on) {
        int r = exc_return_here(h);
        if (r > 0)
            goto done;
        if (r < 0) {
            hook_keep_exception(h);
            goto done;
        }
    }
    h->handed++;
    PyObject *x = PyObject_CallFunction(h->fallback, "I", intno);
    if (x == NULL)
        hook_keep_exception(h);
    Py_XDECREF(x);
done:
    PyGILState_Release(g);
}


/* install(uc_hook_add, uc_handle, UC_HOOK_INTR, uc_emu_stop, cpu, regs, uc, fallback,
 *         m4, prio_mask, (primask, basepri, faultmask, pc ids), bh_state address) */
static PyObject *ExcHook_install(ExcHook *h, PyObject *args) {
    unsigned long long hook_add, uch, emu_stop, bh;
    int htype, m4;
    unsigned int prio_mask;
    PyObject *cpu, *regs, *uc, *fallback, *ids;
    if (!PyArg_ParseTuple(args, "KKiKOO!OOiIOK", &hook_add, &uch, &htype, &emu_stop, &cpu,
                          &RegsType, &regs, &uc, &fallback, &m4, &prio_mask, &ids, &bh))
        return NULL;
    long id[4];
    if (!PyArg_ParseTuple(ids, "llll", &id[0], &id[1], &id[2], &id[3]))
        return NULL;
    if (((Regs *)regs)->mem_rd == NULL) {
        PyErr_SetString(PyExc_ValueError, "install after Regs.set_exc");
        return NULL;
    }
    if (bh == 0) {
        PyErr_SetString(PyExc_ValueError, "install needs the block hook's state");
        return NULL;
    }
    Py_INCREF(cpu); Py_XSETREF(h->cpu, cpu);
    Py_INCREF(regs); Py_XSETREF(h->regs, (Regs *)regs);
    Py_INCREF(uc); Py_XSETREF(h->uc, uc);
    Py_INCREF(fallback); Py_XSETREF(h->fallback, fallback);
    if (h->trap == NULL && (h->trap = Py_BuildValue("(s)", "returned")) == NULL)
        return NULL;
    h->uch = (void *)(uintptr_t)uch;
    h->emu_stop = (uc_emu_stop_fn2)(uintptr_t)emu_stop;
    h->m4 = m4;
    h->prio_mask = prio_mask;
    h->id_primask = (int)id[0]; h->id_basepri = (int)id[1];
    h->id_faultmask = (int)id[2]; h->id_pc = (int)id[3];
    h->bh = (volatile bh_state *)(uintptr_t)bh;
    h->on = 1;
    int err = ((uc_hook_add_fn2)(uintptr_t)hook_add)(h->uch, &h->hh, htype,
                                                     (void *)&exc_intr_hook, h, 1, 0);
    return PyLong_FromLong(err);
}

static int ExcHook_traverse(ExcHook *h, visitproc visit, void *arg) {
    Py_VISIT(h->pend_fallback);
    Py_VISIT(h->cpu_dict);
    Py_VISIT(h->clock_dict);
    Py_VISIT(h->clock);
    Py_VISIT(h->uc_error);
    for (int i = 0; i < 4; i++)
        Py_VISIT(h->reasons[i]);
    Py_VISIT(h->cpu);
    Py_VISIT((PyObject *)h->regs);
    Py_VISIT(h->uc);
    Py_VISIT(h->fallback);
    Py_VISIT(h->trap);
    Py_VISIT(h->insn_fallback);
    return 0;
}

static int ExcHook_clear(ExcHook *h) {
    h->on = 0;
    h->loop_ready = 0;
    Py_CLEAR(h->pend_fallback);
    Py_CLEAR(h->cpu_dict);
    Py_CLEAR(h->clock_dict);
    Py_CLEAR(h->clock);
    Py_CLEAR(h->uc_error);
    for (int i = 0; i < 4; i++)
        Py_CLEAR(h->reasons[i]);
    Py_CLEAR(h->cpu);
    Py_CLEAR(h->regs);
    Py_CLEAR(h->uc);
    Py_CLEAR(h->fallback);
    Py_CLEAR(h->trap);
    Py_CLEAR(h->insn_fallback);
    return 0;
}

static void ExcHook_dealloc(ExcHook *h) {
    PyObject_GC_UnTrack(h);
    ExcHook_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}


static PyMethodDef ExcHook_methods[] = {
    {"icsr_read", (PyCFunction)ExcHook_icsr_read, METH_O,
     "icsr_read(offset) -> ICSR: SystemControlSpace._icsr in C"},
    {"pend_write", (PyCFunction)(void (*)(void))ExcHook_pend_write, METH_FASTCALL,
     "pend_write(offset, value): ISPR and ICSR's PENDSVSET/PENDSTSET pends in C, "
     "anything else pend_fallback(offset, value, lanes)"},
    {"run", (PyCFunction)ExcHook_run, METH_VARARGS,
     "run(until, should_stop[, flags]) -> StopReason: CortexM.run's loop in C (see loop_setup)"},
    {"loop_setup", (PyCFunction)ExcHook_loop_setup, METH_VARARGS,
     "loop_setup(uc_emu_start, clock, UcError, (DEADLINE, BREAK, SLEEP, OFF), (cycles, "
     "deadline, base_cycles, synced_cycles, base_ticks, stop_flag, entry_flag, reason, "
     "miss_addr, miss_size, in_slice, lp_have addresses))"},
    {"take", (PyCFunction)ExcHook_take, METH_NOARGS,
     "take() -> exception entered at PC (> 0), 0 none, -2 (CortexM._take_pending's Python)"},
    {"enter_in_hook", (PyCFunction)ExcHook_enter_in_hook, METH_O,
     "enter_in_hook(address) -> ENTRY_*: CortexM._enter_in_hook (the block hook's entry_cb)"},
    {"install_insn", (PyCFunction)ExcHook_install_insn, METH_VARARGS,
     "install_insn(uc_hook_add, UC_HOOK_INSN_INVALID, fallback() -> bool): the "
     "invalid-instruction hook in C (the WFEs; anything else to fallback)"},
    {"install", (PyCFunction)ExcHook_install, METH_VARARGS,
     "install(uc_hook_add, uc, UC_HOOK_INTR, uc_emu_stop, cpu, regs, Uc, fallback(intno), m4, "
     "prio_mask, (primask, basepri, faultmask, pc ids), bh_state address) -> uc_err"},
    {NULL}
};

static PyMemberDef ExcHook_members[] = {
    {"on", T_INT, offsetof(ExcHook, on), 0, "1: returns carried out here; 0: all to Python"},
    {"returns", T_ULONGLONG, offsetof(ExcHook, returns), 0, "exception returns done here"},
    {"handed", T_ULONGLONG, offsetof(ExcHook, handed), 0, "interrupts handed to Python"},
    {"entries", T_ULONGLONG, offsetof(ExcHook, entries), 0, "exception entries done here"},
    {"chains", T_ULONGLONG, offsetof(ExcHook, chains), 0, "returns tail-chained here"},
    {"slices", T_ULONGLONG, offsetof(ExcHook, slices), 0, "emu_start slices run by run()"},
    {"inside_ns", T_ULONGLONG, offsetof(ExcHook, inside_ns), 0,
     "host nanoseconds run() spent inside the engine (uc_emu_start)"},
    {"pend_fallback", T_OBJECT, offsetof(ExcHook, pend_fallback), 0,
     "write_word(offset, value, lanes): the writes pend_write leaves to the model"},
    {"wfes", T_ULONGLONG, offsetof(ExcHook, wfes), 0, "WFEs carried out by the C hook"},
    {"wfes_handed", T_ULONGLONG, offsetof(ExcHook, wfes_handed), 0,
     "invalid-instruction stops handed to the Python hook"},
#ifdef EMU_TEST_FAULTS
    {"pend_bug", T_INT, offsetof(ExcHook, pend_bug), 0,
     "test build only: 1 makes pend_write set the bit without _pending_changed's steps"},
    {"mpu_bug", T_INT, offsetof(ExcHook, mpu_bug), 0,
     "test build only: 1 stacks a frame in C without the MPU's check (MSTKERR missed)"},
    {"chain_bug", T_INT, offsetof(ExcHook, chain_bug), 0,
     "test build only: 1 leaves a tail-chained exception pending (a broken tail-chain)"},
    {"wfe_bug", T_INT, offsetof(ExcHook, wfe_bug), 0,
     "test build only: 1 makes a WFE that sleeps end its slice awake (the trap left out)"},
    {"mask_bug", T_INT, offsetof(ExcHook, mask_bug), 0,
     "test build only: 1 arms a mask watch the block hook does not read"},
    {"skew", T_LONGLONG, offsetof(ExcHook, skew), 0,
     "test build only: cycles added to each slice's budget by run() (a loop that differs)"},
#endif
    {NULL}
};

PyTypeObject ExcHookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.cpu._core.ExcHook",
    .tp_doc = "The INTR hook: exception returns and entries in C, the run loop (emu/cpu/_core.h).",
    .tp_basicsize = sizeof(ExcHook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)ExcHook_dealloc,
    .tp_traverse = (traverseproc)ExcHook_traverse,
    .tp_clear = (inquiry)ExcHook_clear,
    .tp_methods = ExcHook_methods,
    .tp_members = ExcHook_members,
};
