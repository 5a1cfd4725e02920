"""Exception frames on a bare core (CortexM.exception_entry/exception_return
read and write the frame and the vector with one uc_mem_read/uc_mem_write
into a reused buffer): a basic and an extended (FP) frame round-trip every
stacked register, with the pure-Python register access and the native one;
stacking, unstacking and vector-table read errors still lock the core up.
The companions break the frame layout and see the round trip fail."""
import pytest
from unicorn import arm_const as A

from emu.clock import Clock
from emu.cpu import cortexm
from emu.cpu.cortexm import CortexM, CpuHalt

RAM, VTOR = 0x20000000, 0x0
HANDLER = 0x200
IRQ = 16 + 5
REGS = [A.UC_ARM_REG_R0, A.UC_ARM_REG_R1, A.UC_ARM_REG_R2, A.UC_ARM_REG_R3,
        A.UC_ARM_REG_R12, A.UC_ARM_REG_LR]


def core(pure: bool, vector: int = HANDLER | 1) -> CortexM:
    cpu = CortexM(Clock(), force_python_counter=pure)
    cpu.map_memory(0, 0x1000, "flash", flash=True)
    cpu.map_memory(RAM, 0x1000, "ram", executable=False)
    cpu.uc.mem_write(VTOR + 4 * IRQ, vector.to_bytes(4, "little"))
    cpu.vtor = VTOR
    uc = cpu.uc
    uc.reg_write(A.UC_ARM_REG_MSP, RAM + 0x800)
    uc.reg_write(A.UC_ARM_REG_SP, RAM + 0x800)
    for i, r in enumerate(REGS):
        uc.reg_write(r, 0x11111111 * (i + 1))
    uc.reg_write(A.UC_ARM_REG_APSR_NZCV, 0xA0000000)       # N and C
    cpu.irq_enabled |= 1 << (IRQ - 16)
    return cpu


def state(cpu: CortexM, fp: bool) -> dict:
    uc = cpu.uc
    out = {r: uc.reg_read(r) for r in REGS + [A.UC_ARM_REG_MSP, A.UC_ARM_REG_PC,
                                               A.UC_ARM_REG_APSR_NZCV]}
    if fp:
        out.update({r: uc.reg_read(r) for r in [A.UC_ARM_REG_S0 + i for i in range(16)]
                    + [A.UC_ARM_REG_FPSCR]})
    out["ipsr"] = cpu.ipsr
    return out


def round_trip(pure: bool, fp: bool):
    cpu = core(pure)
    uc = cpu.uc
    uc.reg_write(A.UC_ARM_REG_PC, 0x100)
    if fp:
        for i in range(16):
            uc.reg_write(A.UC_ARM_REG_S0 + i, 0x3F800000 + i)
        uc.reg_write(A.UC_ARM_REG_FPSCR, 0x03C00000)
        uc.reg_write(A.UC_ARM_REG_CONTROL, 4)                 # FPCA: an extended frame
    before = state(cpu, fp)
    cpu.pending |= 1 << IRQ
    cpu.exception_entry(IRQ, 0x100)
    inside = state(cpu, fp)
    lr = uc.reg_read(A.UC_ARM_REG_LR)
    for r in REGS[:5]:                                        # the handler clobbers them
        uc.reg_write(r, 0xDEADBEEF)
    if fp:
        for i in range(16):
            uc.reg_write(A.UC_ARM_REG_S0 + i, 0)
    frame = bytes(uc.mem_read(RAM + 0x800 - 0x68, 0x68))     # what the entry stacked
    cpu.exception_return(lr)
    return before, inside, lr, state(cpu, fp), frame


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
@pytest.mark.parametrize("fp", [False, True], ids=["basic", "fp"])
def test_frame_round_trip(pure, fp):
    before, inside, lr, after, _frame = round_trip(pure, fp)
    assert inside["ipsr"] == IRQ and inside[A.UC_ARM_REG_PC] == HANDLER
    assert lr == (0xFFFFFFE9 if fp else 0xFFFFFFF9)
    assert inside[A.UC_ARM_REG_MSP] == RAM + 0x800 - (0x68 if fp else 0x20)
    assert after == before


def test_frame_layout_companion(monkeypatch):
    """Companion: unstacking the words one place off loses the registers."""
    orig = CortexM._read_words

    def shifted(self, addr, n):
        return orig(self, addr + 4, n)
    monkeypatch.setattr(CortexM, "_read_words", shifted)
    before, _inside, _lr, after, _frame = round_trip(True, False)
    assert after != before


@pytest.mark.parametrize("fp", [False, True], ids=["basic", "fp"])
def test_native_entry_and_return_match_python(fp):
    """The C entry and return (emu.cpu._core Regs.exc_push/exc_enter/exc_pop)
    leave the same registers and the same frame in memory as the Python."""
    assert core(False)._xregs is not None and core(True)._xregs is None
    native, python = round_trip(False, fp), round_trip(True, fp)
    assert native == python


def test_native_frame_companion():
    """Companion: a stack that starts 4 bytes off for the C push gives a
    different machine than the Python's: the comparison above can fail."""
    cpu = core(False)
    cpu.uc.reg_write(A.UC_ARM_REG_MSP, RAM + 0x800 - 4)
    cpu.uc.reg_write(A.UC_ARM_REG_PC, 0x100)
    cpu.pending |= 1 << IRQ
    cpu.exception_entry(IRQ, 0x100)
    assert state(cpu, False) != round_trip(True, False)[1]


def test_stacking_error_locks_up():
    cpu = core(False)
    cpu.uc.reg_write(A.UC_ARM_REG_MSP, 0x30000000)           # unmapped
    with pytest.raises(CpuHalt):
        cpu.exception_entry(IRQ, 0x100)
    assert cpu.cfsr & (1 << 12) and cpu.locked_up              # BFSR.STKERR


def test_unstacking_error_locks_up():
    cpu = core(False)
    cpu.exception_entry(IRQ, 0x100)
    cpu.uc.reg_write(A.UC_ARM_REG_MSP, 0x30000000)           # unmapped
    with pytest.raises(CpuHalt):
        cpu.exception_return(0xFFFFFFF9)
    assert cpu.cfsr & (1 << 11) and cpu.locked_up              # BFSR.UNSTKERR


@pytest.mark.parametrize("vtor", [0x30000000, VTOR], ids=["unmapped", "even"])
def test_bad_vector_locks_up(vtor):
    cpu = core(False, vector=HANDLER)                          # no Thumb bit
    cpu.vtor = vtor
    with pytest.raises(CpuHalt):
        cpu.exception_entry(IRQ, 0x100)
    assert cpu.hfsr & cortexm.HFSR_VECTTBL
