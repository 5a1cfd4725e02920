"""The ARMv7-M (and ARMv6-M) facts the Cortex-M model shares: exception
numbers, fault status bits, the registers an exception stacks, stop
reasons.  Declared once; emu/cpu/cortexm.py and its parts (nvic.py,
exceptions.py, hooks.py, runloop.py) import them from here."""
from __future__ import annotations

import operator
import struct

from unicorn import arm_const as A


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


