"""Cortex-M4F (and Cortex-M0) core: Unicorn plus the M-profile exception model.

Unicorn executes instructions; everything ARMv7-M defines around them is here,
because Unicorn does none of it (see UNICORN-NOTES.md): reset from the vector
table, exception entry and return (basic and extended FP frames, MSP/PSP,
CONTROL, all six EXC_RETURN values), priority grouping, PRIMASK/BASEPRI/
FAULTMASK masking, preemption, nesting, tail-chaining, SVCall, PendSV,
SysTick, NMI, HardFault escalation, configurable faults with CFSR/HFSR/MMFAR/
BFAR, lockup, WFI/WFE sleep with the event register and SEVONPEND, and
SLEEPONEXIT.

The run loop (:meth:`CortexM.run`) lets Unicorn run until the next scheduled
event, a WFI/WFE, an SVC/BKPT/exception return, a fault, or a flag that an
MMIO access raised; the loop then fires due events, takes pending exceptions
and resumes.  With the native helpers the loop runs in C (emu.soc._mmio.
ExcHook.run: the same steps, calling the models' Python only for what is
Python); the Python loop below is the reference and runs whenever one of
its steps is replaced.  ExcHook also carries out, in its hooks, exception
returns and tail-chains (UC_HOOK_INTR) and the WFEs at known addresses
(UC_HOOK_INSN_INVALID: Unicorn has no WFE), handing anything else to this
file's hooks.  Cycles are counted per basic block (``cycles.py``).

The MPU is emu/cpu/mpu.py's.  Not modelled: lazy FP state preservation (FPCCR.LSPEN is stored; FP
context is always stacked eagerly when CONTROL.FPCA is set, which is
functionally the same), unaligned-access traps (CCR.UNALIGN_TRP), CPACR
access checks (NOCP), the debug monitor exception, and bus-fault imprecision
(all bus faults are precise).
"""
from __future__ import annotations

import ctypes
import logging
import operator
import os
import struct
from time import perf_counter as _perf_counter
from typing import Callable, Optional

from unicorn import (UC_ARCH_ARM, UC_ERR_FETCH_PROT, UC_ERR_INSN_INVALID, UC_HOOK_CODE, UC_HOOK_INSN_INVALID, UC_HOOK_INTR,
                     UC_HOOK_MEM_FETCH_UNMAPPED, UC_HOOK_MEM_READ_UNMAPPED, UC_HOOK_MEM_WRITE_PROT,
                     UC_HOOK_MEM_WRITE_UNMAPPED, UC_MODE_THUMB, UC_PROT_ALL, UC_PROT_EXEC,
                     UC_PROT_READ, Uc, UcError)
from unicorn import arm_const as A

from emu.clock import CPU_TICKS, NEVER, Clock
from emu.cpu import cycles as cyc
from emu.cpu import fastregs
from emu.soc.ops import unreplaced

log = logging.getLogger("emu.cpu")

# Exception numbers
RESET, NMI, HARDFAULT, MEMMANAGE, BUSFAULT, USAGEFAULT = 1, 2, 3, 4, 5, 6
SVCALL, DEBUGMON, PENDSV, SYSTICK = 11, 12, 14, 15
EXC_NAMES = {1: "Reset", 2: "NMI", 3: "HardFault", 4: "MemManage", 5: "BusFault",
             6: "UsageFault", 11: "SVCall", 12: "DebugMonitor", 14: "PendSV", 15: "SysTick"}

# CFSR bits
MMFSR_IACCVIOL = 1 << 0
MMFSR_DACCVIOL = 1 << 1
MMFSR_MMARVALID = 1 << 7
BFSR_IBUSERR = 1 << 8
BFSR_PRECISERR = 1 << 9
BFSR_BFARVALID = 1 << 15
UFSR_UNDEFINSTR = 1 << 16
UFSR_INVSTATE = 1 << 17
UFSR_INVPC = 1 << 18
UFSR_NOCP = 1 << 19
UFSR_UNALIGNED = 1 << 24
UFSR_DIVBYZERO = 1 << 25
HFSR_VECTTBL = 1 << 1
HFSR_FORCED = 1 << 30

VALID_EXC_RETURN = {0xFFFFFFF1, 0xFFFFFFF9, 0xFFFFFFFD, 0xFFFFFFE1, 0xFFFFFFE9, 0xFFFFFFED}

_CORE_REGS = [A.UC_ARM_REG_R0 + i for i in range(13)]  # r0..r12 are consecutive ids
_ENTRY_REGS = [A.UC_ARM_REG_R0, A.UC_ARM_REG_R1, A.UC_ARM_REG_R2, A.UC_ARM_REG_R3,
               A.UC_ARM_REG_R12, A.UC_ARM_REG_LR, A.UC_ARM_REG_XPSR, A.UC_ARM_REG_CONTROL,
               A.UC_ARM_REG_MSP, A.UC_ARM_REG_PSP]
_SP_CONTROL_REGS = [A.UC_ARM_REG_MSP, A.UC_ARM_REG_PSP, A.UC_ARM_REG_CONTROL]
# read as 0 by Unicorn's register API in unprivileged thread mode
_PRIVILEGED_READS = frozenset((A.UC_ARM_REG_MSP, A.UC_ARM_REG_PSP, A.UC_ARM_REG_PRIMASK,
                               A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK))
_FP_REGS = [A.UC_ARM_REG_S0 + i for i in range(16)] + [A.UC_ARM_REG_FPSCR]
_UNSTACKED_REGS = (A.UC_ARM_REG_R0, A.UC_ARM_REG_R1, A.UC_ARM_REG_R2, A.UC_ARM_REG_R3,
                   A.UC_ARM_REG_R12, A.UC_ARM_REG_LR)
