/*
 * emu.cpu._core: the Cortex-M's hot paths in C, the module's own header.
 *
 * The CPU is emu/cpu/cortexm.py's CortexM; what it does at every exception
 * and every slice is written here again, step for step, for the machines
 * that have the native helpers (the Python stays the reference, and the
 * registry of twins, emu/twins.py, pairs each function with the one it
 * stands for):
 *
 *   _fastregs.c    Regs: the engine's 32-bit registers without ctypes, and
 *                  the register and memory part of exception entry and return
 *                  (emu/cpu/fastregs.py installs it)
 *   _nvic.c        the NVIC's priorities and pending logic (best_pending,
 *                  execution_priority, _pending_to_enter) and the pends of
 *                  ISPR and ICSR (ExcHook.pend_write, icsr_read)   (nvic.py)
 *   _mpu.c         the MPU's checks at exception entry and return (Mpu.access,
 *                  off_now, the stacking check, sync's key)         (mpu.py)
 *   _exceptions.c  ExcHook: exception returns in the INTR hook, entries at the
 *                  run loop's and the block hook's request, tail-chains
 *                                                          (exceptions.py, hooks.py)
 *   _wfe.c         the WFEs in the invalid-instruction hook         (hooks.py)
 *   _runloop.c     the run loop (ExcHook.run: CortexM.run's loop)   (runloop.py)
 *   _flashguard.c  CPU stores into read-only flash dropped; the MPU's RAM stores
 *   _pagemap.c     the engine's TLB filled from the memory map      (hooks.py)
 *   _cost.c        a block's cycles and flags from its bytes         (cycles.py)
 *   _core.c        the module
 *
 * The NVIC's state stays the CortexM's Python attributes (pending, active,
 * irq_level, irq_enabled, prio, prigroup, shcsr, scr), read and written
 * here through the C API; the block hook's state (bh_state, _bh_state.h)
 * is shared by address.  Every piece of state hangs off an object one
 * machine owns (ExcHook, Regs, FlashGuard, PageMap); the globals are the
 * interned attribute names below, constant after import.
 */
#ifndef EMU_CPU_CORE_H
#define EMU_CPU_CORE_H

#include "../_pyhelp.h"
#include "../_clock.h"
#include "../_faults.h"
#include "_bh_state.h"
#include <time.h>

/* The attribute names the module reads and writes, interned once
 * (_core.c); the CortexM's, its MPU's, the clock's. */
#define CORE_NAMES(X) \
    X(s_after_slice, "_after_slice") \
    X(s_c_loop, "_c_loop") \
    X(s_check_fault_hang, "_check_fault_hang") \
    X(s_cost_block, "_cost_block") \
    X(s_cycle_ticks, "cycle_ticks") \
    X(s_div_armed, "_div_armed") \
    X(s_event_register, "event_register") \
    X(s_fast_pends, "fast_pends") \
    X(s_fast_wfe, "fast_wfe") \
    X(s_fault_hang_ticks, "fault_hang_ticks") \
    X(s_fault_since, "_fault_handler_since") \
    X(s_firing, "firing") \
    X(s_fn, "fn") \
    X(s_idle_to_next, "_idle_to_next_event") \
    X(s_loop_watch, "_loop_watch") \
    X(s_mpu_dirty, "mpu_dirty") \
    X(s_num_irq, "num_irq") \
    X(s_on_sleep, "on_sleep") \
    X(s_returned, "returned") \
    X(s_sev_block, "_sev_block") \
    X(s_sleep_kind, "sleep_kind") \
    X(s_slice_end, "slice_end") \
    X(s_sync, "sync") \
    X(s_take_pending, "_take_pending") \
    X(s_wfe, "wfe") \
    X(s_wfe_in_c, "_wfe_in_c") \
    X(s_wfe_in_hook, "wfe_in_hook") \
    X(s_wfe_kinds, "_wfe_kinds") \
    X(s_wfi, "wfi") \
    X(str_active, "active") \
    X(str_base_cycles, "_cycle_base") \
    X(str_base_ticks, "_cycle_base_ticks") \
    X(str_ccr, "ccr") \
    X(str_enter_in_hook, "_enter_in_hook") \
    X(str_entries_in_hook, "entries_in_hook") \
    X(str_fast_entries, "fast_entries") \
    X(str_fast_returns, "fast_returns") \
    X(str_halt_in_hook, "_halt_in_hook") \
    X(str_hook_exception, "_hook_exception") \
    X(str_installed, "_installed") \
    X(str_ipsr_attr, "_ipsr") \
    X(str_irq_enabled, "irq_enabled") \
    X(str_irq_level, "irq_level") \
    X(str_mpu, "mpu") \
    X(str_mpu_applied, "_applied") \
    X(str_mpu_config, "_config") \
    X(str_mpu_ctrl, "ctrl") \
    X(str_mpu_sync, "sync") \
    X(str_on_exception, "on_exception") \
    X(str_pending, "pending") \
    X(str_powered_off, "powered_off") \
    X(str_prigroup, "prigroup") \
    X(str_prio, "prio") \
    X(str_rasr, "rasr") \
    X(str_rbar, "rbar") \
    X(str_returns_in_hook, "returns_in_hook") \
    X(str_scr, "scr") \
    X(str_shcsr, "shcsr") \
    X(str_sleeping_attr, "_sleeping") \
    X(str_sleeping_prop, "sleeping") \
    X(str_slice_blocks, "_slice_blocks") \
    X(str_slice_pc, "_slice_pc") \
    X(str_stop_reason, "stop_reason") \
    X(str_tail_chains, "tail_chains") \
    X(str_trap, "_trap") \
    X(str_values, "values") \
    X(str_vtor, "vtor") \
    X(str_watched, "_boundaries_watched")

