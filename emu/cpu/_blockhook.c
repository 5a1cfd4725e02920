/*
 * Native per-basic-block cycle accounting for the Unicorn core.
 *
 * Unicorn calls bh_block_hook() at the start of every translation block that
 * executes.  The hook adds the block's cycle cost (looked up in an open-
 * addressing table filled from Python by the cycle model) to a running
 * counter and stops the emulation when
 *   - the counter reached the deadline (the next scheduled event),
 *   - Python raised the stop flag (an MMIO access changed interrupt state),
 *   - the block has no known cost yet (Python costs it and resumes), or
 *   - an interrupt that is pending but masked by PRIMASK/BASEPRI/FAULTMASK
 *     became takeable (mask_watch mode, only while such an interrupt exists),
 *     or a pend asked for an exception entry (entry_flag), unless the entry
 *     callback enters the exception right here (see bh_state.entry_cb).
 * When it stops, the block is not counted: Unicorn calls the hook again for
 * the same block on resume.  emu/cpu/cycles.py holds the identical
 * pure-Python fallback; tests check that both give the same counts.
 *
 * The library does not link against libunicorn: Python passes the addresses
 * of uc_emu_stop and uc_reg_read from the already-loaded library.
 *
 * It is a (trivial) CPython extension module only so that setuptools builds
 * it at install time; Python loads it with ctypes.
 */
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*uc_emu_stop_fn)(void *uc);
typedef int (*uc_reg_read_fn)(void *uc, int regid, void *value);

enum { REASON_NONE = 0, REASON_DEADLINE = 1, REASON_FLAG = 2, REASON_MISS = 3, REASON_UNMASKED = 4 };

