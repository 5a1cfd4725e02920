"""The readers' results and their view of guest memory (emu/inspect)."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

STACK_FILL = 0xA5            # tskSTACK_FILL_BYTE


@dataclass
class HeapInfo:
    kind: str                          # "FreeRTOS heap_4", "MicroPython GC"
    total: Optional[int] = None        # bytes managed
    free: Optional[int] = None
    used: Optional[int] = None
    largest_free: Optional[int] = None
    min_ever_free: Optional[int] = None
    free_blocks: Optional[int] = None  # free-list entries / free runs
    allocations: Optional[int] = None  # MicroPython: heads in the table
    start: Optional[int] = None
    end: Optional[int] = None
    layout: str = ""                   # where the structure's layout came from
    problem: Optional[str] = None      # why the numbers may not be trusted

    @property
    def fragmentation(self) -> Optional[float]:
        """1 - largest free block / free bytes (0: one block; None: no free bytes)."""
        if not self.free or self.largest_free is None:
            return None
        return 1.0 - self.largest_free / self.free

    def summary(self) -> str:
        if self.problem and self.free is None:
            return f"{self.kind}: {self.problem}"
        parts = []
        if self.total is not None:
            parts.append(f"{self.total} bytes")
        if self.used is not None:
            parts.append(f"used {self.used}")
        parts.append(f"free {self.free}")
        if self.min_ever_free is not None:
            parts.append(f"min ever free {self.min_ever_free}")
        if self.largest_free is not None:
            parts.append(f"largest free block {self.largest_free}")
        frag = self.fragmentation
        if frag is not None:
            parts.append(f"fragmentation {frag * 100:.0f} %")
        text = f"{self.kind}: " + ", ".join(parts)
        if self.problem:
            text += f" ({self.problem})"
        return text


@dataclass
class TaskInfo:
    name: str
    state: str                          # running, ready, blocked, suspended, deleted
    priority: int
    tcb: int
    stack_base: int                     # pxStack (the lowest address)
    stack_top: int                      # pxTopOfStack (the saved SP)
    stack_high_water: Optional[int]     # words never used, as uxTaskGetStackHighWaterMark
    stack_size: Optional[int] = None    # bytes, when the TCB records its end
    problem: Optional[str] = None


@dataclass
class Inspection:
    heaps: list = field(default_factory=list)
    tasks: list = field(default_factory=list)


class GuestMemory:
    """Guest memory and the image's symbols as every reader (emu/inspect,
    emu/rtos.py) sees them.  Reads RAM and flash only: a stray pointer must
    not read a peripheral register, whose read can have side effects.  A
    read anywhere else raises :class:`BadPointer` (a ValueError) with the
    address."""

    def __init__(self, cpu, symbols=None, path: Optional[str] = None):
        self.cpu = cpu
        self.symbols = symbols
        self.path = path                        # the ELF, for its DWARF (None: no layouts)

    @classmethod
    def of(cls, machine) -> "GuestMemory":
        return cls(machine.cpu, machine.symbols,
                   machine.image.path if machine.image is not None else None)

    def in_ram(self, addr: int, size: int = 4) -> bool:
        return self._mapped(addr, size, ("ram",))

    def read(self, addr: int, size: int) -> bytes:
        if not self._mapped(addr, size, ("ram", "flash")):
            raise BadPointer(addr)
        return bytes(self.cpu.read_mem(addr, size))

    __call__ = read

    def u32(self, addr: int) -> int:
        return int.from_bytes(self.read(addr, 4), "little")

    def words(self, addr: int, n: int) -> tuple:
        return struct.unpack(f"<{n}I", self.read(addr, 4 * n))

    def cstr(self, addr: int, most: int = 32) -> str:
        """The NUL-terminated string at ``addr`` (at most ``most`` bytes, less
        near the end of memory), anything not printable ASCII as '?'."""
        raw = b""
        for n in sorted({most, 16, 8, 4, 1}, reverse=True):
            if n <= most:
                try:
                    raw = self.read(addr, n)
                    break
                except BadPointer:
                    continue
        raw = raw.split(b"\0", 1)[0]
        return "".join(chr(b) if 32 <= b < 127 else "?" for b in raw)

    def sym(self, *names: str) -> Optional[int]:
        """The address of the first of ``names`` the image has, or None."""
        for n in names:
            a = self.symbols.lookup(n) if self.symbols else None
            if a is not None:
                return a
        return None

    def sym_size(self, name: str) -> Optional[int]:
        return self.symbols.size(name) if self.symbols else None

    def _mapped(self, addr: int, size: int, kinds: tuple) -> bool:
        r = self.cpu.region_at(addr)
        return r is not None and r[2] in kinds and addr + size <= r[1]


class BadPointer(ValueError):
    def __init__(self, addr: int):
        super().__init__(f"{addr:#010x} is not in RAM or flash")
        self.addr = addr
