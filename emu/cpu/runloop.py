"""The run loop (CortexM.run): slices to the next event, due events fired,
pending exceptions taken, sleep until the next event, the engine's stops
handled, and the polling loops the block hook counts ahead (a part of
emu/cpu/cortexm.py's CortexM; the same steps in C: emu/cpu/_runloop.c)."""
from __future__ import annotations

import logging
from time import perf_counter as _perf_counter
from typing import Callable, Optional

from unicorn import UC_ERR_FETCH_PROT, UC_ERR_INSN_INVALID, UcError
from unicorn import arm_const as A

from emu.clock import NEVER
from emu.cpu import cycles as cyc
from emu.cpu.armv7m import (BFSR_BFARVALID, BFSR_IBUSERR, BFSR_PRECISERR, BUSFAULT,
                            CpuHalt, HARDFAULT, HFSR_FORCED,
                            MEMMANAGE, MMFSR_DACCVIOL,
                            MMFSR_IACCVIOL, MMFSR_MMARVALID,
                            SVCALL, StopReason,
                            UFSR_DIVBYZERO, UFSR_INVSTATE,
                            UFSR_NOCP, UFSR_UNALIGNED,
                            UFSR_UNDEFINSTR, USAGEFAULT, _HALF)
from emu.cpu.hooks import _WFE_ORIGINALS
from emu.soc.ops import unreplaced

log = logging.getLogger("emu.cpu")


