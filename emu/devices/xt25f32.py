"""XTX XT25F32B 32 Mbit (4 MiB) SPI NOR flash (PineTime external flash).

Commands (XT25F32B datasheet): 9F RDID (0B 40 16), 90 REMS (0B 15),
05 RDSR (bit 0 WIP, bit 1 WEL), 06 WREN, 04 WRDI, 03 READ, 0B FAST READ
(one dummy byte), 02 PAGE PROGRAM (address wraps inside the 256-byte page,
only 1->0 bit changes, at most the last 256 bytes kept), 20 SECTOR ERASE
(4 KiB), 52 BLOCK ERASE 32 KiB, D8 BLOCK ERASE 64 KiB, 60/C7 CHIP ERASE,
B9 DEEP POWER-DOWN, AB RELEASE from deep power-down (returns device ID
0x15 after three dummy bytes), 2B READ SECURITY REGISTER (0x00: nothing
locked, the last program and erase did not fail; InfiniTime's littlefs
checks its E_FAIL/P_FAIL bits after every erase and program).  WREN/WRDI/program/erase/B9/AB execute on the
CS rising edge, as the datasheet requires; a program or erase without WEL
set is ignored.  Program and erase take the datasheet's typical times on
the emulated clock, during which RDSR shows WIP=1 and every other command
is ignored; WEL clears when they complete.  In deep power-down only AB is
decoded.

Content lives in memory and is backed by a file (optional): loaded at
construction (short or missing file = erased 0xFF), saved by save() when
dirty (emu/outputs.py's atomic_write: a temporary file, fsync, os.replace;
a crash or a full disk mid-save leaves the previous content intact),
periodically every SAVE_PERIOD of emulated time when dirty, and on close().
A save that fails is never silent: with ``on_error`` set (the machine sets
it: ``Machine.report_output_error``) it is reported there once, in one line,
and the content stays dirty so the next save tries again; without it,
close() raises the OSError and the periodic save logs it.

Power cuts (emu/powercut.py): ``op_hook`` sees each program and erase as it
begins; ``lose_power`` stops the one in flight where it is.

Not modelled: status register 2/3 writes (01/31) and block protection,
dual/quad I/O reads, suspend/resume, the OTP security registers' contents
and their lock bits, failed programs and erases, SFDP (5A),
deep power-down wake-up time tRES1, maximum (not typical) timings.
"""
from __future__ import annotations

import logging
import os
import re
import stat
import time
from typing import Callable, Optional

from emu.clock import TICKS_PER_MS, TICKS_PER_SECOND, TICKS_PER_US
from emu.outputs import atomic_write

log = logging.getLogger("emu.dev.xt25f32")

SIZE = 4 * 1024 * 1024
PAGE = 256
JEDEC_ID = (0x0B, 0x40, 0x16)
DEVICE_ID = 0x15
# typical times, XT25F32B datasheet AC characteristics
T_PP = 600 * TICKS_PER_US
T_SE = 50 * TICKS_PER_MS
T_BE32 = 150 * TICKS_PER_MS
T_BE64 = 250 * TICKS_PER_MS
T_CE = 15 * TICKS_PER_SECOND
SAVE_PERIOD = 5 * TICKS_PER_SECOND

RDID, REMS, RDSR, WREN, WRDI, READ, FAST_READ = 0x9F, 0x90, 0x05, 0x06, 0x04, 0x03, 0x0B
RDSCUR = 0x2B
PP, SE, BE32, BE64, CE1, CE2, DP, RES = 0x02, 0x20, 0x52, 0xD8, 0x60, 0xC7, 0xB9, 0xAB


STALE_TEMP_SECONDS = 60          # a save's temporary file older than this was abandoned
_TEMP_NAME = re.compile(r"\.flash-[A-Za-z0-9_]{8}\Z")      # tempfile.mkstemp(prefix=".flash-")