#define CORE_NAME_EXTERN(var, text) EMU_INTERNAL extern PyObject *var;
CORE_NAMES(CORE_NAME_EXTERN)

typedef int (*uc_reg_fn)(void *uc, int regid, void *value);

typedef int (*uc_mem_fn)(void *uc, uint64_t address, void *bytes, uint64_t size);

/* the register ids exc_push/exc_enter/exc_pop use, in this order
 * (emu/cpu/cortexm.py passes them to set_exc) */
enum { X_R0, X_R1, X_R2, X_R3, X_R12, X_LR, X_XPSR, X_CONTROL, X_MSP, X_PSP, X_IPSR, X_PC,
       X_NZCV, X_S0, X_FPSCR = X_S0 + 16, X_NIDS };

typedef struct {
    PyObject_HEAD
    void *uch;
    uc_reg_fn rd, wr;
    PyObject *slow_read, *slow_write, *slow_read_batch, *slow_write_batch, *error;
    unsigned char is32[1024];
    uc_mem_fn mem_rd, mem_wr;   /* set by set_exc: exception entry and return in C */
    int xid[X_NIDS];
} Regs;

/*
 * ExcHook: exception returns in the engine's INTR hook, without Python.
 *
 * The INTR hook (UC_HOOK_INTR) is installed here in C.  An exception return
 * (intno 8) that CortexM._return_in_hook would carry out inside the slice,
 * without the MPU (or in a watched run), is done here with the same steps in the
 * same order: the on_exception listeners told, ``active``/``pending``
 * updated (a line still high pends again), FAULTMASK cleared, the frame
 * popped (Regs' exc_pop), PC's Thumb bit, and the check whether the run
 * loop must act (an entry that can be taken now, a fault handler, sleep, a
 * stop, a run watched by run_until's predicate, which the Python hook hands
 * to the run loop after the slice): then the slice ends (``_trap =
 * ("returned",)``),
 * otherwise the slice goes on, with the block hook's mask watch armed as
 * CortexM._pending_to_enter arms it.  The NVIC state stays the CortexM's
 * Python attributes (pending, active, irq_level, irq_enabled, prio,
 * prigroup, shcsr, scr), read and written here through the C API.
 * A tail-chain (a pending exception that preempts the return's target) is
 * done here as CortexM._exception_return does it: the next exception entered
 * on the same frame (exc_enter with LR the same EXC_RETURN).
 * Anything else (other interrupts, a tail-chain to a fault, faults, NMI,
 * SLEEPONEXIT, the MPU) goes to the Python hook, with nothing changed.
 */
typedef int (*uc_hook_add_fn)(void *uc, size_t *hh, int type, void *callback, void *user_data,
                              uint64_t begin, uint64_t end, ...);
typedef int (*uc_hook_add_fn2)(void *uc, size_t *hh, int type, void *callback, void *user_data,
                               uint64_t begin, uint64_t end);
typedef int (*uc_emu_stop_fn2)(void *uc);

