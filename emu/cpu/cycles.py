"""Cycle-cost policy and per-block cycle accounting.

The cost of a basic block is the sum of its instructions' costs from the
Cortex-M4 Technical Reference Manual (ARM DDI 0439B, section 3.3 "Instruction
set summary"), computed lazily with capstone the first time a block runs:

==========================================  =====================================
instruction                                  cycles
==========================================  =====================================
data processing, MOV, compare, shifts, MUL   1
MLA/MLS, UMULL/SMULL/UMLAL/SMLAL, SMLAxy     1
SDIV/UDIV                                    7  (TRM: 2-12, data dependent)
LDR/STR (single, any width)                  2, 1 when it follows another
                                             single load/store (pipelined)
LDRD/STRD                                    3
LDM/STM/PUSH/POP                             1 + N registers
POP/LDM with PC                              1 + N + P
direct branch (B, BL, Bcc, CBZ/CBNZ)         1 + P   (P = 1)
indirect branch (BX, BLX, MOV/LDR to PC)     1 + P   (P = 2), LDR to PC 2 + P
TBB/TBH                                      2 + P
FP: VADD/VSUB/VMUL/VNEG/VABS/VCVT/VMOV/VCMP  1
FP: VMLA/VMLS/VFMA/VFMS/VNMLA/..             3
FP: VDIV/VSQRT                               14
FP: VLDR/VSTR                                2
FP: VLDM/VSTM/VPUSH/VPOP                     1 + N
VMRS/VMSR                                    1
DMB/DSB/ISB                                  4   (TRM: 1 + B)
WFI/WFE/SEV/NOP/IT/CPS/MSR/MRS               1
==========================================  =====================================

Known approximations (not modelled):
  - a conditional branch that ends a block is always charged as taken;
  - flash wait states and the nRF52 cache are not modelled (0 wait states);
  - divide cost is fixed, not data dependent;
  - instructions skipped by an IT block are charged like executed ones.

With the native helpers most blocks are costed in C from their bytes
(``_cost.c``, ``emu.cpu._core.cost_block``: the Cortex-M4 encodings
compilers emit, IT blocks included); a block it does not decode is costed
here, from capstone's text.  Both give the same answer
(tests/twins/drivers.py::cost compares every 16-bit encoding, a sweep of
the 32-bit ones and random blocks); InfiniTime's first emulated second
costs 3 500 blocks, 65 ms of Python and 5 ms of C.

The per-block counter itself runs in native code (``_blockhook.c``) when the
extension is built; :class:`PyBlockCounter` is the pure-Python fallback with
identical counts (tests compare them).
"""
from __future__ import annotations

import ctypes
import logging

import capstone

log = logging.getLogger("emu.cpu.cycles")

P_DIRECT = 1
P_INDIRECT = 2

REASON_NONE, REASON_DEADLINE, REASON_FLAG, REASON_MISS, REASON_UNMASKED = range(5)

_ONE = {
    "nop", "it", "ite", "itt", "itee", "itet", "itte", "ittt", "iteee", "iteet", "itete",
    "itett", "ittee", "ittet", "ittte", "itttt", "cpsie", "cpsid", "msr", "mrs", "sev",
    "wfi", "wfe", "yield",
}
_FP3 = {"vmla", "vmls", "vnmla", "vnmls", "vfma", "vfms", "vfnma", "vfnms"}
_DIV = {"sdiv", "udiv"}
_BARRIER = {"dmb", "dsb", "isb"}


# what a "pure" block may hold (CostModel.block_pure), mnemonics without
# their condition, width and S suffixes as capstone spells them
_PURE_LOADS = {"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh"}
_PURE_ALU = {"mov", "movs", "movw", "movt", "mvn", "mvns", "add", "adds", "adc", "adcs",
             "sub", "subs", "sbc", "sbcs", "rsb", "rsbs", "and", "ands", "orr", "orrs", "orn",
             "orns", "eor", "eors", "bic", "bics", "lsl", "lsls", "lsr", "lsrs", "asr", "asrs",
             "ror", "rors", "tst", "teq", "cmp", "cmn", "ubfx", "sbfx", "bfi", "bfc", "uxtb",
             "uxth", "sxtb", "sxth", "mul", "muls", "mla", "mls", "umull", "smull", "umlal",
             "smlal", "clz", "rbit", "rev", "rev16", "nop"}


