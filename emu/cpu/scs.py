"""System Control Space (0xE000E000), ITM (0xE0000000) and DWT (0xE0001000).

Registers as in the ARMv7-M Architecture Reference Manual, B3.2-B3.4 and
C1.7-C1.8: ICTR, ACTLR, SysTick (CSR/RVR/CVR/CALIB), NVIC (ISER, ICER, ISPR,
ICPR, IABR, IPR with byte access, STIR), SCB (CPUID, ICSR, VTOR, AIRCR with
SYSRESETREQ, SCR, CCR, SHPR1-3, SHCSR, CFSR/HFSR/DFSR/MMFAR/BFAR/AFSR,
CPACR), DEMCR, FPCCR/FPCAR/FPDSCR, MVFR0/1, DWT CTRL and CYCCNT, ITM
stimulus ports (port 0 is the debug text channel), TER and TCR.

Sub-word accesses work on every register (byte lanes are merged), as the
NVIC and SHPR registers require.

Not modelled: DWT comparators (the GDB stub implements watchpoints itself),
the FPB (stored only), ITM timestamps and trace packets, the debug halting
control registers (DHCSR reads as "no debugger").  The MPU's registers
(0xD90-0xDB8) are emu/cpu/mpu.py's.
"""
from __future__ import annotations

import logging
from typing import Optional

from emu.cpu.armv7m import BUSFAULT, MEMMANAGE, NMI, PENDSV, SVCALL, SYSTICK, USAGEFAULT
from emu.cpu.cortexm import CortexM
from emu.cpu.nvic import pends_in_c

from emu.soc.ops import MODE_W1C, MODE_W1S, R_ATTR, R_CALL, R_CONST, R_CYCLES, W_BITS, W_CALL, Op

log = logging.getLogger("emu.cpu.scs")

SCS_BASE = 0xE000E000
ITM_BASE = 0xE0000000
DWT_BASE = 0xE0001000


