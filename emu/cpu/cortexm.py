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
import struct
from typing import Callable, Optional

from unicorn import (UC_ARCH_ARM, UC_HOOK_INSN_INVALID, UC_HOOK_INTR,
                     UC_MODE_THUMB, UC_PROT_EXEC,
                     UC_PROT_READ, Uc, UcError)
from unicorn import arm_const as A

from emu.clock import CPU_TICKS, NEVER, Clock
from emu.cpu import cycles as cyc
from emu.cpu import fastregs
from emu.cpu.armv7m import *  # noqa: F401,F403  (the facts, as emu.cpu.cortexm.<NAME>)
from emu.cpu.armv7m import (HARDFAULT, NMI, RESET, StopReason, _CORE_REGS,
                            _EXC_IDS, _MEM_CHECKED, _WORDS,
                            _mem_range)  # noqa: F401
from emu.soc.ops import Steps, is_native_clock, unreplaced

from emu.cpu.exceptions import Exceptions
from emu.cpu.hooks import Hooks
from emu.cpu.nvic import Nvic
from emu.cpu.runloop import RunLoop
from emu.cpu.systick import SysTick  # noqa: F401  (emu.cpu.cortexm.SysTick)

log = logging.getLogger("emu.cpu")


class CortexM(Nvic, Exceptions, Hooks, RunLoop):
    """One Cortex-M core with its NVIC, SCB, SysTick and DWT state.

    Parameters: ``profile`` is ``"m4"`` (ARMv7E-M with FPU) or ``"m0"``
    (ARMv6-M); ``num_irq`` external interrupts; ``prio_bits`` implemented
    priority bits (3 on the nRF52832, 2 on the nRF51).

    Its parts live beside it, one concern each: nvic.py (lines, pends,
    priorities), exceptions.py (entry, return, faults), hooks.py (the
    engine's hooks and block costs), runloop.py (the run loop); this file
    holds the core (memory, registers, time, reset) and the switches that
    put the native fast paths in (emu.cpu._core: the same steps in C).
    """
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_cyccnt_base", "_cyccnt_frozen", "_cycle_base", "_cycle_base_ticks",
                "_fault_history", "_sleeping", "ccr", "clock", "cpacr", "cycle_ticks", "demcr",
                "dwt_ctrl", "exit_code", "fpcar", "fpccr", "fpdscr", "instructions_hint",
                "irq_enabled", "mpu_dirty", "num_irq", "powered_off", "prigroup", "prio",
                "prio_bits", "prio_mask", "profile", "reset_pc", "scr", "shcsr",
                "stall_cut", "stalled_ticks", "stalls", "vtor")
    STRUCTURE = ("_c_mem_read", "_c_mem_write", "_codebuf", "_costed_pages", "_exc_hook", "_flash_guard",
                 "_flash_regions", "_membuf", "_mmio_cfuncs", "_msr_hooks", "_uch", "_xregs",
                 "bkpt_handler", "cost_model", "counter", "flash_write_handler", "itm_handler",
                 "mpu", "on_exception", "on_sleep", "ram_host", "regions", "reset_handler",
                 "slice_end", "svc_handler", "symbolize", "systick", "uc")

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
        self._codebuf = ctypes.create_string_buffer(256)     # a block's bytes (_read_code)
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
        self.cost_model = cyc.CostModel(profile, native=not force_python_counter)
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
        self.raw_hook_add(htype, self.raw_callback(cfunc, fn, on_error), 1, 0)

    def raw_callback(self, cfunc: str, fn, on_error):
        """``fn`` as a ctypes callback of type ``cfunc`` (kept alive as long as
        the engine), for raw_hook_add: made once, registered over as many
        ranges as wanted (the binding's hook_add builds one a call: 42 us an
        add and delete, where a raw one costs a few)."""
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
        self._mmio_cfuncs.append(fptr)          # keep it alive as long as the engine
        return fptr

    def raw_hook_add(self, htype: int, fptr, begin: int, end: int) -> int:
        """Register ``fptr`` (raw_callback) for ``htype`` over [begin, end]
        ((1, 0): everything); the hook's handle."""
        from unicorn.unicorn_py3 import unicorn as ub
        handle = ub.uc_hook_h()
        err = ub.uclib.uc_hook_add(self.uc._uch, ctypes.byref(handle), htype, fptr,
                                   ctypes.c_void_p(0), ctypes.c_uint64(begin),
                                   ctypes.c_uint64(end))
        if err:
            raise UcError(err)
        return handle.value

    def raw_hook_del(self, handle: int) -> None:
        from unicorn.unicorn_py3 import unicorn as ub
        err = ub.uclib.uc_hook_del(self.uc._uch, ub.uc_hook_h(handle))
        if err:
            raise UcError(err)

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

        from emu import native
        core = native.load("emu.cpu._core")
        if core is None:
            return None
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
        hook = core.ExcHook()
        err = hook.install(addr(uclib.uc_hook_add), self._uch.value, UC_HOOK_INTR,
                           addr(uclib.uc_emu_stop), self, self._xregs, uc, fallback,
                           self.profile == "m4", self.prio_mask,
                           (A.UC_ARM_REG_PRIMASK, A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK,
                            A.UC_ARM_REG_PC),
                           self.counter.state_addr)
        if err:
            raise UcError(err)
        if is_native_clock(self.clock):        # the C loop runs on the C clock only
            hook.loop_setup(addr(uclib.uc_emu_start), self.clock, UcError,
                            (StopReason.DEADLINE, StopReason.BREAK, StopReason.SLEEP,
                             StopReason.OFF))
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

    def map_mmio_native(self, base: int, size: int, name: str, slot) -> None:
        """Map an MMIO region served by emu.soc._mmio's C callbacks (``slot``
        holds the Python handlers they call; see emu/soc/bus.py)."""
        self._check_mmio_free(base, size, name)
        import ctypes

        from unicorn.unicorn_py3.unicorn import uclib

        from emu import native
        err = native.load("emu.soc._mmio").map(ctypes.cast(uclib.uc_mmio_map, ctypes.c_void_p).value,
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

    reset_pc = 0          # where the last reset started (set by reset())
    stalls = 0            # times the core was held (stall_until)
    stalled_ticks = 0     # for how long, in all
    stall_cut = False     # the power is gone (emu/powercut.py): a stall ends now

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
        passed: the stall is not cut; a power cut (``stall_cut``) is."""
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
                if self.stall_cut:
                    # the power went during the stall (emu/powercut.py): it
                    # ends here, on the cycle grid
                    n = -(-(clock.now - start) // self.cycle_ticks)
                    until = start + n * self.cycle_ticks
                    break
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

    # What an invalid-instruction stop at a PC in flash means, remembered per
    # PC (the static part of _hook_insn_invalid's decision: it reads memory and
    # disassembles; InfiniTime's idle loop stops here ~440 times a second).
    # Flash code changes only through invalidate_code(), which forgets it.
    WFE_AT, WFE_BEFORE, NOT_WFE = 1, 2, 0


# the methods as defined here, for CortexM._native_loop_ok (a test's
# monkeypatch of the class replaces one: then the Python loop runs)
_LOOP_ORIGINALS = Steps({n: getattr(CortexM, n) for n in CortexM._LOOP_STEPS})
_CLOCK_ORIGINALS = {n: getattr(Clock, n) for n in ("run_due", "next_event_time", "_clean")}
_EMU_START = Steps({"emu_start": Uc.emu_start})


def _clock_unreplaced(clock) -> bool:
    """The C run loop may drive this clock: the C clock (emu._clock.Clock,
    whose class cannot be patched), its run_due, next_event_time and _clean
    not shadowed on the instance.  A machine on emu.clock.Clock (the
    reference) runs the Python loop."""
    return is_native_clock(clock) and vars(clock).keys().isdisjoint(_CLOCK_ORIGINALS)


# (re-exported: the SCS asks whether its pends may be done in C)
from emu.cpu.nvic import PEND_ORIGINALS, pends_in_c  # noqa: E402,F401