def _insn_pure(mnemonic: str, op_str: str) -> bool:
    base = _strip(mnemonic)
    ops = op_str.replace(" ", "").split(",")
    if base in ("b", "cbz", "cbnz") or (base.startswith("b") and base[1:] in _CONDS):
        return ops[-1].startswith("#")     # a direct branch only
    if base.startswith("ldr"):
        return base in _PURE_LOADS and ops[0] not in ("pc", "sp")
    return base in _PURE_ALU and ops[0] not in ("pc", "sp")


def _insn_call(mnemonic: str, op_str: str) -> bool:
    """A direct call (``bl #imm``: writes LR, no memory) or the return
    through LR (``bx lr``) a leaf ends with."""
    base = _strip(mnemonic)
    ops = op_str.replace(" ", "")
    return (base == "bl" and ops.startswith("#")) or (base == "bx" and ops == "lr")


_STORES = {"str", "strb", "strh"}
_LIST_REGS = {f"r{i}" for i in range(13)} | {"sb", "sl", "fp", "ip", "lr"}   # (capstone's names)


def _insn_stack(mnemonic: str, op_str: str):
    """A push, a pop or a single store not through SP, as a loop that
    stores may hold them (BLOCK_STORE): ("push", words), ("pop", words,
    pops PC) or ("store",); None for anything else."""
    base = _strip(mnemonic)
    ops = op_str.replace(" ", "")
    if base in ("push", "pop") or (base == "ldm" and ops.startswith("sp!,{")):
        regs = ops[ops.index("{") + 1:-1].split(",") if ops.endswith("}") else []
        pc = base != "push" and regs[-1:] == ["pc"]
        if not regs or not set(regs[:-1] if pc else regs) <= _LIST_REGS:
            return None
        return ("push", len(regs)) if base == "push" else ("pop", len(regs), pc)
    if base == "ldr" and ops.endswith(",[sp],#4") and ops.split(",")[0] in _LIST_REGS:
        return ("pop", 1, False)
    if base == "str" and ops.endswith(",[sp,#-0x4]!") and ops.split(",")[0] in _LIST_REGS:
        return ("push", 1)
    if base in _STORES and "sp" not in ops and "pc" not in ops and ops.count("[") == 1:
        return ("store",)
    return None


def _strip(mn: str) -> str:
    """Mnemonic without condition code / width / type suffixes."""
    mn = mn.split(".")[0]
    return mn


# what an instruction is to a block's purity (block_cost_pure; _cost.c K_*)
_K_PURE, _K_CALL, _K_STACK, _K_OTHER = range(4)


