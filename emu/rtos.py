"""An RTOS's tasks, read from guest memory as OpenOCD's ``-rtos auto`` does.

    from emu.rtos import for_machine
    rtos = for_machine(machine)          # None: no RTOS this module knows
    for t in rtos.tasks():               # [] until the scheduler has started
        print(t.name, t.state, t.priority, hex(t.sp), t.stack_low)
    regs = rtos.registers(t)             # a suspended task's saved context

Found from the ELF's symbols (nothing in the firmware has to cooperate):

FreeRTOS (V8-V10 on Cortex-M, InfiniTime's 9.0): the tasks are emu/inspect's
(emu/inspect/freertos.py is the one reader of the task lists and the TCB
layout: DWARF's ``tskTaskControlBlock`` or FreeRTOS 10's default, the
states ``eTaskGetState`` gives, the corruption checks), shown here only
once ``xSchedulerRunning`` is set.  The saved context is the ARM_CM4F
port's (the one InfiniTime's port.c, from the nRF5 SDK, uses): at
``pxTopOfStack`` r4-r11 and EXC_RETURN, then s16-s31 when EXC_RETURN bit 4
is clear, then the exception frame r0-r3, r12, lr, pc, xPSR (+ s0-s15,
FPSCR and a reserved word with an FP context, + 4 bytes of alignment when
xPSR bit 9 is set).  The ARM_CM3 port's frame (r4-r11 only) is told apart
by the ninth word not being an EXC_RETURN value.

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
Memory is read through emu/inspect's GuestMemory, only where RAM or flash
is mapped (never a peripheral register); a pointer that leads elsewhere
ends that list, and every list walk is bounded, so a corrupt list gives a
short answer, never a hang.

Not modelled: FreeRTOS with MPU wrappers without DWARF (portUSING_MPU_WRAPPERS:
the TCB moves), 16-bit ticks on other cores, configRECORD_STACK_HIGH_ADDRESS
without DWARF (a FreeRTOS task's ``stack_high`` is then None: the field's
offset depends on configMAX_TASK_NAME_LEN, which the symbols do not say);
Zephyr's stack bounds (``stack_info`` is not in the offsets table) and
CONFIG_FPU without FPU_SHARING (frames are taken as having no FP part); SMP.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

from emu.inspect import freertos
from emu.inspect.model import GuestMemory

log = logging.getLogger("emu.rtos")

MAX_TASKS = freertos.MAX_TASKS


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


class Rtos:
    """What the readers share: ``mem``, the guest's RAM and flash and the
    image's symbols (a GuestMemory: its reads raise ValueError where nothing
    readable is mapped)."""

    name = "?"

    def __init__(self, mem: GuestMemory):
        self.mem = mem
        self.read = mem.read

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
    def _frame(self, words: dict, p: int, fp: bool) -> dict:
        """The Cortex-M exception frame at ``p`` (r0-r3, r12, lr, pc, xPSR and,
        with ``fp``, s0-s15 and FPSCR) into ``words``; sets sp to where the
        task's stack was before the exception."""
        r0, r1, r2, r3, r12, lr, pc, xpsr = self.mem.words(p, 8)
        words.update(r0=r0, r1=r1, r2=r2, r3=r3, r12=r12, lr=lr, pc=pc, xpsr=xpsr)
        p += 32
        if fp:
            ext = self.mem.words(p, 17)
            for i in range(16):
                words[f"s{i}"] = ext[i]
            words["fpscr"] = ext[16]
            p += 72
        if xpsr & (1 << 9):             # the core aligned the frame to 8 bytes
            p += 4
        words["sp"] = p
        return words


