"""Seeing what the chip did: an instruction trace and a peripheral-access trace.

Both hook Unicorn only when asked (``pinetime-emu run --trace FILE`` /
``--trace-mmio FILE``, or :meth:`emu.Machine.trace` /
:meth:`emu.Machine.trace_mmio`); a machine without them runs exactly as
before (the hooks do not touch cycle accounting: the same firmware gives the
same cycles traced or not, tested).  Each stops writing at its size limit
and says so in its last line.

Instruction trace, one line per executed instruction (Python hook per
instruction: a few hundred thousand a second)::

    0.000012 0x000001a4 main+0x10         ldr r3, [pc, #0x1c]     r3=0x40011000

emulated time in seconds at the start of the instruction's basic block,
address, symbol, capstone's disassembly, and the core registers (r0-r12, sp,
lr) the instruction changed.  ``range`` bounds it to a symbol (its ELF size)
or ``START-END`` (hex).

Peripheral trace, one line per guest access to 0x40000000-0x5FFFFFFF and the
private peripheral bus (SCS, ITM, DWT)::

    0.001003 0x000002c4 main+0x84         R4 rtc1.COUNTER        0x40011504 0x00000021

emulated time, the guest PC and symbol, R or W with the access size, the
peripheral and register as the register tables name them (``+0xNNN`` where
a table has no name), address and value (the value read, after the read).

A trace given a path is written in whole lines (emu/outputs.py's
StreamOutput): a write error (a full disk, a removed folder) stops it,
leaves the lines written so far and calls ``on_error`` with one line naming
the file.

Not traced: the core's own register accesses outside these ranges, DMA
(EasyDMA reads and writes RAM without the CPU), and accesses made by the
emulator itself (snapshots, GDB memory reads).
"""
from __future__ import annotations

import ctypes
from typing import Optional, TextIO, Union

from unicorn import UC_HOOK_CODE, UC_HOOK_MEM_WRITE
import unicorn.arm_const as A

from emu.outputs import StreamOutput

UC_HOOK_MEM_READ_AFTER = 1 << 13      # the Python binding does not list it
DEFAULT_LIMIT = 64 << 20
MMIO_RANGES = ((0x40000000, 0x5FFFFFFF), (0xE0000000, 0xE00FFFFF))
_CORE = [(f"r{i}", getattr(A, f"UC_ARM_REG_R{i}")) for i in range(13)] + \
        [("sp", A.UC_ARM_REG_SP), ("lr", A.UC_ARM_REG_LR)]


class TraceError(Exception):
    """A trace cannot be set up (bad range, unknown symbol): one-line message."""


def parse_size(text: str) -> int:
    """'64M', '500k', '1G' or a number of bytes."""
    t = text.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in "kmg" else t
    try:
        n = int(float(num) * mult)
    except (ValueError, OverflowError):       # not a number; inf, or 1e309 read as inf
        raise TraceError(f"bad size {text!r} (a finite number of bytes, or with k, M or G)"
                         ) from None
    if n <= 0:
        raise TraceError(f"bad size {text!r}: must be positive")
    return n


def parse_range(machine, text: str) -> tuple:
    """'SYMBOL' (its ELF extent) or 'START-END' (hex or decimal) -> (start, end)."""
    if "-" in text:
        a, b = text.split("-", 1)
        try:
            start, end = int(a, 0), int(b, 0)
        except ValueError:
            raise TraceError(f"bad trace range {text!r}: START-END, e.g. 0x1000-0x2000") from None
        if end <= start:
            raise TraceError(f"bad trace range {text!r}: END must be above START")
        return start, end
    extent = machine.symbols.extent(text) if hasattr(machine.symbols, "extent") else None
    if extent is None:
        raise TraceError(f"no symbol {text!r} with a size in the firmware's symbols")
    return extent


class _Writer:
    def __init__(self, out: Union[str, TextIO], limit: int, on_error=None):
        self._own = not hasattr(out, "write")
        self._on_error = on_error
        self.error: Optional[str] = None
        self.f = StreamOutput(out, on_error=self._failed) if self._own else out
        self.limit = limit
        self.written = 0
        self.full = False
        self.lines = 0

    def _failed(self, message: str) -> None:
        self.full = True                  # the hooks stop tracing
        self.error = message
        if self._on_error is not None:
            self._on_error(message)

    def line(self, text: str) -> bool:
        if self.full:
            return False
        n = len(text) + 1
        if self.written + n > self.limit:
            self.f.write(f"# trace stopped at its size limit ({self.limit} bytes)\n")
            self.full = True
            return False
        self.f.write(text + "\n")
        self.written += n
        self.lines += 1
        return True

    def close(self) -> None:
        if self._own:
            self.f.close()
        else:
            self.f.flush()