class CostModel:
    """Computes block costs with capstone (Thumb-2, optional FPU)."""

    # False: every block is costed by the Python below (the C twin off)
    native_cost = True

    def __init__(self, m_profile: str = "m4", native: bool = True):
        mode = capstone.CS_MODE_THUMB | capstone.CS_MODE_MCLASS
        self.md = capstone.Cs(capstone.CS_ARCH_ARM, mode)
        self.md.detail = True
        self.profile = m_profile
        self.native_costed = 0     # blocks costed in C
        self._native = None        # emu.cpu._core.cost_block (the Cortex-M4's encodings)
        if native and self.native_cost and m_profile == "m4":
            from emu import native as _native
            core = _native.load("emu.cpu._core")
            self._native = getattr(core, "cost_block", None)

    def block_cost(self, code: bytes, address: int) -> int:
        return self.block_cost_pure(code, address)[0]

    def block_cost_pure(self, code: bytes, address: int) -> tuple:
        """(cost, pure): the block's cycles and whether it is "pure" (see
        block_pure), from one disassembly.  With the native helpers most
        blocks are costed in C from their bytes (emu/cpu/_cost.c, the same
        answer: a twin of this); the rest here."""
        native = self._native
        if native is not None:
            got = native(code, address)
            if got is not None:
                self.native_costed += 1
                return got
        return self._block_cost_py(code, address)

    def _block_cost_py(self, code: bytes, address: int) -> tuple:
        # disasm_lite (mnemonic and operand text, no detail structures) is
        # about 6x cheaper than disasm: a first boot of wasp-os costs 4 000
        # blocks.  The few operand facts the costs need come from the text.
        total = 0
        prev_ldst = False
        n = 0
        pure = True
        call = False
        last_bl = False
        stores = sp = sp_top = 0       # BLOCK_STORE's figures (words for the SP)
        stack = False
        insns = []
        for _a, _s, mnemonic, op_str in self.md.disasm_lite(code, address):
            insns.append((mnemonic, op_str))
            f = self._insn_facts(mnemonic, op_str)
            total += f[1] if prev_ldst else f[0]
            prev_ldst = f[2]
            n += 1
            last_bl = False
            if pure:
                kind = f[3]
                if kind == _K_PURE:
                    continue
                if kind == _K_CALL:
                    call = True
                    last_bl = f[4]
                    continue
                if kind == _K_OTHER:
                    pure = False
                    continue
                st = f[4]
                stack = True
                if st[0] == "store":
                    stores += 1
                elif st[0] == "push":
                    sp -= st[1]
                else:
                    sp += st[1]
                    sp_top = max(sp_top, sp)
                    call = call or st[2]
        if n == 0:
            total = 1
        flags = 0
        if pure and n > 0:
            flags = BLOCK_PURE | (BLOCK_CALL if call else 0) | (BLOCK_BL if last_bl else 0)
            if stack:
                if stores > 255 or not -128 <= sp < 128 or sp_top > 255:
                    flags = 0
                else:
                    flags |= BLOCK_STORE | stores << 8 | (sp & 0xFF) << 16 | sp_top << 24
            elif not call:
                flags |= countdown_flags(insns, address)
        return max(total, 1), flags

    def _insn_facts(self, mnemonic: str, op_str: str) -> tuple:
        """What block_cost_pure needs of one instruction, from its text alone:
        (cycles, cycles after a single load/store, is a single load/store,
        _K_PURE/_K_CALL/_K_STACK/_K_OTHER, the call's is-BL or _insn_stack's
        figures, else None); emu/cpu/_cost.c's cost_insn gives the same."""
        insn = _Insn(mnemonic, op_str)
        c0, ldst = self.insn_cost(insn, False)
        c1, _ = self.insn_cost(insn, True)
        extra = None
        if _insn_pure(mnemonic, op_str) and not (
                "[sp" in op_str and ("!" in op_str or "]," in op_str)):
            kind = _K_PURE        # (a load writing SP back is a pop of one or not pure)
        elif _insn_call(mnemonic, op_str):
            kind, extra = _K_CALL, _strip(mnemonic) == "bl"
        else:
            extra = _insn_stack(mnemonic, op_str)
            kind = _K_OTHER if extra is None else _K_STACK
        return c0, c1, ldst, kind, extra

    def block_pure(self, code: bytes, address: int) -> bool:
        """The block only loads, computes, compares and branches directly
        (no store, stack or PC write other than a direct call's LR and a
        return through LR, no IT, division, FP, system or exclusive
        instruction): a loop of such blocks whose registers and reads
        repeat repeats identically (_blockhook.c, loop_step).  Blocks that
        also push, pop or store (BLOCK_STORE) are not pure here; the loop
        watch takes them with the checks block_cost_pure's flags allow."""
        return self.block_cost_pure(code, address)[1] & (BLOCK_PURE | BLOCK_STORE) == BLOCK_PURE

    def insn_cost(self, insn, prev_ldst: bool) -> tuple[int, bool]:
        mn = insn.mnemonic
        base = _strip(mn)
        if self.profile == "m0":
            return self._m0_cost(insn, base), False
        # Branches
        if base in ("b", "bl", "cbz", "cbnz") or (base.startswith("b") and base[1:] in _CONDS):
            return 1 + P_DIRECT, False
        if base in ("bx", "blx"):
            return 1 + P_INDIRECT, False
        if base in ("tbb", "tbh"):
            return 2 + P_INDIRECT, False
        if base in ("pop", "ldm", "ldmia", "ldmdb", "ldmfd", "stm", "stmia", "stmdb", "stmea",
                    "stmfd", "push"):
            nreg = _count_regs(insn)
            writes_pc = base in ("pop", "ldm", "ldmia", "ldmdb", "ldmfd") and _has_pc(insn)
            return 1 + nreg + (P_INDIRECT if writes_pc else 0), False
        if base in ("ldrd", "strd", "ldrexd", "strexd"):
            return 3, False
        if base.startswith(("ldr", "str")) or base in ("ldrex", "strex", "ldrexb", "ldrexh",
                                                         "strexb", "strexh", "pld"):
            if base.startswith("ldr") and _first_reg_is_pc(insn):
                return 2 + P_INDIRECT, False
            return (1 if prev_ldst else 2), True
        if base in _DIV:
            return 7, False
        if base in _BARRIER:
            return 4, False
        if base.startswith("v"):
            if base in ("vdiv", "vsqrt"):
                return 14, False
            if base in _FP3:
                return 3, False
            if base in ("vldr", "vstr"):
                return 2, False
            if base in ("vpush", "vpop", "vldmia", "vldmdb", "vstmia", "vstmdb", "vldm", "vstm"):
                return 1 + _count_regs(insn), False
            return 1, False
        # Writes to PC by data processing (mov pc, add pc)
        if base in ("mov", "add") and _first_reg_is_pc(insn):
            return 1 + P_INDIRECT, False
        return 1, False

    @staticmethod
    def _m0_cost(insn, base: str) -> int:
        """Cortex-M0 timings (ARM DDI 0432C, 3.3)."""
        if base in ("b", "cbz", "cbnz") or (base.startswith("b") and base[1:] in _CONDS):
            return 3
        if base == "bl":
            return 4
        if base in ("bx", "blx"):
            return 3
        if base in ("pop",):
            n = _count_regs(insn)
            return 1 + n + (3 if _has_pc(insn) else 0)
        if base in ("push", "ldm", "ldmia", "stm", "stmia"):
            return 1 + _count_regs(insn)
        if base.startswith(("ldr", "str")):
            return 2
        if base in ("muls", "mul"):
            return 1
        if base in ("mov", "add") and _first_reg_is_pc(insn):
            return 3
        if base in _BARRIER or base in ("mrs", "msr"):
            return 3                      # DMB/DSB/ISB, MRS/MSR: 3 (TRM table 3-1)
        if base in ("wfi", "wfe"):
            return 2
        return 1