_WORDS = {n: struct.Struct(f"<{n}I") for n in (1, 8, 17, 26)}
_HALF = struct.Struct("<H")
# the registers emu.soc._mmio.Regs.exc_push/exc_enter/exc_pop use, in its order
_EXC_IDS = ([A.UC_ARM_REG_R0, A.UC_ARM_REG_R1, A.UC_ARM_REG_R2, A.UC_ARM_REG_R3,
             A.UC_ARM_REG_R12, A.UC_ARM_REG_LR, A.UC_ARM_REG_XPSR, A.UC_ARM_REG_CONTROL,
             A.UC_ARM_REG_MSP, A.UC_ARM_REG_PSP, A.UC_ARM_REG_IPSR, A.UC_ARM_REG_PC,
             A.UC_ARM_REG_APSR_NZCV] + [A.UC_ARM_REG_S0 + i for i in range(16)]
            + [A.UC_ARM_REG_FPSCR])
assert A.UC_ARM_REG_R12 == A.UC_ARM_REG_R0 + 12

_MEM_CHECKED = 1 << 16      # read_mem/write_mem sizes above this are checked against the map


def _mem_range(addr, size) -> tuple:
    """(addr, size) as ints inside the 32-bit address space, or TypeError /
    ValueError naming the problem."""
    try:
        addr, size = operator.index(addr), operator.index(size)
    except TypeError:
        raise TypeError(f"address and size must be integers, not {type(addr).__name__} and "
                        f"{type(size).__name__}") from None
    if addr < 0 or size < 0 or addr + size > 1 << 32:
        raise ValueError(f"{size} bytes at {addr:#x}: outside the 32-bit address space")
    return addr, size

class CpuHalt(Exception):
    """Raised inside the run loop to stop with a reason (lockup, exit, ...)."""


class StopReason:
    DEADLINE = "deadline"
    EXIT = "exit"          # semihosting exit / harness request
    LOCKUP = "lockup"
    FAULT = "fault"        # unhandled fault (fault handler stuck or repeating)
    BREAK = "break"        # debugger breakpoint / watchpoint / stop request
    SLEEP = "sleep"        # asleep with nothing scheduled (would sleep forever)
    OFF = "off"            # powered off (nRF System OFF) with nothing scheduled
    RESET = "reset"


XPSR_IT = (3 << 25) | (0x3F << 10)   # EPSR.IT[1:0] and IT[7:2]
EPSR_T = 1 << 24                      # EPSR with the T bit only (IT = 0)
FAULT_REPEAT_WINDOW = 512_000_000 // 100   # 10 ms in ticks (see take_fault)