def remove_stale_temporaries(path: str) -> list:
    """Remove the temporary files a save killed midway left beside ``path``:
    those of emu/outputs.py's atomic saves (``.NAME.PID.*.tmp``) whose
    process is gone, and the ``.flash-XXXXXXXX`` of earlier versions'
    saves, untouched for STALE_TEMP_SECONDS (a save in progress in another
    emulator is left alone).  Returns the paths removed; a file that cannot
    be removed is logged and left."""
    from emu.outputs import sweep_temporaries
    removed = sweep_temporaries(path)
    for tmp in removed:
        log.info("removed %s, left by a flash save that did not finish", tmp)
    d = os.path.dirname(os.path.abspath(path))
    try:
        names = os.listdir(d)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        if not _TEMP_NAME.match(name):
            continue
        tmp = os.path.join(d, name)
        try:
            st = os.lstat(tmp)
            if not stat.S_ISREG(st.st_mode) or now - st.st_mtime < STALE_TEMP_SECONDS:
                continue
            os.unlink(tmp)
            removed.append(tmp)
            log.info("removed %s, left by a flash save that did not finish", tmp)
        except OSError as e:
            log.warning("cannot remove stale temporary %s: %s", tmp, e)
    return removed


class Xt25f32:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_addr", "_buf", "_busy_ev", "_cmd", "_logged", "_pending_op", "_save_ev",
                "_save_failed", "data", "deep_power_down", "dirty", "name", "selected", "wel",
                "wip")
    STRUCTURE = ("clock", "on_error", "op_hook", "path", "power_listeners")
    def __init__(self, clock, path: Optional[str] = None, name: str = "flash"):
        self.clock = clock
        self.name = name
        self.path = path
        self.data = bytearray(b"\xff" * SIZE)
        self.dirty = False
        self.on_error: Optional[Callable[[str], None]] = None   # a failed save, one line
        self._save_failed = False
        self._logged: set = set()
        self._busy_ev = clock.event(f"{name}.busy", self._op_done)
        self._save_ev = clock.event(f"{name}.autosave", self._autosave)
        self._pending_op = None
        self.wip = False
        self.wel = False
        self.deep_power_down = False
        self.selected = False
        # fn() after select, deep power-down, or a program/erase starts or ends
        # (emu/power.py)
        self.power_listeners: list = []
        # fn(kind, address, length, ticks) as a program or erase begins
        # (emu/powercut.py counts them and cuts power at one)
        self.op_hook: Optional[Callable] = None
        self._cmd: Optional[int] = None
        self._buf = bytearray()
        self._addr = 0
        if path:
            remove_stale_temporaries(path)
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                raw = f.read(SIZE)
            self.data[:len(raw)] = raw

    # ------------------------------------------------------------------ API
    def reset(self) -> None:
        """Power cycle: volatile state cleared; a program/erase in flight completes."""
        if self._busy_ev.pending:
            self._busy_ev.cancel()
            self._op_done()
        self.wel = False
        self.deep_power_down = False
        self._cmd = None

    def read(self, address: int, n: int) -> bytes:
        return bytes(self.data[address:address + n])

    @property
    def status(self) -> int:
        return (1 if self.wip else 0) | (2 if self.wel else 0)

    def save(self) -> bool:
        """Write the content to the backing file atomically. True if written."""
        if not self.path or not self.dirty:
            return False
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, exist_ok=True)
        atomic_write(self.path, self.data)
        self.dirty = False
        self._save_failed = False
        return True

    def _save_or_report(self) -> None:
        try:
            self.save()
        except OSError as e:
            if self.on_error is None:
                raise
            if not self._save_failed:          # one line per failure, not per retry
                self._save_failed = True
                self.on_error(f"{self.path}: cannot save the flash "
                              f"({e.strerror or e}); its last changes are not in the file")

    def save_state(self) -> dict:
        """Contents and volatile state (the backing file path is not state)."""
        return {"data": bytes(self.data), "dirty": self.dirty, "wip": self.wip,
                "wel": self.wel, "deep_power_down": self.deep_power_down,
                "selected": self.selected, "cmd": self._cmd, "buf": bytes(self._buf),
                "addr": self._addr, "pending_op": self._pending_op,
                "busy_due": self._busy_ev.when, "save_due": self._save_ev.when}

    def load_state(self, st: dict) -> None:
        self.data = bytearray(st["data"])
        self.dirty, self.wip, self.wel = st["dirty"], st["wip"], st["wel"]
        self.deep_power_down, self.selected = st["deep_power_down"], st["selected"]
        self._cmd, self._buf, self._addr = st["cmd"], bytearray(st["buf"]), st["addr"]
        op = st["pending_op"]
        self._pending_op = tuple(op) if op is not None else None
        for ev, due in ((self._busy_ev, st["busy_due"]), (self._save_ev, st["save_due"])):
            ev.cancel()
            if due is not None:
                ev.schedule_at(due)

    def close(self) -> None:
        if self._busy_ev.pending:
            self._busy_ev.cancel()
            self._op_done()
        self._save_or_report()

    # --------------------------------------------------------- SPI contract
    def select(self, selected: bool) -> None:
        if selected and not self.selected:
            self._cmd = None
            self._buf = bytearray()
        elif not selected and self.selected:
            self._execute_on_cs_high()
        if selected != self.selected:
            self.selected = selected
            self._power_changed()

    def _power_changed(self) -> None:
        for fn in self.power_listeners:
            fn()

    def transfer(self, byte: int) -> int:
        if self._cmd is None:
            self._cmd = byte
            self._buf = bytearray()
            return 0xFF
        c = self._cmd
        if self.deep_power_down and c != RES:
            return 0xFF
        if self.wip and c != RDSR:
            return 0xFF
        buf = self._buf
        if c == RDSR:
            return self.status
        if c == RDSCUR:
            return 0x00
        if c == READ or c == FAST_READ:
            need = 3 if c == READ else 4
            if len(buf) < need:
                buf.append(byte)
                if len(buf) == need:
                    self._addr = ((buf[0] << 16) | (buf[1] << 8) | buf[2]) % SIZE
                return 0xFF
            v = self.data[self._addr]
            self._addr = (self._addr + 1) % SIZE
            return v
        if c == RDID:
            i = len(buf)
            buf.append(byte)
            return JEDEC_ID[i] if i < 3 else 0xFF
        if c == REMS:
            i = len(buf)
            buf.append(byte)
            return (0x0B, DEVICE_ID)[(i - 3) % 2] if i >= 3 else 0xFF
        if c == RES:
            i = len(buf)
            buf.append(byte)
            return DEVICE_ID if i >= 3 else 0xFF
        if c == PP:
            buf.append(byte)
            if len(buf) > 3 + PAGE:
                del buf[3]                            # only the last 256 bytes are kept
            return 0xFF
        if c in (SE, BE32, BE64):
            buf.append(byte)
            return 0xFF
        if c not in (WREN, WRDI, CE1, CE2, DP) and ("cmd", c) not in self._logged:
            self._logged.add(("cmd", c))
            log.info("%s: command %#04x not modelled (ignored)", self.name, c)
        return 0xFF

    STREAM_CHUNK = 4096

    def stream_answers(self) -> bytes:
        """The answers to the next bytes, whatever is sent, for a master that
        streams (buses.SpiBus): up to STREAM_CHUNK of them, empty when they
        depend on what is sent (the command byte, READ's address, RDID's
        position).  READ/FAST_READ's data phase answers the array's next
        bytes (not past the end, where the address wraps); PAGE PROGRAM's and
        the erases' address and data 0xFF; RDSR the status (WIP changes only
        at a clock event, which ends a stream first); RDSCUR 0x00; any
        command but RDSR while WIP 0xFF (ignored)."""
        c = self._cmd
        if c is None or self.deep_power_down:
            return b""
        n = self.STREAM_CHUNK
        if c == RDSR:
            return bytes((self.status,)) * n
        if self.wip:
            return b"\xff" * n
        if c == READ or c == FAST_READ:
            if len(self._buf) < (3 if c == READ else 4):
                return b""
            a = self._addr
            return bytes(self.data[a:a + n])
        if c == PP or c == SE or c == BE32 or c == BE64:
            return b"\xff" * n
        if c == RDSCUR:
            return b"\x00" * n
        return b""

    def stream(self, data: bytes) -> None:
        """transfer() of each byte, for bytes sent while stream_answers() gave
        at least that many (the same state changes, in one call)."""
        c = self._cmd
        if c is None or self.deep_power_down or c == RDSR or c == RDSCUR or self.wip:
            if c is None or self.deep_power_down:
                for b in data:          # (not streamed: stream_answers gave none)
                    self.transfer(b)
            return
        if c == READ or c == FAST_READ:
            self._addr = (self._addr + len(data)) % SIZE
        elif c == PP:
            buf = self._buf
            buf += data
            if len(buf) > 3 + PAGE:
                del buf[3:len(buf) - PAGE]          # only the last 256 bytes are kept
        elif c == SE or c == BE32 or c == BE64:
            self._buf += data
        else:
            for b in data:
                self.transfer(b)

    # ------------------------------------------------------------- private
    def _execute_on_cs_high(self) -> None:
        c, buf = self._cmd, self._buf
        self._cmd = None
        if c is None:
            return
        if self.deep_power_down:
            if c == RES:
                self.deep_power_down = False
            return
        if self.wip:
            return
        if c == WREN and not buf:
            self.wel = True
        elif c == WRDI and not buf:
            self.wel = False
        elif c == DP and not buf:
            self.deep_power_down = True
        elif c == PP and len(buf) >= 4:
            if self.wel:
                addr = (buf[0] << 16) | (buf[1] << 8) | buf[2]
                self._start(T_PP, ("pp", addr % SIZE, bytes(buf[3:])))
        elif c in (SE, BE32, BE64) and len(buf) == 3:
            if self.wel:
                size, t = {SE: (4096, T_SE), BE32: (32768, T_BE32), BE64: (65536, T_BE64)}[c]
                addr = ((buf[0] << 16) | (buf[1] << 8) | buf[2]) % SIZE
                self._start(t, ("erase", addr & ~(size - 1), size))
        elif c in (CE1, CE2) and not buf:
            if self.wel:
                self._start(T_CE, ("erase", 0, SIZE))

    def _start(self, ticks: int, op) -> None:
        self.wip = True
        self._pending_op = op
        self._busy_ev.schedule_in(ticks)
        self._power_changed()
        if self.op_hook is not None:
            kind = "program" if op[0] == "pp" else "erase"
            self.op_hook(kind, op[1], len(op[2]) if op[0] == "pp" else op[2], ticks)

    def pending_change(self):
        """(start, before, after) of the program or erase in flight, or None:
        the bytes it changes as they are and as they will be."""
        op = self._pending_op
        if op is None:
            return None
        if op[0] == "pp":
            _, addr, data = op
            base, off = addr & ~(PAGE - 1), addr & (PAGE - 1)
            before = bytes(self.data[base:base + PAGE])
            after = bytearray(before)
            for i, b in enumerate(data):
                after[(off + i) & (PAGE - 1)] &= b
            return base, before, bytes(after)
        _, addr, size = op
        return addr, bytes(self.data[addr:addr + size]), b"\xff" * size

    def lose_power(self, partial: Optional[bytes] = None) -> None:
        """Power is gone: the operation in flight stops where it is
        (``partial``: what its bytes hold then, from pending_change's start;
        None: as they were) and every volatile bit is lost."""
        if self._busy_ev.pending:
            self._busy_ev.cancel()
        if partial is not None and self._pending_op is not None:
            start = self.pending_change()[0]
            self.data[start:start + len(partial)] = partial
            self.dirty = True
        self._pending_op = None
        self.wip = False
        self.wel = False
        self.deep_power_down = False
        self._cmd = None

    def _op_done(self) -> None:
        op = self._pending_op
        self._pending_op = None
        if op is not None:
            if op[0] == "pp":
                _, addr, data = op
                base, off = addr & ~(PAGE - 1), addr & (PAGE - 1)
                d = self.data
                for i, b in enumerate(data):
                    a = base + ((off + i) & (PAGE - 1))
                    d[a] &= b
            else:
                _, addr, size = op
                self.data[addr:addr + size] = b"\xff" * size
            self.dirty = True
            if self.path and not self._save_ev.pending:
                self._save_ev.schedule_in(SAVE_PERIOD)
        self.wip = False
        self.wel = False
        self._power_changed()

    def _autosave(self) -> None:
        try:
            self._save_or_report()
        except OSError as e:
            log.error("%s: saving %s failed: %s", self.name, self.path, e)