_CONDS = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt",
          "gt", "le", "al"}


class _Insn:
    """An instruction as disasm_lite gives it: mnemonic and operand text."""
    __slots__ = ("mnemonic", "op_str")

    def __init__(self, mnemonic: str, op_str: str):
        self.mnemonic = mnemonic
        self.op_str = op_str


def _reg_list(insn) -> list:
    """Registers of the operand text: the {list} of push/pop/ldm/stm/vpush...,
    else every operand that names a register."""
    text = insn.op_str
    i = text.find("{")
    if i >= 0:
        return [r.strip() for r in text[i + 1:text.rfind("}")].split(",") if r.strip()]
    return [t.strip().rstrip("!") for t in text.split(",") if not t.strip().startswith(("#", "["))]


def _count_regs(insn) -> int:
    """Registers moved by a push/pop/ldm/stm/vpush/vpop/vldm/vstm (at least 1)."""
    return max(len(_reg_list(insn)), 1)


def _has_pc(insn) -> bool:
    return "pc" in _reg_list(insn)


def _first_reg_is_pc(insn) -> bool:
    return insn.op_str.startswith("pc") and insn.op_str[2:3] in ("", ",", " ")


# ---------------------------------------------------------------------------
# Block counters
# ---------------------------------------------------------------------------
# block flags in the native cost table (_blockhook.c): only loads,
# arithmetic, compares and direct branches (BLOCK_PURE), and among them a
# direct call or a return through LR (BLOCK_CALL), ending with the call
# (BLOCK_BL); BLOCK_STORE: it also pushes, pops (a pop of PC is a return:
# BLOCK_CALL) or stores through a register other than SP, with bits 8-15
# the stores, 16-23 the SP's change in words (signed) and 24-31 the most it
# rises above its value at the block's start, in words (_blockhook.c,
# loop_step)
BLOCK_PURE, BLOCK_CALL, BLOCK_BL, BLOCK_STORE = 1, 2, 4, 8
# BLOCK_COUNTDOWN: the block is a countdown (delay) loop on its own, ``subs
# Rd, #imm`` (NOPs may follow) and a BHI or BNE back to its start: bits 8-11
# Rd, 12-13 the condition (COUNT_HI, COUNT_NE), 16-31 imm (_blockhook.c,
# countdown_step)
BLOCK_COUNTDOWN = 16
COUNT_HI, COUNT_NE = 0, 1
_COUNT_CONDS = {"bhi": COUNT_HI, "bne": COUNT_NE}


