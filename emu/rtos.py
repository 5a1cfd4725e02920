"""An RTOS's tasks, read from guest memory as OpenOCD's ``-rtos auto`` does.

    from emu.rtos import for_machine
    rtos = for_machine(machine)          # None: no RTOS this module knows
    for t in rtos.tasks():               # [] until the scheduler has started
        print(t.name, t.state, t.priority, hex(t.sp), t.stack_low)
    regs = rtos.registers(t)             # a suspended task's saved context

Found from the ELF's symbols (nothing in the firmware has to cooperate):

FreeRTOS (V8-V10 on Cortex-M, InfiniTime's 9.0): ``pxCurrentTCB``,
``pxReadyTasksLists`` (one list per priority: its symbol size, else
``uxTopUsedPriority`` + 1), ``xDelayedTaskList1``/``2``,
``xPendingReadyList``, ``xSuspendedTaskList``, ``xTasksWaitingTermination``
and ``xSchedulerRunning``.  The TCB layout is the one tasks.c declares with
no MPU wrappers (OpenOCD assumes the same): ``pxTopOfStack`` at 0, the state
and event list items (20 bytes each) at 4 and 24, ``uxPriority`` at 44,
``pxStack`` at 48 and ``pcTaskName`` at 52.  A list is ``uxNumberOfItems,
pxIndex, xListEnd{xItemValue, pxNext, pxPrevious}``; an item is
``xItemValue, pxNext, pxPrevious, pvOwner, pvContainer``.  States follow
``eTaskGetState``: the running task, ready (a ready or the pending-ready
list), blocked (a delayed list, or the suspended list while waiting on an
event), suspended, deleted (waiting for the idle task to free it).  The
saved context is the ARM_CM4F port's (the one InfiniTime's port.c, from
the nRF5 SDK, uses): at ``pxTopOfStack`` r4-r11 and EXC_RETURN, then
s16-s31 when EXC_RETURN bit 4 is clear, then the exception frame r0-r3,
r12, lr, pc, xPSR (+ s0-s15, FPSCR and a reserved word with an FP context,
+ 4 bytes of alignment when xPSR bit 9 is set).  The ARM_CM3 port's frame
(r4-r11 only) is told apart by the ninth word not being an EXC_RETURN value.

Zephyr (3.x, built with CONFIG_DEBUG_THREAD_INFO, which selects
CONFIG_THREAD_MONITOR): the offsets table ``_kernel_thread_info_offsets``
(``_kernel_openocd_offsets``) gives the current thread in ``_kernel``, the
thread list and each ``struct k_thread``'s next pointer, state, priority,
name and the saved PSP in ``callee_saved`` (r4-r11 are the eight words before
it).  The exception frame is on the thread's stack at PSP; with
CONFIG_FPU_SHARING the table gives ``arch.preempt_float`` (s16-s31) and the
EXC_RETURN byte saved in ``arch.mode`` just after it says whether the
frame has an FP part.  States: running, ready (queued), pending, suspended,
dead, prestart, aborting, dummy, and sleeping for a thread in none of those
(a ``k_sleep``, or the idle thread while another runs).

Tasks are identified by their TCB / ``struct k_thread`` address (stable while
the task lives: the GDB stub uses it as the thread id, as OpenOCD does).
Memory is read only where RAM or flash is mapped (never a peripheral
register); a pointer that leads elsewhere ends that list, and every list
walk is bounded, so a corrupt list gives a short answer, never a hang.

Not modelled: FreeRTOS with MPU wrappers (portUSING_MPU_WRAPPERS: the TCB
moves), 16-bit ticks on other cores, configRECORD_STACK_HIGH_ADDRESS (a
FreeRTOS task's ``stack_high`` is None: its field's offset depends on
configMAX_TASK_NAME_LEN, which the image does not say); Zephyr's stack
bounds (``stack_info`` is not in the offsets table) and CONFIG_FPU without
FPU_SHARING (frames are taken as having no FP part); SMP.
"""
from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import Callable, Optional

log = logging.getLogger("emu.rtos")

MAX_TASKS = 256
NAME_MAX = 32
GPRS = [f"r{i}" for i in range(13)] + ["sp", "lr", "pc", "xpsr"]


