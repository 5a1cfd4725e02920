"""The NVIC and the SCB's exception state as the Cortex-M holds it: lines
and pends, enables, priorities and grouping, the best pending exception
and whether it preempts now (a part of emu/cpu/cortexm.py's CortexM; the
same steps in C: emu/cpu/_nvic.c)."""
from __future__ import annotations

import logging
from typing import Optional

from unicorn import arm_const as A

from emu.cpu import cycles as cyc
from emu.cpu.armv7m import BUSFAULT, MEMMANAGE, USAGEFAULT, XPSR_IT
from emu.soc.ops import Steps, unreplaced

log = logging.getLogger("emu.cpu")


class Nvic:
    """Nvic part of CortexM (a mixin: every method works on the CortexM's
    own state)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("irq_level",)
    STRUCTURE = ("entries_in_hook",)

    # ------------------------------------------------------------------
    # NVIC interface used by peripherals and the SCS
    # ------------------------------------------------------------------
    def set_irq_level(self, irq: int, level: bool) -> None:
        """Level-triggered interrupt line from a peripheral."""
        bit = 1 << irq
        if level:
            if self.irq_level & bit:
                return
            self.irq_level |= bit
            if not (self.active & (bit << 16)):
                self.pending |= bit << 16
                self._pending_changed()
        else:
            self.irq_level &= ~bit

    def set_pending(self, exc: int) -> None:
        if not (self.pending >> exc) & 1:
            self.pending |= 1 << exc
            self._pending_changed()

    def clear_pending(self, exc: int) -> None:
        self.pending &= ~(1 << exc)
        if exc >= 16 and (self.irq_level >> (exc - 16)) & 1 and not (self.active >> exc) & 1:
            # a level-sensitive line still asserted pends again at once
            self.pending |= 1 << exc

    # A pend during a slice (an MMIO access) ends the slice only when the run
    # loop will enter an exception at that boundary: one that cannot preempt
    # the active ones waits for an exception return (which ends the slice or
    # decides in the hook), one that only PRIMASK/BASEPRI/FAULTMASK hold back
    # arms the block hook's mask watch here instead of in the loop; the
    # boundary would have changed nothing.  (InfiniTime pends ~300 such a
    # second.)  Same conditions as _return_in_hook.
    fast_pends = True     # False: every pend ends the slice (the slow path, for tests)

    def _pending_changed(self) -> None:
        if self.sleeping or self.scr & 0x10:   # SEVONPEND
            self.event_register = 1
        cs = self.cs
        if cs.in_slice and self.fast_pends and not self._boundaries_watched \
                and not 3 <= self._ipsr <= 6:
            if self._pending_to_enter() is None:
                return
            if self.fast_entries:
                cs.entry_flag = 1       # entered at the next block (_enter_in_hook)
                return
        cs.stop_flag = 1

    # The exception entry the run loop would make at a block boundary (a pend
    # that needs one, or the mask watch seeing it unmasked) is made by the
    # block hook's callback at that very block, without ending the slice:
    # events cannot be due there (the deadline comes first in the hook), so
    # the loop's run_due would do nothing before its _take_pending.  Entries
    # into fault handlers (the hang check) still end the slice.
    fast_entries = True   # False: entries end the slice (the slow path, for tests)
    entries_in_hook = 0   # exception entries that did not end the slice
    _halt_in_hook: Optional[BaseException] = None

    def _enter_in_hook(self, address: int) -> int:
        """Called by the block hook with the next block's address: ENTRY_DONE
        (entered; PC at the handler), ENTRY_NONE (nothing to enter) or
        ENTRY_STOP (end the slice; the run loop decides)."""
        if (not self.fast_entries or self._boundaries_watched or 3 <= self._ipsr <= 6
                or self.stop_reason or self.powered_off):
            return cyc.ENTRY_STOP
        try:
            best = self._pending_to_enter()
            if best is None:
                return cyc.ENTRY_NONE
            if 3 <= best[2] <= 6:
                return cyc.ENTRY_STOP
            if self.uc.reg_read(A.UC_ARM_REG_XPSR) & XPSR_IT:
                # IT state as read inside a block hook: either a block that
                # starts inside an IT block, or a stale value (QEMU brings the
                # IT bits up to date when the engine stops; an entry made from
                # the deadline in a hook once stacked such stale bits and
                # wasp-os's REPL crashed).  The run loop reads them right.
                return cyc.ENTRY_STOP
            self.exception_entry(best[2], address)
            self.sleeping = False
            uc = self.uc
            pc = uc.reg_read(A.UC_ARM_REG_PC)
            uc.reg_write(A.UC_ARM_REG_PC, pc | 1)      # bit 0: stay in Thumb state
        except BaseException as e:   # CpuHalt (lockup): raised again after the slice
            self._halt_in_hook = e
            return cyc.ENTRY_STOP
        self.entries_in_hook += 1
        self._slice_pc = pc
        self._slice_blocks = self.cs.blocks
        return cyc.ENTRY_DONE

    def exc_enabled(self, exc: int) -> bool:
        if exc >= 16:
            return bool((self.irq_enabled >> (exc - 16)) & 1)
        if exc == MEMMANAGE:
            return bool(self.shcsr & (1 << 16))
        if exc == BUSFAULT:
            return bool(self.shcsr & (1 << 17))
        if exc == USAGEFAULT:
            return bool(self.shcsr & (1 << 18))
        return True

    def group_prio(self, raw: int) -> int:
        if raw < 0:
            return raw
        sub_mask = (2 << self.prigroup) - 1 if self.profile == "m4" else 0
        return raw & ~sub_mask & 0xFF

    def exc_prio(self, exc: int) -> int:
        return self.prio[exc]

    def active_priority(self) -> int:
        """Execution priority from active exceptions only (256 = thread)."""
        prio = 256
        act = self.active
        while act:                       # visit the set bits only
            low = act & -act
            act ^= low
            p = self.group_prio(self.prio[low.bit_length() - 1])
            if p < prio:
                prio = p
        return prio

    def execution_priority(self) -> int:
        prio = self.active_priority()
        uc = self.uc
        if self.profile == "m4":
            bp = uc.reg_read(A.UC_ARM_REG_BASEPRI) & self.prio_mask
            if bp and self.group_prio(bp) < prio:
                prio = self.group_prio(bp)
            if uc.reg_read(A.UC_ARM_REG_FAULTMASK) & 1:
                return -1
        if uc.reg_read(A.UC_ARM_REG_PRIMASK) & 1 and prio > 0:
            prio = 0
        return prio

    def best_pending(self) -> Optional[tuple]:
        """(group_prio, raw_prio, exc) of the best pending enabled exception."""
        pend = self.pending
        if not pend:
            return None
        best = None
        prio = self.prio
        keep = ~((2 << self.prigroup) - 1) & 0xFF if self.profile == "m4" else 0xFF
        irq_enabled = self.irq_enabled
        while pend:                      # visit the set bits only
            low = pend & -pend
            pend ^= low
            e = low.bit_length() - 1
            if (irq_enabled >> (e - 16)) & 1 if e >= 16 else self.exc_enabled(e):
                raw = prio[e]
                key = (raw & keep if raw >= 0 else raw, raw, e)   # group_prio(raw)
                if best is None or key < best:
                    best = key
        return best

    # ------------------------------------------------------------------
    # the run loop
    # ------------------------------------------------------------------
    def _take_pending(self) -> bool:
        h = self._exc_hook
        if h is not None and self.native_entries:
            r = h.take()              # in C; -2: the steps below
            if r >= 0:
                return r > 0
        best = self._pending_to_enter()
        if best is None:
            return False
        self.exception_entry(best[2], self.pc)
        self.sleeping = False
        return True

    def _pending_to_enter(self) -> Optional[tuple]:
        """best_pending() if it preempts now; else None, with the block
        hook's mask watch armed when only PRIMASK/BASEPRI/FAULTMASK hold the
        best pending exception back."""
        best = self.best_pending()
        self.cs.mask_watch = 0
        if best is None:
            return None
        active_prio = self.active_priority()
        if best[0] >= active_prio:
            return None  # waits for an exception return
        exec_prio = self.execution_priority()
        if best[0] < exec_prio:
            return best
        # pending but masked by PRIMASK/BASEPRI/FAULTMASK: the block hook
        # watches the masks and stops as soon as it becomes takeable.
        self.cs.mask_watch = 1
        self.cs.pend_prio = best[0]
        self.cs.active_prio = active_prio
        sub_mask = (2 << self.prigroup) - 1 if self.profile == "m4" else 0
        self.cs.prigroup_mask = self.prio_mask & ~sub_mask & 0xFF
        return None

    def _wake_condition(self) -> bool:
        """WFI wakes when a pending exception would preempt ignoring PRIMASK;
        WFE only when one would be taken, PRIMASK included (Cortex-M4 Generic
        User Guide 3.12.11: "unless masked by the exception mask registers"),
        or through its event register (SEV, SEVONPEND)."""
        best = self.best_pending()
        if best is None:
            return False
        if self.sleep_kind == "wfe":
            return best[0] < self.execution_priority()
        prio = self.active_priority()
        if self.profile == "m4":
            bp = self.uc.reg_read(A.UC_ARM_REG_BASEPRI) & self.prio_mask
            if bp and self.group_prio(bp) < prio:
                prio = self.group_prio(bp)
        return best[0] < prio


# what ExcHook.pend_write (the SCS's ISPR/ICSR pends in C) stands for
PEND_ORIGINALS = Steps({n: getattr(Nvic, n) for n in (
    "set_pending", "_pending_changed", "_pending_to_enter", "best_pending",
    "execution_priority", "active_priority", "group_prio", "exc_enabled")})


def pends_in_c(cpu) -> bool:
    """The CPU's pends may be carried out in C (ExcHook.pend_write): the
    native helpers, the native entries on, none of the steps replaced."""
    if getattr(cpu, "_exc_hook", None) is None or not cpu.native_entries:
        return False
    return unreplaced(cpu, PEND_ORIGINALS)