typedef struct {
    uint64_t cycles;        /* total cycles executed */
    uint64_t deadline;      /* stop when cycles >= deadline */
    uint32_t stop_flag;     /* set from Python: stop at the next block */
    uint32_t reason;        /* why the hook stopped (REASON_*) */
    uint32_t miss_addr;     /* block without a cost */
    uint32_t miss_size;
    int32_t  mask_watch;    /* non-zero: check the masks every block */
    int32_t  pend_prio;     /* group priority of the best masked pending exception */
    int32_t  active_prio;   /* execution priority from active exceptions alone */
    uint32_t prigroup_mask; /* mask selecting the group-priority bits of BASEPRI */
    int32_t  reg_primask, reg_basepri, reg_faultmask;
    uint32_t pad;
    uint64_t blocks;        /* number of blocks counted (statistics) */
    void *emu_stop;
    void *reg_read;
    /* cost table */
    uint64_t *keys;         /* bh_entry[cap]: key (addr | size << 32) + 1, 0 = empty; cost */
    uint32_t *costs;        /* unused (the costs sit in the entries) */
    uint32_t cap;           /* power of two */
    uint32_t used;
    /* the slice's time base, for the MMIO callbacks (emu/soc/_mmio.c) */
    int64_t  base_ticks;
    uint64_t base_cycles;
    uint64_t synced_cycles;
    uint32_t in_slice;
    uint32_t pad2;
    /* exception entry at a block start, without ending the slice: a pend
     * that needs an entry raises entry_flag (instead of stop_flag), and a
     * mask-watch hit asks too; entry_cb(address) (a Python callable, taken
     * with the GIL) answers ENTRY_STOP (end the slice as before),
     * ENTRY_DONE (it entered: PC moved, this block is not run) or
     * ENTRY_NONE (nothing to enter: run the block). */
    uint32_t entry_flag;
    uint32_t pad3;
    PyObject *entry_cb;
    /* a block without a cost: cost_cb(address, size) (with the GIL) costs it
     * and returns 1 (the block then runs), or 0 (end the slice: REASON_MISS) */
    PyObject *cost_cb;
    /* Polling loops skipped (see loop_step).  skip_on: set by the run loop
     * for a slice; loop_unstable: set by the MMIO callbacks on any access
     * that is not a read whose value only a clock event or Python can
     * change; the stable reads of the iteration are recorded (slot, offset)
     * so that a skip counts them as done (replay: _mmio.c's slot_replay). */
    uint32_t skip_on;
    uint32_t loop_unstable;
    uint32_t loop_nreads;
    uint32_t loop_nregs;     /* registers compared from one iteration to the next */
    /* companion tests only: 1 every MMIO read counts as stable (a counter
     * without its horizon), 2 every MMIO write as repeatable, 4 the SP
     * check off, 8 the stores not counted against the writes */
    uint32_t loop_trust_all;
    uint32_t loop_nwrites;   /* of the accesses noted, repeatable writes (roff | 1 << 31) */
    void *loop_rslot[8];
    uint32_t loop_roff[8];
    /* the first cycle at which a counter the iteration read (the RTC's
     * COUNTER) reads another value: iterations are counted up to it only */
    uint64_t loop_horizon;
    void *replay;            /* void slot_replay(void *slot, uint32_t offset, uint64_t n) */
    void *reg_read_batch;    /* uc_reg_read_batch */
    int32_t loop_regs[32];
    uint64_t skips, skipped_iters, skipped_cycles;   /* statistics */
    /* the loop being watched */
    uint64_t lp_head, lp_cycles, lp_prev_cycles;
    uint32_t lp_armed, lp_blocks, lp_prev_blocks, lp_have;
    uint32_t lp_vals[32];
    uint32_t lp_wait, lp_backoff;   /* iterations before the registers are read again */
    /* skip_cb(head, iterations, cycles_per_iteration, cycles, ((slot, offset), ...)) after
     * each skip (with the GIL), or NULL: a diagnostic (CortexM.log_loop_skips) */
    PyObject *skip_cb;
    /* a loop may also call a leaf through BL and come back with BX LR
     * (FreeRTOS's idle task spinning on prvGetExpectedIdleTime): those
     * blocks are marked BLOCK_CALL; such an iteration is taken only in
     * Thread mode (IPSR 0 at the head: no exception return or tail-chain in
     * it; an entry inside one resets the watch) */
    int32_t loop_ipsr;       /* index of IPSR in loop_regs, -1: none */
    uint32_t lp_calls;       /* the iteration ran a BLOCK_CALL block */
    /* the last iteration's cycles and blocks, kept at every head: an
     * iteration that polls nothing reads the registers only after two in a
     * row cost the same (an interpreter's calls cost no register reads) */
    uint64_t lp_last_cycles;
    uint32_t lp_last_blocks, lp_pad;
    /* a watch starts on a call only when the same block ending with a BL
     * comes round again with nothing but pure blocks between (a loop
     * calling one leaf), so that an interpreter's many calls cost nothing */
    uint64_t lp_bl;
    uint32_t lp_callwatch;    /* 1: the watch started on such a call */
    uint32_t lp_bl_clean;     /* no block but pure ones since lp_bl */
    /* an iteration that stores (BLOCK_STORE blocks: pushes, pops, stores
     * not through SP): its stores, which must all be repeatable MMIO writes
     * (loop_nwrites); its SP against the head's (words), which must never
     * rise above it (pushes then write only below the head's SP, memory
     * the iteration itself writes before it reads it back) */
    uint32_t lp_stores;
    int32_t lp_spoff;
    uint32_t lp_spbad;
    uint32_t lp_pad2;
} bh_state;

enum { BLOCK_PURE = 1, BLOCK_CALL = 2, BLOCK_BL = 4, BLOCK_STORE = 8 };

enum { ENTRY_STOP = 0, ENTRY_DONE = 1, ENTRY_NONE = 2 };

static int bh_call_entry(bh_state *s, uint64_t address) {
    PyGILState_STATE g = PyGILState_Ensure();
    int r = ENTRY_STOP;
    PyObject *res = PyObject_CallFunction(s->entry_cb, "K", (unsigned long long)address);
    if (res == NULL) {
        PyErr_Print();              /* the callback catches its own errors */
    } else {
        long v = PyLong_AsLong(res);
        if (v == -1 && PyErr_Occurred())
            PyErr_Clear();
        else
            r = (int)v;
        Py_DECREF(res);
    }
    PyGILState_Release(g);
    return r;
}