class CortexM:
    """One Cortex-M core with its NVIC, SCB, SysTick and DWT state.

    Parameters: ``profile`` is ``"m4"`` (ARMv7E-M with FPU) or ``"m0"``
    (ARMv6-M); ``num_irq`` external interrupts; ``prio_bits`` implemented
    priority bits (3 on the nRF52832, 2 on the nRF51).
    """

    def __init__(self, clock: Clock, *, profile: str = "m4", num_irq: int = 48,
                 prio_bits: int = 3, force_python_counter: bool = False,
                 symbolizer: Optional[Callable[[int], str]] = None,
                 cycle_ticks: int = CPU_TICKS):
        self.clock = clock
        self.cycle_ticks = cycle_ticks   # 512 MHz ticks per CPU cycle (8: 64 MHz, 32: 16 MHz)
        self.profile = profile
        self.num_irq = num_irq
        self.prio_bits = prio_bits
        self.prio_mask = (0xFF << (8 - prio_bits)) & 0xFF
        self.symbolize = symbolizer or (lambda addr: "")
        self.uc = uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
        uc.ctl_set_cpu_model(A.UC_CPU_ARM_CORTEX_M4 if profile == "m4" else A.UC_CPU_ARM_CORTEX_M0)
        # direct uc_reg_read/write for 32-bit registers (in C unless pure Python)
        fastregs.install(uc, native=not force_python_counter)
        # exception frames and vectors: uc_mem_read into one reused buffer
        # (the binding's mem_read builds a ctypes buffer and a bytearray per call)
        from unicorn.unicorn_py3.unicorn import uclib
        self._uch = uc._uch
        self._c_mem_read = uclib.uc_mem_read
        self._c_mem_write = uclib.uc_mem_write
        self._membuf = ctypes.create_string_buffer(0x68)
        # exception entry and return's register and memory work in C (the
        # Regs builtins of emu.soc._mmio; None: the Python below does it)
        self._xregs = getattr(uc, "_fastregs", None)
        if self._xregs is not None:
            addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value   # noqa: E731
            self._xregs.set_exc(addr(uclib.uc_mem_read), addr(uclib.uc_mem_write), _EXC_IDS)
        self.counter = cyc.make_block_counter(
            uc, (A.UC_ARM_REG_PRIMASK, A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK),
            force_python=force_python_counter)
        self.cs = self.counter.s
        self.cs.entry_cb = self._enter_in_hook
        self.cs.cost_cb = self._cost_in_hook
        self.cost_model = cyc.CostModel(profile)
        self.regions: list = []         # (start, end, kind, name)
        self.ram_host: dict = {}        # RAM base -> (size, ctypes buffer, host address)
        self._mmio_cfuncs: list = []
        self._flash_regions: list = []  # (start, end)
        self.flash_write_handler: Optional[Callable[[int, bytes, bytes], bytes]] = None
        self.svc_handler: Optional[Callable[[int], bool]] = None
        self.bkpt_handler: Optional[Callable[[int, int], bool]] = None
        self.itm_handler: Optional[Callable[[int, int], None]] = None
        self.reset_handler: Optional[Callable[[], None]] = None  # system reset request
        self.on_exception: list = []  # callbacks(exc, entering: bool); may run in a hook
        self.on_sleep: list = []      # callbacks(asleep: bool) when WFI/WFE sleep starts/ends
        self._sleeping = False
        self._div_hooks: dict = {}    # SDIV/UDIV address -> divisor register (hooked)
        self._div_armed = False       # hooks on divisions exist (CCR.DIV_0_TRP was set)
        self._sev_hooks: dict = {}
        self._msr_hooks: set = set()
        self._wfe_kinds: dict = {}    # pc in flash -> WFE_AT / WFE_BEFORE / NOT_WFE
        self._costed_pages: set = set()   # 4 KiB pages holding blocks in the cost table
        self._cycle_base_ticks = 0
        self._cycle_base = 0
        self._trap: Optional[tuple] = None   # set by hooks: (kind, ...)
        self.stop_reason: Optional[str] = None
        self.stop_info: dict = {}
        self.exit_code: Optional[int] = None
        self.instructions_hint = 0
        self._exc_hook = self._native_intr_hook()
        if self._exc_hook is None:
            self._raw_hook(UC_HOOK_INTR, "HOOK_INTR_CFUNC", self._hook_intr, None)
        elif self.native_entries:         # the block hook's entries: ExcHook's in C
            self.cs.entry_cb = self._exc_hook.enter_in_hook
        # the hooks on memory accesses: unmapped addresses, and stores into
        # read-only flash, dropped in C when the native helpers are built
        # (registered first, so Unicorn asks it first), else in Python.
        # They cover the whole address space until the RAM is mapped, then
        # all of it but the RAM (see _fast_ram)
        self._flash_guard = self._native_flash_guard()
        self._ignored_flash_py = 0
        self._mem_hooks: list = []    # (kind, handle): "uc" (the binding's) or "c"
        self._add_mem_hooks(((1, 0),))
        self.pagemap = None           # the TLB filled from the memory map (_fast_ram)
        if self._exc_hook is not None:    # the WFEs in C (ExcHook.install_insn)
            self._native_insn_hook()
        else:
            self._raw_hook(UC_HOOK_INSN_INVALID, "HOOK_INSN_INVALID_CFUNC",
                           self._hook_insn_invalid, False)
        self.systick = SysTick(self)
        from emu.cpu.mpu import Mpu
        self.mpu_dirty = False        # MPU registers written: re-applied at the next boundary
        self.mpu = Mpu(self) if profile == "m4" else None
        self.reset_state()

    # ------------------------------------------------------------------
    # memory map
    # ------------------------------------------------------------------
    def map_memory(self, base: int, size: int, name: str, *, writable: bool = True,
                   executable: bool = True, flash: bool = False) -> None:
        perms = UC_PROT_READ
        if writable and not flash:
            perms |= 2  # UC_PROT_WRITE
        if executable:
            perms |= UC_PROT_EXEC
        if flash or not writable:
            self.uc.mem_map(base, size, perms)
        else:
            # RAM in our own host memory: the MPU's allowed stores into pages
            # a region boundary cuts through are written there directly
            buf = ctypes.create_string_buffer(size)
            self.uc.mem_map_ptr(base, size, perms, ctypes.addressof(buf))
            self.ram_host[base] = (size, buf, ctypes.addressof(buf))
            self._fast_ram(base, size)
        self.regions.append((base, base + size, "flash" if flash else "ram", name))
        if flash:
            self._flash_regions.append((base, base + size))

    def _check_mmio_free(self, base: int, size: int, name: str) -> None:
        for (s, e, _k, n) in self.regions:
            if base < e and s < base + size:
                raise ValueError(f"MMIO {name} at {base:#x} overlaps {n} at {s:#x}-{e:#x}")

    def map_mmio(self, base: int, size: int, name: str, read_cb, write_cb, *,
                 raw: bool = False) -> None:
        self._check_mmio_free(base, size, name)
        # Register plain ctypes callbacks with uc_mmio_map directly: the
        # binding's wrapper layers cost about a third of every access, and
        # MMIO-polling firmware lives on this path.  The callbacks get
        # uc=None and never raise (they catch and log model errors).
        from unicorn.unicorn_py3.unicorn import MMIO_READ_CFUNC, MMIO_WRITE_CFUNC, uclib
        # raw=True: the callbacks already take (handle, offset, size[, value],
        # user_data) and are registered as they are (one Python frame less).
        if raw:
            rd, wr = MMIO_READ_CFUNC(read_cb), MMIO_WRITE_CFUNC(write_cb)
        else:
            rd = MMIO_READ_CFUNC(lambda _h, off, sz, _k: read_cb(None, off, sz, None))
            wr = MMIO_WRITE_CFUNC(lambda _h, off, sz, val, _k: write_cb(None, off, sz, val, None))
        self._mmio_cfuncs.append((rd, wr))      # keep them alive
        err = uclib.uc_mmio_map(self.uc._uch, base, size, rd, None, wr, None)
        if err:
            raise UcError(err)
        self.regions.append((base, base + size, "mmio", name))

    def _raw_hook(self, htype: int, cfunc: str, fn, on_error) -> None:
        """Register ``fn(uc, *args, None)`` for ``htype`` as a plain ctypes
        callback: the binding's hook_add puts two Python frames around it
        (InfiniTime's exception returns and WFEs come here ~1200 times an
        emulated second).  An exception is kept and stops the engine, as the
        binding does (emu_start raises it), and the hook answers
        ``on_error``."""
        from unicorn.unicorn_py3 import unicorn as ub
        uc = self.uc

        def cb(_handle, *args):
            try:
                return fn(uc, *args[:-1], None)
            except BaseException as e:
                if uc._hook_exception is None:
                    uc._hook_exception = e
                uc.emu_stop()
                return on_error
        fptr = getattr(ub, cfunc)(cb)
        handle = ub.uc_hook_h()
        err = ub.uclib.uc_hook_add(uc._uch, ctypes.byref(handle), htype, fptr,
                                   ctypes.c_void_p(0), ctypes.c_uint64(1), ctypes.c_uint64(0))
        if err:
            raise UcError(err)
        self._mmio_cfuncs.append(fptr)          # keep it alive as long as the engine

    # Exception returns in the INTR hook are carried out in C (emu.soc._mmio.
    # ExcHook: the steps of _return_in_hook and exception_return when nothing
    # but the return happens) with the native helpers; anything else calls
    # _hook_intr as the ctypes hook did.  False: the Python hook throughout.
    native_returns = True
    # ... and so are the exception entries the run loop and the block hook
    # make (ExcHook.take / enter_in_hook: _take_pending, _enter_in_hook,
    # exception_entry and _enter when nothing but the entry happens: no MPU,
    # no fault handler, no stacking error).  False: Python's (with the INTR
    # hook still in C when native_returns).
    native_entries = True

    def _native_intr_hook(self):
        """The INTR hook installed in C (ExcHook), or None (pure Python, the
        switch off): then _raw_hook installs _hook_intr."""
        if (not self.native_returns or self._xregs is None
                or not getattr(self.counter, "native", False)):
            return None
        from unicorn.unicorn_py3.unicorn import uclib

        from emu.soc import _mmio
        uc = self.uc
        hook_intr = self._hook_intr

        def fallback(intno):              # _raw_hook's callback, for the Python hook
            try:
                hook_intr(uc, intno, None)
            except BaseException as e:
                if uc._hook_exception is None:
                    uc._hook_exception = e
                uc.emu_stop()
        addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value   # noqa: E731
        cs = self.cs
        field = lambda n: ctypes.addressof(cs) + getattr(type(cs), n).offset   # noqa: E731
        hook = _mmio.ExcHook()
        err = hook.install(addr(uclib.uc_hook_add), self._uch.value, UC_HOOK_INTR,
                           addr(uclib.uc_emu_stop), self, self._xregs, uc, fallback,
                           self.profile == "m4", self.prio_mask,
                           (A.UC_ARM_REG_PRIMASK, A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK,
                            A.UC_ARM_REG_PC),
                           tuple(field(n) for n in ("mask_watch", "pend_prio", "active_prio",
                                                    "prigroup_mask", "blocks")))
        if err:
            raise UcError(err)
        hook.loop_setup(addr(uclib.uc_emu_start), self.clock, UcError,
                        (StopReason.DEADLINE, StopReason.BREAK, StopReason.SLEEP,
                         StopReason.OFF),
                        tuple(field(n) for n in ("cycles", "deadline", "base_cycles",
                                                 "synced_cycles", "base_ticks", "stop_flag",
                                                 "entry_flag", "reason", "miss_addr",
                                                 "miss_size", "in_slice", "lp_have")))
        return hook

    def _native_insn_hook(self) -> None:
        """The invalid-instruction hook in C (ExcHook.install_insn): the WFEs
        _hook_insn_invalid would carry out for a cached WFE_AT or WFE_BEFORE (see
        ``native_wfe``); anything else calls _hook_insn_invalid as
        _raw_hook's callback does."""
        from unicorn.unicorn_py3.unicorn import uclib
        uc = self.uc
        hook = self._hook_insn_invalid

        def fallback():
            try:
                return bool(hook(uc, None))
            except BaseException as e:
                if uc._hook_exception is None:
                    uc._hook_exception = e
                uc.emu_stop()
                return False
        err = self._exc_hook.install_insn(ctypes.cast(uclib.uc_hook_add, ctypes.c_void_p).value,
                                          UC_HOOK_INSN_INVALID, fallback)
        if err:
            raise UcError(err)

    # The WFEs of _hook_insn_invalid at a PC cached as WFE_AT or WFE_BEFORE
    # (a code hook left PC past the WFE), with no SEV in the block (the one that clears the event register, and the one that
    # sleeps under the C run loop) carried out in C by ExcHook's hook
    # (InfiniTime idle: ~440 an emulated second).  False: the Python hook.
    # Used while ``run`` runs and none of those steps is replaced.
    native_wfe = True
    _wfe_in_c = False

    # The run loop in C (ExcHook.run: the loop below, step for step) with
    # the native helpers.  False: the Python loop (the reference).
    native_loop = True
    # the methods the C loop carries out itself (the others it calls by
    # name): a subclass or an instance replacing one gets the Python loop
    _LOOP_STEPS = ("_after_slice", "_take_pending", "_start_slice", "_rebase", "sync_time",
                   "_idle_to_next_event", "_wake_condition", "sleeping", "best_pending",
                   "execution_priority", "active_priority", "group_prio", "exc_enabled")

    def _native_loop_ok(self) -> bool:
        h = self._exc_hook
        if h is None or not self.native_loop or not self.native_entries:
            return False
        return (unreplaced(self, _LOOP_ORIGINALS)
                and _clock_unreplaced(self.clock)
                and unreplaced(self.uc, _EMU_START))

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

    def _invalid_vector(self, exc: int, vec: int) -> None:
        """The vector of an exception entered in C is invalid (ExcHook calls it)."""
        self.hfsr |= HFSR_VECTTBL
        self._lockup(f"invalid vector {vec:#010x} for {self.exc_name(exc)} "
                     f"(VTOR={self.vtor:#010x})")

    def _unstacking_error(self, sp: int) -> None:
        """The frame of an exception return cannot be read (ExcHook calls it)."""
        self.cfsr |= 1 << 11  # BFSR.UNSTKERR
        self._lockup(f"unstacking error at SP={sp:#010x}")

    def map_mmio_native(self, base: int, size: int, name: str, slot) -> None:
        """Map an MMIO region served by emu.soc._mmio's C callbacks (``slot``
        holds the Python handlers they call; see emu/soc/bus.py)."""
        self._check_mmio_free(base, size, name)
        import ctypes

        from unicorn.unicorn_py3.unicorn import uclib

        from emu.soc import _mmio
        err = _mmio.map(ctypes.cast(uclib.uc_mmio_map, ctypes.c_void_p).value,
                        self.uc._uch.value, base, size, slot)
        if err:
            raise UcError(err)
        self._mmio_cfuncs.append(slot)          # keep it alive as long as the engine
        self.regions.append((base, base + size, "mmio", name))

    def read32(self, addr: int) -> int:
        return self._read_words(addr, 1)[0]

    def _read_words(self, addr: int, n: int) -> tuple:
        """``n`` little-endian words at ``addr`` (n in 1, 8, 17, 26); UcError
        as ``uc.mem_read`` raises it."""
        buf = self._membuf
        err = self._c_mem_read(self._uch, addr, buf, 4 * n)
        if err:
            raise UcError(err)
        return _WORDS[n].unpack_from(buf)

    def write32(self, addr: int, value: int) -> None:
        self.uc.mem_write(addr, struct.pack("<I", value & 0xFFFFFFFF))

    def read_mem(self, addr: int, size: int) -> bytes:
        """``size`` bytes of memory at ``addr`` (flash, RAM, FICR/UICR, ...).
        TypeError if ``addr`` or ``size`` is not an integer; ValueError if the
        range is outside the 32-bit address space or not all mapped memory."""
        addr, size = _mem_range(addr, size)
        if size > _MEM_CHECKED:
            self._check_mapped(addr, size)
        try:
            return bytes(self.uc.mem_read(addr, size))
        except UcError as e:
            raise ValueError(f"cannot read {size} bytes at {addr:#010x}: {e}") from None

    def write_mem(self, addr: int, data: bytes) -> None:
        """Write ``data`` (bytes-like) at ``addr``; the errors of :meth:`read_mem`."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        data = bytes(data)
        addr, size = _mem_range(addr, len(data))
        if size > _MEM_CHECKED:
            self._check_mapped(addr, size)
        try:
            self.uc.mem_write(addr, data)
        except UcError as e:
            raise ValueError(f"cannot write {len(data)} bytes at {addr:#010x}: {e}") from None

    def _check_mapped(self, addr: int, size: int) -> None:
        """ValueError unless [addr, addr + size) is all mapped memory (checked
        before Unicorn allocates a buffer for a large access)."""
        at, end = addr, addr + size
        while at < end:
            r = self.region_at(at)
            if r is None:
                raise ValueError(f"cannot access {size} bytes at {addr:#010x}: nothing is "
                                 f"mapped at {at:#010x}")
            at = r[1]

    def region_at(self, addr: int):
        for r in self.regions:
            if r[0] <= addr < r[1]:
                return r
        return None

    # ------------------------------------------------------------------
    # registers
    # ------------------------------------------------------------------
    def reg(self, rid: int) -> int:
        return self.uc.reg_read(rid)

    def set_reg(self, rid: int, value: int) -> None:
        self.uc.reg_write(rid, value & 0xFFFFFFFF)

    @property
    def pc(self) -> int:
        return self.uc.reg_read(A.UC_ARM_REG_PC)

    @pc.setter
    def pc(self, value: int) -> None:
        self.uc.reg_write(A.UC_ARM_REG_PC, value & ~1)

    def core_registers(self) -> dict:
        names = [f"r{i}" for i in range(13)] + ["sp", "lr", "pc", "xpsr", "msp", "psp",
                                                  "primask", "basepri", "faultmask", "control"]
        ids = _CORE_REGS + [A.UC_ARM_REG_SP, A.UC_ARM_REG_LR, A.UC_ARM_REG_PC, A.UC_ARM_REG_XPSR,
                            A.UC_ARM_REG_MSP, A.UC_ARM_REG_PSP, A.UC_ARM_REG_PRIMASK,
                            A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK, A.UC_ARM_REG_CONTROL]
        out = dict(zip(names, self.read_special(ids)))
        out["xpsr"] = (out["xpsr"] & ~0x1FF) | self.ipsr
        return out

    @property
    def ipsr(self) -> int:
        return self._ipsr

    # ------------------------------------------------------------------
    # time
    # ------------------------------------------------------------------
    @property
    def cycles(self) -> int:
        return self.cs.cycles

    def sync_time(self) -> int:
        """Bring clock.now up to the cycles executed so far (called from MMIO)."""
        now = self._cycle_base_ticks + (self.cs.cycles - self._cycle_base) * self.cycle_ticks
        if now > self.clock.now:
            self.clock.now = now
        return self.clock.now

    def executing_from_flash(self) -> bool:
        """The core is running code fetched from flash (not RAM): what the
        NVMC's stall depends on.  Inside an MMIO callback the PC is the
        block's start, which lies in the same memory as the access."""
        if not self._running:
            return False
        pc = self.uc.reg_read(A.UC_ARM_REG_PC)
        return any(s <= pc < e for (s, e) in self._flash_regions)

    stalls = 0            # times the core was held (stall_until)
    stalled_ticks = 0     # for how long, in all

    def stall_until(self, until: int) -> None:
        """Hold the core until the tick ``until``: the instruction being
        executed takes that long (PS v1.4 section 11: the CPU is halted
        while the NVMC writes or erases when it fetches from flash).  The
        cycles pass for the core (DWT CYCCNT counts them, the next access
        sees the later time); the events due meanwhile fire at their own
        times, in order, and the interrupts they raise are taken after it.
        Called from an MMIO callback inside a slice, like the run loop's
        steps in a sleeping WFE (_sleep_in_hook), or at a slice boundary.
        Only while the core runs; a halt an event raises (lockup) is raised
        again after the slice.  A run's deadline inside the stall is
        passed: the stall is not cut."""
        clock = self.clock
        cs = self.cs
        if not self._running:
            return
        in_slice = cs.in_slice
        if in_slice:
            cs.in_slice = 0
            self.slice_end()
        self.sync_time()
        start = clock.now
        if until <= start:
            if in_slice:
                cs.in_slice = 1
            return
        # whole cycles: the core's clock keeps its 8-tick grid
        n = -(-(until - start) // self.cycle_ticks)
        until = start + n * self.cycle_ticks
        try:
            while True:
                clock.run_due()
                nxt = clock.next_event_time()
                if nxt > until:
                    break
                clock.now = max(clock.now, nxt)
        except BaseException as e:   # CpuHalt (lockup): raised again after the slice
            self._halt_in_hook = e
            cs.stop_flag = 1
        clock.now = max(clock.now, until)
        cs.cycles += n
        self.stalls += 1
        self.stalled_ticks += n * self.cycle_ticks
        self._rebase()
        if in_slice:
            # the slice goes on to the next event or the run's end; the
            # stop and entry flags the events raised stay
            nd = min(clock.next_event_time(), self._run_until)
            cs.deadline = cs.cycles + max(1, -(-(nd - clock.now) // self.cycle_ticks))
            cs.in_slice = 1

    def time_now(self) -> int:
        """The current tick, as :meth:`sync_time` would make it, without
        moving ``clock.now``: inside a slice, the time of the cycles executed
        so far (an MMIO callback's access time), and inside a clock event's
        callback the tick it was due (``clock.firing``); for instruments that
        note the time of a change (emu/power.py) without disturbing the clock."""
        firing = self.clock.firing
        if firing is not None:
            return firing
        now = self._cycle_base_ticks + (self.cs.cycles - self._cycle_base) * self.cycle_ticks
        return now if now > self.clock.now else self.clock.now

    def _rebase(self) -> None:
        cs = self.cs
        self._cycle_base_ticks = cs.base_ticks = self.clock.now
        self._cycle_base = cs.base_cycles = cs.synced_cycles = cs.cycles
        if self._loop_watch:
            # A new slice (or the end of a stall): clock events may have run
            # since the polling loop's last iteration read its registers, so
            # that iteration proves nothing about the next ones (InfiniTime's
            # SpiMaster::Read polled SPIM EVENTS_END, the slice ended at the
            # loop's head when END fired, and the iteration before it, which
            # had read END = 0, let the loop be counted on to the next event)
            cs.lp_have = 0

    def request_stop(self) -> None:
        """Ask the run loop to regain control at the next block boundary."""
        self.cs.stop_flag = 1

    def deadline_changed(self) -> None:
        """The scheduler's earliest event moved earlier: shorten the slice."""
        nd = self.clock.next_deadline
        if nd < NEVER and self._running:
            cyc_deadline = self._cycle_base + max(0, -(-(nd - self._cycle_base_ticks)
                                                           // self.cycle_ticks))
            if cyc_deadline < self.cs.deadline:
                self.cs.deadline = cyc_deadline

    # ------------------------------------------------------------------
    # reset
    # ------------------------------------------------------------------
    def reset_state(self) -> None:
        """Power-on / system reset state of the core, NVIC and SCB."""
        n = 16 + self.num_irq
        self.prio = [0] * n
        self.prio[RESET], self.prio[NMI], self.prio[HARDFAULT] = -3, -2, -1
        self.irq_enabled = 0      # bit i = IRQ i
        self.pending = 0          # bit e = exception number e
        self.active = 0
        self.irq_level = 0        # bit i = IRQ line i asserted
        self._ipsr = 0
        self.vtor = 0
        self.prigroup = 0
        self.scr = 0
        self.ccr = 0x200          # STKALIGN
        self.shcsr = 0
        self.cfsr = 0
        self.hfsr = 0
        self.mmfar = 0
        if getattr(self, "mpu", None) is not None:
            self.mpu.reset()
        self.bfar = 0
        self.cpacr = 0
        self.fpccr = 0xC0000000   # ASPEN | LSPEN
        self.fpcar = 0
        self.fpdscr = 0
        self.demcr = 0
        self.dwt_ctrl = 0x40000000
        self._cyccnt_base = 0     # CYCCNT = cycles - base (when enabled)
        self._cyccnt_frozen = 0
        self.event_register = 0
        self.sleeping = False
        self.sleep_kind = ""
        self.powered_off = False  # System OFF: executes nothing until a reset
        self.locked_up = False
        self._fault_history: list = []
        self._running = False
        self.systick.reset()
        self.cs.stop_flag = 0
        self.cs.entry_flag = 0
        self.cs.mask_watch = 0

    @property
    def sleeping(self) -> bool:
        """Asleep in WFI/WFE (or SLEEPONEXIT); ``on_sleep`` hears every change."""
        return self._sleeping

    @sleeping.setter
    def sleeping(self, asleep: bool) -> None:
        asleep = bool(asleep)
        if asleep != self._sleeping:
            self._sleeping = asleep
            for cb in self.on_sleep:
                cb(asleep)

    def power_off(self) -> None:
        """The core loses power (nRF System OFF): it executes nothing and takes
        no exception until the next reset; time still advances (the run loop
        idles to the next event).  Called from the MMIO write that powers
        off, it stops Unicorn at once, mid-block: the store would be
        re-executed on resume (UNICORN-NOTES), but a powered-off core never
        resumes - it restarts from the reset vector."""
        self.powered_off = True
        self.systick.reset()
        self.request_stop()
        if self._running:
            self.uc.emu_stop()

    def reset(self, vtor: Optional[int] = None) -> None:
        """Reset the core: SP and PC from the vector table at ``vtor``."""
        self.reset_state()
        if vtor is not None:
            self.vtor = vtor
        uc = self.uc
        sp = self.read32(self.vtor)
        pc = self.read32(self.vtor + 4)
        for rid in _CORE_REGS:
            uc.reg_write(rid, 0)
        uc.reg_write(A.UC_ARM_REG_CONTROL, 0)
        uc.reg_write(A.UC_ARM_REG_IPSR, 0)
        uc.reg_write(A.UC_ARM_REG_PRIMASK, 0)
        if self.profile == "m4":
            uc.reg_write(A.UC_ARM_REG_BASEPRI, 0)
            uc.reg_write(A.UC_ARM_REG_FAULTMASK, 0)
        uc.reg_write(A.UC_ARM_REG_MSP, sp & ~3)
        uc.reg_write(A.UC_ARM_REG_PSP, 0)
        uc.reg_write(A.UC_ARM_REG_LR, 0xFFFFFFFF)
        uc.reg_write(A.UC_ARM_REG_PC, pc & ~1)
        self._refresh_flags()
        self.reset_pc = pc & ~1

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
        if os.environ.get("PINETIME_EMU_PURE_PYTHON") or not getattr(self.counter, "native",
                                                                      False):
            return None
        try:
            from emu.soc import _mmio   # type: ignore[attr-defined]
        except ImportError:
            return None
        return _mmio.FlashGuard()      # its hooks: _add_write_prot_hooks

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
        g = self._flash_guard
        if g is not None:
            from unicorn.unicorn_py3.unicorn import uclib
            addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value   # noqa: E731
            fix = addr(uclib.uc_reg_write) if self._guard_fixes_it else 0
            for b, e in ranges:
                err, hh = g.install(addr(uclib.uc_hook_add), uc._uch.value,
                                    UC_HOOK_MEM_WRITE_PROT, fix, A.UC_ARM_REG_EPSR, b, e)
                if err:
                    raise UcError(err)
                self._mem_hooks.append(("c", hh))
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

        from emu.soc import _mmio
        addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value   # noqa: E731
        self._del_mem_hooks()
        self._add_mem_hooks(((0, base - 1), (base + size, (1 << 64) - 1)))
        pm = _mmio.PageMap()
        err = pm.install(addr(uclib.uc_hook_add), self.uc._uch.value, 1 << 17,   # TLB_FILL
                         addr(uclib.uc_reg_write) if self._guard_fixes_it else 0,
                         A.UC_ARM_REG_EPSR, base, size, addr(uclib.uc_ctl))
        if err:
            raise UcError(err)
        self.uc.ctl_set_tlb_mode(1)          # UC_TLB_VIRTUAL
        self._flush_tlb()
        self.pagemap = pm
        self._fast_ram_range = (base, size)

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
        self._trap = ("write_prot", address, uc.reg_read(A.UC_ARM_REG_PC), size, value)
        return False

    # What an invalid-instruction stop at a PC in flash means, remembered per
    # PC (the static part of _hook_insn_invalid's decision: it reads memory and
    # disassembles; InfiniTime's idle loop stops here ~440 times a second).
    # Flash code changes only through invalidate_code(), which forgets it.
    WFE_AT, WFE_BEFORE, NOT_WFE = 1, 2, 0
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
    # The C run loop (ExcHook.run) sleeps faster than this hook's Python:
    # under it a WFE that sleeps ends the slice (InfiniTime idle, ~300 sleeps
    # an emulated second: 21.5x -> 22.8x real time, three pairs)
    _c_loop = False
    _run_until = 0
    _run_should_stop: Optional[Callable[[], bool]] = None
    _run_flags: tuple = ()

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
            self.cs.skip_on = 0

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

    def _sleep_to_loop(self, uc) -> bool:
        """End the slice asleep at the WFE: the run loop goes on from the top."""
        self._trap = ("returned",)
        uc.emu_stop()
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
        try:
            code = bytes(self.uc.mem_read(addr, size))
        except UcError:
            return False
        if self._needs_special_hooks(code):
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
        return b"\x40\xbf" in code or (self.profile == "m4" and bool(code) and (
            self._has_div(code) or b"\x14\x88" in code))

    @staticmethod
    def _has_div(code: bytes) -> bool:
        # SDIV/UDIV encodings: first halfword 0xFB9x / 0xFBBx
        for i in range(0, len(code) - 1, 2):
            if code[i + 1] == 0xFB and (code[i] & 0xF0) in (0x90, 0xB0):
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
            cs.skip_on = self._loops_skippable()
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
                cs.skip_on = 0
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
                _, address, pc, size, value = trap
                self._handle_flash_write(address, pc, size)
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
                # fill (_fast_ram): the fault Unicorn's own TLB raises
                self.take_fault(MEMMANAGE, MMFSR_IACCVIOL, pc, f"instruction fetch fault at "
                                f"{pc:#010x}")
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

    def _handle_flash_write(self, address: int, pc: int, size: int) -> None:
        """A CPU store into flash: re-execute it with flash writable, then let
        the NVMC decide what the cells keep (bits can only be cleared)."""
        uc = self.uc
        lo = address & ~0xFFF
        hi = (address + 16 + 0xFFF) & ~0xFFF
        before = bytes(uc.mem_read(lo, hi - lo))
        cs = self.cs
        saved = (cs.deadline, cs.stop_flag, cs.mask_watch, cs.entry_flag)
        cs.deadline = (1 << 64) - 1
        cs.stop_flag = 0
        cs.mask_watch = 0
        cs.entry_flag = 0
        skip = self._loop_watch and cs.skip_on
        if skip:
            cs.skip_on = 0
        uc.mem_protect(lo, hi - lo, UC_PROT_ALL)
        # A translation block cached before Unicorn's instruction-count hook
        # existed ignores count=1 (it ran on to the NVMC CONFIG=Ren store
        # after the flash write on the micro:bit): retranslate the store's block.
        here = uc.reg_read(A.UC_ARM_REG_PC)
        uc.ctl_remove_cache(here, here + 4)
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
            after = bytes(uc.mem_read(lo, hi - lo))
            uc.mem_protect(lo, hi - lo, UC_PROT_READ | UC_PROT_EXEC)
            cs.deadline, cs.stop_flag, cs.mask_watch, cs.entry_flag = saved
            if skip:
                cs.skip_on = 1
        if after != before:
            self.sync_time()        # the store's time, for the NVMC's busy time
            if self.flash_write_handler is not None:
                final = self.flash_write_handler(lo, before, after)
            else:
                log.warning("write to flash at %#010x ignored (no NVMC)", address)
                final = before
            uc.mem_write(lo, final)
            self.invalidate_code(lo, hi)

    svc_calls = 0
    tail_chains = 0
    returns_in_hook = 0       # exception returns that did not end their slice
    # set by the SoC: fn(address) -> True when a CPU store there may change the
    # cells (NVMC in write mode); None means always take the slow path
    flash_write_enabled: Optional[Callable[[int], bool]] = None
    _slice_pc = -1
    _slice_blocks = 0

    @staticmethod
    def slice_end() -> None:
        """Called after every slice, before any other Python runs: the bus
        replaces it with its hand-over of bytes completed in C (streams)."""


# the methods as defined here, for CortexM._native_loop_ok (a test's
# monkeypatch of the class replaces one: then the Python loop runs)
_LOOP_ORIGINALS = {n: getattr(CortexM, n) for n in CortexM._LOOP_STEPS}
_CLOCK_ORIGINALS = {n: getattr(Clock, n) for n in ("run_due", "next_event_time", "_clean")}
_EMU_START = {"emu_start": Uc.emu_start}


def _clock_unreplaced(clock) -> bool:
    """The clock's run_due, next_event_time and _clean are its class's own:
    emu.clock.Clock's (unless replaced), or the C clock's (emu.soc._mmio.Clock,
    whose class cannot be patched) not shadowed on the instance."""
    if type(clock).__module__ == "emu.soc._mmio" and type(clock).__name__ == "Clock":
        return not set(_CLOCK_ORIGINALS) & set(vars(clock))
    return unreplaced(clock, _CLOCK_ORIGINALS)
# what ExcHook's invalid-instruction hook (the WFEs in C) stands for
_WFE_ORIGINALS = {n: getattr(CortexM, n) for n in (
    "_hook_insn_invalid", "_wfe_in_hook", "_sleep_in_hook", "_wfe_kind_at", "_wfe_before")}
# what ExcHook.pend_write (the SCS's ISPR/ICSR pends in C) stands for
PEND_ORIGINALS = {n: getattr(CortexM, n) for n in (
    "set_pending", "_pending_changed", "_pending_to_enter", "best_pending",
    "execution_priority", "active_priority", "group_prio", "exc_enabled")}


def pends_in_c(cpu) -> bool:
    """The CPU's pends may be carried out in C (ExcHook.pend_write): the
    native helpers, the native entries on, none of the steps replaced."""
    if getattr(cpu, "_exc_hook", None) is None or not cpu.native_entries:
        return False
    return unreplaced(cpu, PEND_ORIGINALS)


def _capstone_to_uc_reg(csreg: int) -> int:
    from capstone import arm as C
    table = {C.ARM_REG_R0 + i: A.UC_ARM_REG_R0 + i for i in range(13)}
    table.update({C.ARM_REG_SP: A.UC_ARM_REG_SP, C.ARM_REG_LR: A.UC_ARM_REG_LR})
    return table.get(csreg, A.UC_ARM_REG_R0)


class SysTick:
    """SysTick timer, counted lazily from the CPU clock (64 MHz; CLKSOURCE=1).

    The nRF52832 has no external SysTick reference (CALIB.NOREF = 1): with
    CLKSOURCE = 0 the counter is modelled on the CPU clock too and that is
    logged once.
    """

    def __init__(self, cpu: CortexM):
        self.cpu = cpu
        self.event = cpu.clock.event("systick", self._underflow)
        self.reset()

    def reset(self) -> None:
        self.csr = 0
        self.rvr = 0
        self.countflag = 0
        self._v0 = 0          # value at _t0
        self._t0 = 0
        if hasattr(self, "event"):
            self.event.cancel()

    @property
    def enabled(self) -> bool:
        return bool(self.csr & 1)

    def _elapsed(self) -> int:
        return (self.cpu.clock.now - self._t0) // self.cpu.cycle_ticks

    def value(self) -> int:
        if not self.enabled:
            return self._v0
        e = self._elapsed()
        if e <= self._v0:
            return self._v0 - e
        if self.rvr == 0:
            return 0
        return self.rvr - ((e - self._v0 - 1) % (self.rvr + 1))

    def _fold(self) -> None:
        self._v0 = self.value()
        self._t0 = self.cpu.clock.now

    def _arm(self) -> None:
        self.event.cancel()
        if not self.enabled:
            return
        if self._v0 > 0:
            delta = self._v0
        elif self.rvr > 0:
            delta = self.rvr + 1
        else:
            return
        # schedule at the exact tick the counter reaches 0
        self.event.schedule_at(self._t0 + delta * self.cpu.cycle_ticks)

    def _underflow(self) -> None:
        self._v0 = 0
        self._t0 = self.cpu.clock.now
        self.countflag = 1
        if self.csr & 2:
            self.cpu.set_pending(SYSTICK)
        self._arm()

    def write_csr(self, v: int) -> None:
        self._fold()
        self.csr = v & 0x7
        self._arm()

    def read_csr(self) -> int:
        v = self.csr | (self.countflag << 16)
        self.countflag = 0
        return v

    def write_rvr(self, v: int) -> None:
        self.rvr = v & 0xFFFFFF
        self._fold()
        self._arm()

    def write_cvr(self, _v: int) -> None:
        self._v0 = 0
        self._t0 = self.cpu.clock.now
        self.countflag = 0
        self._arm()
