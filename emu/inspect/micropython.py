"""MicroPython's GC heap from its allocation table (see emu/inspect/__init__.py)."""
from __future__ import annotations

from typing import Optional

from emu.inspect.model import BadPointer, HeapInfo
from emu.inspect.dwarf import struct_layout

BYTES_PER_BLOCK = 16        # MICROPY_BYTES_PER_GC_BLOCK: 4 words on a 32-bit port
BLOCKS_PER_ATB = 4          # 2 bits a block
AT_FREE, AT_HEAD, AT_TAIL, AT_MARK = 0, 1, 2, 3


def _from_dwarf(mem) -> Optional[tuple]:
    ctx = struct_layout(mem.path, "_mp_state_ctx_t", "mpstate.c")
    memt = struct_layout(mem.path, "_mp_state_mem_t", "mpstate.c")
    if not ctx or not memt or "mem" not in ctx:
        return None
    base = ctx["mem"][0]
    try:
        return tuple(base + memt[k][0] for k in ("gc_alloc_table_start",
                                                  "gc_alloc_table_byte_len",
                                                  "gc_pool_start", "gc_pool_end"))
    except KeyError:
        return None


def _by_invariant(mem, ctx: int, size: int) -> Optional[tuple]:
    """Offsets of (atb start, atb length, pool start, pool end) in mp_state_ctx,
    found where gc_init left them: the pool right after the table (and the
    finaliser table), its size exactly table bytes x 4 blocks x 16 bytes."""
    words = [int.from_bytes(mem.read(ctx + i, 4), "little") for i in range(0, size - 3, 4)]
    for i in range(len(words) - 4):
        atb, n = words[i], words[i + 1]
        if not n or not mem.in_ram(atb, n):
            continue
        for j in (i + 2, i + 3):                  # with or without the finaliser table
            if j + 1 >= len(words):
                continue
            start, end = words[j], words[j + 1]
            if start > atb and end - start == n * BLOCKS_PER_ATB * BYTES_PER_BLOCK \
                    and mem.in_ram(start, end - start):
                return (4 * i, 4 * i + 4, 4 * j, 4 * j + 4)
    return None


def read_gc_heap(mem) -> Optional[HeapInfo]:
    ctx = mem.sym("mp_state_ctx")
    if ctx is None:
        return None
    h = HeapInfo("MicroPython GC heap")
    offs = _from_dwarf(mem)
    h.layout = "DWARF (mp_state_ctx_t.mem)"
    try:
        if offs is None:
            size = mem.sym_size("mp_state_ctx") or 0x400
            offs = _by_invariant(mem, ctx, size)
            h.layout = ("symbols + gc_init's invariant (no DWARF for mp_state_mem_t): pool "
                        "= table bytes x 4 x 16")
        if offs is None:
            h.problem = "the GC's tables are not set up (gc_init has not run?)"
            return h
        atb = mem.u32(ctx + offs[0])
        atb_len = mem.u32(ctx + offs[1])
        start = mem.u32(ctx + offs[2])
        end = mem.u32(ctx + offs[3])
        if atb == 0 or start == 0:
            h.problem = "the GC's tables are not set up (gc_init has not run?)"
            return h
        h.start, h.end, h.total = start, end, end - start
        table = mem.read(atb, atb_len)
    except BadPointer as e:
        h.problem = f"a GC pointer is wrong: {e}"
        return h
    blocks = atb_len * BLOCKS_PER_ATB
    if end - start < blocks * BYTES_PER_BLOCK:
        h.problem = (f"the pool ({end - start} bytes) is smaller than the table's "
                     f"{blocks} blocks")
    free = used = heads = runs = largest = run = 0
    marks = 0
    for b in range(blocks):
        kind = (table[b // BLOCKS_PER_ATB] >> (2 * (b % BLOCKS_PER_ATB))) & 3
        if kind == AT_FREE:
            free += 1
            if run == 0:
                runs += 1
            run += 1
            largest = max(largest, run)
            continue
        run = 0
        used += 1
        if kind == AT_HEAD:
            heads += 1
        elif kind == AT_MARK:
            marks += 1
            heads += 1
    h.free, h.used = free * BYTES_PER_BLOCK, used * BYTES_PER_BLOCK
    h.largest_free, h.free_blocks, h.allocations = largest * BYTES_PER_BLOCK, runs, heads
    if marks and h.problem is None:
        h.problem = f"{marks} blocks marked: read during a collection"
    return h
