/*
 * The run loop in C (ExcHook.run): CortexM.run's ``while True`` with the
 * same steps in the same order, for the machines that have ExcHook (the
 * native helpers).  Each step is the Python's own, carried out here where
 * it is arithmetic or the C above (Clock.run_due and next_event_time over
 * the clock's heap, _take_pending's entry (exc_enter_here), _idle_to_next_event,
 * _start_slice and _rebase, the engine's slice (uc_emu_start as the
 * binding calls it, the GIL released), sync_time, and _after_slice's
 * common ends: an exception return already done, a WFI, a block to cost),
 * and a call of the CortexM's Python method for everything else (a fault
 * handler's hang check, the wake condition, System OFF, every other trap,
 * an engine error).  CortexM.run calls it only while none of the methods it
 * stands for is replaced (CortexM._native_loop_ok); with it off, or without
 * the native helpers, the Python loop runs: the reference, compared cycle
 * for cycle in tests/cpu/test_native_loop.py.
 */
#include "_core.h"
/* Clock.next_event_time (the C clock's: loop_setup takes no other) */
static inline int lc_next(ExcHook *h, long long *out) {
    ClockObject *c = (ClockObject *)h->clock;
    clk_clean(c);
    *out = c->next_deadline;
    return 0;
}

/* Clock.run_due: -1 on a Python error (an event's own, raised on) */
static inline int lc_run_due(ExcHook *h) {
    return clk_run_due((ClockObject *)h->clock) < 0 ? -1 : 0;
}

/* CortexM.sync_time */
static int lc_sync(ExcHook *h, long long ct) {
    long long bt, bc, now;
    if (attr_ll(h->cpu, str_base_ticks, &bt) || attr_ll(h->cpu, str_base_cycles, &bc)
        || clock_get_now(h->clock, &now))
        return -1;
    long long t = bt + ((long long)h->bh->cycles - bc) * ct;
    if (t > now)
        return clock_set_now(h->clock, t);
    return 0;
}

/* CortexM._start_slice with _rebase */
static int lc_start_slice(ExcHook *h, long long nxt, uint32_t pc, long long ct) {
    long long now;
    if (clock_get_now(h->clock, &now))
        return -1;
    long long span = nxt - now;
    long long budget = span > 0 ? (span + ct - 1) / ct : 0;   /* -(-(span) // ct) */
    if (span <= 0)
        budget = -((-span) / ct);   /* not reached by firmware: due events run before a slice: the next lies ahead */
    if (budget < 1)
        budget = 1;   /* not reached by firmware: due events run before a slice: the next lies ahead */
    budget += FAULT(h->skew);   /* a test build's fault: a loop that differs */
    if (budget < 1)
        budget = 1;   /* not reached by firmware: only a test build's skew makes the budget small */
    uint64_t cycles = h->bh->cycles;
    if (hs_ll(h, str_base_ticks, now) || hs_u64(h, str_base_cycles, cycles))
        return -1;
    h->bh->sync.base_ticks = now;
    h->bh->sync.base_cycles = cycles;
    h->bh->sync.synced_cycles = cycles;
    int lw = hg_truthy(h, s_loop_watch);
    if (lw < 0)
        return -1;
    if (lw)
        h->bh->lp_have = 0;
    h->bh->deadline = cycles + (uint64_t)budget;
    h->bh->stop_flag = 0;
    h->bh->entry_flag = 0;
    h->bh->reason = 0;
    if (hs_ll(h, str_slice_pc, pc) || hs_u64(h, str_slice_blocks, h->bh->blocks))
        return -1;
    return 0;
}

/* _after_slice: the common ends here, the rest by the Python (err: a UcError or NULL) */
static int lc_set_sleeping(ExcHook *h, int asleep);