@dataclass(frozen=True)
class Task:
    """One task (thread) as the kernel keeps it."""
    id: int                     # TCB / struct k_thread address
    name: str
    state: str
    priority: int
    sp: int                     # its saved stack pointer (pxTopOfStack / callee_saved.psp):
                                # stale while it runs, its context's address once switched out
    stack_low: Optional[int]    # lowest address of its stack, if known
    stack_high: Optional[int]   # one past its highest address, if known
    current: bool               # the task the CPU is running (its registers are the CPU's)


class MemoryReader:
    """Reads RAM and flash, nothing else (a stray pointer must not read a
    peripheral register, whose read can have side effects)."""

    def __init__(self, cpu):
        self.cpu = cpu

    def __call__(self, addr: int, size: int) -> bytes:
        r = self.cpu.region_at(addr)
        if r is None or r[2] not in ("ram", "flash") or addr + size > r[1]:
            raise ValueError(f"{size} bytes at {addr:#010x} are not in RAM or flash")
        return self.cpu.read_mem(addr, size)


class Rtos:
    """What the readers share.  ``read(addr, size) -> bytes`` raises
    ValueError where nothing readable is mapped."""

    name = "?"

    def __init__(self, symbols, read: Callable[[int, int], bytes]):
        self.symbols = symbols
        self.read = read

    # -- public API ----------------------------------------------------
    def started(self) -> bool:
        """The scheduler runs tasks (before that there is one context: main)."""
        raise NotImplementedError

    def tasks(self) -> list:
        """Every task the kernel lists, current first; [] before the scheduler
        starts or when its structures cannot be read."""
        raise NotImplementedError

    def current_id(self) -> Optional[int]:
        cur = [t.id for t in self.tasks() if t.current]
        return cur[0] if cur else None

    def registers(self, task: Task) -> dict:
        """A switched-out task's registers as its context saved them: r0-r12,
        sp, lr, pc, xpsr, and s0-s31 and fpscr when it had an FP context
        (absent otherwise).  {} when its stack cannot be read.  For the
        current task the CPU's own registers are the truth (not this)."""
        raise NotImplementedError

    # -- helpers -------------------------------------------------------
    def _u32(self, addr: int) -> int:
        return struct.unpack("<I", self.read(addr, 4))[0]

    def _words(self, addr: int, n: int) -> tuple:
        return struct.unpack(f"<{n}I", self.read(addr, 4 * n))

    def _cstr(self, addr: int, most: int = NAME_MAX) -> str:
        raw = b""
        for n in (most, 16, 8, 4):          # a name near the end of RAM: read less
            try:
                raw = self.read(addr, n)
                break
            except ValueError:
                continue
        raw = raw.split(b"\0", 1)[0]
        return "".join(chr(b) if 32 <= b < 127 else "?" for b in raw)

    def _sym(self, *names) -> Optional[int]:
        for n in names:
            a = self.symbols.lookup(n)
            if a is not None:
                return a
        return None

    @staticmethod
    def _frame(words: dict, read32s, p: int, fp: bool) -> dict:
        """The Cortex-M exception frame at ``p`` (r0-r3, r12, lr, pc, xPSR and,
        with ``fp``, s0-s15 and FPSCR) into ``words``; sets sp to where the
        task's stack was before the exception."""
        r0, r1, r2, r3, r12, lr, pc, xpsr = read32s(p, 8)
        words.update(r0=r0, r1=r1, r2=r2, r3=r3, r12=r12, lr=lr, pc=pc, xpsr=xpsr)
        p += 32
        if fp:
            ext = read32s(p, 17)
            for i in range(16):
                words[f"s{i}"] = ext[i]
            words["fpscr"] = ext[16]
            p += 72
        if xpsr & (1 << 9):             # the core aligned the frame to 8 bytes
            p += 4
        words["sp"] = p
        return words


