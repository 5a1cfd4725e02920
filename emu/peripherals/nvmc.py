"""NVMC: non-volatile memory controller (flash and UICR programming).

nRF52832 Product Specification v1.4, section 11 "NVMC - Non-volatile memory
controller".  Slot 0x4001E000, no interrupt.

CONFIG.WEN selects read-only (Ren, 0), write (Wen, 1) or erase (Een, 2).
CPU stores into flash (0x00000000, 512 KiB) or UICR (0x10001000) reach
:meth:`cpu_flash_write` through the SoC: with Wen the cells keep
``before & after`` (a write can only clear bits), otherwise the store is
ignored and logged.  With Een, writing a page address to ERASEPAGE (or its
deprecated alias ERASEPCR1, or ERASEPCR0), 1 to ERASEALL (flash and UICR) or
1 to ERASEUICR fills the memory with 0xFF (``soc.cpu.write_mem``) and
invalidates translated code (``cpu.invalidate_code``).

Busy time: READY (and READYNEXT) read 0 from the operation until it ends:
T_WRITE per written word, T_ERASEPAGE for a page or UICR erase and
T_ERASEALL for ERASEALL (PS v1.4 NVMC electrical specification, maximum
figures: 41 us, 85 ms, 169 ms; the PS gives no typical value).  The memory
contents change at once.

CPU stall (PS v1.4 11.1: the CPU is halted while the NVMC writes or erases
if it fetches from flash; code running from RAM keeps running): when the
operation starts while the core executes from flash, the core is held to
its end (``cpu.stall_until``): the storing instruction takes that long, DWT
CYCCNT counts the cycles, the events due meanwhile fire at their times and
their interrupts are taken after it, so a loop polling READY sees 1 at its
first read.  From RAM the core runs on and READY reads 0 until the end.

Power cuts (emu/powercut.py): ``op_hook`` sees every program and erase as
it begins and decides what the cells get (all of it, nothing, or the bits
an interrupted operation leaves).

Persistence: every change sets :attr:`flash_dirty` and calls the functions in
:attr:`on_change` with ``(start, end)``; a board saves flash/UICR and clears
the flag.

Not modelled: the nWRITE limit of writes per word between erases, partial erase
(ERASEPAGEPARTIAL does not exist on the nRF52832), the instruction cache
(ICACHECNF is storage; IHIT/IMISS read 0), unaligned/byte flash writes
faulting (they are merged as words), code running from RAM that reads
flash during an operation (on silicon that access waits too; here it reads
at once), a run's deadline inside a stall (the run ends after the stall).
"""
from __future__ import annotations

import contextlib

from emu.clock import ms, us
from emu.peripherals.base import NrfPeripheral, Reg, RO, RW

FLASH_SIZE = 512 * 1024
PAGE = 4096
UICR_BASE = 0x10001000

T_WRITE = us(41)
T_ERASEPAGE = ms(85)
T_ERASEALL = ms(169)