/* The cost table: open addressing over entries holding key and cost side
 * by side (one cache line per probe), indexed by the block's address over 2
 * (a Thumb instruction's size), so the blocks of a hot loop share cache
 * lines of entries.  Measured on InfiniTime idle: half of the hook's time
 * was the probe's cache miss with a mixing hash and separate key/cost
 * arrays.  The address over 8 put Cortex-M0 code's short blocks (a branch
 * every few instructions: micro:bit MicroPython) on one slot: 29 % of the
 * blocks away from their slot, up to 41 probes; over 2, 5 % and at most 3,
 * and the micro:bit workload 2.5 % faster (M4 images the same). */
typedef struct { uint64_t key; uint32_t cost; uint32_t flags; } bh_entry;

static inline uint32_t bh_index(uint64_t k) {
    return (uint32_t)(((k - 1) >> 1) ^ ((k >> 32) << 13));
}

bh_state *bh_new(void) {
    bh_state *s = calloc(1, sizeof(bh_state));
    if (!s) return NULL;
    s->cap = 1u << 14;
    s->keys = calloc(s->cap, sizeof(bh_entry));
    s->costs = NULL;
    s->deadline = UINT64_MAX;
    return s;
}

void bh_free(bh_state *s) {
    if (!s) return;
    free(s->keys);
    free(s);
}

static void bh_put(bh_state *s, uint64_t key, uint32_t cost, uint32_t flags) {
    bh_entry *e = (bh_entry *)s->keys;
    uint32_t m = s->cap - 1, i = bh_index(key) & m;
    while (e[i].key && e[i].key != key) i = (i + 1) & m;
    if (!e[i].key) s->used++;
    e[i].key = key;
    e[i].cost = cost;
    e[i].flags = flags;
}

int bh_insert(bh_state *s, uint32_t addr, uint32_t size, uint32_t cost);

/* flags: BLOCK_PURE (see loop_step) */
int bh_insert_flags(bh_state *s, uint32_t addr, uint32_t size, uint32_t cost, uint32_t flags) {
    if (bh_insert(s, addr, size, cost))
        return -1;
    bh_put(s, ((uint64_t)addr | ((uint64_t)size << 32)) + 1, cost, flags);
    return 0;
}

int bh_insert(bh_state *s, uint32_t addr, uint32_t size, uint32_t cost) {
    if ((s->used + 1) * 2 > s->cap) {
        uint32_t oldcap = s->cap;
        bh_entry *old = (bh_entry *)s->keys;
        bh_entry *nw = calloc((size_t)oldcap * 2, sizeof(bh_entry));
        if (!nw) return -1;
        s->keys = (uint64_t *)nw; s->cap = oldcap * 2; s->used = 0;
        for (uint32_t i = 0; i < oldcap; i++)
            if (old[i].key) bh_put(s, old[i].key, old[i].cost, old[i].flags);
        free(old);
    }
    bh_put(s, ((uint64_t)addr | ((uint64_t)size << 32)) + 1, cost, 0);
    return 0;
}

void bh_clear(bh_state *s) {
    memset(s->keys, 0, (size_t)s->cap * sizeof(bh_entry));
    s->used = 0;
}

static inline int32_t bh_lookup2(bh_state *s, uint64_t key, uint32_t *flags) {
    const bh_entry *e = (const bh_entry *)s->keys;
    uint32_t m = s->cap - 1, i = bh_index(key) & m;
    for (;;) {
        uint64_t k = e[i].key;
        if (k == key) { *flags = e[i].flags; return (int32_t)e[i].cost; }
        if (!k) return -1;
        i = (i + 1) & m;
    }
}

static inline int32_t bh_lookup(bh_state *s, uint64_t key) {
    uint32_t unused;
    return bh_lookup2(s, key, &unused);
}

static void bh_call_skip(bh_state *s, uint64_t m, uint64_t c) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *reads = PyTuple_New(s->loop_nreads);
    if (reads != NULL) {
        for (uint32_t r = 0; r < s->loop_nreads; r++)
            PyTuple_SET_ITEM(reads, r, Py_BuildValue("(KI)",
                (unsigned long long)(uintptr_t)s->loop_rslot[r], (unsigned int)s->loop_roff[r]));
        PyObject *res = PyObject_CallFunction(s->skip_cb, "KKKKO", (unsigned long long)s->lp_head,
                                              (unsigned long long)m, (unsigned long long)c,
                                              (unsigned long long)s->cycles, reads);
        Py_XDECREF(res);
        Py_DECREF(reads);
    }
    if (PyErr_Occurred())
        PyErr_Print();
    PyGILState_Release(g);
}