class FreeRtos(Rtos):
    name = "FreeRTOS"
    LIST = 20
    TCB_STATE_ITEM, TCB_EVENT_ITEM, TCB_PRIO, TCB_STACK, TCB_NAME = 4, 24, 44, 48, 52

    def __init__(self, symbols, read):
        super().__init__(symbols, read)
        s = symbols.lookup
        self.current_ptr = s("pxCurrentTCB")
        self.ready = s("pxReadyTasksLists")
        ext = symbols.by_name.get("pxReadyTasksLists")
        n = ext[1] // self.LIST if ext and ext[1] and ext[1] % self.LIST == 0 else 0
        self._n_ready = n
        self.top_used = s("uxTopUsedPriority")
        self.delayed = [a for a in (s("xDelayedTaskList1"), s("xDelayedTaskList2")) if a]
        self.pending = s("xPendingReadyList")
        self.suspended = s("xSuspendedTaskList")
        self.deleted = s("xTasksWaitingTermination")
        self.running = s("xSchedulerRunning")

    @classmethod
    def matches(cls, symbols) -> bool:
        return all(symbols.lookup(n) is not None for n in
                   ("pxCurrentTCB", "pxReadyTasksLists", "xDelayedTaskList1",
                    "xDelayedTaskList2", "xPendingReadyList"))

    def _ready_lists(self) -> int:
        if self._n_ready:
            return self._n_ready
        if self.top_used is not None:
            try:
                return min(self._u32(self.top_used) + 1, 32)
            except ValueError:
                pass
        return 1

    def started(self) -> bool:
        try:
            if self.running is not None and not self._u32(self.running):
                return False
            return self._u32(self.current_ptr) != 0
        except ValueError:
            return False

    def _walk(self, lst: int) -> list:
        """The owners (TCBs) of the items of the list at ``lst``."""
        out = []
        try:
            count = self._u32(lst)
            end = lst + 8                       # &xListEnd
            item = self._u32(lst + 12)          # xListEnd.pxNext
            seen = set()
            while item != end and len(out) < min(count, MAX_TASKS) and item not in seen:
                seen.add(item)
                owner = self._u32(item + 12)    # pvOwner
                if owner:
                    out.append(owner)
                item = self._u32(item + 4)      # pxNext
        except ValueError:
            pass
        return out

    def tasks(self) -> list:
        if not self.started():
            return []
        try:
            cur = self._u32(self.current_ptr)
        except ValueError:
            return []
        found: dict = {}                        # tcb -> state, first listing wins
        lists = [(self.ready + self.LIST * p, "ready") for p in range(self._ready_lists())]
        lists += [(d, "blocked") for d in self.delayed]
        lists += [(a, st) for a, st in ((self.pending, "ready"), (self.suspended, "suspended"),
                                        (self.deleted, "deleted")) if a is not None]
        for lst, state in lists:
            for tcb in self._walk(lst):
                if tcb in found:
                    continue
                if state == "suspended":
                    try:                        # waiting on an event with no timeout
                        if self._u32(tcb + self.TCB_EVENT_ITEM + 16):
                            state_here = "blocked"
                        else:
                            state_here = "suspended"
                    except ValueError:
                        state_here = "suspended"
                    found[tcb] = state_here
                else:
                    found[tcb] = state
                if len(found) >= MAX_TASKS:
                    break
        if cur and cur not in found:
            found[cur] = "running"
        out = []
        for tcb, state in found.items():
            try:
                top, = self._words(tcb, 1)
                prio, stack = self._words(tcb + self.TCB_PRIO, 2)
            except ValueError:
                continue
            out.append(Task(id=tcb, name=self._cstr(tcb + self.TCB_NAME),
                            state="running" if tcb == cur else state, priority=prio, sp=top,
                            stack_low=stack or None, stack_high=None, current=tcb == cur))
        out.sort(key=lambda t: not t.current)
        return out

    def registers(self, task: Task) -> dict:
        try:
            p = task.sp
            w = self._words(p, 9)
            regs = {f"r{4 + i}": w[i] for i in range(8)}
            if (w[8] & 0xFFFFFF00) == 0xFFFFFF00:    # ARM_CM4F: EXC_RETURN saved too
                exc = w[8]
                p += 36
                fp = not (exc & 0x10)
                if fp:
                    hi = self._words(p, 16)
                    for i in range(16):
                        regs[f"s{16 + i}"] = hi[i]
                    p += 64
            else:                                      # ARM_CM3: r4-r11 only
                p += 32
                fp = False
            return self._frame(regs, self._words, p, fp)
        except ValueError:
            return {}


