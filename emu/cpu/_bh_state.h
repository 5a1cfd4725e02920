/*
 * The block hook's state (bh_state), declared once.
 *
 * One per CPU, allocated by emu.cpu._blockhook (bh_new) and shared with:
 *   - the block hook itself (_blockhook.c: cycle counting, the deadline,
 *     the mask watch, the loop watch);
 *   - the run loop in C (emu.cpu._core, ExcHook.run and the exception
 *     entries it makes), which is handed its address;
 *   - the MMIO callbacks (emu.soc._mmio), handed the addresses of its
 *     ``sync`` and ``loop`` members (emu/soc/_loopcells.h declares them);
 *   - Python, through a ctypes view built at import from this list as the
 *     compiler laid it out (emu.cpu._blockhook.layout(), emu/native.py).
 * A field is added, moved or renamed here and nowhere else.
 *
 * Field lists as emu/_layout.h describes (F for a field, S for a member
 * struct whose own list is flattened into Python's view under a prefix).
 */
#ifndef EMU_CPU_BH_STATE_H
#define EMU_CPU_BH_STATE_H

#include "../soc/_loopcells.h"

/* a block's flags in the cost table (emu/cpu/cycles.py BLOCK_*: what the
 * loop watch may do with it), set by the costing (cycles.py, _cost.c) */
enum { BLOCK_PURE = 1, BLOCK_CALL = 2, BLOCK_BL = 4, BLOCK_STORE = 8, BLOCK_COUNTDOWN = 16 };

#define BH_STATE_FIELDS(F, S) \
    F(uint64_t, cycles, 0, 'u', "total cycles executed") \
    F(uint64_t, deadline, 0, 'u', "stop when cycles >= deadline") \
    F(uint32_t, stop_flag, 0, 'u', "set from Python: stop at the next block") \
    F(uint32_t, reason, 0, 'u', "why the hook stopped (REASON_*)") \
    F(uint32_t, miss_addr, 0, 'u', "a block without a cost") \
    F(uint32_t, miss_size, 0, 'u', "its size") \
    F(int32_t, mask_watch, 0, 'i', "non-zero: check the masks every block") \
    F(int32_t, pend_prio, 0, 'i', "group priority of the best masked pending exception") \
    F(int32_t, active_prio, 0, 'i', "execution priority from active exceptions alone") \
    F(uint32_t, prigroup_mask, 0, 'u', "mask selecting the group-priority bits of BASEPRI") \
    F(int32_t, reg_primask, 0, 'i', "PRIMASK's register id") \
    F(int32_t, reg_basepri, 0, 'i', "BASEPRI's register id") \
    F(int32_t, reg_faultmask, 0, 'i', "FAULTMASK's register id") \
    F(uint64_t, blocks, 0, 'u', "blocks counted (statistics)") \
    F(void *, emu_stop, 0, 'p', "uc_emu_stop") \
    F(void *, reg_read, 0, 'p', "uc_reg_read") \
    F(uint64_t *, keys, 0, 'p', "the cost table: bh_entry[cap]") \
    F(uint32_t, cap, 0, 'u', "its size, a power of two") \
    F(uint32_t, used, 0, 'u', "its entries in use") \
    S(SyncCells, sync, "", "the slice's time base, for the MMIO callbacks") \
    F(uint32_t, entry_flag, 0, 'u', "a pend asks for an exception entry at a block start") \
    F(PyObject *, entry_cb, 0, 'o', "entry_cb(address) -> ENTRY_* (with the GIL)") \
    F(PyObject *, cost_cb, 0, 'o', "cost_cb(address, size) -> 1 costed, 0 end the slice") \
    S(LoopCells, loop, "loop_", "a polling loop's accesses, noted by the MMIO callbacks") \
    F(void *, replay, 0, 'p', "slot_replay (emu.soc._mmio): a skipped loop's reads counted") \
    F(void *, reg_read_batch, 0, 'p', "uc_reg_read_batch") \
    F(int32_t, loop_regs, 32, 'i', "registers compared from one iteration to the next") \
    F(uint64_t, skips, 0, 'u', "loops skipped (statistics)") \
    F(uint64_t, skipped_iters, 0, 'u', "iterations skipped") \
    F(uint64_t, skipped_cycles, 0, 'u', "cycles skipped") \
    F(uint64_t, lp_head, 0, 'u', "the loop being watched: its head") \
    F(uint64_t, lp_cycles, 0, 'u', "cycles at the head") \
    F(uint64_t, lp_prev_cycles, 0, 'u', "cycles at the head before") \
    F(uint32_t, lp_armed, 0, 'u', "the watch is on") \
    F(uint32_t, lp_blocks, 0, 'u', "blocks at the head") \
    F(uint32_t, lp_prev_blocks, 0, 'u', "blocks at the head before") \
    F(uint32_t, lp_have, 0, 'u', "the registers of one iteration are known") \
    F(uint32_t, lp_vals, 32, 'u', "their values") \
    F(uint32_t, lp_wait, 0, 'u', "iterations before the registers are read again") \
    F(uint32_t, lp_backoff, 0, 'u', "the next wait") \
    F(PyObject *, skip_cb, 0, 'o', "skip_cb(head, iterations, cycles each, cycles, reads) or NULL") \
    F(int32_t, loop_ipsr, 0, 'i', "IPSR's index in loop_regs, -1: none") \
    F(uint32_t, lp_calls, 0, 'u', "the iteration ran a BLOCK_CALL block") \
    F(uint64_t, lp_last_cycles, 0, 'u', "the last iteration's cycles") \
    F(uint32_t, lp_last_blocks, 0, 'u', "and blocks") \
    F(uint64_t, lp_bl, 0, 'u', "the last block ending with a BL (a candidate head)") \
    F(uint32_t, lp_callwatch, 0, 'u', "1: the watch started on such a call") \
    F(uint32_t, lp_bl_clean, 0, 'u', "no block but pure ones since lp_bl") \
    F(uint32_t, lp_stores, 0, 'u', "the iteration's stores (BLOCK_STORE blocks)") \
    F(int32_t, lp_spoff, 0, 'i', "its SP against the head's, in words") \
    F(uint32_t, lp_spbad, 0, 'u', "1: its SP rose above the head's") \
    F(uint32_t, dl_on, 0, 'u', "countdown (delay) loops may be counted (CortexM.delay_skip)") \
    F(void *, reg_write, 0, 'p', "uc_reg_write") \
    F(int32_t, dl_reg_r0, 0, 'i', "R0's register id (R0-R12 follow it)") \
    F(int32_t, dl_reg_nzcv, 0, 'i', "APSR_NZCV's register id") \
    F(uint64_t, dl_skips, 0, 'u', "countdown loops counted instead of run (statistics)") \
    F(uint64_t, dl_iters, 0, 'u', "their iterations") \
    F(uint64_t, dl_cycles, 0, 'u', "their cycles")

#define BH_STRUCT_MEMBER(type, name, prefix, doc) type name;
typedef struct { BH_STATE_FIELDS(LAYOUT_DECL, BH_STRUCT_MEMBER) } bh_state;

#endif
