"""Exception entry and return, faults and lockup (ARMv7-M B1.5): the
frames (basic and extended FP), MSP/PSP and CONTROL, EXC_RETURN, tail-chains,
the fault status registers and escalation (a part of emu/cpu/cortexm.py's
CortexM; the same steps in C: emu/cpu/_exceptions.c and _fastregs.c)."""
from __future__ import annotations

import logging
from typing import Optional

from unicorn import (UcError)
from unicorn import arm_const as A

from emu.cpu.armv7m import (BFSR_BFARVALID, CpuHalt, EXC_NAMES, FAULT_REPEAT_WINDOW,
                            HARDFAULT, HFSR_FORCED,
                            HFSR_VECTTBL, MEMMANAGE,
                            MMFSR_MMARVALID, NMI, StopReason,
                            UFSR_INVPC, USAGEFAULT,
                            VALID_EXC_RETURN, XPSR_IT,
                            _ENTRY_REGS, _FP_REGS,
                            _PRIVILEGED_READS,
                            _SP_CONTROL_REGS, _UNSTACKED_REGS,
                            _WORDS)

log = logging.getLogger("emu.cpu")


class Exceptions:
    """Exceptions part of CortexM (a mixin: every method works on the CortexM's
    own state)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_fault_handler_since", "_ipsr", "active", "bfar", "cfsr", "last_fault",
                "locked_up", "mmfar", "stop_info", "tail_chains")

    def _invalid_vector(self, exc: int, vec: int) -> None:
        """The vector of an exception entered in C is invalid (ExcHook calls it)."""
        self.hfsr |= HFSR_VECTTBL
        self._lockup(f"invalid vector {vec:#010x} for {self.exc_name(exc)} "
                     f"(VTOR={self.vtor:#010x})")

    def _unstacking_error(self, sp: int) -> None:
        """The frame of an exception return cannot be read (ExcHook calls it)."""
        self.cfsr |= 1 << 11  # BFSR.UNSTKERR
        self._lockup(f"unstacking error at SP={sp:#010x}")

    # ------------------------------------------------------------------
    # exception entry / return
    # ------------------------------------------------------------------
    def _refresh_flags(self) -> None:
        uc = self.uc
        uc.reg_write(A.UC_ARM_REG_APSR_NZCV, uc.reg_read(A.UC_ARM_REG_APSR_NZCV))

    def _set_mode(self, ipsr: int, control: int, msp: int, psp: int,
                  refresh: bool = True) -> None:
        """Write IPSR/CONTROL and both stack pointers consistently
        (``refresh=False``: the caller calls _refresh_flags after its writes)."""
        write = self.uc.reg_write
        if ipsr == 0 and control & 1:
            # Unicorn ignores MSP/PSP/CONTROL writes in unprivileged thread
            # mode (as an unprivileged MSR): write them while privileged
            # (handler mode, then privileged thread for SPSEL), nPRIV last.
            write(A.UC_ARM_REG_IPSR, 1)
            write(A.UC_ARM_REG_CONTROL, control & ~1)
            write(A.UC_ARM_REG_IPSR, 0)
            write(A.UC_ARM_REG_CONTROL, control & ~1)
            write(A.UC_ARM_REG_MSP, msp)
            write(A.UC_ARM_REG_PSP, psp)
            write(A.UC_ARM_REG_CONTROL, control)
        else:
            write(A.UC_ARM_REG_IPSR, ipsr)
            write(A.UC_ARM_REG_CONTROL, control)
            write(A.UC_ARM_REG_MSP, msp)
            write(A.UC_ARM_REG_PSP, psp)
        self._ipsr = ipsr
        if refresh:
            self._refresh_flags()

    def privileged(self) -> bool:
        """Handler mode, or thread mode with CONTROL.nPRIV clear."""
        return self._ipsr != 0 or not (self.uc.reg_read(A.UC_ARM_REG_CONTROL) & 1)

    def read_special(self, ids) -> tuple:
        """Registers read as a debugger sees them, whatever the privilege:
        Unicorn's register API reads MSP, PSP, PRIMASK, BASEPRI and FAULTMASK
        as 0 in unprivileged thread mode (as an unprivileged MRS), so they are
        read from handler mode (writing IPSR swaps the banked SP back)."""
        uc = self.uc
        values = list(uc.reg_read_batch(ids))
        if self.privileged():
            return tuple(values)
        where = [i for i, r in enumerate(ids) if r in _PRIVILEGED_READS]
        uc.reg_write(A.UC_ARM_REG_IPSR, 1)
        try:
            priv = uc.reg_read_batch([ids[i] for i in where])
        finally:
            uc.reg_write(A.UC_ARM_REG_IPSR, 0)
            self._refresh_flags()
        for i, v in zip(where, priv):
            values[i] = v
        return tuple(values)

    def write_special(self, pairs) -> None:
        """Register writes that hold whatever the privilege (see read_special);
        CONTROL's own write is applied last."""
        uc = self.uc
        pairs = list(pairs)
        if self.privileged():
            uc.reg_write_batch(pairs)
            return
        control = uc.reg_read(A.UC_ARM_REG_CONTROL)
        uc.reg_write(A.UC_ARM_REG_IPSR, 1)
        uc.reg_write(A.UC_ARM_REG_CONTROL, control & ~1)
        uc.reg_write(A.UC_ARM_REG_IPSR, 0)
        uc.reg_write(A.UC_ARM_REG_CONTROL, control & ~1)
        later = [(r, v) for r, v in pairs if r == A.UC_ARM_REG_CONTROL]
        uc.reg_write_batch([(r, v) for r, v in pairs if r != A.UC_ARM_REG_CONTROL])
        uc.reg_write(A.UC_ARM_REG_CONTROL, later[-1][1] if later else control)
        self._refresh_flags()

    def stack_pointers(self) -> tuple:
        """(MSP, PSP), whatever the privilege."""
        return self.read_special((A.UC_ARM_REG_MSP, A.UC_ARM_REG_PSP))

    def _vector_address(self, exc: int) -> int:
        return (self.vtor + 4 * exc) & 0xFFFFFFFF

    def _vector(self, exc: int) -> int:
        buf = self._membuf
        if self._c_mem_read(self._uch, self._vector_address(exc), buf, 4):
            return 0xFFFFFFFF
        return _WORDS[1].unpack_from(buf)[0]

    def exception_entry(self, exc: int, return_addr: int) -> None:
        """Push a frame and enter ``exc`` (ARMv7-M B1.5.6 ExceptionEntry)."""
        mpu = self.mpu
        if mpu is not None and mpu._installed:
            if not mpu.off_now() and self._stacking_violation(exc, return_addr):
                return
            self._exception_entry(exc, return_addr)
            mpu.sync()
            return
        self._exception_entry(exc, return_addr)

    def _stacking_violation(self, exc: int, return_addr: int) -> bool:
        """MSTKERR: the frame would go where the MPU forbids writes.  Only
        the words it allows are written, the stack pointer moves, and MemManage (or
        HardFault) is entered as a derived exception; ``exc`` stays pending."""
        privileged = self.privileged()               # the context being stacked
        words, newsp, msp, psp, control, exc_return = self._entry_frame(return_addr)
        if self.mpu.allows(newsp, 4 * len(words), 2, privileged):
            return False
        # the frame's words the MPU allows are written, the others not (as on
        # silicon: each word of the push is its own access)
        for i, w in enumerate(words):
            if self.mpu.allows(newsp + 4 * i, 4, 2, privileged):
                self.write_mem(newsp + 4 * i, _WORDS[1].pack(w))
        self.cfsr |= 1 << 4                          # MMFSR.MSTKERR
        # the derived MemManage: entering MemManage itself it is the same
        # exception (the handler sees MSTKERR with the first fault's bits);
        # otherwise taken if enabled and able to preempt, else HardFault
        target = MEMMANAGE
        if exc == HARDFAULT or (exc != MEMMANAGE and (
                not self.exc_enabled(MEMMANAGE)
                or self.group_prio(self.prio[MEMMANAGE]) >= self.execution_priority())):
            target = HARDFAULT
            self.hfsr |= HFSR_FORCED
            if exc == HARDFAULT or self.execution_priority() < 0:
                self._lockup(f"stacking into a region the MPU forbids while entering "
                             f"{self.exc_name(exc)} (SP={newsp:#010x})")
                return True
        log.warning("%s: stacking for %s at SP=%#010x forbidden by the MPU (MSTKERR)",
                    self.exc_name(target), self.exc_name(exc), newsp)
        if exc != target:
            self.pending |= 1 << exc
        self.pending &= ~(1 << target)
        self.active |= 1 << target
        self._enter(target, exc_return, msp, psp, control)
        self.mpu.sync()
        return True

    def _entry_frame(self, return_addr: int) -> tuple:
        """The frame exception entry pushes, from the current state (ARMv7-M
        B1.5.6 PushStack): (words, new SP, MSP, PSP, CONTROL, EXC_RETURN),
        the stack pointer that pushes already moved in MSP or PSP."""
        uc = self.uc
        r0, r1, r2, r3, r12, lr, xpsr, control, msp, psp = uc.reg_read_batch(_ENTRY_REGS)
        ipsr = self._ipsr
        if ipsr == 0 and control & 1:
            msp, psp = self.stack_pointers()
        thread = ipsr == 0
        use_psp = thread and bool(control & 2)
        fpca = self.profile == "m4" and bool(control & 4)
        sp = psp if use_psp else msp
        framesize = 0x68 if fpca else 0x20
        align = (sp >> 2) & 1 if (self.ccr & 0x200 or self.profile == "m0") else 0
        newsp = ((sp - framesize) & ~4) & 0xFFFFFFFF
        xpsr_stacked = (xpsr & ~(0x1FF | (1 << 9))) | ipsr | (align << 9) | (1 << 24)
        words = [r0, r1, r2, r3, r12, lr, return_addr & ~1 & 0xFFFFFFFF,
                 xpsr_stacked & 0xFFFFFFFF]
        if fpca:
            words += list(uc.reg_read_batch(_FP_REGS)) + [0]
        if use_psp:
            psp = newsp
        else:
            msp = newsp
        exc_return = 0xFFFFFFE1 if fpca else 0xFFFFFFF1
        if thread:
            exc_return |= 0x8
        if use_psp:
            exc_return |= 0x4
        if self.profile == "m0":
            exc_return |= 0x10
        return words, newsp, msp, psp, control, exc_return

    def _exception_entry(self, exc: int, return_addr: int) -> None:
        x = self._xregs
        if x is not None:
            r = x.exc_push(return_addr, self._ipsr, self.ccr & 0x200, self.profile == "m4",
                           self.profile == "m0")
            if r[0]:
                self.cfsr |= 1 << 12  # BFSR.STKERR
                self._lockup(f"stack overflow while entering {self.exc_name(exc)} "
                             f"(SP={r[1]:#010x})")
                return
            self.pending &= ~(1 << exc)
            self.active |= 1 << exc
            self._enter(exc, r[1], r[2], r[3], r[4])
            return
        words, newsp, msp, psp, control, exc_return = self._entry_frame(return_addr)
        if self._c_mem_write(self._uch, newsp, _WORDS[len(words)].pack(*words), 4 * len(words)):
            # stacking error: MSTKERR/STKERR; escalate to lockup if in HardFault
            self.cfsr |= 1 << 12  # BFSR.STKERR
            self._lockup(f"stack overflow while entering {self.exc_name(exc)} (SP={newsp:#010x})")
            return
        self.pending &= ~(1 << exc)
        self.active |= 1 << exc
        self._enter(exc, exc_return, msp, psp, control)

    def _enter(self, exc: int, exc_return: int, msp: int, psp: int, control: int) -> None:
        x = self._xregs
        if x is not None:
            vec = x.exc_enter(exc, exc_return, msp, psp, control, self._vector_address(exc),
                              XPSR_IT)
            self._ipsr = exc
            if vec == 0xFFFFFFFF or vec == 0 or not (vec & 1):
                self.hfsr |= HFSR_VECTTBL
                self._lockup(f"invalid vector {vec:#010x} for {self.exc_name(exc)} "
                             f"(VTOR={self.vtor:#010x})")
                return
            self.sleeping = False
            for cb in self.on_exception:
                cb(exc, True)
            return
        uc = self.uc
        vec = self._vector(exc)
        # EPSR.IT is cleared on entry (ARMv7-M B1.5.6): the frame keeps the
        # interrupted IT block's state for the return.  Left live, a handler
        # entered between an IT and its instructions (a translation block ends
        # at a 1 KiB page boundary) would run its first instructions
        # conditionally.
        xpsr = uc.reg_read(A.UC_ARM_REG_XPSR)
        if xpsr & XPSR_IT:
            uc.reg_write(A.UC_ARM_REG_XPSR, xpsr & ~XPSR_IT)
        self._set_mode(exc, control & ~0x6, msp, psp)
        uc.reg_write(A.UC_ARM_REG_LR, exc_return)
        if vec == 0xFFFFFFFF or vec == 0 or not (vec & 1):
            # Vector table read error or invalid vector: the HardFault handler
            # cannot help; report it clearly.
            self.hfsr |= HFSR_VECTTBL
            self._lockup(f"invalid vector {vec:#010x} for {self.exc_name(exc)} "
                         f"(VTOR={self.vtor:#010x})")
            return
        uc.reg_write(A.UC_ARM_REG_PC, vec & ~1)
        self.sleeping = False
        for cb in self.on_exception:
            cb(exc, True)

    def exception_return(self, exc_return: int) -> None:
        """ARMv7-M B1.5.8 ExceptionReturn, with tail-chaining."""
        mpu = self.mpu
        self._exception_return(exc_return)
        if mpu is not None and mpu._installed:
            mpu.sync()

    def _exception_return(self, exc_return: int) -> None:
        uc = self.uc
        cur = self._ipsr
        if exc_return not in VALID_EXC_RETURN or cur == 0:
            self.take_fault(USAGEFAULT, UFSR_INVPC, self.pc, f"invalid EXC_RETURN {exc_return:#010x}")
            return
        for cb in self.on_exception:
            cb(cur, False)
        self.active &= ~(1 << cur)
        if cur >= 16 and (self.irq_level >> (cur - 16)) & 1:
            self.pending |= 1 << cur
        # FAULTMASK is cleared on return from any exception but NMI
        if self.profile == "m4" and cur != NMI:
            uc.reg_write(A.UC_ARM_REG_FAULTMASK, 0)
        to_thread = bool(exc_return & 8)
        use_psp = bool(exc_return & 4)
        fp_frame = self.profile == "m4" and not (exc_return & 0x10)
        # tail-chain?
        best = self.best_pending()
        if best is not None and best[0] < self._priority_after_return():
            exc = best[2]
            self.pending &= ~(1 << exc)
            self.active |= 1 << exc
            msp, psp, control = uc.reg_read_batch(_SP_CONTROL_REGS)
            self.tail_chains += 1
            self._enter(exc, exc_return, msp, psp, control)
            return
        x = self._xregs
        if x is not None:
            r = x.exc_pop(use_psp, fp_frame, to_thread)
            if r[0]:
                self.cfsr |= 1 << 11  # BFSR.UNSTKERR
                self._lockup(f"unstacking error at SP={r[1]:#010x}")
                return
            self._ipsr = r[1]
            if to_thread and self.scr & 0x2:   # SLEEPONEXIT
                self.sleeping = True
                self.sleep_kind = "sleeponexit"
            return
        msp, psp, control = uc.reg_read_batch(_SP_CONTROL_REGS)
        sp = psp if use_psp else msp
        framesize = 0x68 if fp_frame else 0x20
        try:
            words = self._read_words(sp, framesize >> 2)
        except UcError:
            self.cfsr |= 1 << 11  # BFSR.UNSTKERR
            self._lockup(f"unstacking error at SP={sp:#010x}")
            return
        pc = words[6]
        xpsr = words[7]
        newsp = sp + framesize
        if xpsr & (1 << 9):
            newsp += 4
        newsp &= 0xFFFFFFFF
        if use_psp:
            psp = newsp
        else:
            msp = newsp
        ipsr = xpsr & 0x1FF
        if to_thread and ipsr != 0:
            ipsr = 0
        control = control & ~0x6
        if to_thread and use_psp:
            control |= 2
        if fp_frame:
            control |= 4
        self._set_mode(ipsr, control, msp, psp, refresh=False)   # refreshed below
        uc.reg_write_batch(zip(_UNSTACKED_REGS, words))          # r0-r3, r12, lr
        if fp_frame:
            uc.reg_write_batch(zip(_FP_REGS, words[8:25]))       # s0-s15, FPSCR
        # flags, GE and IT/ICI bits come back from the stacked xPSR
        uc.reg_write(A.UC_ARM_REG_XPSR, (xpsr & ~0x1FF) | ipsr | (1 << 24))
        self._refresh_flags()
        uc.reg_write(A.UC_ARM_REG_PC, pc & ~1)
        if to_thread and self.scr & 0x2:   # SLEEPONEXIT
            self.sleeping = True
            self.sleep_kind = "sleeponexit"

    def _priority_after_return(self) -> int:
        prio = self.active_priority()
        uc = self.uc
        if self.profile == "m4":
            bp = uc.reg_read(A.UC_ARM_REG_BASEPRI) & self.prio_mask
            if bp and self.group_prio(bp) < prio:
                prio = self.group_prio(bp)
        if uc.reg_read(A.UC_ARM_REG_PRIMASK) & 1 and prio > 0:
            prio = 0
        return prio

    def exc_name(self, exc: int) -> str:
        if exc >= 16:
            return f"IRQ{exc - 16}"
        return EXC_NAMES.get(exc, f"exception {exc}")

    # ------------------------------------------------------------------
    # faults
    # ------------------------------------------------------------------
    def take_fault(self, exc: int, cfsr_bits: int, pc: int, why: str,
                   fault_addr: Optional[int] = None) -> None:
        """Synchronous fault at ``pc``: configurable fault or HardFault escalation."""
        sym = self.symbolize(pc)
        if self.profile == "m0":
            exc = HARDFAULT               # ARMv6-M: every fault is a HardFault
        log.warning("%s at pc=%#010x%s: %s", self.exc_name(exc), pc, f" ({sym})" if sym else "", why)
        self.last_fault = {"exception": self.exc_name(exc), "pc": pc, "symbol": sym, "why": why,
                           "cycles": self.cs.cycles}
        # the same fault four times within 10 ms: a handler that returns to
        # the faulting instruction (a test suite faulting on purpose in one
        # function, case after case, is slower than that: Zephyr's prints
        # its report at 115200 baud in between)
        now = self.clock.now
        key = (pc, exc, cfsr_bits)
        self._fault_history.append((key, now))
        if len(self._fault_history) > 8:
            self._fault_history.pop(0)
        if sum(1 for k, t in self._fault_history
               if k == key and now - t < FAULT_REPEAT_WINDOW) >= 4:
            self._halt(StopReason.FAULT, f"{why}: the same fault repeats at pc={pc:#010x}"
                       f"{' (' + sym + ')' if sym else ''}; the fault handler does not recover")
            return
        self.cfsr |= cfsr_bits
        if fault_addr is not None:
            if cfsr_bits & BFSR_BFARVALID:
                self.bfar = fault_addr
            if cfsr_bits & MMFSR_MMARVALID:
                self.mmfar = fault_addr
        exec_prio = self.execution_priority()
        target = exc
        if exc != HARDFAULT and (self.profile == "m0" or not self.exc_enabled(exc)
                                 or self.group_prio(self.prio[exc]) >= exec_prio):
            target = HARDFAULT
            self.hfsr |= HFSR_FORCED
        if target == HARDFAULT and exec_prio <= -1:
            self._lockup(f"{why} while at priority {exec_prio} (in HardFault/NMI or FAULTMASK)",
                         pc=pc)
            return
        self.exception_entry(target, pc)

    def _lockup(self, why: str, pc: Optional[int] = None) -> None:
        self.locked_up = True
        at = self.pc if pc is None else pc
        sym = self.symbolize(at)
        self._halt(StopReason.LOCKUP, f"lockup: {why} at pc={at:#010x}"
                   f"{' (' + sym + ')' if sym else ''}", pc=pc)

    def _halt(self, reason: str, message: str, pc: Optional[int] = None) -> None:
        self.stop_reason = reason
        if pc is None:
            pc = self.pc
        self.stop_info = {"reason": reason, "message": message, "pc": pc,
                          "symbol": self.symbolize(pc), "registers": self.core_registers(),
                          "cfsr": self.cfsr, "hfsr": self.hfsr, "bfar": self.bfar,
                          "mmfar": self.mmfar, "exception": self.exc_name(self._ipsr)
                          if self._ipsr else "thread"}
        raise CpuHalt(message)

    def halt(self, reason: str, message: str) -> None:
        """Stop the run loop from a callback (SVC/BKPT handlers, harness)."""
        self._halt(reason, message)

    # A firmware stuck in its fault handler (``while (1);`` in HardFault) is
    # reported as an unhandled fault after this much emulated time.
    fault_hang_ticks = 512_000_000 // 5   # 200 ms

    def _check_fault_hang(self) -> None:
        since = getattr(self, "_fault_handler_since", None)
        # a new fault restarts the wait (a handler that returned and was
        # entered again by the next fault is not one long stay)
        if since is None or since[0] != self._ipsr or since[2] is not self.last_fault:
            self._fault_handler_since = (self._ipsr, self.clock.now, self.last_fault)
            return
        if self.clock.now - since[1] >= self.fault_hang_ticks:
            f = since[2] or {}
            pc = f.get("pc", self.pc)
            self._fault_handler_since = None
            self._halt(StopReason.FAULT,
                       f"unhandled {f.get('exception', self.exc_name(self._ipsr))}: "
                       f"{f.get('why', 'fault')}; the firmware's "
                       f"{self.exc_name(self._ipsr)} handler has not returned for "
                       f"{self.fault_hang_ticks // 512_000} ms", pc=pc)

    last_fault: Optional[dict] = None
    # (IPSR, since tick, fault) while a fault handler runs (_check_fault_hang)
    _fault_handler_since: Optional[tuple] = None

    svc_calls = 0
    tail_chains = 0
