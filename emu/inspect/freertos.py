"""FreeRTOS heap_4 and task lists read from guest RAM (see emu/inspect/__init__.py).

The one reader of FreeRTOS's task lists and TCB layout: machine.tasks()
reads them here, and so does emu/rtos.py (the GDB stub's threads), which
adds each task's saved context."""
from __future__ import annotations

from typing import Optional

from emu.inspect.model import STACK_FILL, BadPointer, HeapInfo, TaskInfo
from emu.inspect.dwarf import struct_layout

MAX_BLOCKS = 4096          # a free list longer than this is taken as a loop
MAX_TASKS = 256            # a task list longer than this is taken as corrupt
MAX_PRIORITIES = 32
LIST_SIZE = 20             # List_t: uxNumberOfItems, pxIndex, xListEnd (MiniListItem_t, 12)
# FreeRTOS 10 tskTCB without MPU wrappers and list integrity bytes
DEFAULT_TCB = {"pxTopOfStack": (0, 4), "xStateListItem": (4, 20), "xEventListItem": (24, 20),
               "uxPriority": (44, 4), "pxStack": (48, 4), "pcTaskName": (52, 16)}
ITEM_NEXT, ITEM_OWNER, ITEM_CONTAINER = 4, 12, 16   # ListItem_t.pxNext, .pvOwner, .pvContainer
# the lists besides pxReadyTasksLists[], in the order a task is looked for
TASK_LISTS = (("xDelayedTaskList1", "blocked"), ("xDelayedTaskList2", "blocked"),
              ("xPendingReadyList", "ready"), ("xSuspendedTaskList", "suspended"),
              ("xTasksWaitingTermination", "deleted"))


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
        h.problem = f"a heap pointer is wrong: {e}"
    return h


def has_tasks(mem) -> bool:
    """The image has FreeRTOS's task lists (its symbols say so)."""
    return mem.sym("pxCurrentTCB") is not None and mem.sym("pxReadyTasksLists") is not None


def scheduler_started(mem) -> bool:
    """vTaskStartScheduler has run: ``xSchedulerRunning`` is set (when the
    image has it) and ``pxCurrentTCB`` is not NULL."""
    running, current = mem.sym("xSchedulerRunning"), mem.sym("pxCurrentTCB")
    try:
        if running is not None and not mem.u32(running):
            return False
        return current is not None and mem.u32(current) != 0
    except BadPointer:
        return False


def tcb_layout(path) -> tuple:
    """({member: (offset, size)}, where it came from): the ELF's DWARF for
    ``tskTaskControlBlock``, else FreeRTOS 10's layout without the MPU."""
    lay = struct_layout(path, "tskTaskControlBlock", "tasks.c")
    if lay and all(k in lay for k in ("pxTopOfStack", "uxPriority", "pxStack", "pcTaskName")):
        return lay, "DWARF (tskTaskControlBlock)"
    return DEFAULT_TCB, "FreeRTOS 10 TCB layout (no DWARF for tskTaskControlBlock)"


def _ready_lists(mem) -> int:
    """How many priorities pxReadyTasksLists[] has: its symbol's size, else
    uxTopUsedPriority + 1, else 1."""
    size = mem.sym_size("pxReadyTasksLists")
    if size and size % LIST_SIZE == 0:
        return min(size // LIST_SIZE, MAX_PRIORITIES)
    top = mem.sym("uxTopUsedPriority")
    if top is not None:
        try:
            return min(mem.u32(top) + 1, MAX_PRIORITIES)
        except BadPointer:
            pass
    return 1


def _list_owners(mem, lst: int) -> tuple:
    """(the pvOwner of each item of the List_t at ``lst``, what is wrong with
    the list or None).  The walk ends at xListEnd or after uxNumberOfItems
    items, and stops short at an item seen before, an item without an
    owner or a pointer outside RAM and flash; never more than MAX_TASKS."""
    out: list = []
    try:
        n = mem.u32(lst)
        end_marker = lst + 8                     # &xListEnd
        item = mem.u32(lst + 12)                 # xListEnd.pxNext
        seen = set()
        while item != end_marker and len(out) < min(n, MAX_TASKS):
            if item in seen:
                return out, f"loops back to the item at {item:#010x}"
            seen.add(item)
            owner = mem.u32(item + ITEM_OWNER)
            if not owner:
                return out, f"the item at {item:#010x} has no owner"
            out.append(owner)
            item = mem.u32(item + ITEM_NEXT)
    except BadPointer as e:
        return out, str(e)
    if n > MAX_TASKS:
        return out, f"claims {n} items"
    return out, None


def read_tasks(mem) -> list:
    """Every task in FreeRTOS's lists, in list order (the ready lists from
    priority 0 up, then TASK_LISTS), plus ``pxCurrentTCB`` if no list holds
    it; a list that does not add up is named in the first task's
    ``problem``, a TCB that cannot be read gives a task named '?'."""
    if not has_tasks(mem):
        return []
    current_sym, ready = mem.sym("pxCurrentTCB"), mem.sym("pxReadyTasksLists")
    layout, _source = tcb_layout(mem.path)
    lists = [("ready", ready + p * LIST_SIZE) for p in range(_ready_lists(mem))]
    for name, state in TASK_LISTS:
        a = mem.sym(name)
        if a is not None:
            lists.append((state, a))
    try:
        current = mem.u32(current_sym)
    except BadPointer:
        current = 0
    seen: dict = {}                              # tcb -> state: the first listing wins
    problems = []
    for state, lst in lists:
        owners, problem = _list_owners(mem, lst)
        if problem:
            problems.append(f"task list at {lst:#010x}: {problem}")
        for tcb in owners:
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
    tasks = [_task(mem, tcb, "running" if tcb == current else st, layout)
             for tcb, st in seen.items()]
    if problems and tasks:
        tasks[0].problem = "; ".join(problems + ([tasks[0].problem] if tasks[0].problem else []))
    elif problems:
        tasks.append(TaskInfo("?", "unknown", 0, 0, 0, 0, None, problem="; ".join(problems)))
    return tasks


def _task(mem, tcb: int, state: str, layout: dict) -> TaskInfo:
    try:
        top = mem.u32(tcb + layout["pxTopOfStack"][0])
        prio = mem.u32(tcb + layout["uxPriority"][0])
        stack = mem.u32(tcb + layout["pxStack"][0])
        off, size = layout["pcTaskName"]
        name = mem.cstr(tcb + off, max(1, min(size or 16, 32)))
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
        t.stack_high_water = (len(data) - len(data.lstrip(bytes([STACK_FILL])))) // 4
    except BadPointer as e:
        t.problem = f"stack at {stack:#010x}: {e}"
    if t.problem is None and not (stack <= top):
        t.problem = f"pxTopOfStack {top:#010x} below pxStack {stack:#010x}: stack overflowed?"
    return t
