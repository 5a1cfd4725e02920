"""FreeRTOS heap_4 and task lists read from guest RAM (see emu/inspect/__init__.py)."""
from __future__ import annotations

from typing import Optional

from emu.inspect.model import STACK_FILL, BadPointer, HeapInfo, TaskInfo
from emu.inspect.dwarf import struct_layout

MAX_BLOCKS = 4096          # a free list longer than this is taken as a loop
MAX_TASKS = 256
LIST_SIZE = 20             # List_t: uxNumberOfItems, pxIndex, xListEnd (MiniListItem_t, 12)
# FreeRTOS 10 tskTCB without MPU wrappers and list integrity bytes
DEFAULT_TCB = {"pxTopOfStack": (0, 4), "xStateListItem": (4, 20), "xEventListItem": (24, 20),
               "uxPriority": (44, 4), "pxStack": (48, 4), "pcTaskName": (52, 16)}
ITEM_OWNER, ITEM_CONTAINER = 12, 16       # ListItem_t.pvOwner, .pvContainer


def read_heap4(mem) -> Optional[HeapInfo]:
    free_sym = mem.sym("xFreeBytesRemaining")
    start_sym = mem.sym("xStart")
    end_sym = mem.sym("pxEnd")
    if free_sym is None or start_sym is None or end_sym is None:
        return None
    h = HeapInfo("FreeRTOS heap_4", layout="symbols (heap_4's BlockLink_t {next, size})")
    try:
        h.free = mem.u32(free_sym)
        lo = mem.sym("xMinimumEverFreeBytesRemaining")
        h.min_ever_free = mem.u32(lo) if lo is not None else None
        size_sym = mem.sym("xHeapSize")
        if size_sym is not None:
            h.total = mem.u32(size_sym)
        elif mem.sym_size("ucHeap"):
            h.total = mem.sym_size("ucHeap")
        end = mem.u32(end_sym)
        if end == 0:
            h.problem = "not initialised yet (pxEnd is NULL: no pvPortMalloc so far)"
            h.free = None
            return h
        h.end = end
        block = mem.u32(start_sym)
        h.start = block
        total_free, largest, n, prev = 0, 0, 0, start_sym
        allocated_bit = 1 << 31
        while block != end:
            if n >= MAX_BLOCKS:
                h.problem = f"the free list does not reach pxEnd in {MAX_BLOCKS} blocks (a loop?)"
                break
            if block <= prev and prev != start_sym:
                h.problem = (f"free block at {block:#010x} follows {prev:#010x}: the list is "
                             "not in address order")
                break
            if block > end:
                h.problem = f"free block at {block:#010x} lies beyond pxEnd ({end:#010x})"
                break
            nxt, size = mem.u32(block), mem.u32(block + 4)
            if size & allocated_bit or size == 0 or block + size > end:
                h.problem = f"free block at {block:#010x} has a bad size {size:#x}"
                break
            total_free += size
            largest = max(largest, size)
            n += 1
            prev, block = block, nxt
        h.largest_free, h.free_blocks = largest, n
        if h.problem is None and total_free != h.free:
            h.problem = (f"the free list holds {total_free} bytes but xFreeBytesRemaining "
                         f"says {h.free}")
        if h.total is not None and h.free is not None:
            h.used = h.total - h.free
    except BadPointer as e:
        h.problem = f"a heap pointer leads outside RAM ({e})"
    return h


def _tcb_layout(mem) -> tuple:
    lay = struct_layout(mem.path, "tskTaskControlBlock", "tasks.c")
    if lay and all(k in lay for k in ("pxTopOfStack", "uxPriority", "pxStack", "pcTaskName")):
        return lay, "DWARF (tskTaskControlBlock)"
    return DEFAULT_TCB, "FreeRTOS 10 TCB layout (no DWARF for tskTaskControlBlock)"


