"""The emulated S132's SVCs called directly, as the CPU's SVC entry would
(tests/softdevice/test_sd_soc.py's corner cases; the CCM's SoftDevice
guard): the CPU is not run."""
from __future__ import annotations

from unicorn import arm_const as A


def call(m, sd, num: int, *args: int) -> int:
    regs = (A.UC_ARM_REG_R0, A.UC_ARM_REG_R1, A.UC_ARM_REG_R2, A.UC_ARM_REG_R3)
    for r, a in zip(regs, args):
        m.cpu.set_reg(r, a & 0xFFFFFFFF)
    assert sd.svc(num)
    return m.cpu.reg(A.UC_ARM_REG_R0)


def enable(m, sd):
    assert call(m, sd, 0x10, 0, 0) == 0