static int lc_after_slice(ExcHook *h, PyObject *err) {
    PyObject *cpu = h->cpu;
    PyObject *halt = hg(h, str_halt_in_hook);
    if (halt == NULL)
        return -1;
    int odd = halt != Py_None || err != NULL;
    Py_DECREF(halt);
    long long ccr;
    if (!odd) {
        if (hg_ll(h, str_ccr, &ccr))
            return -1;
        if (ccr & 0x10) {
            int armed = hg_truthy(h, s_div_armed);
            if (armed < 0)
                return -1;
            odd = !armed;
        }
    }
    PyObject *trap = NULL;
    if (!odd) {
        trap = hg(h, str_trap);
        if (trap == NULL)
            return -1;
        if (trap == Py_None && h->bh->reason == 3) {      /* REASON_MISS: cost the block */
            Py_DECREF(trap);
            PyObject *x = PyObject_CallMethod(cpu, "_cost_block", "kk",
                                              (unsigned long)h->bh->miss_addr,
                                              (unsigned long)h->bh->miss_size);
            Py_XDECREF(x);
            return x ? 0 : -1;
        }
        if (trap != Py_None) {
            int ret = PyTuple_Check(trap) && PyTuple_GET_SIZE(trap) == 1
                      && PyUnicode_Check(PyTuple_GET_ITEM(trap, 0))
                      && PyUnicode_Compare(PyTuple_GET_ITEM(trap, 0), s_returned) == 0;
            int wfe = !ret && PyTuple_Check(trap) && PyTuple_GET_SIZE(trap) == 2
                      && PyUnicode_Check(PyTuple_GET_ITEM(trap, 0))
                      && PyUnicode_Compare(PyTuple_GET_ITEM(trap, 0), s_wfe) == 0;
            Py_DECREF(trap);
            if (ret)
                return hs(h, str_trap, Py_None);
            if (wfe) {                       /* _after_slice's "wfe": asleep, or not */
                if (hs(h, str_trap, Py_None))
                    return -1;
                int ev = hg_truthy(h, s_event_register);
                if (ev < 0)
                    return -1;
                if (ev)
                    return hs_ll(h, s_event_register, 0);   /* not reached by firmware: the event register set between the trap and the slice's end */
                if (lc_set_sleeping(h, 1))
                    return -1;
                return hs(h, s_sleep_kind, s_wfe);
            }
            odd = 1;
        } else {
            Py_DECREF(trap);
        }
    }
    if (odd) {
        PyObject *x = PyObject_CallMethodOneArg(cpu, s_after_slice, err ? err : Py_None);
        Py_XDECREF(x);
        return x ? 0 : -1;
    }
    if (h->bh->reason != 0)
        return 0;
    /* Unicorn returned by itself: a WFI when the halfword before PC is one */
    int e = 0;
    uint32_t pc = hreg(h, h->id_pc, &e);
    if (e) {
        regs_err(h->regs, e);
        return -1;
    }
    unsigned char b[2];
    if (h->regs->mem_rd(h->uch, (uint64_t)((pc - 2) & 0xFFFFFFFFu), b, 2) == 0
        && (b[0] | (b[1] << 8)) == 0xBF30) {
        if (hs(h, str_sleeping_prop, Py_True)
            || hs(h, s_sleep_kind, s_wfi))
            return -1;
    }
    return 0;
}

/* CortexM.sleeping's setter (the C loop runs only while it is the class's):
 * ``_sleeping`` set, every on_sleep listener told of a change; 0 or -1 */
static int lc_set_sleeping(ExcHook *h, int asleep) {
    int cur = hg_truthy(h, str_sleeping_attr);
    if (cur < 0)
        return -1;
    if (cur == asleep)
        return 0;   /* not reached by firmware: the loop sets sleeping only on a change */
    PyObject *v = asleep ? Py_True : Py_False;
    if (hs(h, str_sleeping_attr, v))
        return -1;
    PyObject *ls = hg(h, s_on_sleep);
    if (ls == NULL)
        return -1;
    PyObject *seq = PySequence_Fast(ls, "on_sleep");
    Py_DECREF(ls);
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *x = PyObject_CallOneArg(PySequence_Fast_GET_ITEM(seq, i), v);
        if (x == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        Py_DECREF(x);
    }
    Py_DECREF(seq);
    return 0;
}