typedef struct {
    PyObject_HEAD
    PyObject *cpu;            /* the CortexM */
    Regs *regs;               /* its engine's registers (exc_pop) */
    PyObject *fallback;       /* fallback(intno): the Python hook (CortexM._hook_intr) */
    PyObject *uc;             /* the binding's Uc (an exception kept as the binding does) */
    PyObject *trap;           /* ("returned",) */
    void *uch;
    uc_emu_stop_fn2 emu_stop;
    int m4;
    uint32_t prio_mask;
    int id_primask, id_basepri, id_faultmask, id_pc;
    volatile bh_state *bh;    /* the block hook's state (its mask watch, cycles, ...) */
    size_t hh;
    int on;                   /* 0: every interrupt to the Python hook */
    unsigned long long returns, handed, entries, chains;
    /* the run loop in C (ExcHook.run, set up by loop_setup) */
    int loop_ready;
    PyObject *clock, *uc_error, *reasons[4];   /* StopReason DEADLINE, BREAK, SLEEP, OFF */
    int (*emu_start)(void *uc, uint64_t begin, uint64_t until, uint64_t timeout, size_t count);
    unsigned long long slices;
    PyObject *pend_fallback;   /* SystemControlSpace.write_word (pend_write's other writes) */
    unsigned long long inside_ns;  /* host time inside uc_emu_start (CLOCK_MONOTONIC) */
    PyObject *cpu_dict, *clock_dict;   /* their __dict__s: plain attributes read and set there */
    /* the invalid-instruction hook (install_insn): the WFEs in C */
    PyObject *insn_fallback;   /* fallback() -> bool: CortexM._hook_insn_invalid */
    size_t hh_insn;
    unsigned long long wfes, wfes_handed;
#ifdef EMU_TEST_FAULTS
    /* a test build's switches (emu/_faults.h) */
    long long skew;            /* cycles added to every slice's budget */
    int chain_bug;             /* 1 leaves a tail-chained exception pending */
    int mpu_bug;               /* 1 stacks without the MPU's check */
    int pend_bug;              /* 1 pends without _pending_changed's steps */
    int wfe_bug;               /* 1 leaves a sleeping WFE's trap out */
    int mask_bug;              /* 1 arms a mask watch the block hook does not read */
    int32_t spare_mask_watch, spare_pend_prio, spare_active_prio;
    uint32_t spare_prigroup_mask;
#endif
} ExcHook;

/* The mask watch's fields, as the block hook reads them (a test build's
 * mask_bug: spare copies nobody reads) */
#ifdef EMU_TEST_FAULTS
#define MASKW(h, f) (*((h)->mask_bug ? &(h)->spare_##f : &(h)->bh->f))
#else
#define MASKW(h, f) ((h)->bh->f)
#endif

/* An attribute of the cpu or the clock: from its instance dict when there
 * (what generic getattr finds for an attribute no data descriptor of the
 * class shadows: tests/cpu/test_native_loop.py checks the names), else through
 * getattr (a class default, a property). */
