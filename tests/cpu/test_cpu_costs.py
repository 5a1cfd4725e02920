"""Block costing reads the operand facts it needs (register lists, PC as the
first operand) from capstone's operand text (disasm_lite, ~6x cheaper than
detail mode); checked here against capstone's detailed operands on every
instruction of our test firmware."""
import io

import pytest
from capstone import arm as cs_arm
from elftools.elf.elffile import ELFFile

from emu.cpu import cycles


def _instructions(path, md):
    elf = ELFFile(io.BytesIO(open(path, "rb").read()))
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_PROGBITS" or not sec["sh_flags"] & 4:
            continue
        data, base, off = sec.data(), sec["sh_addr"], 0
        while off < len(data):
            got = list(md.disasm(data[off:], base + off))
            yield from got
            off = (got[-1].address + got[-1].size - base if got else off) + (0 if got else 2)
            if got and off < len(data):
                off += 2            # the halfword capstone stopped at (data in text)


@pytest.mark.parametrize("name", ["pinetime_demo", "sd_nus", "cpu_fpu", "cpu_exceptions"])
def test_operand_text_matches_capstone_detail(fw, name):
    md = cycles.CostModel("m4").md          # detail on
    n = 0
    for insn in _instructions(fw(name), md):
        lite = cycles._Insn(insn.mnemonic, insn.op_str)
        regs = [op for op in insn.operands if op.type == cs_arm.ARM_OP_REG]
        base = cycles._strip(insn.mnemonic)
        if base in ("push", "pop", "vpush", "vpop") or base.startswith(("ldm", "stm", "vldm",
                                                                          "vstm")):
            want = max(len(regs) - (1 if base.startswith(("ldm", "stm", "vldm", "vstm"))
                                    else 0), 1)
            assert cycles._count_regs(lite) == want, (hex(insn.address), insn.mnemonic,
                                                      insn.op_str)
            assert cycles._has_pc(lite) == any(op.reg == cs_arm.ARM_REG_PC for op in regs)
        first_pc = bool(insn.operands) and insn.operands[0].type == cs_arm.ARM_OP_REG \
            and insn.operands[0].reg == cs_arm.ARM_REG_PC
        assert cycles._first_reg_is_pc(lite) == first_pc, (hex(insn.address), insn.mnemonic,
                                                           insn.op_str)
        n += 1
    assert n > 200


@pytest.mark.parametrize("force_python", [False, True], ids=["native", "python"])
def test_cost_table_grows_and_keeps_every_block(force_python):
    """The block cost table (emu/cpu/_blockhook.c: entries indexed by
    address) through several doublings: every block keeps its own cost, the
    same address with another size is another block, and clear() forgets
    them all.  (Real firmware fills fewer than its first 8 192 entries.)"""
    import random

    from unicorn import UC_ARCH_ARM, UC_MODE_THUMB, Uc
    from unicorn import arm_const as A
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB)
    counter = cycles.make_block_counter(
        uc, (A.UC_ARM_REG_PRIMASK, A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK),
        force_python=force_python)
    assert counter.native is not force_python
    rng = random.Random(5)
    blocks = {}
    for i in range(40000):
        addr = rng.randrange(0, 0x80000, 2) if i % 3 else 0x1000 + 2 * (i % 900)
        size = rng.choice((2, 4, 6, 10, 16, 30))
        blocks[(addr, size)] = rng.randrange(1, 200)
    for (addr, size), cost in blocks.items():
        counter.insert(addr, size, cost)
    assert all(counter.cost(a, s) == c for (a, s), c in blocks.items())
    assert counter.cost(0x7FFFF, 2) is None
    counter.clear()
    assert all(counter.cost(a, s) is None for (a, s) in list(blocks)[:2000])