def _list_owners(mem, lst: int) -> list:
    """The pvOwner of each item of the List_t at ``lst``."""
    end_marker = lst + 8
    n = mem.u32(lst)
    if n > MAX_TASKS:
        raise ValueError(f"list at {lst:#010x} claims {n} items")
    out = []
    item = mem.u32(lst + 12)                 # xListEnd.pxNext
    for _ in range(n):
        if item == end_marker:
            break
        out.append((mem.u32(item + ITEM_OWNER), item))
        item = mem.u32(item + 4)
    return out


def read_tasks(mem) -> list:
    current_sym = mem.sym("pxCurrentTCB")
    ready = mem.sym("pxReadyTasksLists")
    if current_sym is None or ready is None:
        return []
    layout, source = _tcb_layout(mem)
    lists = []                                 # (state, list address)
    nprio = (mem.sym_size("pxReadyTasksLists") or LIST_SIZE) // LIST_SIZE
    for p in range(nprio):
        lists.append(("ready", ready + p * LIST_SIZE))
    for name, state in (("xDelayedTaskList1", "blocked"), ("xDelayedTaskList2", "blocked"),
                        ("xPendingReadyList", "ready"), ("xSuspendedTaskList", "suspended"),
                        ("xTasksWaitingTermination", "deleted")):
        a = mem.sym(name)
        if a is not None:
            lists.append((state, a))
    try:
        current = mem.u32(current_sym)
    except BadPointer:
        current = 0
    seen: dict = {}
    problems = []
    for state, lst in lists:
        try:
            owners = _list_owners(mem, lst)
        except (BadPointer, ValueError) as e:
            problems.append(f"task list at {lst:#010x}: {e}")
            continue
        for tcb, item in owners:
            if tcb in seen or len(seen) >= MAX_TASKS:
                continue
            st = state
            if state == "suspended":
                # vTaskSuspend's tasks have no event; a task blocked for ever
                # (portMAX_DELAY) sits in this list waiting on an event
                try:
                    if mem.u32(tcb + layout["xEventListItem"][0] + ITEM_CONTAINER):
                        st = "blocked"
                except (BadPointer, KeyError):
                    pass
            seen[tcb] = st
    if current and current not in seen:
        seen[current] = "running"
    tasks = [_task(mem, tcb, "running" if tcb == current else st, layout, source)
             for tcb, st in seen.items()]
    if problems and tasks:
        tasks[0].problem = "; ".join(problems)
    elif problems:
        tasks.append(TaskInfo("?", "unknown", 0, 0, 0, 0, None, problem="; ".join(problems)))
    return tasks


def _task(mem, tcb: int, state: str, layout: dict, source: str) -> TaskInfo:
    try:
        top = mem.u32(tcb + layout["pxTopOfStack"][0])
        prio = mem.u32(tcb + layout["uxPriority"][0])
        stack = mem.u32(tcb + layout["pxStack"][0])
        off, size = layout["pcTaskName"]
        raw = mem.read(tcb + off, max(1, min(size or 16, 32)))
        name = raw.split(b"\0", 1)[0].decode("ascii", "replace")
    except BadPointer as e:
        return TaskInfo("?", state, 0, tcb, 0, 0, None, problem=f"TCB at {tcb:#010x}: {e}")
    t = TaskInfo(name, state, prio, tcb, stack, top, None)
    if "pxEndOfStack" in layout:
        try:
            t.stack_size = mem.u32(tcb + layout["pxEndOfStack"][0]) - stack + 4
        except BadPointer:
            pass
    # uxTaskGetStackHighWaterMark: fill bytes from pxStack up, in words
    try:
        limit = top - stack if stack <= top else 0
        data = mem.read(stack, min(limit, 64 * 1024)) if limit else b""
        n = 0
        while n < len(data) and data[n] == STACK_FILL:
            n += 1
        t.stack_high_water = n // 4
    except BadPointer as e:
        t.problem = f"stack at {stack:#010x}: {e}"
    if t.problem is None and not (stack <= top):
        t.problem = f"pxTopOfStack {top:#010x} below pxStack {stack:#010x}: stack overflowed?"
    return t
