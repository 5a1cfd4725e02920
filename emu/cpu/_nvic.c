/*
 * The NVIC in C: CortexM's priority arithmetic (group_prio, best_pending,
 * active_priority, execution_priority, _pending_to_enter) over the NVIC's
 * state as the CortexM holds it, and the pends written through the SCS
 * (below).  See _core.h.
 */
#include "_core.h"

/* 0, or -1 (a Python error, or state this code does not handle: *odd = 1) */
int nvic_load(ExcHook *h, Nvic *n, PyObject **prio_ref) {
    if (hg_u64(h, str_pending, &n->pending) || hg_u64(h, str_active, &n->active)
        || hg_u64(h, str_irq_level, &n->irq_level)
        || hg_u64(h, str_irq_enabled, &n->irq_enabled)
        || hg_ll(h, str_shcsr, &n->shcsr) || hg_ll(h, str_prigroup, &n->prigroup)
        || hg_ll(h, str_scr, &n->scr))
        return -1;
    PyObject *p = hg(h, str_prio);
    if (p == NULL)
        return -1;
    if (!PyList_Check(p) || n->prigroup < 0 || n->prigroup > 7) {
        Py_DECREF(p);
        PyErr_SetString(PyExc_ValueError, "unexpected NVIC state");
        return -1;
    }
    n->prio = p;
    *prio_ref = p;
    return 0;
}

static inline long long nv_prio(Nvic *n, int e) {
    return PyLong_AsLongLong(PyList_GET_ITEM(n->prio, e));
}

long long nv_group(ExcHook *h, Nvic *n, long long raw) {     /* group_prio */
    if (raw < 0)
        return raw;
    long long sub = h->m4 ? (2LL << n->prigroup) - 1 : 0;
    return raw & ~sub & 0xFF;
}

/* CortexM.best_pending over ``pend``: 1 with *g, *e set, 0 when none */
int nv_best(ExcHook *h, Nvic *n, uint64_t pend, long long *g, int *e) {
    long long keep = h->m4 ? (~((2LL << n->prigroup) - 1) & 0xFF) : 0xFF;
    int found = 0;
    long long bg = 0, braw = 0;
    while (pend) {
        int x = __builtin_ctzll(pend);
        pend &= pend - 1;
        int enabled;
        if (x >= 16)
            enabled = (n->irq_enabled >> (x - 16)) & 1;
        else if (x == 4)
            enabled = (n->shcsr >> 16) & 1;   /* not reached by firmware: a configurable fault is entered or escalated at once */
        else if (x == 5)
            enabled = (n->shcsr >> 17) & 1;   /* not reached by firmware: a configurable fault is entered or escalated at once */
        else if (x == 6)
            enabled = (n->shcsr >> 18) & 1;   /* not reached by firmware: a configurable fault is entered or escalated at once */
        else
            enabled = 1;
        if (!enabled || x >= PyList_GET_SIZE(n->prio))
            continue;
        long long raw = nv_prio(n, x);
        long long kg = raw >= 0 ? (raw & keep) : raw;
        if (!found || kg < bg || (kg == bg && raw < braw)) {
            found = 1;
            bg = kg;
            braw = raw;
            *e = x;
        }
    }
    *g = bg;
    return found;
}

long long nv_active_prio(ExcHook *h, Nvic *n, uint64_t act) {     /* active_priority */
    long long prio = 256;
    while (act) {
        int x = __builtin_ctzll(act);
        act &= act - 1;
        if (x >= PyList_GET_SIZE(n->prio))
            continue;   /* not reached by firmware: no exception is active beyond the priority table */
        long long p = nv_group(h, n, nv_prio(n, x));
        if (p < prio)
            prio = p;
    }
    return prio;
}


/* _priority_after_return (faultmask 0) or execution_priority (faultmask 1) */
long long nv_exec_prio(ExcHook *h, Nvic *n, uint64_t act, int faultmask, int *err) {
    long long prio = nv_active_prio(h, n, act);
    if (h->m4) {
        uint32_t bp = hreg(h, h->id_basepri, err) & h->prio_mask;
        if (bp && nv_group(h, n, bp) < prio)
            prio = nv_group(h, n, bp);
        if (faultmask && (hreg(h, h->id_faultmask, err) & 1))
            return -1;
    }
    if ((hreg(h, h->id_primask, err) & 1) && prio > 0)
        prio = 0;
    return prio;
}

/* CortexM._pending_to_enter: 1 when an entry is due now, 0 when not (the
 * mask watch armed when only the masks hold the best one back), -1 error */
int nv_pending_to_enter(ExcHook *h, Nvic *n) {
    long long g;
    int e, err = 0;
    MASKW(h, mask_watch) = 0;
    if (!nv_best(h, n, n->pending, &g, &e))
        return PyErr_Occurred() ? -1 : 0;
    long long ap = nv_active_prio(h, n, n->active);
    if (g >= ap)
        return 0;
    long long ep = nv_exec_prio(h, n, n->active, 1, &err);
    if (err)
        return regs_err(h->regs, err);
    if (g < ep)
        return 1;
    MASKW(h, mask_watch) = 1;
    MASKW(h, pend_prio) = (int32_t)g;
    MASKW(h, active_prio) = (int32_t)ap;
    long long sub = h->m4 ? (2LL << n->prigroup) - 1 : 0;
    MASKW(h, prigroup_mask) = (uint32_t)(h->prio_mask & ~sub & 0xFF);
    return PyErr_Occurred() ? -1 : 0;
}

