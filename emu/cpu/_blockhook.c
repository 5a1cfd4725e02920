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
#include "_bh_state.h"
#include <stdlib.h>

typedef int (*uc_emu_stop_fn)(void *uc);
typedef int (*uc_reg_read_fn)(void *uc, int regid, void *value);

enum { REASON_NONE = 0, REASON_DEADLINE = 1, REASON_FLAG = 2, REASON_MISS = 3, REASON_UNMASKED = 4 };



enum { COUNT_HI = 0, COUNT_NE = 1 };
typedef int (*uc_reg_write_fn)(void *uc, int regid, const void *value);

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

EMU_EXPORT bh_state *bh_new(void) {
    bh_state *s = calloc(1, sizeof(bh_state));
    if (!s) return NULL;
    s->cap = 1u << 14;
    s->keys = calloc(s->cap, sizeof(bh_entry));
    s->deadline = UINT64_MAX;
    return s;
}

EMU_EXPORT void bh_free(bh_state *s) {
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
EMU_EXPORT int bh_insert_flags(bh_state *s, uint32_t addr, uint32_t size, uint32_t cost, uint32_t flags) {
    if (bh_insert(s, addr, size, cost))
        return -1;
    bh_put(s, ((uint64_t)addr | ((uint64_t)size << 32)) + 1, cost, flags);
    return 0;
}

EMU_EXPORT int bh_insert(bh_state *s, uint32_t addr, uint32_t size, uint32_t cost) {
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

EMU_EXPORT void bh_clear(bh_state *s) {
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
    PyObject *reads = PyTuple_New(s->loop.nreads);
    if (reads != NULL) {
        for (uint32_t r = 0; r < s->loop.nreads; r++)
            PyTuple_SET_ITEM(reads, r, Py_BuildValue("(KI)",
                (unsigned long long)(uintptr_t)s->loop.rslot[r], (unsigned int)s->loop.roff[r]));
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
typedef void (*replay_fn)(void *slot, uint32_t offset, uint64_t n, uint64_t cycles);

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
    if (s->lp_armed && address == s->lp_head && s->lp_spbad && !FAULT(s->loop.trust_all & 4)) {
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
        int stable = !s->loop.unstable && s->lp_blocks > 0
                     && (!s->lp_spbad || FAULT(s->loop.trust_all & 4))
                     && (s->loop.nwrites == s->lp_stores || FAULT(s->loop.trust_all & 8))
                     && (s->loop.nreads > 0 || s->lp_calls);
        if (stable && !s->loop.nreads
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
            uint32_t n = s->loop.nregs;
            /* counted up to the deadline, or to before the horizon: every
             * read of the iterations counted happens before it (a read sees
             * at most its iteration's end) */
            uint64_t lim = s->loop.horizon <= s->deadline ? s->loop.horizon - 1 : s->deadline;
            for (uint32_t i = 0; i < n; i++) { vals[i] = 0; ptrs[i] = &vals[i]; }
            if (((uc_reg_read_batch_fn)s->reg_read_batch)(uc, s->loop_regs, ptrs, (int)n) != 0)
                stable = 0;   /* not reached by firmware: error path: the engine refused a register read */
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
                    for (uint32_t r = 0; r < s->loop.nreads; r++)
                        ((replay_fn)s->replay)(s->loop.rslot[r], s->loop.roff[r], m, m * c);
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
    s->loop.unstable = 0;        /* a new iteration from the head */
    s->loop.nreads = 0;
    s->loop.nwrites = 0;
    s->loop.horizon = UINT64_MAX;
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

/* A countdown loop (BLOCK_COUNTDOWN, emu/cpu/cycles.py): one block that is
 * ``subs Rd, #imm`` (NOPs may follow) and a BHI or BNE back to itself, the
 * delay loop of nrfx (NRFX_DELAY_US, the SDK's nrf_delay_us, Zephyr's
 * k_busy_wait) and of MicroPython's mp_hal_delay_us.  Its iterations touch
 * nothing but Rd and the flags, so whole iterations are counted instead of
 * run, as the hook would have counted them: iteration j (from this one, j =
 * 0) starts at cycles + j * cost and runs only if that is before the
 * deadline, and it goes round again only if Rd, before its SUBS, is above
 * imm (HI: no borrow and not zero; NE: not zero, which it also is then).  m
 * iterations are counted when all m would have run and gone round; Rd and
 * NZCV are left as the m-th SUBS left them, and the (m+1)-th runs (or the
 * hook stops at the deadline before it, as it would have).  Flags: bits 8-11
 * Rd, 12-13 the condition (COUNT_*), 16-31 imm.  Returns 1 when it stopped
 * the emulation. */
static __attribute__((noinline)) int countdown_step(bh_state *s, void *uc, uint32_t cost,
                                                    uint32_t flags) {
    uint32_t rd = (flags >> 8) & 0xF, imm = flags >> 16, v = 0;
    if (imm == 0 || cost == 0 || rd > 12)
        return 0;     /* not reached by firmware: countdown_flags gives none of these */
    if (((uc_reg_read_fn)s->reg_read)(uc, s->dl_reg_r0 + (int)rd, &v) != 0)
        return 0;     /* not reached by firmware: the engine refused a register read */
    if (v <= imm)
        return 0;                             /* this iteration is the last */
    uint64_t m = (uint64_t)(v - 1) / imm;     /* v - (m - 1) * imm > imm; m >= 1 */
    uint64_t room = (s->deadline - s->cycles - 1) / cost + 1;   /* cycles < deadline here */
    if (m > room)
        m = room;
    m += FAULT((s->loop.trust_all & 16) != 0);   /* the companion: one too many */
    uint32_t before = v - (uint32_t)(m - 1) * imm, after = before - imm;
    uint32_t nzcv = (after & 0x80000000u) | (after == 0 ? 0x40000000u : 0)
                    | 0x20000000u                                    /* no borrow */
                    | ((((before ^ imm) & (before ^ after)) >> 31) << 28);
    uc_reg_write_fn rw = (uc_reg_write_fn)s->reg_write;
    if (rw(uc, s->dl_reg_r0 + (int)rd, &after) != 0 || rw(uc, s->dl_reg_nzcv, &nzcv) != 0)
        return 0;     /* not reached by firmware: the engine refused a register write */
    s->cycles += m * cost;
    s->blocks += m;
    s->dl_skips++;
    s->dl_iters += m;
    s->dl_cycles += m * cost;
    s->lp_armed = 0;                          /* an iteration never spans a count */
    if (s->cycles >= s->deadline) {
        s->reason = REASON_DEADLINE;
        ((uc_emu_stop_fn)s->emu_stop)(uc);
        return 1;
    }
    return 0;
}

/* the table's cost of a block, -1 if unknown (for tests) */
EMU_EXPORT int32_t bh_cost(bh_state *s, uint32_t addr, uint32_t size) {
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
            s->loop.nreads = 0;
            s->loop.nwrites = 0;
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
    if ((flags & BLOCK_COUNTDOWN) && s->loop.skip_on && s->dl_on
            && countdown_step(s, uc, (uint32_t)cost, flags))
        return;
    if (s->loop.skip_on) {
        if (!(flags & BLOCK_PURE) || ((flags & BLOCK_CALL) && !s->lp_callwatch)) {
            /* not in a watched loop (a call only in a watch started on one) */
            s->lp_armed = 0;
            s->loop.nreads = 0;
            s->loop.nwrites = 0;
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
                        return;   /* not reached by firmware: a loop calling a leaf is watched from its head block */
                }
            }
        } else if (s->lp_armed || s->loop.nreads) {   /* pure code polling nothing: no cost */
            if (loop_step(s, uc, address, (uint32_t)cost, flags))
                return;
        }
    }
    s->cycles += (uint32_t)cost;
    s->blocks++;
}

EMU_EXPORT void *bh_hook_address(void) { return (void *)&bh_block_hook; }

/* layout() -> (size, [(name, offset, size, kind, count), ...]): bh_state as
 * the compiler laid it out, member structs flattened under their prefix
 * (emu/native.py builds the ctypes view from it) */
#define LAYOUT_STRUCT bh_state
static const LayoutField bh_top[] = {
#define BH_SUB_INFO(type, name, prefix, doc) \
    {#name, (Py_ssize_t)offsetof(bh_state, name), (Py_ssize_t)sizeof(type), 'S', 0},
    BH_STATE_FIELDS(LAYOUT_INFO, BH_SUB_INFO)
#undef BH_SUB_INFO
};
#undef LAYOUT_STRUCT
#define LAYOUT_STRUCT SyncCells
static const LayoutField sync_fields[] = { SYNC_CELLS_FIELDS(LAYOUT_INFO) };
#undef LAYOUT_STRUCT
#define LAYOUT_STRUCT LoopCells
static const LayoutField loop_fields[] = { LOOP_CELLS_FIELDS(LAYOUT_INFO) };
#undef LAYOUT_STRUCT

static PyObject *bh_layout(PyObject *module, PyObject *noargs) {
    enum { NTOP = sizeof bh_top / sizeof bh_top[0] };
    LayoutField flat[NTOP + sizeof sync_fields / sizeof sync_fields[0]
                     + sizeof loop_fields / sizeof loop_fields[0]];
    char names[64][32];
    int n = 0, nn = 0;
    for (int i = 0; i < NTOP; i++) {
        flat[n++] = bh_top[i];             /* a member struct too: its offset, by name */
        const LayoutField *sub = NULL;
        int nsub = 0;
        const char *prefix = "";
        if (strcmp(bh_top[i].name, "sync") == 0) {
            sub = sync_fields;
            nsub = (int)(sizeof sync_fields / sizeof sync_fields[0]);
        } else if (strcmp(bh_top[i].name, "loop") == 0) {
            sub = loop_fields;
            nsub = (int)(sizeof loop_fields / sizeof loop_fields[0]);
            prefix = "loop_";
        }
        for (int j = 0; j < nsub && nn < 64; j++) {
            snprintf(names[nn], sizeof names[nn], "%s%s", prefix, sub[j].name);
            flat[n] = sub[j];
            flat[n].name = names[nn++];
            flat[n++].offset += bh_top[i].offset;
        }
    }
    return layout_export(flat, n, (Py_ssize_t)sizeof(bh_state));
}

static PyMethodDef bh_methods[] = {
    {"layout", bh_layout, METH_NOARGS,
     "layout() -> (size, [(name, offset, size, kind, count)]): bh_state (_bh_state.h)"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef bh_module = {PyModuleDef_HEAD_INIT, "_blockhook",
    "Native block hook for cycle accounting (its functions are called with ctypes; "
    "layout() describes its state).", -1, bh_methods};

PyMODINIT_FUNC PyInit__blockhook(void) { return PyModule_Create(&bh_module); }