def countdown_flags(insns: list, address: int) -> int:
    """BLOCK_COUNTDOWN and its fields for a block of ``insns`` ((mnemonic,
    operand text) as capstone's disasm_lite gives them) at ``address``, or 0."""
    if len(insns) < 2:
        return 0
    (mn, ops), (bmn, bops) = insns[0], insns[-1]
    if any(_strip(m) != "nop" for m, _o in insns[1:-1]):
        return 0
    cond = _COUNT_CONDS.get(_strip(bmn))
    if cond is None or bops.replace(" ", "") != f"#{address:#x}":
        return 0
    if _strip(mn) != "subs":
        return 0
    parts = ops.replace(" ", "").split(",")
    if len(parts) == 3 and parts[0] == parts[1]:
        parts = [parts[0], parts[2]]
    if len(parts) != 2 or not parts[1].startswith("#"):
        return 0
    rd = _REG_NUM.get(parts[0])
    try:
        imm = int(parts[1][1:], 0)
    except ValueError:
        return 0
    if rd is None or not 0 < imm <= 0xFFFF:
        return 0
    return BLOCK_COUNTDOWN | rd << 8 | cond << 12 | imm << 16


_REG_NUM = {**{f"r{i}": i for i in range(13)}, "sb": 9, "sl": 10, "fp": 11, "ip": 12}


ENTRY_STOP, ENTRY_DONE, ENTRY_NONE = range(3)


_native_lib = None
BhState = None        # the ctypes view of bh_state, once the library is loaded