class FreeRtos(Rtos):
    """FreeRTOS's tasks as emu/inspect/freertos.py reads them, with their
    saved contexts."""
    name = "FreeRTOS"

    @classmethod
    def matches(cls, mem: GuestMemory) -> bool:
        return freertos.has_tasks(mem)

    def started(self) -> bool:
        return freertos.scheduler_started(self.mem)

    def tasks(self) -> list:
        if not self.started():
            return []
        out = [Task(id=t.tcb, name=t.name, state=t.state, priority=t.priority,
                    sp=t.stack_top, stack_low=t.stack_base or None,
                    stack_high=t.stack_base + t.stack_size if t.stack_size else None,
                    current=t.state == "running")
               for t in freertos.read_tasks(self.mem) if t.tcb]
        out.sort(key=lambda t: not t.current)
        return out

    def registers(self, task: Task) -> dict:
        mem = self.mem
        p = task.sp
        if not mem.in_ram(p, 36):                    # a context lives on a stack in RAM
            return {}
        try:
            w = mem.words(p, 9)
            regs = {f"r{4 + i}": w[i] for i in range(8)}
            if (w[8] & 0xFFFFFF00) == 0xFFFFFF00:    # ARM_CM4F: EXC_RETURN saved too
                exc = w[8]
                p += 36
                fp = not (exc & 0x10)
                if fp:
                    hi = mem.words(p, 16)
                    for i in range(16):
                        regs[f"s{16 + i}"] = hi[i]
                    p += 64
            else:                                      # ARM_CM3: r4-r11 only
                p += 32
                fp = False
            return self._frame(regs, p, fp)
        except ValueError:
            return {}


class Zephyr(Rtos):
    name = "Zephyr"
    (VERSION, K_CURR_THREAD, K_THREADS, T_ENTRY, T_NEXT_THREAD, T_STATE, T_USER_OPTIONS,
     T_PRIO, T_STACK_PTR, T_NAME, T_ARCH, T_PREEMPT_FLOAT, T_COOP_FLOAT) = range(13)
    UNIMPLEMENTED = 0xFFFFFFFF
    STATES = ((0x08, "dead"), (0x20, "aborting"), (0x04, "prestart"), (0x10, "suspended"),
              (0x02, "pending"), (0x80, "ready"), (0x01, "dummy"))

    def __init__(self, mem: GuestMemory):
        super().__init__(mem)
        self.kernel = mem.sym("_kernel")
        self.table = mem.sym("_kernel_thread_info_offsets", "_kernel_openocd_offsets")
        self.count = mem.sym("_kernel_thread_info_num_offsets", "_kernel_openocd_num_offsets")
        self._off: Optional[list] = None

    @classmethod
    def matches(cls, mem: GuestMemory) -> bool:
        return mem.sym("_kernel") is not None and \
            mem.sym("_kernel_thread_info_offsets", "_kernel_openocd_offsets") is not None

    def offsets(self) -> list:
        if self._off is None:
            n = self.T_NAME                     # version 0's entries
            if self.count is not None:
                try:
                    n = min(self.mem.u32(self.count), 64)
                except ValueError:
                    pass
            try:
                self._off = list(self.mem.words(self.table, n))
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
            return self.mem.u32(self.kernel + o) != 0
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
            cur = self.mem.u32(self.kernel + oc)
            t = self.mem.u32(self.kernel + ot)
        except ValueError:
            return []
        out, seen = [], set()
        while t and t not in seen and len(out) < MAX_TASKS:
            seen.add(t)
            try:
                state = self.read(t + ost, 1)[0] if ost is not None else 0
                prio = int.from_bytes(self.read(t + opr, 1), "little", signed=True) \
                    if opr is not None else 0
                sp = self.mem.u32(t + osp) if osp is not None else 0
                nxt = self.mem.u32(t + on)
            except ValueError:
                break
            name = self.mem.cstr(t + onm) if onm is not None else ""
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
            callee = self.mem.words(task.id + osp - 32, 8)
            regs = {f"r{4 + i}": callee[i] for i in range(8)}
            fp = False
            oarch, opf = self._o(self.T_ARCH), self._o(self.T_PREEMPT_FLOAT)
            if oarch is not None and opf is not None:
                pf = task.id + oarch + opf
                mode = self.mem.u32(pf + 64)           # arch.mode, after preempt_float
                exc = 0xFFFFFF00 | ((mode >> 8) & 0xFF)
                if not exc & 0x10:
                    fp = True
                    hi = self.mem.words(pf, 16)
                    for i in range(16):
                        regs[f"s{16 + i}"] = hi[i]
            return self._frame(regs, task.sp, fp)
        except ValueError:
            return {}


READERS = (FreeRtos, Zephyr)


def detect(mem: GuestMemory) -> Optional[Rtos]:
    """The RTOS the image's symbols name (FreeRTOS, Zephyr), or None."""
    for cls in READERS:
        if cls.matches(mem):
            return cls(mem)
    return None


def for_machine(machine) -> Optional[Rtos]:
    """The RTOS of the firmware ``machine`` runs, reading its memory (RAM
    and flash only), or None."""
    return detect(GuestMemory.of(machine))
