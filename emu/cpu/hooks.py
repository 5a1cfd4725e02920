"""The engine's hooks: interrupts and exception returns, unmapped and
write-protected accesses (flash stores, the MPU's pages), the RAM's own TLB,
invalid instructions (WFE, WFI's sleep), SEV, division traps, and the cost
of every new block (a part of emu/cpu/cortexm.py's CortexM; in C:
emu/cpu/_exceptions.c, _wfe.c, _flashguard.c, _pagemap.c)."""
from __future__ import annotations

import ctypes
import logging
import os
import re
import struct
from typing import Callable, Optional

from unicorn import (UC_HOOK_CODE, UC_HOOK_MEM_FETCH_UNMAPPED, UC_HOOK_MEM_READ_UNMAPPED, UC_HOOK_MEM_WRITE_PROT,
                     UC_HOOK_MEM_WRITE_UNMAPPED, UcError)
from unicorn import arm_const as A

from emu.cpu.armv7m import (EPSR_T, SVCALL, StopReason, VALID_EXC_RETURN)
from emu.soc.ops import Steps

log = logging.getLogger("emu.cpu")

# the first halfword of SDIV/UDIV (0xFB9x, 0xFBBx) as its bytes lie in memory
_DIV_BYTES = re.compile(rb"[\x90-\x9f\xb0-\xbf]\xfb")
# any of the byte pairs _needs_special_hooks looks for (SEV, MSR CONTROL, a division)
_SPECIAL_BYTES = re.compile(rb"\x40\xbf|\x14\x88|[\x90-\x9f\xb0-\xbf]\xfb")


