"""The firmware's heaps and tasks, read from guest RAM as a debugger would.

    for h in machine.heaps():   print(h.summary())
    for t in machine.tasks():   print(t.name, t.state, t.priority, t.stack_high_water)

Nothing asks the firmware: the structures are found through the ELF's
symbols and read between runs through :class:`GuestMemory` (RAM and flash
only; emu/rtos.py reads through it too).

* FreeRTOS heap_4 (freertos.py): ``xFreeBytesRemaining``,
  ``xMinimumEverFreeBytesRemaining`` and the free list from ``xStart`` to
  ``*pxEnd`` (each free block a ``BlockLink_t {next, size}``): free bytes,
  minimum ever free, largest free block, fragmentation = 1 - largest/free.
  The heap's size from ``xHeapSize`` (InfiniTime's heap_4 variant) or the
  size of ``ucHeap`` (stock heap_4).
* FreeRTOS tasks (freertos.py): ``pxCurrentTCB``, ``pxReadyTasksLists[]``,
  the delayed lists, ``xPendingReadyList``, ``xSuspendedTaskList``,
  ``xTasksWaitingTermination``; each TCB's name, priority, state, and the
  stack high-water mark as ``uxTaskGetStackHighWaterMark`` computes it
  (0xA5 fill bytes counted from ``pxStack``).  The TCB layout comes from
  the ELF's DWARF when it has ``tskTaskControlBlock``, else FreeRTOS 10's
  layout without the MPU (``freertos.tcb_layout`` says which).  This is
  the one reader of FreeRTOS's lists: emu/rtos.py's GDB threads are these
  tasks with their saved contexts.
* MicroPython's GC heap (micropython.py): ``mp_state_ctx.mem``'s allocation
  table (2 bits a block: free, head, tail, mark) and pool: total, used,
  free, largest free run, allocations; the members' offsets from the DWARF,
  else found in ``mp_state_ctx`` by the GC's own invariant (pool size =
  table bytes x 4 blocks x 16 bytes).

A structure that does not add up (a pointer outside RAM and flash, a list
that loops or is not in address order, sizes that disagree) is reported in
the result's ``problem``, never raised.  Not modelled: heap_1/2/3/5, LVGL's own
lv_mem heap (InfiniTime builds LVGL with LV_MEM_CUSTOM on pvPortMalloc, so
its objects are in the heap_4 figures), newlib's malloc, Zephyr's kernel
objects and heaps.
"""
from __future__ import annotations

from emu.inspect import freertos, micropython
from emu.inspect.model import (STACK_FILL, BadPointer, GuestMemory, HeapInfo, Inspection,
                               TaskInfo)

__all__ = ["HeapInfo", "TaskInfo", "Inspection", "GuestMemory", "BadPointer", "STACK_FILL",
           "read_heaps", "read_tasks"]


def read_heaps(machine) -> list:
    """Every heap the reader finds in the image (see the module docstring)."""
    mem = GuestMemory.of(machine)
    out = []
    for reader in (freertos.read_heap4, micropython.read_gc_heap):
        h = reader(mem)
        if h is not None:
            out.append(h)
    return out


def read_tasks(machine) -> list:
    """FreeRTOS's tasks (empty when the image has no FreeRTOS scheduler)."""
    return freertos.read_tasks(GuestMemory.of(machine))