typedef int (*uc_reg_read_batch_fn)(void *uc, int *regs, void **vals, int count);
typedef void (*replay_fn)(void *slot, uint32_t offset, uint64_t n);

/* Polling loops.  A loop of at most 8 blocks, each one "pure" (the cycle
 * model marks them: loads, arithmetic, compares, direct branches; no SP/PC
 * write but a direct call's LR and a return through LR, no IT, no
 * division, no system instruction) whose MMIO reads, if any, are all
 * stable (events, plain registers, constants, cells: a value only a clock
 * event or Python can change) and which comes back to its first block with
 * every register (loop_regs) as it was one iteration before, repeats
 * identically until the next clock event: nothing changes memory, no event
 * means no read changes, and nothing else runs inside a slice.
 * Stores too (BLOCK_STORE, MicroPython's delay loop calling
 * mp_hal_ticks_us): pushes, pops and stores not through SP, when every
 * store of the iteration was an MMIO write that only sets state (an event,
 * INTEN*: loop_nwrites, noted by _mmio.c; the same writes again leave the
 * same state, and a store to RAM is no MMIO write, so the counts differ)
 * and the SP never rose above the head's (pushes then land below it, in
 * memory the iteration writes before it reads it back: pops only; a head
 * inside a callee, whose pop rises above it, moves on to the next block).
 * And a COUNTER read (the RTC's), whose value holds up to its next tick:
 * the iterations are counted up to that cycle (loop_horizon) only.
 * The iteration compared must have run inside the current
 * slice: the run loop's events at a slice boundary may change what it read
 * (CortexM._rebase clears lp_have at every slice start and after a stall:
 * an iteration that read an event as 0 before the event fired at the
 * boundary proves nothing).  So the iterations up to the slice's deadline
 * (or the horizon) are counted
 * instead of run: whole iterations only (the registers are known only at
 * the loop's head), cycles and blocks as the hook would have counted them,
 * the MMIO accesses added to their slots' counts, and the hook stops at the
 * deadline exactly where it would have (the block start at or after it).
 * Returns 1 when it stopped the emulation. */