/* CortexM._wake_condition: WFE (``wfe``) wakes when a pending exception
 * would be taken (PRIMASK, BASEPRI, FAULTMASK included), WFI when one would
 * preempt the active ones and BASEPRI; 1, 0, or -1 error */
static int lc_wake_condition(ExcHook *h, int wfe) {
    Nvic n;
    PyObject *prio_ref = NULL;
    if (nvic_load(h, &n, &prio_ref)) {
        Py_XDECREF(prio_ref);
        return -1;
    }
    long long g;
    int e, err = 0, wake = 0;
    if (nv_best(h, &n, n.pending, &g, &e)) {
        long long p;
        if (wfe) {
            p = nv_exec_prio(h, &n, n.active, 1, &err);
        } else {
            p = nv_active_prio(h, &n, n.active);
            if (h->m4) {
                uint32_t bp = hreg(h, h->id_basepri, &err) & h->prio_mask;
                if (bp && nv_group(h, &n, bp) < p)
                    p = nv_group(h, &n, bp);
            }
        }
        wake = g < p;
    }
    Py_DECREF(prio_ref);
    if (err)
        return regs_err(h->regs, err);
    return PyErr_Occurred() ? -1 : wake;
}

static PyObject *lc_reason(ExcHook *h, int i) {
    Py_INCREF(h->reasons[i]);
    return h->reasons[i];
}

/* CortexM._idle_to_next_event: 1 with *stop set (a new reference), 0 go on, -1 error */
static int lc_idle(ExcHook *h, long long until, int forever, PyObject **stop) {
    long long nxt, now;
    if (lc_next(h, &nxt) || clock_get_now(h->clock, &now))
        return -1;
    if (nxt >= until) {
        if (until >= LOOP_NEVER) {
            *stop = lc_reason(h, forever);
            return 1;
        }
        if (clock_set_now(h->clock, now > until ? now : until))
            return -1;
        *stop = lc_reason(h, 0);
        return 1;
    }
    if (clock_set_now(h->clock, now > nxt ? now : nxt))
        return -1;
    return 0;
}

