"""Faster 32-bit register access for a Unicorn ARM engine.

The Python binding's ``reg_read``/``reg_write`` look up a register class
and build a ctypes value on every call (about 1.3 us each); the exception
entry and return paths make a dozen such calls per interrupt.  For the
plain 32-bit registers (r0-r12, sp, lr, pc, xPSR and its parts, EPSR, MSP, PSP,
CONTROL, PRIMASK, BASEPRI, FAULTMASK, s0-s31, FPSCR) :func:`install`
replaces the instance's ``reg_read``, ``reg_write``, ``reg_read_batch``
and ``reg_write_batch`` with direct calls of ``uc_reg_read``/
``uc_reg_write`` through one reused ``c_uint32``; every other register id
goes to the binding's own method, so behaviour is unchanged.
"""
from __future__ import annotations

import ctypes

from unicorn import UcError
from unicorn import arm_const as A


def _reg32_ids() -> frozenset:
    ids = {A.UC_ARM_REG_R0 + i for i in range(13)}
    ids |= {A.UC_ARM_REG_SP, A.UC_ARM_REG_LR, A.UC_ARM_REG_PC, A.UC_ARM_REG_XPSR,
            A.UC_ARM_REG_APSR, A.UC_ARM_REG_APSR_NZCV, A.UC_ARM_REG_IPSR, A.UC_ARM_REG_MSP,
            A.UC_ARM_REG_PSP, A.UC_ARM_REG_CONTROL, A.UC_ARM_REG_PRIMASK,
            A.UC_ARM_REG_BASEPRI, A.UC_ARM_REG_FAULTMASK, A.UC_ARM_REG_FPSCR,
            A.UC_ARM_REG_EPSR}
    ids |= {A.UC_ARM_REG_S0 + i for i in range(32)}
    return frozenset(ids)


REG32 = _reg32_ids()


def install(uc, native: bool = True) -> None:
    from unicorn.unicorn_py3.unicorn import uclib
    if native and _install_native(uc, uclib):
        return
    handle = uc._uch
    c_read, c_write = uclib.uc_reg_read, uclib.uc_reg_write
    cell = ctypes.c_uint32()
    ref = ctypes.byref(cell)
    slow_read, slow_write = uc.reg_read, uc.reg_write
    slow_read_batch, slow_write_batch = uc.reg_read_batch, uc.reg_write_batch
    reg32 = REG32

    def reg_read(reg_id, aux=None):
        if reg_id in reg32 and aux is None:
            err = c_read(handle, reg_id, ref)
            if err:
                raise UcError(err)
            return cell.value
        return slow_read(reg_id) if aux is None else slow_read(reg_id, aux)

    def reg_write(reg_id, value):
        if reg_id in reg32:
            cell.value = value & 0xFFFFFFFF
            err = c_write(handle, reg_id, ref)
            if err:
                raise UcError(err)
            return None
        return slow_write(reg_id, value)

    def reg_read_batch(reg_ids):
        if all(r in reg32 for r in reg_ids):
            return tuple(reg_read(r) for r in reg_ids)
        return slow_read_batch(reg_ids)

    def reg_write_batch(pairs):
        pairs = list(pairs)
        if all(r in reg32 for r, _v in pairs):
            for r, v in pairs:
                reg_write(r, v)
            return None
        return slow_write_batch(pairs)

    uc.reg_read = reg_read
    uc.reg_write = reg_write
    uc.reg_read_batch = reg_read_batch
    uc.reg_write_batch = reg_write_batch


def _install_native(uc, uclib) -> bool:
    """The same, as builtins of emu.cpu._core.Regs (no ctypes, no Python frame)."""
    from emu import native
    core = native.load("emu.cpu._core")
    if core is None:
        return False
    addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value   # noqa: E731
    regs = core.Regs(uc._uch.value, addr(uclib.uc_reg_read), addr(uclib.uc_reg_write),
                      sorted(REG32), uc.reg_read, uc.reg_write, uc.reg_read_batch,
                      uc.reg_write_batch, UcError)
    uc._fastregs = regs
    uc.reg_read = regs.reg_read
    uc.reg_write = regs.reg_write
    uc.reg_read_batch = regs.reg_read_batch
    uc.reg_write_batch = regs.reg_write_batch
    return True
