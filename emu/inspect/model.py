"""The readers' results and their view of guest memory (emu/inspect)."""
from __future__ import annotations

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
    """Reads guest RAM and flash for a reader, with bounds: every read is
    checked against the board's RAM (and flash for constants); a read outside
    raises :class:`BadPointer` with the address."""

    def __init__(self, machine):
        self.cpu = machine.cpu
        self.symbols = machine.symbols
        self.path = machine.image.path if machine.image is not None else None
        soc = machine.soc
        self.ram = (getattr(soc, "RAM_BASE", 0x20000000),
                    getattr(soc, "RAM_BASE", 0x20000000) + getattr(soc, "RAM_SIZE", 0x10000))

    def in_ram(self, addr: int, size: int = 4) -> bool:
        return self.ram[0] <= addr and addr + size <= self.ram[1]

    def read(self, addr: int, size: int) -> bytes:
        if not self.in_ram(addr, size):
            raise BadPointer(addr)
        return bytes(self.cpu.read_mem(addr, size))

    def u32(self, addr: int) -> int:
        return int.from_bytes(self.read(addr, 4), "little")

    def sym(self, name: str) -> Optional[int]:
        return self.symbols.lookup(name) if self.symbols else None

    def sym_size(self, name: str) -> Optional[int]:
        v = self.symbols.by_name.get(name) if self.symbols else None
        return v[1] if v else None


class BadPointer(Exception):
    def __init__(self, addr: int):
        super().__init__(f"{addr:#010x} is outside RAM")
        self.addr = addr