PyObject *ExcHook_run(ExcHook *h, PyObject *args) {
    long long until;
    PyObject *should_stop, *flags = NULL;
    if (!PyArg_ParseTuple(args, "LO|O!", &until, &should_stop, &PyTuple_Type, &flags))
        return NULL;
    Py_ssize_t nflags = flags != NULL ? PyTuple_GET_SIZE(flags) : 0;
    for (Py_ssize_t i = 0; i < nflags; i++) {
        PyObject *f = PyTuple_GET_ITEM(flags, i);
        if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 2
            || !PyUnicode_Check(PyTuple_GET_ITEM(f, 1))) {
            PyErr_SetString(PyExc_TypeError, "flags: (object, attribute name) pairs");
            return NULL;
        }
    }
    if (!h->loop_ready || h->cpu == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ExcHook.run before loop_setup");
        return NULL;
    }
    PyObject *cpu = h->cpu, *stop = NULL;
    long long ct;
    if (hg_ll(h, s_cycle_ticks, &ct))
        return NULL;
    if (ct <= 0) {
        PyErr_SetString(PyExc_ValueError, "cycle_ticks must be positive");
        return NULL;
    }
    for (;;) {
        if (PyErr_CheckSignals())                    /* Ctrl-C, as between Python's steps */
            return NULL;
        if (lc_run_due(h))
            return NULL;
        for (Py_ssize_t i = 0; i < nflags; i++) {    /* a reset or a halt asked for */
            PyObject *f = PyTuple_GET_ITEM(flags, i);
            int t = truthy_attr(PyTuple_GET_ITEM(f, 0), PyTuple_GET_ITEM(f, 1));
            if (t < 0)
                return NULL;
            if (t)
                return lc_reason(h, 1);
        }
        if (should_stop != Py_None) {
            PyObject *r = PyObject_CallNoArgs(should_stop);
            if (r == NULL)
                return NULL;
            int t = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (t < 0)
                return NULL;
            if (t)
                return lc_reason(h, 1);
        }
        PyObject *sr = hg(h, str_stop_reason);
        if (sr == NULL)
            return NULL;
        int t = PyObject_IsTrue(sr);
        if (t) {
            if (t < 0) {   /* not reached by firmware: halts raise CpuHalt; none leaves stop_reason behind */
                Py_DECREF(sr);
                return NULL;
            }
            return sr;   /* not reached by firmware: halts raise CpuHalt; none leaves stop_reason behind */
        }
        Py_DECREF(sr);
        if ((t = hg_truthy(h, str_powered_off)) < 0)
            return NULL;
        if (t) {
            PyObject *r = PyObject_CallMethod(cpu, "_idle_to_next_event", "LO", until,
                                              h->reasons[3]);
            if (r == NULL)
                return NULL;
            if (PyObject_IsTrue(r))
                return r;
            Py_DECREF(r);
            continue;
        }
        long r = exc_enter_here(h, -1, 0);                /* _take_pending */
        if (r == -1)
            return NULL;
        if (r == -2) {
            PyObject *x = PyObject_CallMethodNoArgs(cpu, s_take_pending);
            if (x == NULL)
                return NULL;
            Py_DECREF(x);
        }
        long long ipsr;
        if (hg_ll(h, str_ipsr_attr, &ipsr))
            return NULL;
        if (3 <= ipsr && ipsr <= 6) {
            PyObject *x = PyObject_CallMethodNoArgs(cpu, s_check_fault_hang);
            if (x == NULL)
                return NULL;
            Py_DECREF(x);
        }
        if ((t = hg_truthy(h, str_sleeping_attr)) < 0)
            return NULL;
        if (t) {
            int wake = 0, wfe = 0;
            PyObject *sk = hg(h, s_sleep_kind);
            if (sk == NULL)
                return NULL;
            wfe = PyUnicode_Check(sk) && PyUnicode_Compare(sk, s_wfe) == 0;
            Py_DECREF(sk);
            wake = lc_wake_condition(h, wfe);             /* _wake_condition */
            if (wake < 0)
                return NULL;
            if (!wake && wfe && (t = hg_truthy(h, s_event_register)) != 0) {
                if (t < 0)
                    return NULL;
                wake = 1;
            }
            if (wake) {
                if (wfe && hs_ll(h, s_event_register, 0))
                    return NULL;
                if (lc_set_sleeping(h, 0))
                    return NULL;
                continue;
            }
            int s = lc_idle(h, until, 2, &stop);
            if (s < 0)
                return NULL;
            if (s)
                return stop;
            continue;
        }
        long long now, nxt;
        if (clock_get_now(h->clock, &now))
            return NULL;
        if (now >= until)
            return lc_reason(h, 0);
        if (lc_next(h, &nxt))
            return NULL;
        if (nxt > until)
            nxt = until;
        if (3 <= ipsr && ipsr <= 6) {
            PyObject *since = hg(h, s_fault_since);
            if (since == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                    return NULL;
                PyErr_Clear();
            } else {
                int st = PyObject_IsTrue(since);
                long long at = 0, fh = 0;
                if (st > 0) {
                    PyObject *a = PySequence_GetItem(since, 1);
                    if (a == NULL) {
                        Py_DECREF(since);
                        return NULL;
                    }
                    at = PyLong_AsLongLong(a);
                    Py_DECREF(a);
                    if (hg_ll(h, s_fault_hang_ticks, &fh)) {
                        Py_DECREF(since);
                        return NULL;
                    }
                    if (at + fh < nxt)
                        nxt = at + fh;
                }
                Py_DECREF(since);
                if (st < 0 || PyErr_Occurred())
                    return NULL;
            }
        }
        if (hs(h, str_trap, Py_None))
            return NULL;
        if ((t = hg_truthy(h, s_mpu_dirty)) < 0)
            return NULL;
        if (t) {
            PyObject *mpu = hg(h, str_mpu);
            PyObject *x = mpu ? PyObject_CallMethodNoArgs(mpu, s_sync) : NULL;
            Py_XDECREF(mpu);
            if (x == NULL)
                return NULL;
            Py_DECREF(x);
        }
        int e = 0;
        uint32_t pc = hreg(h, h->id_pc, &e);
        if (e)
            return regs_err(h->regs, e), NULL;
        if (lc_start_slice(h, nxt, pc, ct))
            return NULL;
        h->bh->sync.in_slice = 1;
        if (PyObject_SetAttr(h->uc, str_hook_exception, Py_None))
            return NULL;
        int st;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        Py_BEGIN_ALLOW_THREADS
        st = h->emu_start(h->uch, (uint64_t)(pc | 1u), 0xFFFFFFFFull, 0, 0);
        Py_END_ALLOW_THREADS
        clock_gettime(CLOCK_MONOTONIC, &t1);
        h->inside_ns += (unsigned long long)((t1.tv_sec - t0.tv_sec) * 1000000000LL
                                             + (t1.tv_nsec - t0.tv_nsec));
        h->slices++;
        h->bh->sync.in_slice = 0;
        PyObject *x = PyObject_CallMethodNoArgs(cpu, s_slice_end);   /* finally: */
        if (x == NULL)
            return NULL;
        Py_DECREF(x);
        PyObject *err = NULL;
        if (st != 0) {
            err = PyObject_CallFunction(h->uc_error, "i", st);
            if (err == NULL)
                return NULL;
        } else {
            PyObject *he = PyObject_GetAttr(h->uc, str_hook_exception);
            if (he == NULL)
                return NULL;
            if (he != Py_None) {                          /* raised out of emu_start */
                PyErr_SetObject((PyObject *)Py_TYPE(he), he);
                Py_DECREF(he);
                return NULL;
            }
            Py_DECREF(he);
        }
        if (lc_sync(h, ct) || lc_after_slice(h, err)) {
            Py_XDECREF(err);
            return NULL;
        }
        Py_XDECREF(err);
    }
}