static __attribute__((noinline)) int loop_step(bh_state *s, void *uc, uint64_t address,
                                               uint32_t cost, uint32_t flags) {
    if (s->lp_armed && address == s->lp_head && s->lp_spbad && !(s->loop_trust_all & 4)) {
        /* a head inside a callee (its SP rose above the head's when the
         * callee returned): the next block is tried as the head */
        s->lp_armed = 0;
        return 0;
    }
    if (s->lp_armed && address == s->lp_head) {
        /* an iteration without an MMIO read or a call is not polling
         * anything (and a counting loop's registers differ each time: after
         * a mismatch the
         * registers are read again only after a growing number of
         * iterations, so a busy loop pays one read in hundreds) */
        int stable = !s->loop_unstable && s->lp_blocks > 0
                     && (!s->lp_spbad || (s->loop_trust_all & 4))
                     && (s->loop_nwrites == s->lp_stores || (s->loop_trust_all & 8))
                     && (s->loop_nreads > 0 || s->lp_calls);
        if (stable && !s->loop_nreads
            && (s->lp_cycles != s->lp_last_cycles || s->lp_blocks != s->lp_last_blocks))
            stable = 0;              /* calls only: the same cost twice before a read */
        s->lp_last_cycles = s->lp_cycles;
        s->lp_last_blocks = s->lp_blocks;
        if (stable && s->lp_wait) {
            s->lp_wait--;
            stable = 0;
        } else if (stable) {
            uint32_t vals[32];
            void *ptrs[32];
            uint32_t n = s->loop_nregs;
            /* counted up to the deadline, or to before the horizon: every
             * read of the iterations counted happens before it (a read sees
             * at most its iteration's end) */
            uint64_t lim = s->loop_horizon <= s->deadline ? s->loop_horizon - 1 : s->deadline;
            for (uint32_t i = 0; i < n; i++) { vals[i] = 0; ptrs[i] = &vals[i]; }
            if (((uc_reg_read_batch_fn)s->reg_read_batch)(uc, s->loop_regs, ptrs, (int)n) != 0)
                stable = 0;
            else if (s->lp_calls && (s->loop_ipsr < 0 || (uint32_t)s->loop_ipsr >= n
                                     || vals[s->loop_ipsr] != 0))
                stable = 0;                  /* calls in handler mode: not taken */
            else if (s->lp_have && s->lp_cycles == s->lp_prev_cycles
                     && s->lp_blocks == s->lp_prev_blocks
                     && memcmp(vals, s->lp_vals, n * sizeof(uint32_t)) == 0
                     && !s->stop_flag && !s->entry_flag && lim > s->cycles) {
                uint64_t c = s->lp_cycles;
                uint64_t m = (lim - s->cycles) / c;
                if (m) {
                    s->cycles += m * c;
                    s->blocks += m * s->lp_blocks;
                    for (uint32_t r = 0; r < s->loop_nreads; r++)
                        ((replay_fn)s->replay)(s->loop_rslot[r], s->loop_roff[r], m);
                    s->skips++;
                    s->skipped_iters += m;
                    s->skipped_cycles += m * c;
                    if (s->skip_cb != NULL && s->skip_cb != Py_None)
                        bh_call_skip(s, m, c);
                }
                if (s->cycles >= s->deadline) {
                    s->lp_armed = 0;
                    s->reason = REASON_DEADLINE;
                    ((uc_emu_stop_fn)s->emu_stop)(uc);
                    return 1;
                }
                /* watched afresh after the skip, from the same head (a
                 * counter's horizon ends a skip in the middle of a slice) */
                s->lp_have = 0;
                s->lp_wait = s->lp_backoff = 0;
                s->lp_cycles = 0;
                s->lp_blocks = 0;
                goto fresh;
            }
            if (stable) {
                if (s->lp_have) {            /* compared and different: back off */
                    s->lp_backoff = s->lp_backoff < 512 ? 2 * s->lp_backoff + 1 : 1024;
                    s->lp_wait = s->lp_backoff;
                }
                memcpy(s->lp_vals, vals, n * sizeof(uint32_t));
                s->lp_prev_cycles = s->lp_cycles;
                s->lp_prev_blocks = s->lp_blocks;
            }
        }
        s->lp_have = stable;
        s->lp_cycles = 0;
        s->lp_blocks = 0;
    } else if (!s->lp_armed || s->lp_blocks >= 8) {
        s->lp_armed = 1;
        s->lp_head = address;
        s->lp_have = 0;
        s->lp_wait = s->lp_backoff = 0;
        s->lp_cycles = 0;
        s->lp_blocks = 0;
    } else {
        goto count;
    }
fresh:
    s->loop_unstable = 0;        /* a new iteration from the head */
    s->loop_nreads = 0;
    s->loop_nwrites = 0;
    s->loop_horizon = UINT64_MAX;
    s->lp_calls = 0;
    s->lp_stores = 0;
    s->lp_spoff = 0;
    s->lp_spbad = 0;
count:
    if (flags & BLOCK_CALL)
        s->lp_calls = 1;
    if (flags & BLOCK_STORE) {
        s->lp_stores += (flags >> 8) & 0xFF;
        if (s->lp_spoff + (int32_t)(flags >> 24) > 0)
            s->lp_spbad = 1;
        s->lp_spoff += (int8_t)((flags >> 16) & 0xFF);
    }
    s->lp_cycles += cost;
    s->lp_blocks++;
    return 0;
}

/* the table's cost of a block, -1 if unknown (for tests) */
int32_t bh_cost(bh_state *s, uint32_t addr, uint32_t size) {
    return bh_lookup(s, ((uint64_t)addr | ((uint64_t)size << 32)) + 1);
}