class Nvmc(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_background", "busy_until", "flash_dirty")
    STRUCTURE = ("on_change", "op_hook", "power_listeners")
    NAME = "NVMC"
    FLASH_SIZE = FLASH_SIZE     # code flash and erase page sizes (the nRF51 variant's differ)
    PAGE = PAGE
    TASKS: dict = {}
    EVENTS: dict = {}
    REGISTERS = [
        Reg(0x400, "READY", 0, RO, read="_rd_ready"),
        Reg(0x408, "READYNEXT", 0, RO, read="_rd_ready"),
        Reg(0x504, "CONFIG", 0, RW, mask=0x3),
        Reg(0x508, "ERASEPAGE", 0, RW, write="_wr_erasepage"),
        Reg(0x50C, "ERASEALL", 0, RW, mask=1, write="_wr_eraseall"),
        Reg(0x510, "ERASEPCR0", 0, RW, write="_wr_erasepage"),
        Reg(0x514, "ERASEUICR", 0, RW, mask=1, write="_wr_eraseuicr"),
        Reg(0x540, "ICACHECNF", 0, RW, mask=0x101, write="_wr_icachecnf"),
        Reg(0x548, "IHIT", 0, RW),
        Reg(0x54C, "IMISS", 0, RW),
    ]

    def __init__(self, soc, base: int, name=None, irq=None):
        self.flash_dirty = False
        self.on_change: list = []     # fn(start, end)
        self._background = 0          # inside background(): no CPU stall
        self.power_listeners: list = []   # fn() when ICACHECNF changes (emu/power.py)
        # fn(kind, start, before, after, ticks) -> the bytes the cells get, called
        # as each program or erase begins (emu/powercut.py cuts power there)
        self.op_hook = None
        super().__init__(soc, base, name, irq=None)

    def reset(self) -> None:
        super().reset()
        self.busy_until = 0

    # -- public --------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.clock.now < self.busy_until

    def cpu_flash_write(self, lo: int, before: bytes, after: bytes) -> bytes:
        """A CPU store changed flash/UICR bytes ``before`` -> ``after`` at ``lo``."""
        if self.values[0x504] & 3 != 1:
            self.log.warning("flash write at %#010x with NVMC CONFIG=%d (not Wen): ignored",
                             lo + _first_diff(before, after), self.values[0x504] & 3)
            return before
        if self.busy:
            self.log_once("busywrite", "flash written while the NVMC is busy")
        n = len(before)
        out = (int.from_bytes(before, "little") & int.from_bytes(after, "little")).to_bytes(
            n, "little")
        words = _changed_words(before, after)
        if self.op_hook is not None:
            out = self.op_hook("program", lo, before, out, T_WRITE * max(1, words))
        if not self._background and self.soc.cpu.executing_from_flash():
            self.soc.cpu.write_mem(lo, out)     # the cells as they are during the stall
        self._changed(lo, lo + len(before))
        self._busy(T_WRITE * max(1, words))
        return out

    @property
    def cache_enabled(self) -> bool:
        """ICACHECNF.CACHEEN."""
        return bool(self.values[0x540] & 1)

    # -- registers -----------------------------------------------------
    def _wr_icachecnf(self, new, old) -> None:
        if (new ^ old) & 1:
            for fn in self.power_listeners:
                fn()

    def _rd_ready(self, _off) -> int:
        return 0 if self.clock.now < self.busy_until else 1

    def _wr_erasepage(self, new, old) -> None:
        if not self._erase_enabled("ERASEPAGE"):
            return
        addr = new
        if addr % self.PAGE or not (0 <= addr < self.FLASH_SIZE):
            if addr == UICR_BASE:
                self._erase(UICR_BASE, UICR_BASE + self.PAGE, T_ERASEPAGE)
                return
            self.log.warning("ERASEPAGE %#010x: not a flash page address, ignored", addr)
            return
        self._erase(addr, addr + self.PAGE, T_ERASEPAGE)

    def _wr_eraseall(self, new, old) -> None:
        if new & 1 and self._erase_enabled("ERASEALL"):
            self._erase(0, self.FLASH_SIZE, 0)
            self._erase(UICR_BASE, UICR_BASE + self.PAGE, 0)
            self._busy(T_ERASEALL)

    def _wr_eraseuicr(self, new, old) -> None:
        if new & 1 and self._erase_enabled("ERASEUICR"):
            self._erase(UICR_BASE, UICR_BASE + self.PAGE, T_ERASEPAGE)

    # -- internals -----------------------------------------------------
    def _erase_enabled(self, what: str) -> bool:
        if self.values[0x504] & 3 != 2:
            self.log.warning("%s with NVMC CONFIG=%d (not Een): ignored", what,
                             self.values[0x504] & 3)
            return False
        return True

    def _erase(self, start: int, end: int, ticks: int) -> None:
        cpu = self.soc.cpu
        after = b"\xff" * (end - start)
        if self.op_hook is not None:
            after = self.op_hook("erase", start, cpu.read_mem(start, end - start), after,
                                 ticks or T_ERASEALL)
        cpu.write_mem(start, after)
        cpu.invalidate_code(start, end)
        self._changed(start, end)
        if ticks:
            self._busy(ticks)

    @contextlib.contextmanager
    def background(self):
        """Operations started inside do not hold the CPU: an emulated
        SoftDevice's asynchronous flash calls (emu/softdevice/soc.py)."""
        self._background += 1
        try:
            yield
        finally:
            self._background -= 1

    def _busy(self, ticks: int) -> None:
        self.busy_until = max(self.busy_until, self.clock.now) + ticks
        cpu = self.soc.cpu
        if not self._background and cpu.executing_from_flash():
            # the CPU fetching from flash waits for the NVMC (PS v1.4 11.1)
            cpu.stall_until(self.busy_until)

    def _changed(self, start: int, end: int) -> None:
        self.flash_dirty = True
        for fn in self.on_change:
            fn(start, end)

    def save_model_state(self) -> dict:
        return {"busy_until": self.busy_until}

    def load_model_state(self, s: dict) -> None:
        self.busy_until = s["busy_until"]


_NONZERO = bytes([0] + [1] * 255)     # bytes.translate: any set bit -> 1
_WORD_LOW: dict = {}                  # n words -> the low byte of each word set


def _changed_words(before: bytes, after: bytes) -> int:
    """How many aligned 32-bit words differ (the CPU writes one word of an
    8 KiB window at a time).  Whole-buffer int operations, no numpy: the
    import alone (and BLAS's threads) cost a micro:bit run 0.1 s of CPU."""
    if before == after:
        return 0
    n = len(before) // 4 * 4
    diff = (int.from_bytes(before[:n], "little") ^ int.from_bytes(after[:n], "little"))
    t = int.from_bytes(diff.to_bytes(n, "little").translate(_NONZERO), "little")
    low = _WORD_LOW.get(n)
    if low is None:
        low = _WORD_LOW[n] = int.from_bytes(b"\1\0\0\0" * (n // 4), "little")
    return ((t | t >> 8 | t >> 16 | t >> 24) & low).bit_count() + (before[n:] != after[n:])


def _first_diff(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return 0