def load_native():
    """The native block-hook library, or None if it is not usable (emu/native.py
    says why, once).  Its state's ctypes view, ``BhState``, is built from the
    layout the library exports (emu/cpu/_bh_state.h is its one declaration)."""
    global _native_lib, BhState
    if _native_lib is not None:
        return _native_lib or None
    from emu import native
    mod = native.load("emu.cpu._blockhook")
    if mod is None:
        _native_lib = False
        return None
    try:
        lib = ctypes.CDLL(mod.__file__)
        BhState = native.ctypes_struct("BhState", mod.layout(),
                                       "the block hook's state (emu/cpu/_bh_state.h)")
    except (OSError, ValueError) as exc:
        log.warning("native block hook unavailable (%s); using the slower pure-Python "
                    "cycle counter", exc)
        _native_lib = False
        return None
    lib.bh_new.restype = ctypes.POINTER(BhState)
    lib.bh_insert.argtypes = [ctypes.POINTER(BhState), ctypes.c_uint32, ctypes.c_uint32,
                              ctypes.c_uint32]
    lib.bh_insert_flags.argtypes = [ctypes.POINTER(BhState), ctypes.c_uint32, ctypes.c_uint32,
                                    ctypes.c_uint32, ctypes.c_uint32]
    lib.bh_clear.argtypes = [ctypes.POINTER(BhState)]
    lib.bh_free.argtypes = [ctypes.POINTER(BhState)]
    lib.bh_hook_address.restype = ctypes.c_void_p
    lib.bh_cost.argtypes = [ctypes.POINTER(BhState), ctypes.c_uint32, ctypes.c_uint32]
    lib.bh_cost.restype = ctypes.c_int32
    _native_lib = lib
    return lib


class NativeBlockCounter:
    """Counts cycles in C (see _blockhook.c)."""

    native = True

    def __init__(self, uc, lib, reg_ids: tuple[int, int, int]):
        from unicorn import unicorn_py3 as _u  # noqa: F401
        from unicorn.unicorn_py3.unicorn import uclib
        self.lib = lib
        self._ptr = lib.bh_new()
        self.s = self._ptr.contents
        self.s.emu_stop = ctypes.cast(uclib.uc_emu_stop, ctypes.c_void_p).value
        self.s.reg_read = ctypes.cast(uclib.uc_reg_read, ctypes.c_void_p).value
        self.s.reg_primask, self.s.reg_basepri, self.s.reg_faultmask = reg_ids
        self.s.prigroup_mask = 0xFF
        self.s.deadline = (1 << 64) - 1
        self.s.reg_read_batch = ctypes.cast(uclib.uc_reg_read_batch, ctypes.c_void_p).value
        self.s.reg_write = ctypes.cast(uclib.uc_reg_write, ctypes.c_void_p).value
        from unicorn import arm_const as A
        assert A.UC_ARM_REG_R12 == A.UC_ARM_REG_R0 + 12     # countdown_step counts on it
        self.s.dl_reg_r0, self.s.dl_reg_nzcv = A.UC_ARM_REG_R0, A.UC_ARM_REG_APSR_NZCV
        # register the C function directly as the Unicorn hook
        from unicorn.unicorn_const import UC_HOOK_BLOCK
        hh = ctypes.c_size_t()
        uc_hook_add = uclib.uc_hook_add
        fn = lib.bh_hook_address()
        err = uc_hook_add(uc._uch, ctypes.byref(hh), UC_HOOK_BLOCK, ctypes.c_void_p(fn),
                          ctypes.cast(self._ptr, ctypes.c_void_p), ctypes.c_uint64(1),
                          ctypes.c_uint64(0))
        if err:
            raise RuntimeError(f"uc_hook_add for the native block hook failed: {err}")
        self._hook = hh.value

    def insert(self, addr: int, size: int, cost: int, pure: int = 0) -> None:
        """``pure``: the block's flags (BLOCK_PURE, BLOCK_CALL; True: BLOCK_PURE)."""
        if self.lib.bh_insert_flags(self._ptr, addr, size, cost, int(pure)) != 0:
            raise MemoryError("block cost table")

    def set_loop_watch(self, reg_ids, replay: int, ipsr: int = -1) -> None:
        """The registers a polling loop must leave unchanged, and _mmio.c's
        slot_replay (see _blockhook.c, loop_step); ``ipsr``: IPSR's register
        id (a loop that calls is taken in Thread mode only)."""
        ids = list(reg_ids)[:32]
        for i, r in enumerate(ids):
            self.s.loop_regs[i] = r
        self.s.loop_nregs = len(ids)
        self.s.loop_ipsr = ids.index(ipsr) if ipsr in ids else -1
        self.s.replay = replay

    def field_addr(self, name: str) -> int:
        """The address of a field or member struct of the state (``cycles``;
        ``sync``, the slice's time base, and ``loop``, where the MMIO callbacks
        note a loop iteration's accesses; the whole: ``state_addr``)."""
        return ctypes.addressof(self.s) + type(self.s).OFFSETS[name]

    @property
    def state_addr(self) -> int:
        return ctypes.addressof(self.s)

    def clear(self) -> None:
        self.lib.bh_clear(self._ptr)

    def cost(self, addr: int, size: int):
        """The table's cost of a block, or None."""
        c = self.lib.bh_cost(self._ptr, addr, size)
        return None if c < 0 else c

    def __del__(self):
        try:
            self.lib.bh_free(self._ptr)
        except Exception:
            pass