class Hooks:
    """Hooks part of CortexM (a mixin: every method works on the CortexM's
    own state)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_boundaries_watched", "_ignored_flash_py")
    STRUCTURE = ("_div_armed", "_div_hooks", "_fast_ram_range", "_mem_hooks", "_sev_at",
                 "_sev_block", "_sev_hooks", "_wfe_kinds", "costed_in_hook",
                 "flash_write_enabled", "pagemap", "sleeps_in_hook", "wfe_in_hook")

    # ------------------------------------------------------------------
    # hooks (called by Unicorn)
    # ------------------------------------------------------------------
    def _hook_intr(self, uc, intno, _ud):
        if intno == 8 and self._return_in_hook(uc):
            return
        self._trap = ("intr", intno, uc.reg_read(A.UC_ARM_REG_PC))
        uc.emu_stop()

    # Exception returns are carried out inside the INTR hook, without ending
    # the slice, when the run loop's work at that slice boundary would change
    # nothing (InfiniTime returns ~780 times an emulated second).  Writing PC
    # from a hook makes Unicorn go on at the new PC.  Cycles cannot differ:
    # they are counted per block, and due events are still taken at the next
    # block (the block hook's deadline).  Not while a ``should_stop`` predicate
    # watches slice boundaries (run_until), nor around faults, NMI or
    # SLEEPONEXIT: then the slice ends as before (ExcHook in C does a watched
    # run's return in the hook and ends the slice right after it, which is
    # the same: the run loop has nothing else to do for it).  (on_exception listeners
    # may so be called from inside the hook: they only note state.)
    fast_returns = True   # False: every return ends the slice (the slow path, for tests)
    _boundaries_watched = False

    def _return_in_hook(self, uc) -> bool:
        cur = self._ipsr
        if cur < SVCALL or not self.fast_returns or self._boundaries_watched or self.scr & 0x2:
            return False
        exc_return = (uc.reg_read(A.UC_ARM_REG_PC) | 1) & 0xFFFFFFFF
        if exc_return not in VALID_EXC_RETURN:
            return False
        self.exception_return(exc_return)   # a lockup raises CpuHalt out of emu_start
        # a PC written from a hook also sets the Thumb bit from bit 0 (emu_start's
        # pc | 1 does it between slices)
        pc = uc.reg_read(A.UC_ARM_REG_PC)
        uc.reg_write(A.UC_ARM_REG_PC, pc | 1)
        # what the run loop's _take_pending would do now: only an entry (or a
        # fault handler's hang check) needs the loop; a masked pending
        # exception only arms the block hook's mask watch
        if (3 <= self._ipsr <= 6 or self._pending_to_enter() is not None
                or self.sleeping or self.stop_reason):
            self._trap = ("returned",)
            uc.emu_stop()
            return True
        self.returns_in_hook += 1
        # the code after the return starts a slice as far as the WFE test goes
        self._slice_pc = pc
        self._slice_blocks = self.cs.blocks
        return True

    def _hook_unmapped(self, uc, access, address, size, value, _ud):
        self._trap = ("unmapped", access, address, uc.reg_read(A.UC_ARM_REG_PC), size, value)
        return False

    def _native_flash_guard(self):
        if not getattr(self.counter, "native", False):
            return None
        from emu import native
        core = native.load("emu.cpu._core")
        return None if core is None else core.FlashGuard()   # its hooks: _add_write_prot_hooks

    def _add_mem_hooks(self, ranges) -> None:
        """The memory-access hooks over ``ranges`` ((begin, end) inclusive;
        (1, 0): everything), in the order Unicorn must ask them."""
        uc = self.uc
        for b, e in ranges:
            self._mem_hooks.append(("uc", uc.hook_add(
                UC_HOOK_MEM_READ_UNMAPPED | UC_HOOK_MEM_WRITE_UNMAPPED
                | UC_HOOK_MEM_FETCH_UNMAPPED, self._hook_unmapped, begin=b, end=e)))
        self._add_write_prot_hooks(ranges)

    # the native store hook and TLB fill put the IT bits back after Unicorn
    # synced them to an access (False: left so; for the companion tests)
    _guard_fixes_it = True

    def _add_write_prot_hooks(self, ranges) -> None:
        uc = self.uc
        if self._flash_guard is not None:
            for b, e in ranges:
                self._mem_hooks.append(("c", self.guard_hook(b, e)))
        for b, e in ranges:
            self._mem_hooks.append(("uc", uc.hook_add(UC_HOOK_MEM_WRITE_PROT,
                                                      self._hook_write_prot, begin=b, end=e)))

    # RAM stores at full speed.  Unicorn's own TLB gives RAM pages execute
    # permission (QEMU's Cortex-M default map), and a TLB entry that also
    # serves fetches is never marked dirty: every store into RAM then leaves
    # the translated code for a helper (two memory-map lookups and a search
    # for code to invalidate); a memory hook whose range covers the RAM has
    # the same effect.  With the native helpers the TLB is filled by
    # _mmio.PageMap instead (RAM read/write, executable from the first fetch
    # from a page on) and no memory hook covers the RAM while the MPU is off.
    # Unicorn's translated code, costs and behaviour are otherwise the same.
    fast_ram = True     # False (or PINETIME_EMU_CPU_TLB=1): Unicorn's own TLB (for tests)

    def _fast_ram(self, base: int, size: int) -> None:
        if (self._flash_guard is None or not self.fast_ram
                or os.environ.get("PINETIME_EMU_CPU_TLB") or self.pagemap is not None):
            return
        from unicorn.unicorn_py3.unicorn import uclib

        from emu import native
        addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value   # noqa: E731
        self._del_mem_hooks()
        self._add_mem_hooks(((0, base - 1), (base + size, (1 << 64) - 1)))
        pm = native.load("emu.cpu._core").PageMap()
        err = pm.install(addr(uclib.uc_hook_add), self.uc._uch.value, 1 << 17,   # TLB_FILL
                         addr(uclib.uc_reg_write) if self._guard_fixes_it else 0,
                         A.UC_ARM_REG_EPSR, base, size, addr(uclib.uc_ctl))
        if err:
            raise UcError(err)
        self.uc.ctl_set_tlb_mode(1)          # UC_TLB_VIRTUAL
        self._flush_tlb()
        self.pagemap = pm
        self._fast_ram_range = (base, size)

    def fast_ram_range(self):
        """(RAM base, size) while the PageMap fills the TLB (no memory hook
        over the RAM), else None."""
        return self._fast_ram_range if self.pagemap is not None else None

    def guard_hook(self, begin: int, end: int) -> int:
        """The native store guard (FlashGuard) as a WRITE_PROT hook over
        [begin, end]; its handle (raw_hook_del removes it)."""
        from unicorn.unicorn_py3.unicorn import uclib
        addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value   # noqa: E731
        fix = addr(uclib.uc_reg_write) if self._guard_fixes_it else 0
        err, hh = self._flash_guard.install(addr(uclib.uc_hook_add), self.uc._uch.value,
                                            UC_HOOK_MEM_WRITE_PROT, fix, A.UC_ARM_REG_EPSR,
                                            begin, end)
        if err:
            raise UcError(err)
        return hh

    def slow_ram(self) -> None:
        """Back to Unicorn's own TLB and hooks over the RAM too (the MPU
        needs its protection hooks there)."""
        if self.pagemap is None:
            return
        base, size = self._fast_ram_range
        self.uc.ctl_set_tlb_mode(0)          # UC_TLB_CPU
        self._flush_tlb()
        self._add_write_prot_hooks(((base, base + size - 1),))
        self.pagemap = None

    def _flush_tlb(self) -> None:
        from unicorn.unicorn_py3.unicorn import uclib
        err = uclib.uc_ctl(self.uc._uch, ctypes.c_int(11 | (1 << 30)))   # UC_CTL_TLB_FLUSH
        if err:
            raise UcError(err)

    def _del_mem_hooks(self) -> None:
        from unicorn.unicorn_py3.unicorn import uclib
        for kind, h in self._mem_hooks:
            if kind == "uc":
                self.uc.hook_del(h)
            else:
                err = uclib.uc_hook_del(self.uc._uch, ctypes.c_size_t(h))
                if err:
                    raise UcError(err)
        self._mem_hooks = []

    def set_flash_config(self, nvmc, config_offset: int) -> None:
        """CPU stores into flash reach the cells only while ``nvmc.values[config_offset]``
        selects write mode (CONFIG.WEN = 1); otherwise they are ignored."""
        self.flash_write_enabled = (lambda addr, n=nvmc, c=config_offset:
                                    (n.values[c] & 3) == 1)
        if self._flash_guard is not None:
            self._flash_guard.set_source(nvmc, config_offset, self._first_ignored_flash_write)
            ram = [s for (s, _e, k, _n) in self.regions if k == "ram"]
            if ram:
                self._flash_guard.set_below(min(ram))   # RAM stores: the MPU's (Python)

    @property
    def ignored_flash_writes(self) -> int:
        """CPU stores into flash dropped because the NVMC was not in write mode."""
        g = self._flash_guard
        return self._ignored_flash_py + (g.count if g is not None else 0)

    def _first_ignored_flash_write(self, address: int) -> None:
        pc = self.uc.reg_read(A.UC_ARM_REG_PC)
        log.info("write to flash at %#010x ignored (NVMC not in write mode) at pc=%#010x "
                 "%s; further ones are counted in cpu.ignored_flash_writes", address, pc,
                 self.symbolize(pc))

    def resume_after_access_hook(self) -> None:
        """A data-access hook lets the access go on: the IT bits back to zero.

        Before calling a memory hook Unicorn syncs the CPU state to the
        accessing instruction (cpu_restore_state, for the PC the hook may
        read), and that sets EPSR.IT to the instruction's IT state too.  The
        translated code keeps the IT bits zero inside a block and writes them
        only when the block ends in an IT block, so after a conditional
        access in an IT block that ends within the block they stay stale, and
        the next block is looked up and translated with them: its first
        instructions conditional on the IT block's condition.  (Zephyr's
        z_impl_k_queue_get does ``it eq; streq`` into a RAM page the stack
        guard cuts, then ``bl z_queue_node_peek``, whose ``push {r4, lr}``
        was skipped, flags failing EQ, and its ``pop {r4, pc}`` returned
        into rodata.)  Inside a block they are zero whatever the IT block
        (QEMU's arm_tr_tb_start); a hook that ends the slice instead (a fault)
        keeps the restored state, which is the faulting instruction's.  The
        native store hook does the same (FlashGuard in _mmio.c).  Not for
        fetches: those hooks run while a block is translated."""
        self.uc.reg_write(A.UC_ARM_REG_EPSR, EPSR_T)

    def _hook_write_prot(self, uc, access, address, size, value, _ud):
        mpu = self.mpu
        if mpu is not None and mpu._installed:
            if (address & ~1023) in mpu._prot:
                return mpu._hook_prot(uc, access, address, size, value, _ud)
            # flash (never writable by a store): the MPU decides before the NVMC
            if not mpu.off_now() and not mpu.allows(address, size, 2, self.privileged()):
                self._trap = ("mpu", 2, address, uc.reg_read(A.UC_ARM_REG_PC))
                return False
        wen = self.flash_write_enabled
        if wen is not None and not wen(address):
            # Writes to read-only flash are ignored by the silicon: returning
            # True makes Unicorn drop the store and go on (base writeback and
            # all), with no emulation stop.  This is the common case (firmware
            # passing a NULL receive buffer to an SPI driver, say).
            self._ignored_flash_py += 1
            if self.ignored_flash_writes == 1:
                self._first_ignored_flash_write(address)
            self.resume_after_access_hook()
            return True
        stores = self._flash_step_stores
        if stores is not None:
            # _handle_flash_write's step of the store: the store dropped
            # (base writeback and all go on) and noted; the NVMC decides
            # what the cells keep afterwards
            stores.append((address, size, value))
            self.resume_after_access_hook()
            return True
        trap = self._trap
        if trap is not None and trap[0] == "write_prot":
            # the engine went on after a refused store (one inside an IT
            # block runs on to its block's end): this store is noted too
            trap[5].append((address, size, value))
            return False
        self._trap = ("write_prot", address, uc.reg_read(A.UC_ARM_REG_PC), size, value,
                      [(address, size, value)])
        return False
    wfe_cache = True      # False: decide from memory every time (the slow path, for tests)

    _sev_block = -1
    _sev_at = -1

    def _hook_insn_invalid(self, uc, _ud):
        pc = uc.reg_read(A.UC_ARM_REG_PC)
        if (self._sev_block == self.cs.blocks and self._sev_at < pc
                and self._wfe_kind_at(pc - 2) == self.WFE_AT):
            # The SEV's code hook ran earlier in this block: Unicorn reports
            # the WFE after it with the PC already past it, even when the
            # next instruction is a WFE too (Nordic's idle, ``sev; wfe;
            # wfe``: that second WFE must still run, and sleep).
            if self._wfe_in_hook(uc, pc) or self._sleep_in_hook(uc, pc):
                return True
            self._trap = ("wfe", pc - 2)
            uc.emu_stop()
            return True
        if self._wfe_kind_at(pc) == self.WFE_AT:
            if self._wfe_in_hook(uc, pc + 2) or self._sleep_in_hook(uc, pc + 2):
                return True
            self._trap = ("wfe", pc)
            uc.reg_write(A.UC_ARM_REG_PC, pc + 2)
            uc.emu_stop()
            return True
        # When a code hook is active in the block (the SEV hook), QEMU has
        # already advanced PC past the WFE: the instruction at PC is then a
        # valid one and the halfword before it is the WFE.
        if self._wfe_before(pc):
            if self._wfe_in_hook(uc, pc) or self._sleep_in_hook(uc, pc):
                return True
            self._trap = ("wfe", pc - 2)
            uc.emu_stop()
            return True
        self._trap = ("undef", pc)
        return False

    # A WFE with the event register set only clears it (no sleep): done in the
    # hook, the slice goes on (InfiniTime ~150 times an emulated second).  The
    # run loop would do nothing at that boundary: a pend that needs an entry
    # has raised the stop flag, a masked one armed the mask watch, and both
    # act at the next block, where the slice would have resumed.
    fast_wfe = True       # False: every WFE ends the slice (the slow path, for tests)
    wfe_in_hook = 0       # WFEs that did not end their slice

    def _wfe_in_hook(self, uc, resume: int) -> bool:
        if (not self.event_register or not self.fast_wfe or self._boundaries_watched
                or 3 <= self._ipsr <= 6):
            return False
        self.event_register = 0
        uc.reg_write(A.UC_ARM_REG_PC, resume | 1)     # bit 0: stay in Thumb state
        self.wfe_in_hook += 1
        self._slice_pc = resume
        self._slice_blocks = self.cs.blocks
        return True

    # A WFE that sleeps: the run loop's steps while the core sleeps (events
    # run, time skipped to the next one, the wake-up and the entry of the
    # interrupt that woke it) done in the hook, the slice going on at the
    # handler or after the WFE (InfiniTime idle sleeps ~300 times an
    # emulated second).  This hook runs where the engine has brought its
    # state up to date (an undefined-instruction exception), so the xPSR
    # stacked by the entry is exact, unlike in the block hook.  Any case the
    # loop treats specially hands over to it at the top of its loop, asleep,
    # as if the slice had ended at the WFE.
    fast_sleep = True     # False: a WFE that sleeps ends the slice (the slow path, for tests)
    sleeps_in_hook = 0    # sleeps that did not end their slice

    def _sleep_in_hook(self, uc, resume: int) -> bool:
        if (self.event_register or not self.fast_sleep or not self.fast_wfe or self._c_loop
                or self._boundaries_watched or 3 <= self._ipsr <= 6 or self.stop_reason
                or self.powered_off or self._trap is not None or self._halt_in_hook is not None
                or (self.ccr & 0x10 and not self._div_armed)):
            return False
        cs = self.cs
        clock = self.clock
        until = self._run_until
        should_stop = self._run_should_stop
        flags = self._run_flags
        uc.reg_write(A.UC_ARM_REG_PC, resume | 1)
        cs.in_slice = 0
        self.slice_end()
        self.sync_time()
        self.sleeping = True
        self.sleep_kind = "wfe"
        pc = resume
        try:
            while True:                       # CortexM.run's loop, asleep
                clock.run_due()
                if (self.stop_reason or self.powered_off
                        or any(getattr(obj, name) for obj, name in flags)
                        or (should_stop is not None and should_stop())):
                    return self._sleep_to_loop(uc)
                best = self._pending_to_enter()
                if best is not None:
                    if 3 <= best[2] <= 6 or clock.now >= until:
                        return self._sleep_to_loop(uc)
                    self.exception_entry(best[2], resume)
                    self.sleeping = False
                    pc = uc.reg_read(A.UC_ARM_REG_PC)
                    uc.reg_write(A.UC_ARM_REG_PC, pc | 1)   # bit 0: stay in Thumb state
                    break
                if self._wake_condition() or self.event_register:
                    if clock.now >= until:
                        return self._sleep_to_loop(uc)
                    self.event_register = 0
                    self.sleeping = False
                    break
                if clock.next_event_time() >= until:
                    return self._sleep_to_loop(uc)
                self._idle_to_next_event(until, StopReason.SLEEP)
            self._start_slice(min(clock.next_event_time(), until), pc)
        except BaseException as e:   # CpuHalt (lockup): raised again after the slice
            self._halt_in_hook = e
            return self._sleep_to_loop(uc)
        finally:
            cs.in_slice = 1
        self.sleeps_in_hook += 1
        return True

    def _wfe_before(self, pc: int) -> bool:
        if self._wfe_kind_at(pc) != self.WFE_BEFORE:
            return False
        if pc == self._slice_pc and self.cs.blocks - self._slice_blocks <= 1:
            # resumed right after a WFE and this is the slice's first block: the
            # instruction here really is undefined.  (After more blocks, an idle
            # loop ``wfe; ...; b <wfe>`` has come back to its WFE: a WFE.)
            return False
        return True

    def _wfe_kind_at(self, pc: int) -> int:
        kind = self._wfe_kinds.get(pc)
        if kind is None:
            kind = self._wfe_kind(pc)
            if self.wfe_cache and self._in_flash(pc):
                self._wfe_kinds[pc] = kind
        return kind

    def _wfe_kind(self, pc: int) -> int:
        """WFE_AT: a WFE at ``pc``; WFE_BEFORE: a WFE just before a valid
        instruction at ``pc``; NOT_WFE otherwise (from memory)."""
        try:
            hw = struct.unpack("<H", self.uc.mem_read(pc, 2))[0]
        except UcError:
            hw = 0
        if hw == 0xBF20:
            return self.WFE_AT
        try:
            prev = struct.unpack("<H", self.uc.mem_read(pc - 2, 2))[0]
            code = bytes(self.uc.mem_read(pc, 4))
        except UcError:
            return self.NOT_WFE
        if prev != 0xBF20:
            return self.NOT_WFE
        if any(True for _ in self.cost_model.md.disasm_lite(code, pc, 1)):
            return self.WFE_BEFORE
        return self.NOT_WFE

    def _in_flash(self, addr: int) -> bool:
        for (s, e) in self._flash_regions:
            if s <= addr - 2 and addr + 4 <= e:
                return True
        return False

    def _hook_div(self, uc, address, size, _ud):
        if not (self.ccr & 0x10):
            return
        rid = self._div_hooks.get(address)
        if rid is not None and uc.reg_read(rid) == 0:
            self._trap = ("divzero", address)
            uc.emu_stop()

    def _hook_sev(self, uc, address, size, _ud):
        self.event_register = 1
        self._sev_block = self.cs.blocks      # see _hook_insn_invalid
        self._sev_at = address

    # ------------------------------------------------------------------
    # block costing
    # ------------------------------------------------------------------
    # A block met for the first time is costed by the block hook's callback,
    # without ending the slice (InfiniTime's first second: ~3500 blocks); the
    # run loop would do nothing else at that boundary (the hook checks the
    # stop flag, the deadline and entries before the cost).  Blocks that need
    # a per-instruction hook (SEV, divisions) still end the slice: their
    # translation is dropped.
    fast_costing = True   # False: every new block ends the slice (the slow path, for tests)
    costed_in_hook = 0

    def _cost_in_hook(self, addr: int, size: int) -> bool:
        if (not self.fast_costing or self._boundaries_watched or 3 <= self._ipsr <= 6
                or self.stop_reason):
            return False
        code = self._read_code(addr, size)
        if code is None or self._needs_special_hooks(code):
            return False
        try:
            self.counter.insert(addr, size, *self.cost_model.block_cost_pure(code, addr))
            self._costed(addr, size)
        except Exception:    # noqa: BLE001 - the slow path reports it
            return False
        self.costed_in_hook += 1
        self._slice_pc = addr
        self._slice_blocks = self.cs.blocks
        return True

    def _read_code(self, addr: int, size: int):
        """A block's bytes (uc_mem_read into a buffer kept for it: the
        binding's mem_read builds two objects a call), None if unmapped."""
        buf = self._codebuf
        if size > len(buf):
            buf = self._codebuf = ctypes.create_string_buffer(size)
        if self._c_mem_read(self._uch, addr, buf, size):
            return None
        return buf.raw[:size]

    def _cost_block(self, addr: int, size: int) -> None:
        try:
            code = bytes(self.uc.mem_read(addr, size))
        except UcError:
            self.counter.insert(addr, size, 1)
            self._costed(addr, size)
            return
        self.counter.insert(addr, size, *self.cost_model.block_cost_pure(code, addr))
        self._costed(addr, size)
        # Instructions that need a selective hook (zero cost elsewhere).
        if self._needs_special_hooks(code):
            self._special_hooks(code, addr, size)

    def _needs_special_hooks(self, code: bytes) -> bool:
        """The block may hold an instruction that needs its own hook: SEV,
        SDIV/UDIV, MSR CONTROL (a cheap test on the bytes; _special_hooks
        disassembles)."""
        if _SPECIAL_BYTES.search(code) is None:      # (most blocks: one scan)
            return False
        return b"\x40\xbf" in code or (self.profile == "m4" and bool(code) and (
            self._has_div(code) or b"\x14\x88" in code))

    @staticmethod
    def _has_div(code: bytes) -> bool:
        # SDIV/UDIV encodings: first halfword 0xFB9x / 0xFBBx, at an even offset
        for m in _DIV_BYTES.finditer(code):
            if not m.start() & 1:
                return True
        return False

    def _special_hooks(self, code: bytes, addr: int, size: int) -> None:
        added = False
        md = self.cost_model.md
        stored = False
        for insn in md.disasm(code, addr):
            mn = insn.mnemonic.split(".")[0]
            stored = stored or mn.startswith("st")
            if mn == "sev" and insn.address not in self._sev_hooks:
                self._sev_hooks[insn.address] = self.uc.hook_add(
                    UC_HOOK_CODE, self._hook_sev, begin=insn.address, end=insn.address)
                added = True
            # A division needs its hook (a zero divisor traps) only while
            # CCR.DIV_0_TRP is set; with it clear the result is 0, as Unicorn
            # gives on its own.  Until the bit is first set only divisions
            # after a store in their block are hooked (the store may be the
            # one that sets it, and the block runs on before arm_div_trap's
            # stop); arm_div_trap() then re-translates everything.
            elif (mn == "msr" and insn.op_str.startswith("control")
                  and insn.address + insn.size not in self._msr_hooks):
                # the MSR may drop the thread's privilege: the MPU looks again
                self._msr_hooks.add(insn.address + insn.size)
                self.mpu.hook_after_msr_control(insn.address + insn.size)
                added = True
            elif (mn in ("sdiv", "udiv") and (self._div_armed or stored)
                  and insn.address not in self._div_hooks):
                rm = insn.operands[-1].reg
                rid = _capstone_to_uc_reg(rm)
                self._div_hooks[insn.address] = rid
                self.uc.hook_add(UC_HOOK_CODE, self._hook_div, begin=insn.address,
                                 end=insn.address)
                added = True
        if added:
            self.uc.ctl_remove_cache(addr, addr + size)

    def arm_div_trap(self) -> None:
        """CCR.DIV_0_TRP is set: from now on every SDIV/UDIV is checked for a
        zero divisor (translated code is dropped so that each division met
        again gets its hook).  Called between slices: after the slice in
        which the SCS saw CCR written (it asks for the stop; dropping the
        code that is running from inside its MMIO callback would not be
        safe), and by run() (a snapshot may restore CCR with the bit set)."""
        if self._div_armed or self.profile != "m4":
            return
        self._div_armed = True
        for (start, end, kind, _n) in self.regions:
            if kind != "mmio":
                self.uc.ctl_remove_cache(start, end)
        self.counter.clear()
        self._costed_pages.clear()

    def invalidate_code(self, start: int, end: int) -> None:
        """Forget translated code and costs (after flash/RAM code changes).
        The cost table is cleared only when a costed block lies on a 4 KiB
        page of [start, end): a bootloader writing an image into flash it
        does not run (MCUBoot's swap, thousands of words) keeps its costs."""
        self.uc.ctl_remove_cache(start, end)
        pages = self._costed_pages
        if any(p in pages for p in range(start >> 12, ((end - 1) >> 12) + 1)) \
                if end - start <= 1 << 20 else pages:
            self.counter.clear()
            pages.clear()
        self._wfe_kinds.clear()

    def _costed(self, addr: int, size: int) -> None:
        self._costed_pages.update(range(addr >> 12, ((addr + max(size, 1) - 1) >> 12) + 1))
    # set by the SoC: fn(address) -> True when a CPU store there may change the
    # cells (NVMC in write mode); None means always take the slow path
    flash_write_enabled: Optional[Callable[[int], bool]] = None


# what ExcHook's invalid-instruction hook (the WFEs in C) stands for
_WFE_ORIGINALS = Steps({n: getattr(Hooks, n) for n in (
    "_hook_insn_invalid", "_wfe_in_hook", "_sleep_in_hook", "_wfe_kind_at", "_wfe_before")})


def _capstone_to_uc_reg(csreg: int) -> int:
    from capstone import arm as C
    table = {C.ARM_REG_R0 + i: A.UC_ARM_REG_R0 + i for i in range(13)}
    table.update({C.ARM_REG_SP: A.UC_ARM_REG_SP, C.ARM_REG_LR: A.UC_ARM_REG_LR})
    return table.get(csreg, A.UC_ARM_REG_R0)
