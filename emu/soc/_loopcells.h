/*
 * What the MMIO callbacks share with the CPU's block hook, declared once.
 *
 * The block hook's state (bh_state, emu/cpu/_bh_state.h) holds these two
 * structs as members; a Slot is given their addresses, and the callbacks
 * read the first and write the second:
 *
 *   SyncCells: the current slice's time base, so that an access knows its
 *   time without Python (clock.now = base_ticks + (cycles - base_cycles) *
 *   cycle_ticks inside a slice);
 *
 *   LoopCells: a polling loop's iteration as the block hook watches it
 *   (loop_step in _blockhook.c): the reads whose value only a clock event
 *   or Python can change, and the writes it may repeat, are recorded (up
 *   to LOOP_NOTES an iteration; a skip counts them as done through
 *   slot_replay, which also moves a timed write's effect to the last
 *   iteration counted), any other access makes the iteration unstable.
 *
 * Field lists as emu/_layout.h describes; emu.cpu._blockhook exports the
 * whole of bh_state, these included, for Python's ctypes view.
 */
#ifndef EMU_SOC_LOOPCELLS_H
#define EMU_SOC_LOOPCELLS_H

#include "../_layout.h"
#include "../_faults.h"

#define SYNC_CELLS_FIELDS(F) \
    F(int64_t, base_ticks, 0, 'i', "the slice's start, in ticks (CortexM._rebase)") \
    F(uint64_t, base_cycles, 0, 'u', "the cycle count at the slice's start") \
    F(uint64_t, synced_cycles, 0, 'u', "clock.now is up to this cycle count") \
    F(uint32_t, in_slice, 0, 'u', "1 while inside emu_start's slice")

typedef struct { SYNC_CELLS_FIELDS(LAYOUT_DECL) } SyncCells;

/* a test build's switch (emu/_faults.h): 1 every MMIO read counts as
 * stable (a counter without its horizon), 2 every MMIO write as
 * repeatable, 4 the SP check off, 8 the stores not counted against the
 * writes, 16 a countdown loop counted one iteration too far (_blockhook.c),
 * 32 a timed write's effect not moved by a skip (slot_replay) */
#ifdef EMU_TEST_FAULTS
#define LOOP_FAULT_FIELDS(F) \
    F(uint32_t, trust_all, 0, 'u', "test build only: the loop watch's checks taken as passed")
#else
#define LOOP_FAULT_FIELDS(F)
#endif

#define LOOP_CELLS_FIELDS(F) \
    F(uint32_t, skip_on, 0, 'u', "loops may be skipped in this slice (CortexM._start_slice)") \
    F(uint32_t, unstable, 0, 'u', "set by the MMIO callbacks: the iteration cannot be skipped") \
    F(uint32_t, nreads, 0, 'u', "accesses noted this iteration") \
    F(uint32_t, nregs, 0, 'u', "registers compared from one iteration to the next") \
    F(uint32_t, nwrites, 0, 'u', "of the accesses noted, repeatable writes") \
    LOOP_FAULT_FIELDS(F) \
    F(void *, rslot, 16, 'p', "the noted accesses' slots") \
    F(uint32_t, roff, 16, 'u', "their offsets, | LOOP_WRITE for a write, | LOOP_TIMED for a timed one") \
    F(uint64_t, horizon, 0, 'u', "the first cycle at which a counter read reads another value")

typedef struct { LOOP_CELLS_FIELDS(LAYOUT_DECL) } LoopCells;
#define LOOP_NOTES 16            /* rslot's and roff's length */
/* roff's flags: a write; a write whose effect depends on its time (a
 * watchdog's reload: its deadline is the write's time plus the period), which a
 * skip of m iterations of c cycles moves m * c cycles later */
#define LOOP_WRITE 0x80000000u
#define LOOP_TIMED 0x40000000u
#define LOOP_FLAGS (LOOP_WRITE | LOOP_TIMED)

#endif