/* loop_setup(uc_emu_start, clock, UcError, (DEADLINE, BREAK, SLEEP, OFF)): the
 * C clock (emu._clock.Clock) only: a machine on the Python clock runs the
 * Python loop, whose scheduler it is */
PyObject *ExcHook_loop_setup(ExcHook *h, PyObject *args) {
    unsigned long long start;
    PyObject *clock, *uc_error, *reasons;
    if (!PyArg_ParseTuple(args, "KOOO!", &start, &clock, &uc_error, &PyTuple_Type, &reasons))
        return NULL;
    if (PyTuple_GET_SIZE(reasons) != 4) {
        PyErr_SetString(PyExc_ValueError, "four stop reasons");
        return NULL;
    }
    if (!is_clock(clock)) {
        PyErr_SetString(PyExc_TypeError, "the run loop in C needs the C clock (emu._clock.Clock)");
        return NULL;
    }
    if (h->cpu == NULL || h->bh == NULL) {
        PyErr_SetString(PyExc_ValueError, "loop_setup after install");
        return NULL;
    }
    PyObject *cd = PyObject_GenericGetDict(clock, NULL);
    PyObject *pd = PyObject_GenericGetDict(h->cpu, NULL);
    if (cd == NULL || pd == NULL) {
        Py_XDECREF(cd);
        Py_XDECREF(pd);
        return NULL;
    }
    Py_XSETREF(h->clock_dict, cd);
    Py_XSETREF(h->cpu_dict, pd);
    Py_INCREF(clock); Py_XSETREF(h->clock, clock);
    Py_INCREF(uc_error); Py_XSETREF(h->uc_error, uc_error);
    for (int i = 0; i < 4; i++) {
        PyObject *r = PyTuple_GET_ITEM(reasons, i);
        Py_INCREF(r);
        Py_XSETREF(h->reasons[i], r);
    }
    h->emu_start = (void *)(uintptr_t)start;
    h->loop_ready = 1;
    Py_RETURN_NONE;
}