/*
 * Pends from the NVIC's ISPR words and ICSR's PENDSVSET/PENDSTSET in C
 * (ExcHook.pend_write, the SCS page's W_CALL op for those registers):
 * CortexM.set_pending and _pending_changed step for step (the pending bit
 * set; the event register set when asleep or SEVONPEND; inside a slice an
 * entry asked of the block hook, or the mask watch armed, or the slice
 * ended).  Any other ICSR bit, and every other register, goes to
 * SystemControlSpace.write_word (``fallback``).  micro:bit MicroPython pends
 * its SWI through ISPR ~170 times an emulated second; FreeRTOS and Zephyr
 * pend PendSV through ICSR at every yield.
 */

/* CortexM._pending_changed */
int pend_changed(ExcHook *h) {
    int t = hg_truthy(h, str_sleeping_attr);
    long long scr, ipsr;
    if (t < 0 || hg_ll(h, str_scr, &scr))
        return -1;
    if ((t || (scr & 0x10)) && hs_ll(h, s_event_register, 1))
        return -1;
    if (h->bh->sync.in_slice) {
        int fp = hg_truthy(h, s_fast_pends), w = hg_truthy(h, str_watched);
        if (fp < 0 || w < 0 || hg_ll(h, str_ipsr_attr, &ipsr))
            return -1;
        if (fp && !w && !(3 <= ipsr && ipsr <= 6)) {
            Nvic n;
            PyObject *prio = NULL;
            if (nvic_load(h, &n, &prio))
                return -1;
            int r = nv_pending_to_enter(h, &n);
            Py_XDECREF(prio);
            if (r < 0)
                return -1;
            if (r == 0)
                return 0;
            int fe = hg_truthy(h, str_fast_entries);
            if (fe < 0)
                return -1;
            if (fe) {
                h->bh->entry_flag = 1;
                return 0;
            }
        }
    }
    h->bh->stop_flag = 1;
    return 0;
}

/* CortexM.set_pending */
static int pend_one(ExcHook *h, int exc) {
    uint64_t pending;
    if (hg_u64(h, str_pending, &pending))
        return -1;
    if ((pending >> exc) & 1)
        return 0;
    if (hs_u64(h, str_pending, pending | (1ULL << exc)))
        return -1;
    return FAULT(h->pend_bug) ? 0 : pend_changed(h);     /* a test build's fault */
}

/* pend_write(offset, value): see above (``pend_fallback``: write_word) */
PyObject *ExcHook_pend_write(ExcHook *h, PyObject *const *a, Py_ssize_t na) {
    if (na != 2 || h->pend_fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "pend_write(offset, value) after pend_fallback is set");
        return NULL;
    }
    long off = PyLong_AsLong(a[0]);
    unsigned long long value = PyLong_AsUnsignedLongLongMask(a[1]) & 0xFFFFFFFFull;
    if (PyErr_Occurred())
        return NULL;
    if (!h->loop_ready || h->cpu == NULL)
        goto fallback;   /* not reached by firmware: pends before a C loop exists (a Python-clock machine) */
    if (off == 0xD04) {
        if (value & ((1ull << 31) | (1ull << 27) | (1ull << 25)))
            goto fallback;                      /* NMI, a clear: the model */
        if ((value & (1ull << 28)) && pend_one(h, 14))
            return NULL;
        if ((value & (1ull << 26)) && pend_one(h, 15))
            return NULL;
        Py_RETURN_NONE;
    }
    if (0x200 <= off && off < 0x280) {
        long long nirq;
        if (hg_ll(h, s_num_irq, &nirq))
            return NULL;
        int word = (int)((off - 0x200) >> 2);
        for (int i = 0; i < 32; i++) {
            int irq = 32 * word + i;
            if (!((value >> i) & 1) || irq >= nirq || irq > 47)
                continue;
            if (pend_one(h, 16 + irq))
                return NULL;
        }
        Py_RETURN_NONE;
    }
fallback:
    return PyObject_CallFunction(h->pend_fallback, "lKk", off, value, 0xFFFFFFFFul);
}

/* icsr_read(offset): SystemControlSpace._icsr in C (VECTACTIVE, VECTPENDING,
 * ISRPENDING, RETTOBASE, PENDSTSET, PENDSVSET, NMIPENDSET); FreeRTOS reads
 * ICSR around every PendSV (InfiniTime: ~390 an emulated second). */
PyObject *ExcHook_icsr_read(ExcHook *h, PyObject *arg) {
    (void)arg;
    if (h->cpu == NULL) {
        PyErr_SetString(PyExc_ValueError, "icsr_read before install");
        return NULL;
    }
    long long ipsr;
    if (hg_ll(h, str_ipsr_attr, &ipsr))
        return NULL;
    ipsr &= 0x1FF;
    Nvic n;
    PyObject *prio = NULL;
    if (nvic_load(h, &n, &prio))
        return NULL;
    uint64_t v = (uint64_t)ipsr;
    long long g;
    int e;
    if (nv_best(h, &n, n.pending, &g, &e))
        v |= ((uint64_t)e & 0x1FF) << 12;
    Py_XDECREF(prio);
    if (PyErr_Occurred())
        return NULL;
    if (n.pending >> 16)
        v |= 1ull << 22;
    uint64_t others = ipsr < 64 ? n.active & ~(1ull << ipsr) : n.active;
    if (ipsr && !others)
        v |= 1ull << 11;                              /* RETTOBASE */
    if ((n.pending >> 15) & 1)
        v |= 1ull << 26;
    if ((n.pending >> 14) & 1)
        v |= 1ull << 28;
    if ((n.pending >> 2) & 1)
        v |= 1ull << 31;
    return PyLong_FromUnsignedLongLong(v);
}