static inline PyObject *dg(PyObject *d, PyObject *o, PyObject *name) {
    if (d != NULL) {
        PyObject *v = PyDict_GetItemWithError(d, name);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(o, name);
}

static inline int ds(PyObject *d, PyObject *o, PyObject *name, PyObject *v) {
    if (d != NULL) {
        int c = PyDict_Contains(d, name);
        if (c < 0)
            return -1;
        if (c)
            return PyDict_SetItem(d, name, v);
    }
    return PyObject_SetAttr(o, name, v);
}

static inline int dg_ll(PyObject *d, PyObject *o, PyObject *name, long long *out) {
    PyObject *v = dg(d, o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static inline int dg_u64(PyObject *d, PyObject *o, PyObject *name, uint64_t *out) {
    PyObject *v = dg(d, o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

static inline int dg_truthy(PyObject *d, PyObject *o, PyObject *name) {
    PyObject *v = dg(d, o, name);
    if (v == NULL)
        return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

static inline int ds_ll(PyObject *d, PyObject *o, PyObject *name, long long x) {
    PyObject *v = PyLong_FromLongLong(x);
    if (v == NULL)
        return -1;
    int r = ds(d, o, name, v);
    Py_DECREF(v);
    return r;
}

static inline int ds_u64(PyObject *d, PyObject *o, PyObject *name, uint64_t x) {
    PyObject *v = PyLong_FromUnsignedLongLong(x);
    if (v == NULL)
        return -1;
    int r = ds(d, o, name, v);
    Py_DECREF(v);
    return r;
}

#define hg(h, n) dg((h)->cpu_dict, (h)->cpu, n)
#define hs(h, n, v) ds((h)->cpu_dict, (h)->cpu, n, v)
#define hg_ll(h, n, o) dg_ll((h)->cpu_dict, (h)->cpu, n, o)
#define hg_u64(h, n, o) dg_u64((h)->cpu_dict, (h)->cpu, n, o)
#define hg_truthy(h, n) dg_truthy((h)->cpu_dict, (h)->cpu, n)
#define hs_ll(h, n, x) ds_ll((h)->cpu_dict, (h)->cpu, n, x)
#define hs_u64(h, n, x) ds_u64((h)->cpu_dict, (h)->cpu, n, x)
#define cg(h, n) dg((h)->clock_dict, (h)->clock, n)
#define cs_obj(h, n, v) ds((h)->clock_dict, (h)->clock, n, v)
#define cg_ll(h, n, o) dg_ll((h)->clock_dict, (h)->clock, n, o)
#define cs_ll(h, n, x) ds_ll((h)->clock_dict, (h)->clock, n, x)

/* The NVIC's state as CortexM holds it */
typedef struct {
    uint64_t pending, active, irq_level, irq_enabled;
    long long shcsr, prigroup, scr;
    PyObject *prio;           /* borrowed from the cpu (a list) */
} Nvic;

typedef struct { long long ctrl; uint32_t rbar[8], rasr[8]; } MpuRegs;

static inline uint32_t hreg(ExcHook *h, int id, int *err) {
    uint64_t v = 0;
    int e = h->regs->rd(h->uch, id, &v);
    if (e && !*err) *err = e;
    return (uint32_t)v;
}

#define LOOP_NEVER (1LL << 62)
#define WFE_AT 1                 /* CortexM.WFE_AT, WFE_BEFORE */
#define WFE_BEFORE 2

extern PyTypeObject RegsType, ExcHookType, FlashGuardType, PageMapType;
PyObject *cost_block(PyObject *self, PyObject *args);     /* _cost.c */
PyObject *cost_insn(PyObject *self, PyObject *args);

/* _core.c */
EMU_INTERNAL int core_intern(void);
/* _fastregs.c */
EMU_INTERNAL int regs_err(Regs *r, int err);
EMU_INTERNAL uint32_t xr(Regs *r, int i, int *err);
EMU_INTERNAL void xw(Regs *r, int i, uint32_t value, int *err);
EMU_INTERNAL PyObject *Regs_exc_push(Regs *r, PyObject *const *a, Py_ssize_t n);
EMU_INTERNAL PyObject *Regs_exc_enter(Regs *r, PyObject *const *a, Py_ssize_t n);
EMU_INTERNAL int exc_pop_c(Regs *r, int use_psp, int fp, int to_thread, uint32_t *out);
/* _nvic.c */
EMU_INTERNAL int nvic_load(ExcHook *h, Nvic *n, PyObject **prio_ref);
EMU_INTERNAL long long nv_group(ExcHook *h, Nvic *n, long long raw);
EMU_INTERNAL int nv_best(ExcHook *h, Nvic *n, uint64_t pend, long long *g, int *e);
EMU_INTERNAL long long nv_active_prio(ExcHook *h, Nvic *n, uint64_t act);
EMU_INTERNAL long long nv_exec_prio(ExcHook *h, Nvic *n, uint64_t act, int faultmask, int *err);
EMU_INTERNAL int nv_pending_to_enter(ExcHook *h, Nvic *n);
EMU_INTERNAL int pend_changed(ExcHook *h);
EMU_INTERNAL PyObject *ExcHook_pend_write(ExcHook *h, PyObject *const *a, Py_ssize_t na);
EMU_INTERNAL PyObject *ExcHook_icsr_read(ExcHook *h, PyObject *arg);
/* _mpu.c */
EMU_INTERNAL int mpu_stack_ok(ExcHook *h, PyObject *mpu, Nvic *n, long long ipsr);
EMU_INTERNAL int mpu_sync_c(ExcHook *h, PyObject *mpu);
/* _exceptions.c */
EMU_INTERNAL long exc_enter_here(ExcHook *h, long long addr, int only_irq);
EMU_INTERNAL void hook_keep_exception(ExcHook *h);
/* _wfe.c */
EMU_INTERNAL PyObject *ExcHook_install_insn(ExcHook *h, PyObject *args);
/* _runloop.c */
EMU_INTERNAL PyObject *ExcHook_run(ExcHook *h, PyObject *args);
EMU_INTERNAL PyObject *ExcHook_loop_setup(ExcHook *h, PyObject *args);

#endif