class RunLoop:
    """RunLoop part of CortexM (a mixin: every method works on the CortexM's
    own state)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_run_flags", "_run_until", "_running", "_slice_blocks",
                "_slice_pc", "_trap", "event_register", "hfsr", "pending", "sleep_kind",
                "stop_reason", "svc_calls")
    STRUCTURE = ("_c_loop", "_flash_step_stores", "_plain_stores", "_halt_in_hook", "_run_should_stop", "_loop_watch", "_own_hooks", "_py_inside",
                 "_py_slices", "_wfe_in_c", "cs", "returns_in_hook")

    _py_slices = 0
    _py_inside = 0.0

    @property
    def slices(self) -> int:
        """``emu_start`` slices run so far (both run loops)."""
        h = self._exc_hook
        return self._py_slices + (h.slices if h is not None else 0)

    @property
    def slice_wall(self) -> float:
        """Host seconds spent inside ``emu_start`` slices so far (the engine,
        our C and the model code it calls; both run loops): the rest of a
        run's wall time is the run loop's between them."""
        h = self._exc_hook
        return self._py_inside + (h.inside_ns / 1e9 if h is not None else 0.0)
    # The C run loop (ExcHook.run) sleeps faster than this hook's Python:
    # under it a WFE that sleeps ends the slice (InfiniTime idle, ~300 sleeps
    # an emulated second: 21.5x -> 22.8x real time, three pairs)
    _c_loop = False
    _run_until = 0
    _run_should_stop: Optional[Callable[[], bool]] = None
    _run_flags: tuple = ()

    def _start_slice(self, nxt: int, pc: int) -> None:
        """A slice from ``pc`` until the tick ``nxt``: its cycle budget, the
        time base, the block hook's flags and the WFE test's slice start
        (the run loop's, and a sleep's in the hook)."""
        cs = self.cs
        budget = max(1, -(-(nxt - self.clock.now) // self.cycle_ticks))
        self._rebase()
        cs.deadline = cs.cycles + budget
        cs.stop_flag = 0
        cs.entry_flag = 0
        cs.reason = 0
        self._slice_pc = pc
        self._slice_blocks = cs.blocks

    # Polling loops (a driver waiting for an event, LFCLKSTAT, a TWI transfer
    # with its CYCCNT timeout) are counted instead of run up to the next
    # clock event when an iteration provably repeats (_blockhook.c,
    # loop_step): InfiniTime's first second polls LFCLKSTAT 3.2 M times.
    # So are loops that call a leaf (a BL and the leaf's BX LR) in Thread
    # mode without polling anything: FreeRTOS's idle task spinning on
    # prvGetExpectedIdleTime, 80 % of InfiniTime's blocks with the screen on.
    # And loops that store only state-setting MMIO writes and push and pop,
    # reading the RTC's COUNTER up to its next tick: MicroPython's delay
    # loop (mp_hal_ticks_us masks and unmasks the RTC's overflow interrupt
    # around its read), 2 M iterations of wasp-os's first boot.
    # Only with the native block hook and bus (which note the MMIO reads),
    # and only while nothing else watches the code: no hook but the CPU's
    # own (a debugger's breakpoint, a trace, a test's code hook), no MPU
    # (its protection hooks).  The pure-Python path skips nothing.
    # The iteration that proves the repeat must have run inside the current
    # slice (_rebase): one that read an event before it fired at the slice
    # boundary once let InfiniTime's SPI driver wait a BLE event too long.
    loop_skip = True      # False: every iteration runs (the slow path, for tests)
    # Countdown (delay) loops, one block of ``subs Rd, #imm`` and a branch back
    # (nrfx's NRFX_DELAY_US, Zephyr's k_busy_wait, MicroPython's delay): their
    # iterations counted instead of run, under the same conditions as polling
    # loops (_blockhook.c, countdown_step).  False: run (for tests).
    delay_skip = True
    _loop_watch = False   # the native bus has given the block hook its loop fields
    access_watchers = 0   # instruments hooking every memory access (emu.trace.MmioTrace)

    def enable_loop_watch(self, replay_address: int) -> None:
        """Called by the native bus once its slots note loop reads."""
        if not getattr(self.counter, "native", False) or self._loop_watch:
            return
        ids = ([A.UC_ARM_REG_R0 + i for i in range(13)]
               + [A.UC_ARM_REG_SP, A.UC_ARM_REG_LR, A.UC_ARM_REG_XPSR, A.UC_ARM_REG_CONTROL,
                  A.UC_ARM_REG_PRIMASK, A.UC_ARM_REG_IPSR])
        if self.profile == "m4":
            ids += [A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK]
        self.counter.set_loop_watch(ids, replay_address, A.UC_ARM_REG_IPSR)
        self._loop_watch = True
        self._own_hooks = len(self.uc._callbacks)

    def _loops_skippable(self) -> int:
        mpu = self.mpu
        return int(self.loop_skip and not (mpu is not None and mpu._installed)
                   and not self.access_watchers
                   and len(self.uc._callbacks) == self._own_hooks + len(self._sev_hooks)
                   + len(self._div_hooks) + len(self._msr_hooks))

    def no_loop_skip(self) -> None:
        """From now on in this run no loop is skipped (the MPU was enabled)."""
        if self._loop_watch:
            self.cs.loop_skip_on = 0

    def log_loop_skips(self, fn) -> bool:
        """Call ``fn(head, iterations, cycles_each, cycles_after, reads)``
        after each polling loop counted instead of run (``reads``: the
        iteration's MMIO reads as ``(slot, offset)``, ``slot`` the bus's
        native slot's id: ``PeripheralBus.slot_register``); None stops.  A
        diagnostic (how a skip that was not exact was found: 0c7b431).
        False without the native block hook (nothing is skipped then)."""
        if not self._loop_watch:
            return False
        self.cs.skip_cb = fn
        return True

    @property
    def loops_skipped(self) -> tuple:
        """(skips, iterations, cycles) of polling loops counted instead of run."""
        cs = self.cs
        if not self._loop_watch:
            return (0, 0, 0)
        return (cs.skips, cs.skipped_iters, cs.skipped_cycles)

    @property
    def delays_skipped(self) -> tuple:
        """(skips, iterations, cycles) of countdown (delay) loops counted
        instead of run."""
        cs = self.cs
        if not self._loop_watch:
            return (0, 0, 0)
        return (cs.dl_skips, cs.dl_iters, cs.dl_cycles)

    def _sleep_to_loop(self, uc) -> bool:
        """End the slice asleep at the WFE: the run loop goes on from the top."""
        self._trap = ("returned",)
        uc.emu_stop()
        return True

    def run(self, until: int, should_stop: Optional[Callable[[], bool]] = None,
            flags: tuple = ()) -> str:
        """Run until clock.now >= ``until`` (ticks) or a halt; returns a
        StopReason.  At every boundary of the loop (after the due events)
        the run stops with BREAK when one of ``flags``, ``(object, attribute
        name)`` pairs, is true, then when ``should_stop()`` is."""
        clock = self.clock
        cs = self.cs
        uc = self.uc
        self.stop_reason = None
        self._running = True
        self._run_until, self._run_should_stop, self._run_flags = until, should_stop, flags
        if self.ccr & 0x10 and not self._div_armed:
            self.arm_div_trap()
        if self._loop_watch:
            cs.loop_skip_on = self._loops_skippable()
            cs.dl_on = int(bool(self.delay_skip))
        self._wfe_in_c = (self.native_wfe and self._exc_hook is not None
                          and unreplaced(self, _WFE_ORIGINALS))
        try:
            if self._native_loop_ok():
                self._c_loop = True
                try:
                    return self._exc_hook.run(until, should_stop, flags)
                finally:
                    self._c_loop = False
            while True:
                clock.run_due()
                for obj, name in flags:
                    if getattr(obj, name):
                        return StopReason.BREAK
                if should_stop is not None and should_stop():
                    return StopReason.BREAK
                if self.stop_reason:
                    return self.stop_reason
                if self.powered_off:
                    stop = self._idle_to_next_event(until, StopReason.OFF)
                    if stop:
                        return stop
                    continue
                self._take_pending()
                if 3 <= self._ipsr <= 6:
                    self._check_fault_hang()
                if self.sleeping:
                    if self._wake_condition() or (self.sleep_kind == "wfe" and self.event_register):
                        if self.sleep_kind == "wfe":
                            self.event_register = 0
                        self.sleeping = False
                        continue
                    stop = self._idle_to_next_event(until, StopReason.SLEEP)
                    if stop:
                        return stop
                    continue
                if clock.now >= until:
                    return StopReason.DEADLINE
                nxt = min(clock.next_event_time(), until)
                if 3 <= self._ipsr <= 6 and getattr(self, "_fault_handler_since", None):
                    nxt = min(nxt, self._fault_handler_since[1] + self.fault_hang_ticks)
                self._trap = None
                if self.mpu_dirty:
                    self.mpu.sync()
                pc = uc.reg_read(A.UC_ARM_REG_PC)
                self._start_slice(nxt, pc)
                err = None
                cs.in_slice = 1     # clock.now only moves with the cycles (see _mmio.c)
                self._py_slices += 1
                t0 = _perf_counter()
                try:
                    uc.emu_start(pc | 1, 0xFFFFFFFF)
                except UcError as e:
                    err = e
                finally:
                    self._py_inside += _perf_counter() - t0
                    cs.in_slice = 0
                    self.slice_end()
                self.sync_time()
                self._after_slice(err)
        except CpuHalt:
            return self.stop_reason or StopReason.LOCKUP
        finally:
            self._running = False
            self._wfe_in_c = False
            if self._loop_watch:
                cs.loop_skip_on = 0
            self.sync_time()

    def _idle_to_next_event(self, until: int, forever: str) -> Optional[str]:
        """Executing nothing (asleep or powered off): let time pass to the next
        event, or stop at ``until`` (DEADLINE; ``forever`` when nothing is
        scheduled and the run has no end).  None: an event is due, go on."""
        clock = self.clock
        nxt = clock.next_event_time()
        if nxt >= until:
            if until >= NEVER:
                return forever
            clock.now = max(clock.now, until)
            return StopReason.DEADLINE
        clock.now = max(clock.now, nxt)
        return None

    def _after_slice(self, err) -> None:
        halt = self._halt_in_hook
        if halt is not None:
            self._halt_in_hook = None
            raise halt
        cs = self.cs
        uc = self.uc
        trap = self._trap
        if self.ccr & 0x10 and not self._div_armed:
            self.arm_div_trap()
        if cs.reason == cyc.REASON_MISS and trap is None and err is None:
            self._cost_block(cs.miss_addr, cs.miss_size)
            return
        if trap is not None:
            self._trap = None
            kind = trap[0]
            if kind == "intr":
                self._handle_intr(trap[1], trap[2])
            elif kind == "unmapped":
                _, access, address, pc, size, value = trap
                if err is not None:
                    # the engine has restored the faulting instruction's PC by
                    # now; inside the hook it can still be the block's start
                    # (a block met for the first time), and a handler that
                    # skips the instruction (Zephyr's fixups) needs the exact one
                    pc = uc.reg_read(A.UC_ARM_REG_PC)
                self._handle_unmapped(access, address, pc, size)
            elif kind == "write_prot":
                _, address, pc, size, value, stores = trap
                self._handle_flash_write(address, pc, size, value, stores)
            elif kind == "returned":
                pass        # an exception return done in the INTR hook (_return_in_hook)
            elif kind == "mpu":
                _, what, address, pc = trap
                if err is not None and what != 4:
                    pc = uc.reg_read(A.UC_ARM_REG_PC)     # restored: exact (see unmapped)
                if what == 4:
                    self.take_fault(MEMMANAGE, MMFSR_IACCVIOL, pc, "instruction fetch the MPU "
                                    f"forbids at {address:#010x}")
                else:
                    self.take_fault(MEMMANAGE, MMFSR_DACCVIOL | MMFSR_MMARVALID, pc,
                                    f"{'write to' if what == 2 else 'read of'} {address:#010x} "
                                    "forbidden by the MPU", fault_addr=address)
            elif kind == "ppb":
                _, address, pc = trap
                if err is not None:
                    pc = uc.reg_read(A.UC_ARM_REG_PC)
                self.take_fault(BUSFAULT, BFSR_PRECISERR | BFSR_BFARVALID, pc,
                                f"unprivileged access to the System Control Space at "
                                f"{address:#010x}", fault_addr=address)
            elif kind == "mpu_sync":
                self.mpu.sync()
            elif kind == "wfe":
                if self.event_register:
                    self.event_register = 0
                else:
                    self.sleeping = True
                    self.sleep_kind = "wfe"
            elif kind == "undef":
                self.take_fault(USAGEFAULT, UFSR_UNDEFINSTR, trap[1], "undefined instruction")
            elif kind == "divzero":
                self.take_fault(USAGEFAULT, UFSR_DIVBYZERO, trap[1], "divide by zero")
            return
        if err is not None:
            pc = uc.reg_read(A.UC_ARM_REG_PC)
            denied = self.pagemap.take_denied() if self.pagemap is not None else None
            if denied is not None:
                # a fetch from an execute-never region, refused by the TLB
                # fill (_fast_ram): the fault Unicorn's own TLB raises; in
                # RAM with the MPU on, the MPU's (Mpu._set_xn)
                rng = self.fast_ram_range()
                if rng is not None and rng[0] <= denied < rng[0] + rng[1]:
                    why = f"instruction fetch the MPU forbids at {denied:#010x}"
                else:
                    why = f"instruction fetch fault at {pc:#010x}"
                self.take_fault(MEMMANAGE, MMFSR_IACCVIOL, pc, why)
                return
            if err.errno == UC_ERR_INSN_INVALID:
                self.take_fault(USAGEFAULT, UFSR_UNDEFINSTR, pc, "undefined instruction")
            elif err.errno in (UC_ERR_FETCH_PROT,):
                self.take_fault(MEMMANAGE, MMFSR_IACCVIOL, pc, "instruction fetch from a "
                                "never-execute region")
            else:
                self.take_fault(BUSFAULT, BFSR_PRECISERR, pc, f"bus error ({err})")
            return
        if cs.reason == 0:
            # Unicorn returned by itself: WFI (or a block hook stop we did not ask for)
            pc = uc.reg_read(A.UC_ARM_REG_PC)
            # the halfword before PC through the reused buffer (the binding's
            # mem_read allocates and audits: wasp-os's 1 kHz tick ends here)
            buf = self._membuf
            hw = 0 if self._c_mem_read(self._uch, (pc - 2) & 0xFFFFFFFF, buf, 2) \
                else _HALF.unpack_from(buf)[0]
            if hw == 0xBF30:
                self.sleeping = True
                self.sleep_kind = "wfi"

    def _handle_intr(self, intno: int, pc: int) -> None:
        uc = self.uc
        if intno == 2:  # SVC; PC is after the svc
            num = uc.mem_read(pc - 2, 1)[0]
            if self.svc_handler is not None and self.svc_handler(num):
                return
            self.svc_calls += 1
            if self.group_prio(self.prio[SVCALL]) >= self.execution_priority():
                self.take_fault(HARDFAULT, 0, pc - 2, f"SVC #{num} with SVCall masked or "
                                "at too low a priority")
                self.hfsr |= HFSR_FORCED
                return
            self.pending |= 1 << SVCALL
            self.exception_entry(SVCALL, pc)
            return
        if intno == 7:  # BKPT; PC at the bkpt
            imm = uc.mem_read(pc, 1)[0]
            if self.bkpt_handler is not None and self.bkpt_handler(imm, pc):
                return
            # no debugger: BKPT escalates to HardFault (DebugMonitor disabled)
            self.hfsr |= 1 << 31  # DEBUGEVT
            self.take_fault(HARDFAULT, 0, pc, f"BKPT #{imm} with no debugger attached")
            return
        if intno == 8:  # exception return
            self.exception_return((pc | 1) & 0xFFFFFFFF)
            return
        if intno == 1:
            self.take_fault(USAGEFAULT, UFSR_UNDEFINSTR, pc, "undefined instruction")
        elif intno == 16:
            self.take_fault(USAGEFAULT, UFSR_NOCP, pc, "coprocessor access")
        elif intno == 17:
            self.take_fault(USAGEFAULT, UFSR_INVSTATE, pc, "invalid state (Thumb bit clear)")
        elif intno == 21:
            self.take_fault(USAGEFAULT, UFSR_UNALIGNED, pc, "unaligned access")
        elif intno == 22:
            self.take_fault(USAGEFAULT, UFSR_DIVBYZERO, pc, "divide by zero")
        elif intno == 3:
            self.take_fault(MEMMANAGE, MMFSR_IACCVIOL, pc, f"instruction fetch fault at {pc:#010x}")
        else:
            self.take_fault(HARDFAULT, 0, pc, f"CPU exception {intno}")

    def _handle_unmapped(self, access: int, address: int, pc: int, size: int) -> None:
        from unicorn import UC_MEM_FETCH_UNMAPPED, UC_MEM_WRITE_UNMAPPED
        if access == UC_MEM_FETCH_UNMAPPED:
            if self.pagemap is not None and address >= 0xFFFFF000:
                # the last page of the system region: the TLB fill lets fetches
                # there through (emu_start's end address is on it), Unicorn's
                # own TLB raises an execute-never fault: the same fault here
                self.take_fault(MEMMANAGE, MMFSR_IACCVIOL, pc, f"instruction fetch fault at "
                                f"{pc:#010x}")
                return
            self.take_fault(BUSFAULT, BFSR_IBUSERR, pc if pc != address else address,
                            f"instruction fetch from unmapped address {address:#010x}")
            return
        kind = "write to" if access == UC_MEM_WRITE_UNMAPPED else "read from"
        sym = self.symbolize(pc)
        log.warning("bus error: %s unmapped address %#010x (%d bytes) at pc=%#010x%s", kind,
                    address, size, pc, f" ({sym})" if sym else "")
        self.take_fault(BUSFAULT, BFSR_PRECISERR | BFSR_BFARVALID, pc,
                        f"{kind} unmapped address {address:#010x}", fault_addr=address)

    #: the stores of the instruction _handle_flash_write steps over (a list
    #: while it steps; _hook_write_prot fills it), else None
    _flash_step_stores = None
    #: _plain_store_length's answers: (pc, size, the instruction's bytes) -> length
    _plain_stores: dict = {}

    def _handle_flash_write(self, address: int, pc: int, size: int, value: int,
                            stores: list = ()) -> None:
        """A CPU store into flash (the engine stopped at the storing
        instruction): the instruction carried out with its stores held back,
        then the NVMC decides what the cells keep (bits can only be cleared).

        A plain STR/STRH/STRB (no writeback, outside an IT block: every
        flash driver met so far) is carried out here: the PC moves past it
        and the store is the one the hook saw.  Anything else is stepped
        over (``count=1``) with its stores dropped and noted
        (_hook_write_prot).  The flash stays read-only throughout: making it
        writable for the step (uc_mem_protect), and each step's count hook
        after it, made Unicorn drop all its translated code, and a
        bootloader writing an image word by word then spent most of its time
        translating the same blocks again (issue 48: the wasp-os DFU).

        A store refused inside an IT block does not stop the engine there:
        Unicorn 2.1.4 drops it and runs on to the block's end, with the IT
        state it synced to the store left behind (measured:
        firmware/tests/periph_nvmc_stores.c, ``ite eq; streq`` then a BL;
        the store was lost and the callee's first instructions ran under
        the IT condition).  Then ``stores`` (every store the hook refused
        since) land as the NVMC lets them, and the IT bits go back to zero
        (EPSR = T), as after a hook that lets an access go on."""
        uc = self.uc
        here = uc.reg_read(A.UC_ARM_REG_PC)
        if stores and here != pc:
            self.resume_after_access_hook()
            self._flash_stores(*stores)
            return
        length = self._plain_store_length(here, size)
        if length:
            uc.reg_write(A.UC_ARM_REG_PC, here + length)
            self._flash_stores((address, size, value),)
            return
        cs = self.cs
        saved = (cs.deadline, cs.stop_flag, cs.mask_watch, cs.entry_flag)
        cs.deadline = (1 << 64) - 1
        cs.stop_flag = 0
        cs.mask_watch = 0
        cs.entry_flag = 0
        skip = self._loop_watch and cs.loop_skip_on
        if skip:
            cs.loop_skip_on = 0
        # A translation block cached before Unicorn's instruction-count hook
        # existed ignores count=1 (it ran on to the NVMC CONFIG=Ren store
        # after the flash write on the micro:bit): retranslate the store's block.
        uc.ctl_remove_cache(here, here + 4)
        stores = self._flash_step_stores = []
        try:
            for _ in range(3):  # a block-cost miss may need a retry
                cs.reason = 0
                uc.emu_start(uc.reg_read(A.UC_ARM_REG_PC) | 1, 0xFFFFFFFF, count=1)
                if cs.reason == cyc.REASON_MISS:
                    self._cost_block(cs.miss_addr, cs.miss_size)
                    continue
                break
        except UcError as e:
            log.warning("flash write at pc=%#010x failed: %s", pc, e)
        finally:
            self._flash_step_stores = None
            cs.deadline, cs.stop_flag, cs.mask_watch, cs.entry_flag = saved
            if skip:
                cs.loop_skip_on = 1
        self._flash_stores(*stores)

    def _plain_store_length(self, pc: int, size: int) -> int:
        """The length of the instruction at ``pc`` when it is a single store
        of ``size`` bytes without writeback outside an IT block (what
        _handle_flash_write carries out itself), else 0."""
        xpsr = self.uc.reg_read(A.UC_ARM_REG_XPSR)
        if (xpsr >> 10) & 0x3F or (xpsr >> 25) & 3:
            return 0                      # in an IT block: stepped
        try:
            code = bytes(self.uc.mem_read(pc, 4))
        except UcError:
            return 0
        key = (pc, size, code)
        known = self._plain_stores.get(key)
        if known is None:
            known = 0
            for insn in self.cost_model.md.disasm(code, pc, 1):
                base = insn.mnemonic.split(".")[0]
                if ({"str": 4, "strh": 2, "strb": 1}.get(base) == size and not insn.writeback
                        and len(insn.operands) == 2):
                    known = insn.size
            if len(self._plain_stores) < 4096:
                self._plain_stores[key] = known
        return known

    def _flash_stores(self, *stores) -> None:
        """``stores`` ((address, size, value), in the order the instruction
        made them) into flash as the NVMC lets them land."""
        if not stores:
            return
        uc = self.uc
        address = stores[0][0]
        lo = min(a for a, _n, _v in stores) & ~3           # the words written
        hi = (max(a + n for a, n, _v in stores) + 3) & ~3
        before = bytes(uc.mem_read(lo, hi - lo))
        cells = bytearray(before)
        for a, n, v in stores:          # in the order the instruction made them
            cells[a - lo:a - lo + n] = (v & ((1 << 8 * n) - 1)).to_bytes(n, "little")
        after = bytes(cells)
        if after != before:
            self.sync_time()        # the store's time, for the NVMC's busy time
            if self.flash_write_handler is not None:
                final = self.flash_write_handler(lo, before, after)
            else:
                log.warning("write to flash at %#010x ignored (no NVMC)", address)
                final = before
            if final != bytes(uc.mem_read(lo, hi - lo)):   # (the NVMC's stall wrote it:
                uc.mem_write(lo, final)                    # a write costs 4x a read)
            self.invalidate_code(lo, hi)
    returns_in_hook = 0       # exception returns that did not end their slice
    _slice_pc = -1
    _slice_blocks = 0

    @staticmethod
    def slice_end() -> None:
        """Called after every slice, before any other Python runs: the bus
        replaces it with its hand-over of bytes completed in C (streams)."""