class MmioTrace:
    """Every guest access to the peripherals and the PPB, with register names."""

    def __init__(self, machine, out: Union[str, TextIO], limit: int = DEFAULT_LIMIT,
                 on_error=None):
        from unicorn.unicorn_py3.unicorn import HOOK_MEM_ACCESS_CFUNC, uclib
        self.m = machine
        self.w = _Writer(out, limit, on_error)
        self._names: dict = {}
        uc = machine.cpu.uc
        self._cbs = [HOOK_MEM_ACCESS_CFUNC(self._after_read), HOOK_MEM_ACCESS_CFUNC(self._write)]
        self._hooks = []
        for lo, hi in MMIO_RANGES:
            for htype, cb in ((UC_HOOK_MEM_READ_AFTER, self._cbs[0]),
                              (UC_HOOK_MEM_WRITE, self._cbs[1])):
                hh = ctypes.c_size_t()
                err = uclib.uc_hook_add(uc._uch, ctypes.byref(hh), htype, cb, None,
                                        ctypes.c_uint64(lo), ctypes.c_uint64(hi))
                if err:
                    raise TraceError(f"cannot hook peripheral accesses (unicorn error {err})")
                self._hooks.append(hh.value)
        machine.cpu.access_watchers += 1     # every access must happen: no loop skipped

    def _name(self, addr: int) -> str:
        key = addr & ~3
        n = self._names.get(key)
        if n is None:
            n = self._names[key] = self.m.soc.bus.register_name(addr) \
                if hasattr(self.m.soc, "bus") else f"{key:#010x}"
        return n

    def _emit(self, kind: str, addr: int, size: int, value: int) -> None:
        m = self.m
        cpu = m.cpu
        try:
            cpu.sync_time()
            pc = cpu.uc.reg_read(A.UC_ARM_REG_PC)
        except Exception:
            pc = 0
        t = m.clock.now / 512e6
        self.w.line(f"{t:.9f} {pc:#010x} {m.describe_address(pc) or '?':24s} {kind}{size} "
                    f"{self._name(addr):22s} {addr:#010x} {value & 0xFFFFFFFF:#010x}")

    # Unicorn syncs the CPU state to the accessing instruction before these
    # hooks, IT bits included: put back as the running block keeps them, or
    # a traced access in an IT block would change what the firmware does
    # (CortexM.resume_after_access_hook)
    def _after_read(self, _uc, _acc, addr, size, value, _ud):
        if not self.w.full:
            self._emit("R", addr, size, value)
        self.m.cpu.resume_after_access_hook()

    def _write(self, _uc, _acc, addr, size, value, _ud):
        if not self.w.full:
            self._emit("W", addr, size, value)
        self.m.cpu.resume_after_access_hook()

    def close(self) -> None:
        uc = self.m.cpu.uc
        if self._hooks:
            self.m.cpu.access_watchers -= 1
        for hh in self._hooks:
            try:
                uc.hook_del(hh)
            except Exception:
                pass
        self._hooks = []
        self.w.close()


class InsnTrace:
    """Every executed instruction in a range, disassembled, with what it changed."""

    def __init__(self, machine, out: Union[str, TextIO], limit: int = DEFAULT_LIMIT,
                 start: int = 0, end: int = 0xFFFFFFFF, on_error=None):
        self.m = machine
        self.w = _Writer(out, limit, on_error)
        self.md = machine.cpu.cost_model.md
        self._dis: dict = {}
        self._pending: Optional[tuple] = None     # (prefix, register values before)
        uc = machine.cpu.uc
        self._hook = uc.hook_add(UC_HOOK_CODE, self._code, begin=start, end=end)
        uc.ctl_remove_cache(start, min(end + 1, 0xFFFFFFFF))   # hooks apply to new translations

    def _regs(self):
        return self.m.cpu.uc.reg_read_batch([r for _n, r in _CORE])

    def _text(self, addr: int, size: int) -> str:
        d = self._dis.get(addr)
        if d is None:
            try:
                code = bytes(self.m.cpu.uc.mem_read(addr, size))
                d = next((f"{mn} {ops}".strip() for _a, _s, mn, ops in
                          self.md.disasm_lite(code, addr, 1)), f".inst {code.hex()}")
            except Exception:
                d = "?"
            self._dis[addr] = d
        return d

    def _finish(self, now_regs) -> None:
        prefix, before = self._pending
        self._pending = None
        changed = " ".join(f"{n}={v:#x}" for (n, _r), a, v in zip(_CORE, before, now_regs)
                           if a != v)
        self.w.line(f"{prefix}  {changed}".rstrip())

    def _code(self, uc, addr, size, _ud):
        if self.w.full:
            return
        regs = self._regs()
        if self._pending is not None:
            self._finish(regs)
        m = self.m
        t = m.clock.now / 512e6
        self._pending = (f"{t:.9f} {addr:#010x} {m.describe_address(addr) or '?':24s} "
                         f"{self._text(addr, size):32s}", regs)

    def close(self) -> None:
        if self._pending is not None and not self.w.full:
            self._finish(self._regs())
        try:
            self.m.cpu.uc.hook_del(self._hook)
        except Exception:
            pass
        self.w.close()
