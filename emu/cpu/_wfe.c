/*
 * WFE in C.  Unicorn has no WFE: it is an invalid instruction, and
 * CortexM._hook_insn_invalid decides from the PC (InfiniTime's idle, ~440
 * times an emulated second).  Done here, with the same steps, for a PC
 * whose kind the CPU has cached (WFE_AT, or WFE_BEFORE when a code hook left
 * PC past the WFE) when no SEV ran in the block:
 * the WFE that only clears the event register (_wfe_in_hook), and, under the
 * C run loop (where _sleep_in_hook declines), the WFE that sleeps (the trap
 * ("wfe", pc), the slice ends; lc_after_slice puts the core to sleep).
 * Anything else calls the Python hook, with nothing changed.  The CPU's
 * ``_wfe_in_c`` (set at each run: the switch on, none of the steps
 * replaced) turns it on.
 */
#include "_core.h"

/* 1 done (the hook answers true), 0 the Python hook decides, -1 error */
static int wfe_here(ExcHook *h) {
    int t = hg_truthy(h, s_wfe_in_c);
    if (t <= 0)
        return t;   /* not reached by firmware: the hook is installed with the switch on */
    long long sev;
    if (hg_ll(h, s_sev_block, &sev))
        return -1;
    if ((uint64_t)sev == h->bh->blocks)
        return 0;                                     /* a SEV ran in this block */
    int e = 0;
    uint32_t pc = hreg(h, h->id_pc, &e);
    if (e)
        return regs_err(h->regs, e);
    PyObject *kinds = hg(h, s_wfe_kinds);
    if (kinds == NULL)
        return -1;
    long kind = -1;
    if (PyDict_Check(kinds)) {
        PyObject *key = PyLong_FromUnsignedLong(pc);
        if (key == NULL) {
            Py_DECREF(kinds);
            return -1;
        }
        PyObject *k = PyDict_GetItemWithError(kinds, key);      /* borrowed */
        Py_DECREF(key);
        if (k != NULL && PyLong_CheckExact(k))
            kind = PyLong_AsLong(k);
    }
    Py_DECREF(kinds);
    if (PyErr_Occurred())
        return -1;
    uint32_t resume, at;                /* where the core goes on; the WFE's address */
    if (kind == WFE_AT) {
        resume = pc + 2;
        at = pc;
    } else if (kind == WFE_BEFORE) {    /* a code hook in the block: PC is past it */
        long long spc, sblocks;
        if (hg_ll(h, str_slice_pc, &spc) || hg_ll(h, str_slice_blocks, &sblocks))
            return -1;
        if ((long long)pc == spc && (long long)h->bh->blocks - sblocks <= 1)
            return 0;   /* the slice's first block: an undefined one; not reached by firmware: an undefined instruction after a WFE at a slice's start */
        resume = pc;
        at = pc - 2;
    } else {
        return 0;
    }
    /* _wfe_in_hook(uc, resume) */
    long long ipsr;
    int ev = hg_truthy(h, s_event_register), fast = hg_truthy(h, s_fast_wfe),
        watched = hg_truthy(h, str_watched);
    if (ev < 0 || fast < 0 || watched < 0 || hg_ll(h, str_ipsr_attr, &ipsr))
        return -1;
    if (ev && fast && !watched && !(3 <= ipsr && ipsr <= 6)) {
        long long n;
        if (hs_ll(h, s_event_register, 0))
            return -1;
        e = h->regs->wr(h->uch, h->id_pc, &(uint64_t){resume | 1});
        if (e)
            return regs_err(h->regs, e);
        if (hg_ll(h, s_wfe_in_hook, &n) || hs_ll(h, s_wfe_in_hook, n + 1)
            || hs_ll(h, str_slice_pc, resume) || hs_u64(h, str_slice_blocks, h->bh->blocks))
            return -1;
        h->wfes++;
        return 1;
    }
    /* _sleep_in_hook declines under the C run loop: the trap */
    int cl = hg_truthy(h, s_c_loop);
    if (cl <= 0)
        return cl;   /* not reached by firmware: a sleeping WFE outside the C loop */
    PyObject *trap = FAULT(h->wfe_bug) ? Py_NewRef(Py_None)
                                : Py_BuildValue("(Ok)", s_wfe, (unsigned long)at);
    if (trap == NULL)
        return -1;
    int r = hs(h, str_trap, trap);
    Py_DECREF(trap);
    if (r)
        return -1;
    if (kind == WFE_AT) {
        e = h->regs->wr(h->uch, h->id_pc, &(uint64_t){resume});
        if (e)
            return regs_err(h->regs, e);
    }
    h->emu_stop(h->uch);
    h->wfes++;
    return 1;
}

static bool exc_insn_hook(void *uc, void *user_data) {
    ExcHook *h = (ExcHook *)user_data;
    PyGILState_STATE g = PyGILState_Ensure();
    bool answer = false;
    int r = wfe_here(h);
    if (r > 0) {
        answer = true;
    } else if (r < 0) {
        hook_keep_exception(h);                       /* the hook answers false */
    } else {
        h->wfes_handed++;
        PyObject *x = PyObject_CallNoArgs(h->insn_fallback);
        if (x == NULL) {
            hook_keep_exception(h);
        } else {
            answer = PyObject_IsTrue(x) == 1;
            Py_DECREF(x);
        }
    }
    PyGILState_Release(g);
    return answer;
}

/* install_insn(uc_hook_add, UC_HOOK_INSN_INVALID, fallback) -> uc error code:
 * the invalid-instruction hook in C (after install) */
PyObject *ExcHook_install_insn(ExcHook *h, PyObject *args) {
    unsigned long long hook_add;
    int htype;
    PyObject *fallback;
    if (!PyArg_ParseTuple(args, "KiO", &hook_add, &htype, &fallback))
        return NULL;
    if (!h->on) {
        PyErr_SetString(PyExc_RuntimeError, "install_insn before install");
        return NULL;
    }
    Py_INCREF(fallback);
    Py_XSETREF(h->insn_fallback, fallback);
    int err = ((uc_hook_add_fn2)(uintptr_t)hook_add)(h->uch, &h->hh_insn, htype,
                                                     (void *)&exc_insn_hook, h, 1, 0);
    return PyLong_FromLong(err);
}