class SystemControlSpace:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_logged", "cpuid", "dwt", "itm_tcr", "itm_ter", "page", "reset_requested",
                "storage", "v6m", "v6m_absent")
    STRUCTURE = ("cpu", "write_word")
    def __init__(self, cpu: CortexM, *, cpuid: Optional[int] = None, has_systick: bool = True):
        self.cpu = cpu
        # ARMv6-M (Cortex-M0): registers the architecture or this core does
        # not implement read as zero and ignore writes (logged once).
        self.v6m = cpu.profile == "m0"
        self.v6m_absent = set(V6M_ABSENT) | (set() if has_systick else set(SYSTICK_REGS))
        self.cpuid = cpuid if cpuid is not None else (0x410FC241 if cpu.profile == "m4"
                                                      else 0x410CC200)
        self.storage: dict = {}
        self._logged: set = set()
        self.reset_requested = False
        self.itm_ter = 0
        self.itm_tcr = 0

    def map(self, scs_on_bus: bool = False) -> None:
        """SCS, ITM and FPB through Python callbacks; the DWT page is mapped by
        the SoC on its peripheral bus (``self.dwt``), where CYCCNT is an op.
        ``scs_on_bus``: the SoC maps the SCS page on its bus too (``self.page``),
        where the NVIC's pending words and ICSR are read by ops."""
        # raw: Unicorn's (handle, offset, size[, value], user_data) are the
        # callbacks' own parameters (the handle in place of uc, unused)
        if not scs_on_bus:
            self.cpu.map_mmio(SCS_BASE, 0x1000, "SCS", self._scs_read, self._scs_write,
                              raw=True)
        self.cpu.map_mmio(ITM_BASE, 0x1000, "ITM", self._dbg_read, self._dbg_write)
        self.cpu.map_mmio(DWT_BASE + 0x1000, 0x1000, "FPB",
                          lambda uc, off, size, ud: self._dbg_read(uc, off + 0x2000, size, ud),
                          lambda uc, off, size, value, ud:
                          self._dbg_write(uc, off + 0x2000, size, value, ud))
        self.dwt = DwtPage(self)
        self.page = ScsPage(self)

    def _unknown(self, base: int, off: int, what: str) -> None:
        key = (base, off)
        if key not in self._logged:
            self._logged.add(key)
            log.info("%s of unmodelled system register %#010x (stored)", what, base + off)

    # -- SCS ------------------------------------------------------------
    def _scs_read(self, uc, offset, size, _ud):
        try:
            self.cpu.sync_time()
            word = self.read_word(offset & ~3)
            shift = (offset & 3) * 8
            return (word >> shift) & ((1 << (size * 8)) - 1)
        except Exception:  # never let a Python error escape into Unicorn
            log.exception("SCS read at %#x", SCS_BASE + offset)
            return 0

    def _scs_write(self, uc, offset, size, value, _ud):
        try:
            self.cpu.sync_time()
            shift = (offset & 3) * 8
            lanes = ((1 << (size * 8)) - 1) << shift
            self.write_word(offset & ~3, (value << shift) & lanes, lanes)
        except Exception:
            log.exception("SCS write at %#x", SCS_BASE + offset)

    def read_word(self, off: int) -> int:
        cpu = self.cpu
        m4 = cpu.profile == "m4"
        if self.v6m and (off in self.v6m_absent or 0x300 <= off < 0x380):
            self._unknown(SCS_BASE, off, "read (not implemented on this Cortex-M0)")
            return 0
        if self.v6m and off == 0xD14:
            return 0x208              # CCR: STKALIGN and UNALIGN_TRP, read-only
        if off == 0x004:
            return max(0, (cpu.num_irq + 31) // 32 - 1)
        if 0x010 <= off <= 0x01C:
            st = cpu.systick
            if off == 0x010:
                return st.read_csr()
            if off == 0x014:
                return st.rvr
            if off == 0x018:
                return st.value()
            return 0xC0000000 | 0  # CALIB: NOREF, SKEW, TENMS unknown
        if 0x100 <= off < 0x180:
            return self._irq_word(cpu.irq_enabled, off - 0x100)
        if 0x180 <= off < 0x200:
            return self._irq_word(cpu.irq_enabled, off - 0x180)
        if 0x200 <= off < 0x280:
            return self._irq_word(cpu.pending >> 16, off - 0x200)
        if 0x280 <= off < 0x300:
            return self._irq_word(cpu.pending >> 16, off - 0x280)
        if 0x300 <= off < 0x380:
            return self._irq_word(cpu.active >> 16, off - 0x300)
        if 0x400 <= off < 0x400 + cpu.num_irq:
            v = 0
            for i in range(4):
                n = (off - 0x400) + i
                if n < cpu.num_irq:
                    v |= (cpu.prio[16 + n] & 0xFF) << (8 * i)
            return v
        if off == 0xD00:
            return self.cpuid
        if off == 0xD04:
            return self._icsr()
        if off == 0xD08:
            return cpu.vtor
        if off == 0xD0C:
            return 0xFA050000 | (cpu.prigroup << 8)
        if off == 0xD10:
            return cpu.scr
        if off == 0xD14:
            return cpu.ccr
        if 0xD18 <= off <= 0xD20:
            v = 0
            for i in range(4):
                exc = 4 + (off - 0xD18) + i
                p = cpu.prio[exc]
                v |= (max(p, 0) & 0xFF) << (8 * i)
            return v
        if off == 0xD24:
            return self._shcsr()
        if off == 0xD28:
            return cpu.cfsr
        if off == 0xD2C:
            return cpu.hfsr
        if off == 0xD30:
            return 0
        if off == 0xD34:
            return cpu.mmfar
        if off == 0xD38:
            return cpu.bfar
        if off == 0xD88:
            return cpu.cpacr if m4 else 0
        if 0xD90 <= off <= 0xDB8:
            return cpu.mpu.read(off) if cpu.mpu is not None else 0   # emu/cpu/mpu.py
        if off == 0xDF0:
            return 0  # DHCSR: no debugger
        if off == 0xDFC:
            return cpu.demcr
        if off == 0xF34 and m4:
            return cpu.fpccr
        if off == 0xF38 and m4:
            return cpu.fpcar
        if off == 0xF3C and m4:
            return cpu.fpdscr
        if off == 0xF40 and m4:
            return 0x10110021  # MVFR0: single precision
        if off == 0xF44 and m4:
            return 0x11000011  # MVFR1
        if 0xFD0 <= off < 0x1000:
            return 0
        if off not in self.storage:
            self._unknown(SCS_BASE, off, "read")
        return self.storage.get(off, 0)

    def write_word(self, off: int, value: int, lanes: int) -> None:
        cpu = self.cpu
        if self.v6m and (off in self.v6m_absent or off == 0xD14 or 0x300 <= off < 0x380):
            self._unknown(SCS_BASE, off, "write (not implemented on this Cortex-M0)")
            return

        if 0x280 <= off < 0x300:
            # ICPR first (FreeRTOS writes it ~680 times an emulated second):
            # clear_pending changes only lines that are pending, or asserted
            # and not active (pended again at once); mostly neither
            bits = self._irq_bits(value, off - 0x280)
            bits &= (cpu.pending >> 16) | (cpu.irq_level & ~(cpu.active >> 16))
            for n in _bit_indices(bits):
                cpu.clear_pending(16 + n)
            return
        if 0xD90 <= off <= 0xDB8 and cpu.mpu is not None:
            # the MPU's registers next: an RTOS with userspace reprograms them
            # at every thread switch (Zephyr's kernel/sleep: 475 000 writes in
            # 3.85 emulated s), and each went through every test below
            mpu = cpu.mpu
            mpu.write(off, (mpu.read(off) & ~lanes) | (value & lanes))
            return
        m4 = cpu.profile == "m4"

        def merged(old: int) -> int:
            return (old & ~lanes) | (value & lanes)

        if 0x010 <= off <= 0x018:
            st = cpu.systick
            if off == 0x010:
                if not (value & 4) and value & 1 and (value & lanes & 1):
                    if ("systick", 0) not in self._logged:
                        self._logged.add(("systick", 0))
                        log.info("SysTick CLKSOURCE=0 (no external reference on this chip): "
                                 "counting CPU cycles")
                st.write_csr(merged(st.csr))
            elif off == 0x014:
                st.write_rvr(merged(st.rvr))
            else:
                st.write_cvr(value)
            return
        if 0x100 <= off < 0x180:
            bits = self._irq_bits(value, off - 0x100)
            cpu.irq_enabled |= bits
            if bits & (cpu.pending >> 16):
                cpu.request_stop()
            return
        if 0x180 <= off < 0x200:
            cpu.irq_enabled &= ~self._irq_bits(value, off - 0x180)
            return
        if 0x200 <= off < 0x280:
            bits = self._irq_bits(value, off - 0x200)
            for n in _bit_indices(bits):
                cpu.set_pending(16 + n)
            return
        if 0x400 <= off < 0x400 + cpu.num_irq:
            for i in range(4):
                if lanes & (0xFF << (8 * i)):
                    n = (off - 0x400) + i
                    if n < cpu.num_irq:
                        cpu.prio[16 + n] = (value >> (8 * i)) & cpu.prio_mask
            cpu.request_stop()
            return
        if off == 0xD04:
            if value & (1 << 31):
                cpu.set_pending(NMI)
            if value & (1 << 28):
                cpu.set_pending(PENDSV)
            if value & (1 << 27):
                cpu.clear_pending(PENDSV)
            if value & (1 << 26):
                cpu.set_pending(SYSTICK)
            if value & (1 << 25):
                cpu.clear_pending(SYSTICK)
            return
        if off == 0xD08:
            cpu.vtor = merged(cpu.vtor) & 0xFFFFFF80
            return
        if off == 0xD0C:
            if lanes != 0xFFFFFFFF or (value >> 16) != 0x05FA:
                log.info("AIRCR write without VECTKEY ignored (%#010x)", value)
                return
            if m4:
                cpu.prigroup = (value >> 8) & 7
            if value & 4:  # SYSRESETREQ
                self.reset_requested = True
                cpu.request_stop()
            return
        if off == 0xD10:
            cpu.scr = merged(cpu.scr) & 0x16
            return
        if off == 0xD14:
            cpu.ccr = (merged(cpu.ccr) & 0x31B) | 0x200 if m4 else cpu.ccr
            if cpu.ccr & 0x10 and not cpu._div_armed:
                cpu.request_stop()      # divisions get their hooks (arm_div_trap)
            return
        if 0xD18 <= off <= 0xD20:
            for i in range(4):
                if lanes & (0xFF << (8 * i)):
                    exc = 4 + (off - 0xD18) + i
                    if exc in (MEMMANAGE, BUSFAULT, USAGEFAULT, SVCALL, 12, PENDSV, SYSTICK):
                        cpu.prio[exc] = (value >> (8 * i)) & cpu.prio_mask
            cpu.request_stop()
            return
        if off == 0xD24:
            cpu.shcsr = merged(cpu.shcsr) & (0x7 << 16)
            return
        if off == 0xD28:
            cpu.cfsr &= ~(value & lanes)
            return
        if off == 0xD2C:
            cpu.hfsr &= ~(value & lanes)
            return
        if off == 0xD34:
            cpu.mmfar = merged(cpu.mmfar)
            return
        if off == 0xD38:
            cpu.bfar = merged(cpu.bfar)
            return
        if off == 0xD88:
            cpu.cpacr = merged(cpu.cpacr) & 0x00F00000
            return
        if off == 0xDFC:
            cpu.demcr = merged(cpu.demcr)
            return
        if off == 0xF00:
            n = value & 0x1FF
            if n < cpu.num_irq:
                cpu.set_pending(16 + n)
            return
        if off == 0xF34 and m4:
            cpu.fpccr = (merged(cpu.fpccr) & 0xC00001FB)
            return
        if off == 0xF38 and m4:
            cpu.fpcar = merged(cpu.fpcar) & ~7
            return
        if off == 0xF3C and m4:
            cpu.fpdscr = merged(cpu.fpdscr) & 0x07C00000
            return
        self._unknown(SCS_BASE, off, "write")
        self.storage[off] = merged(self.storage.get(off, 0))

    def _irq_word(self, bits: int, off: int) -> int:
        n = off // 4
        return (bits >> (32 * n)) & 0xFFFFFFFF & ((1 << max(0, self.cpu.num_irq - 32 * n)) - 1)

    def _irq_bits(self, value: int, off: int) -> int:
        n = off // 4
        return (value & 0xFFFFFFFF) << (32 * n) & ((1 << self.cpu.num_irq) - 1)

    def _icsr(self) -> int:
        cpu = self.cpu
        v = cpu.ipsr & 0x1FF
        best = cpu.best_pending()
        if best is not None:
            v |= (best[2] & 0x1FF) << 12
        if cpu.pending >> 16:
            v |= 1 << 22
        others = cpu.active & ~(1 << cpu.ipsr)
        if cpu.ipsr and not others:
            v |= 1 << 11  # RETTOBASE
        if cpu.pending >> SYSTICK & 1:
            v |= 1 << 26
        if cpu.pending >> PENDSV & 1:
            v |= 1 << 28
        if cpu.pending >> NMI & 1:
            v |= 1 << 31
        return v

    def _shcsr(self) -> int:
        cpu = self.cpu
        v = cpu.shcsr & (0x7 << 16)
        act, pend = cpu.active, cpu.pending
        for exc, bit in ((MEMMANAGE, 0), (BUSFAULT, 1), (USAGEFAULT, 3), (SVCALL, 7),
                         (12, 8), (PENDSV, 10), (SYSTICK, 11)):
            if act >> exc & 1:
                v |= 1 << bit
        for exc, bit in ((USAGEFAULT, 12), (MEMMANAGE, 13), (BUSFAULT, 14), (SVCALL, 15)):
            if pend >> exc & 1:
                v |= 1 << bit
        return v

    # -- ITM / DWT / FPB ------------------------------------------------
    def cyccnt(self) -> int:
        cpu = self.cpu
        if self.v6m:
            return 0                  # the Cortex-M0 DWT has no cycle counter
        if cpu.dwt_ctrl & 1:
            return (cpu.cs.cycles - cpu._cyccnt_base) & 0xFFFFFFFF
        return cpu._cyccnt_frozen

    def _dbg_read(self, uc, offset, size, _ud):
        try:
            cpu = self.cpu
            off = offset & ~3
            if off < 0x100:
                return 1  # stimulus port FIFO ready
            if off == 0xE00:
                v = self.itm_ter
            elif off == 0xE80:
                v = self.itm_tcr
            elif off == 0x1000:
                v = cpu.dwt_ctrl
            elif off == 0x1004:
                v = self.cyccnt()
            else:
                v = self.storage.get(("dbg", off), 0)
            shift = (offset & 3) * 8
            return (v >> shift) & ((1 << (size * 8)) - 1)
        except Exception:
            log.exception("ITM/DWT read at %#x", ITM_BASE + offset)
            return 0

    def _dbg_write(self, uc, offset, size, value, _ud):
        try:
            cpu = self.cpu
            off = offset & ~3
            if off < 0x100:
                if cpu.itm_handler is not None:
                    cpu.itm_handler(off // 4, value & ((1 << (size * 8)) - 1), size)
                return
            if off == 0xE00:
                self.itm_ter = value
            elif off == 0xE80:
                self.itm_tcr = value
            elif off == 0x1000:
                was = self.cyccnt()
                cpu.dwt_ctrl = (cpu.dwt_ctrl & 0xF0000000) | (value & 0x0FFFFFFF)
                if cpu.dwt_ctrl & 1:
                    cpu._cyccnt_base = (cpu.cs.cycles - was) & ((1 << 64) - 1)
                else:
                    cpu._cyccnt_frozen = was
                self.dwt.ops_changed()
            elif off == 0x1004:
                cpu._cyccnt_frozen = value & 0xFFFFFFFF
                cpu._cyccnt_base = cpu.cs.cycles - (value & 0xFFFFFFFF)
                self.dwt.ops_changed()
            else:
                self._unknown(ITM_BASE, off, "write")
                self.storage[("dbg", off)] = value
        except Exception:
            log.exception("ITM/DWT write at %#x", ITM_BASE + offset)


# ARMv6-M / Cortex-M0 (ARM DDI 0419 B3.2, DDI 0432C 4.1): no ICTR, VTOR
# (Cortex-M0 option not present), SHPR1, SHCSR (debug only), CFSR/HFSR/MMFAR/
# BFAR, CPACR, STIR; IABR (0x300-0x37F) handled as a range.
V6M_ABSENT = (0x004, 0xD08, 0xD18, 0xD24, 0xD28, 0xD2C, 0xD34, 0xD38, 0xD88, 0xF00)
SYSTICK_REGS = (0x010, 0x014, 0x018, 0x01C)


def _bit_indices(bits: int):
    i = 0
    while bits:
        if bits & 1:
            yield i
        bits >>= 1
        i += 1


class _BusPage:
    """A 4 KiB page of the SCS's address space as a peripheral-bus model
    (emu/soc/bus.py): the bus sets ``on_ops_changed``; no write ops."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("name",)
    STRUCTURE = ("cpu", "on_ops_changed", "scs")

    NAME = ""

    def __init__(self, scs: SystemControlSpace):
        self.scs = scs
        self.cpu = scs.cpu
        self.name = self.NAME
        self.on_ops_changed = None     # set by the bus

    def write_op(self, offset: int):
        return None

    def ops_changed(self) -> None:
        if self.on_ops_changed is not None:
            self.on_ops_changed()


class DwtPage(_BusPage):
    """The DWT's 4 KiB page (0xE0001000) as a peripheral-bus model: reads and
    writes go to the SCS's ITM/DWT handlers; CYCCNT is a CYCLES op while the
    counter runs and a CONST op (its frozen value) while it is stopped
    (emu/soc/ops.py), so a loop on it (InfiniTime's TWI driver polls it as a
    timeout around every transfer, 0.8 M reads in its first second) reads
    it in C without Python.  The op's base is re-read after every DWT write
    and snapshot restore (``ops_changed``)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("on_ops_select",)

    NAME = "DWT"

    REG_NAMES = {0x000: "CTRL", 0x004: "CYCCNT", 0x008: "CPICNT", 0x00C: "EXCCNT",
                 0x010: "SLEEPCNT", 0x014: "LSUCNT", 0x018: "FOLDCNT", 0x01C: "PCSR"}

    def read(self, offset: int, size: int = 4) -> int:
        return self.scs._dbg_read(None, 0x1000 + (offset & ~3), 4, None)   # the word

    def write(self, offset: int, value: int, size: int = 4) -> None:
        self.scs._dbg_write(None, 0x1000 + (offset & ~3), 4, value, None)

    def read_op(self, offset: int):
        cpu = self.cpu
        if offset != 0x004:
            return None
        if self.scs.v6m:
            return Op(R_CONST, self, (0,))
        if cpu.dwt_ctrl & 1:
            return Op(R_CYCLES, self, (cpu._cyccnt_base,))
        # stopped: the frozen value (InfiniTime's TWI driver polls it as a
        # timeout without ever starting the counter)
        return Op(R_CONST, self, (cpu._cyccnt_frozen,))


class ScsPage(_BusPage):
    """The SCS's 4 KiB page (0xE000E000) as a peripheral-bus model, for SoCs
    that map it there (``SystemControlSpace.map(scs_on_bus=True)``): every
    access goes to ``read_word``/``write_word`` (byte lanes as ``_scs_read``
    and ``_scs_write`` give them), so behaviour is the raw mapping's; the bus
    calls in from C (no ctypes callback) and syncs the clock as those did.
    The NVIC's ISPR/ICPR words are read in C from the CPU's ``pending``
    (ATTR ops with a shift) and ICSR by a CALL op, without the clock sync
    (they depend on the pending and active state only, which only the run
    loop and model code change): FreeRTOS's tickless idle reads ISPR[0] and
    ISPR[1] after every wake (~900 reads an emulated second on InfiniTime)
    and ICSR around PendSV; its ICPR writes clear bits of ``pending`` in C
    (a BITS op; one clearing an asserted line goes to write_word).  ISPR
    writes and ICSR's PENDSVSET/PENDSTSET pend in C (a CALL op to
    emu.soc._mmio.ExcHook.pend_write: set_pending and _pending_changed)
    while those steps are CortexM's own (cortexm.pends_in_c)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("on_ops_select",)

    # The bus hands sub-word writes to write_lanes (NVIC_SetPriority writes
    # single IPR bytes: the other lanes must be left alone).
    SUBWORD_WRITES = "lanes"
    NAME = "SCS"
    # names for the bus's statistics (emu.soc.bus.reg_name)
    REG_NAMES = {**{0x100 + 4 * n: f"ISER[{n}]" for n in range(16)},
                 **{0x180 + 4 * n: f"ICER[{n}]" for n in range(16)},
                 **{0x200 + 4 * n: f"ISPR[{n}]" for n in range(16)},
                 **{0x280 + 4 * n: f"ICPR[{n}]" for n in range(16)},
                 **{0x300 + 4 * n: f"IABR[{n}]" for n in range(16)},
                 0x010: "SYST_CSR", 0x014: "SYST_RVR", 0x018: "SYST_CVR",
                 0xD00: "CPUID", 0xD04: "ICSR", 0xD08: "VTOR", 0xD0C: "AIRCR", 0xD10: "SCR",
                 0xD14: "CCR", 0xD24: "SHCSR", 0xF00: "STIR"}

    def read(self, offset: int, size: int = 4) -> int:
        return self.scs.read_word(offset & ~3)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        self.scs.write_word(offset & ~3, value & 0xFFFFFFFF, 0xFFFFFFFF)

    def write_lanes(self, offset: int, value: int, lanes: int) -> None:
        self.scs.write_word(offset & ~3, value & lanes, lanes)

    def _rd_pending(self, offset: int) -> int:
        return self.scs._irq_word(self.cpu.pending >> 16, offset & 0x7C)

    def _rd_icsr(self, _offset: int) -> int:
        return self.scs._icsr()

    def write_op(self, offset: int):
        """ISER[n]/ICER[n] set and clear the enable bits in place (an ISER
        enabling a pending interrupt goes to write_word: the run loop must
        look); MicroPython on the micro:bit brackets its ticker with
        NVIC_DisableIRQ/NVIC_EnableIRQ, ~2000 writes an emulated second."""
        if "write_word" in vars(self.scs):
            return None         # replaced on the instance (the SoftDevice's NVIC guard)
        if 0x100 <= offset < 0x140 or 0x180 <= offset < 0x1C0:
            n = (offset & 0x3F) >> 2
            mask = (((1 << self.cpu.num_irq) - 1) >> (32 * n)) & 0xFFFFFFFF
            if offset < 0x180:
                return Op(W_BITS, self.cpu, ("irq_enabled", MODE_W1S, 32 * n, "pending", 16),
                          mask=mask)
            return Op(W_BITS, self.cpu, ("irq_enabled", MODE_W1C, 32 * n, None, 0), mask=mask)
        cpu = self.cpu
        if (0x200 <= offset < 0x208 or offset == 0xD04) and pends_in_c(cpu):
            # ISPR[n] and ICSR's PENDSVSET/PENDSTSET pend in C (ExcHook.pend_write:
            # set_pending and _pending_changed); any other ICSR bit goes to
            # write_word.  FreeRTOS and Zephyr pend PendSV at every yield;
            # micro:bit MicroPython its SWI from the ticker
            h = cpu._exc_hook
            h.pend_fallback = self.scs.write_word
            return Op(W_CALL, self, (h.pend_write,))
        if 0x280 <= offset < 0x288:
            # ICPR[n] clears pending bits (FreeRTOS: ~680 writes an emulated
            # second on InfiniTime); a line still asserted pends again at
            # once (CortexM.clear_pending): such a write goes to write_word
            n = (offset & 0x3F) >> 2
            mask = (((1 << self.cpu.num_irq) - 1) >> (32 * n)) & 0xFFFFFFFF
            return Op(W_BITS, self.cpu, ("pending", MODE_W1C, 16 + 32 * n, "irq_level", -16),
                      mask=mask)
        return None

    def read_op(self, offset: int):
        if self.scs.v6m:
            return None
        if 0x200 <= offset < 0x300:                 # ISPR[n], ICPR[n]: bits of pending
            n = (offset & 0x7C) >> 2
            if n < 2:            # the implemented words (bits 16 + 32n of pending)
                mask = (((1 << self.cpu.num_irq) - 1) >> (32 * n)) & 0xFFFFFFFF
                return Op(R_ATTR, self.cpu, ("pending", 16 + 32 * n), mask=mask)
            return Op(R_CALL, self, (self._rd_pending,), timed=False)
        if offset == 0xD04:
            if pends_in_c(self.cpu) and type(self.scs)._icsr is SystemControlSpace._icsr \
                    and "_icsr" not in vars(self.scs):
                # computed in C from the same state (ExcHook.icsr_read)
                return Op(R_CALL, self, (self.cpu._exc_hook.icsr_read,), timed=False)
            return Op(R_CALL, self, (self._rd_icsr,), timed=False)
        return None