class Zephyr(Rtos):
    name = "Zephyr"
    (VERSION, K_CURR_THREAD, K_THREADS, T_ENTRY, T_NEXT_THREAD, T_STATE, T_USER_OPTIONS,
     T_PRIO, T_STACK_PTR, T_NAME, T_ARCH, T_PREEMPT_FLOAT, T_COOP_FLOAT) = range(13)
    UNIMPLEMENTED = 0xFFFFFFFF
    STATES = ((0x08, "dead"), (0x20, "aborting"), (0x04, "prestart"), (0x10, "suspended"),
              (0x02, "pending"), (0x80, "ready"), (0x01, "dummy"))

    def __init__(self, symbols, read):
        super().__init__(symbols, read)
        self.kernel = symbols.lookup("_kernel")
        self.table = self._sym("_kernel_thread_info_offsets", "_kernel_openocd_offsets")
        self.count = self._sym("_kernel_thread_info_num_offsets", "_kernel_openocd_num_offsets")
        self._off: Optional[list] = None

    @classmethod
    def matches(cls, symbols) -> bool:
        return symbols.lookup("_kernel") is not None and (
            symbols.lookup("_kernel_thread_info_offsets") is not None
            or symbols.lookup("_kernel_openocd_offsets") is not None)

    def offsets(self) -> list:
        if self._off is None:
            n = self.T_NAME                     # version 0's entries
            if self.count is not None:
                try:
                    n = min(self._u32(self.count), 64)
                except ValueError:
                    pass
            try:
                self._off = list(self._words(self.table, n))
            except ValueError:
                self._off = []
        return self._off

    def _o(self, i: int) -> Optional[int]:
        off = self.offsets()
        if i < len(off) and off[i] != self.UNIMPLEMENTED:
            return off[i]
        return None

    def started(self) -> bool:
        o = self._o(self.K_CURR_THREAD)
        if o is None:
            return False
        try:
            return self._u32(self.kernel + o) != 0
        except ValueError:
            return False

    def tasks(self) -> list:
        oc, ot, on = self._o(self.K_CURR_THREAD), self._o(self.K_THREADS), \
            self._o(self.T_NEXT_THREAD)
        if None in (oc, ot, on) or not self.started():
            return []
        ost, opr, osp, onm = (self._o(self.T_STATE), self._o(self.T_PRIO),
                              self._o(self.T_STACK_PTR), self._o(self.T_NAME))
        try:
            cur = self._u32(self.kernel + oc)
            t = self._u32(self.kernel + ot)
        except ValueError:
            return []
        out, seen = [], set()
        while t and t not in seen and len(out) < MAX_TASKS:
            seen.add(t)
            try:
                state = self.read(t + ost, 1)[0] if ost is not None else 0
                prio = struct.unpack("<b", self.read(t + opr, 1))[0] if opr is not None else 0
                sp = self._u32(t + osp) if osp is not None else 0
                nxt = self._u32(t + on)
            except ValueError:
                break
            name = self._cstr(t + onm) if onm is not None else ""
            words = [w for bit, w in self.STATES if state & bit]
            st = "running" if t == cur else (words[0] if words else "sleeping")
            out.append(Task(id=t, name=name or f"{t:#010x}", state=st, priority=prio, sp=sp,
                            stack_low=None, stack_high=None, current=t == cur))
            t = nxt
        out.sort(key=lambda x: not x.current)
        return out

    def registers(self, task: Task) -> dict:
        osp = self._o(self.T_STACK_PTR)
        if osp is None:
            return {}
        try:
            callee = self._words(task.id + osp - 32, 8)
            regs = {f"r{4 + i}": callee[i] for i in range(8)}
            fp = False
            oarch, opf = self._o(self.T_ARCH), self._o(self.T_PREEMPT_FLOAT)
            if oarch is not None and opf is not None:
                pf = task.id + oarch + opf
                mode = self._u32(pf + 64)           # arch.mode, after preempt_float
                exc = 0xFFFFFF00 | ((mode >> 8) & 0xFF)
                if not exc & 0x10:
                    fp = True
                    hi = self._words(pf, 16)
                    for i in range(16):
                        regs[f"s{16 + i}"] = hi[i]
            return self._frame(regs, self._words, task.sp, fp)
        except ValueError:
            return {}


READERS = (FreeRtos, Zephyr)


def detect(symbols, read: Callable[[int, int], bytes]) -> Optional[Rtos]:
    """The RTOS an image's symbols name (FreeRTOS, Zephyr), or None."""
    for cls in READERS:
        if symbols and cls.matches(symbols):
            return cls(symbols, read)
    return None


def for_machine(machine) -> Optional[Rtos]:
    """The RTOS of the firmware ``machine`` runs, reading its memory (RAM
    and flash only), or None."""
    return detect(machine.symbols, MemoryReader(machine.cpu))