void bh_block_hook(void *uc, uint64_t address, uint32_t size, void *user_data) {
    bh_state *s = (bh_state *)user_data;
    if (s->stop_flag) {
        s->reason = REASON_FLAG;
        ((uc_emu_stop_fn)s->emu_stop)(uc);
        return;
    }
    if (s->cycles >= s->deadline) {
        s->reason = REASON_DEADLINE;
        ((uc_emu_stop_fn)s->emu_stop)(uc);
        return;
    }
    uint32_t want = 0;
    if (s->entry_flag)
        want = REASON_FLAG;
    else if (s->mask_watch) {
        uint32_t primask = 0, basepri = 0, faultmask = 0;
        uc_reg_read_fn rr = (uc_reg_read_fn)s->reg_read;
        rr(uc, s->reg_primask, &primask);
        rr(uc, s->reg_basepri, &basepri);
        rr(uc, s->reg_faultmask, &faultmask);
        int32_t prio = s->active_prio;
        uint32_t bp = basepri & s->prigroup_mask & 0xff;
        if (bp && (int32_t)bp < prio) prio = (int32_t)bp;
        if (primask & 1) { if (prio > 0) prio = 0; }
        if (faultmask & 1) prio = -1;
        if (s->pend_prio < prio)
            want = REASON_UNMASKED;
    }
    if (want) {
        int r = ENTRY_STOP;
        s->entry_flag = 0;
        if (s->entry_cb)
            r = bh_call_entry(s, address);
        if (r == ENTRY_DONE) {
            s->lp_armed = 0;    /* an iteration never spans an entry */
            s->loop_nreads = 0;
            s->loop_nwrites = 0;
            return;             /* the handler's first block comes next (counted then) */
        }
        if (r != ENTRY_NONE) {
            s->reason = want;
            ((uc_emu_stop_fn)s->emu_stop)(uc);
            return;
        }
    }
    uint64_t key = ((uint64_t)(uint32_t)address | ((uint64_t)size << 32)) + 1;
    uint32_t flags = 0;
    int32_t cost = bh_lookup2(s, key, &flags);
    if (cost < 0 && s->cost_cb) {
        PyGILState_STATE g = PyGILState_Ensure();
        PyObject *res = PyObject_CallFunction(s->cost_cb, "KI", (unsigned long long)address,
                                              (unsigned int)size);
        int ok = 0;
        if (res == NULL)
            PyErr_Print();
        else {
            ok = PyObject_IsTrue(res) == 1;
            Py_DECREF(res);
        }
        PyErr_Clear();
        PyGILState_Release(g);
        if (ok)
            cost = bh_lookup2(s, key, &flags);
    }
    if (cost < 0) {
        s->reason = REASON_MISS;
        s->miss_addr = (uint32_t)address;
        s->miss_size = size;
        ((uc_emu_stop_fn)s->emu_stop)(uc);
        return;
    }
    if (s->skip_on) {
        if (!(flags & BLOCK_PURE) || ((flags & BLOCK_CALL) && !s->lp_callwatch)) {
            /* not in a watched loop (a call only in a watch started on one) */
            s->lp_armed = 0;
            s->loop_nreads = 0;
            s->loop_nwrites = 0;
            s->lp_callwatch = 0;
            if (!(flags & BLOCK_PURE)) {
                s->lp_bl_clean = 0;
            } else if (flags & BLOCK_BL) {   /* a call: watched if it comes round again */
                if (address != s->lp_bl || !s->lp_bl_clean) {
                    s->lp_bl = address;
                    s->lp_bl_clean = 1;
                } else {
                    s->lp_callwatch = 1;
                    if (loop_step(s, uc, address, (uint32_t)cost, flags))
                        return;
                }
            }
        } else if (s->lp_armed || s->loop_nreads) {   /* pure code polling nothing: no cost */
            if (loop_step(s, uc, address, (uint32_t)cost, flags))
                return;
        }
    }
    s->cycles += (uint32_t)cost;
    s->blocks++;
}

void *bh_hook_address(void) { return (void *)&bh_block_hook; }

static struct PyModuleDef bh_module = {PyModuleDef_HEAD_INIT, "_blockhook",
    "Native block hook for cycle accounting (loaded with ctypes).", -1, NULL};

PyMODINIT_FUNC PyInit__blockhook(void) { return PyModule_Create(&bh_module); }