class _PyState:
    """Same fields as BhState, as plain attributes."""

    def __init__(self):
        self.cycles = 0
        self.base_ticks = self.base_cycles = self.synced_cycles = self.in_slice = 0
        self.deadline = (1 << 64) - 1
        self.stop_flag = 0
        self.reason = 0
        self.miss_addr = 0
        self.miss_size = 0
        self.mask_watch = 0
        self.pend_prio = 256
        self.active_prio = 256
        self.prigroup_mask = 0xFF
        self.blocks = 0
        self.entry_flag = 0
        self.entry_cb = None
        self.cost_cb = None


class PyBlockCounter:
    """Pure-Python block hook with exactly the native counter's logic."""

    native = False

    def __init__(self, uc, lib, reg_ids: tuple[int, int, int]):
        from unicorn.unicorn_const import UC_HOOK_BLOCK
        self.s = _PyState()
        self.table: dict = {}
        self.reg_ids = reg_ids
        uc.hook_add(UC_HOOK_BLOCK, self._hook)

    def _hook(self, uc, address, size, _ud):
        s = self.s
        if s.stop_flag:
            s.reason = REASON_FLAG
            uc.emu_stop()
            return
        if s.cycles >= s.deadline:
            s.reason = REASON_DEADLINE
            uc.emu_stop()
            return
        want = 0
        if s.entry_flag:
            want = REASON_FLAG
        elif s.mask_watch:
            rp, rb, rf = self.reg_ids
            primask = uc.reg_read(rp)
            basepri = uc.reg_read(rb)
            faultmask = uc.reg_read(rf)
            prio = s.active_prio
            bp = basepri & s.prigroup_mask & 0xFF
            if bp and bp < prio:
                prio = bp
            if primask & 1 and prio > 0:
                prio = 0
            if faultmask & 1:
                prio = -1
            if s.pend_prio < prio:
                want = REASON_UNMASKED
        if want:
            r = ENTRY_STOP
            s.entry_flag = 0
            if s.entry_cb is not None:
                r = s.entry_cb(address)
            if r == ENTRY_DONE:
                return
            if r != ENTRY_NONE:
                s.reason = want
                uc.emu_stop()
                return
        cost = self.table.get((address, size))
        if cost is None and s.cost_cb is not None and s.cost_cb(address, size):
            cost = self.table.get((address, size))
        if cost is None:
            s.reason = REASON_MISS
            s.miss_addr = address
            s.miss_size = size
            uc.emu_stop()
            return
        s.cycles += cost
        s.blocks += 1

    def insert(self, addr: int, size: int, cost: int, pure: bool = False) -> None:
        self.table[(addr, size)] = cost     # (the pure-Python counter skips no loop)

    def clear(self) -> None:
        self.table.clear()

    def cost(self, addr: int, size: int):
        return self.table.get((addr, size))


def make_block_counter(uc, reg_ids, force_python: bool = False):
    lib = None if force_python else load_native()
    if lib is not None:
        return NativeBlockCounter(uc, lib, reg_ids)
    return PyBlockCounter(uc, None, reg_ids)
