"""SEGGER RTT (Real-Time Transfer), read and written as a debug probe does.

    rtt = machine.start_rtt()            # find the control block as J-Link does
    machine.run(seconds=2)
    print(rtt.text(0))                   # up channel 0: the terminal
    rtt.write(b"help\\n")                 # down channel 0: typed at the firmware

The firmware keeps a control block in RAM (SEGGER's ``SEGGER_RTT_CB``,
usually the symbol ``_SEGGER_RTT``)::

    char acID[16];               "SEGGER RTT" and NULs: how a probe finds it
    int  MaxNumUpBuffers;        target -> host channels
    int  MaxNumDownBuffers;      host -> target channels
    SEGGER_RTT_BUFFER_UP   aUp[MaxNumUpBuffers];
    SEGGER_RTT_BUFFER_DOWN aDown[MaxNumDownBuffers];

and each buffer descriptor is 24 bytes: ``sName, pBuffer, SizeOfBuffer,
WrOff, RdOff, Flags``.  The writer of a ring owns WrOff, the reader owns
RdOff: for an up buffer the firmware writes and this probe reads (and
advances RdOff), for a down buffer this probe writes (and advances WrOff).
The low two bits of Flags are the firmware's mode when its up buffer is
full: 0 skip the write, 1 trim it, 2 block until the probe has made room.
A probe never changes what the firmware does in each mode; it only drains.

Finding the control block (``address``): ``None`` looks at the image's
``_SEGGER_RTT`` symbol when it has one, and otherwise scans every RAM
region for the id, as J-Link's auto-detection does; a symbol name or an
address looks only there.  Until the block is found (the firmware writes
its id at run time, in ``SEGGER_RTT_Init``) every poll looks again; a
block whose id disappears (RAM cleared after a reset) is looked for again.
A candidate counts only when its channel counts and buffer descriptors make
sense (buffers inside RAM), so a stray copy of the string is skipped.

Timing and determinism: the probe is a clock event (``host.rtt``, a host
device's: not saved in snapshots) at every multiple of ``poll_ms`` of
emulated time (so a run restored from a snapshot polls where the saved run
did), plus
:meth:`poll` called between runs (the CLI does at the end of a run).  So the
firmware sees RdOff advance (room in a blocking buffer) at points fixed in
emulated time, and the same firmware and inputs give the same bytes, in the
same places, run after run; no host thread ever touches guest memory.
Bytes for a down channel (:meth:`write`) wait in a host queue and go into
the ring at the next poll, as far as it has room (a probe cannot write into
a full ring either); the rest waits for the next poll.

Problems with a found block (WrOff or RdOff beyond the buffer's size, a
buffer outside RAM) are logged once each and kept in :attr:`errors`; that
channel is not read until it makes sense again.

Not modelled:
- a probe's host-side throughput limit: everything in an up ring is read at
  each poll (J-Link reads at about 1-2 MB/s; OpenOCD polls every 100 ms);
- RTT over several control blocks, and SEGGER's optional
  ``SEGGER_RTT_LOCK`` contention with the probe (a probe reads at slice
  boundaries, never halfway through a store of the firmware);
- the probe's own halting: polling reads RAM without stopping the CPU, as
  J-Link's background mode does.
"""
from __future__ import annotations

import logging
import re
import struct
from dataclasses import dataclass
from typing import Optional, Union

from emu.clock import TICKS_PER_MS

log = logging.getLogger("emu.rtt")

ID = b"SEGGER RTT\0"
ID_LEN = 16
HEADER = 24                 # acID[16], MaxNumUpBuffers, MaxNumDownBuffers
DESC = 24                   # sName, pBuffer, SizeOfBuffer, WrOff, RdOff, Flags
MAX_CHANNELS = 64           # more is not a control block (SEGGER allows far fewer)
MAX_BUFFER = 1 << 20        # a ring larger than this is not believed
MODES = {0: "skip", 1: "trim", 2: "block", 3: "block?"}
EVENT_NAME = "host.rtt"
DEFAULT_POLL_MS = 10.0
KEEP_BYTES = 1 << 22        # per up channel, kept for data()/text(); older bytes are dropped


@dataclass(frozen=True)
class Channel:
    """One buffer descriptor as the firmware last set it."""
    index: int
    direction: str          # "up" (target -> host) or "down" (host -> target)
    name: str
    buffer: int             # pBuffer
    size: int               # SizeOfBuffer
    flags: int

    @property
    def mode(self) -> str:
        """What the firmware does when the ring is full: skip, trim or block."""
        return MODES[self.flags & 3]

    @property
    def configured(self) -> bool:
        return self.buffer != 0 and self.size != 0


class Rtt:
    """The probe's side of RTT on one machine (see the module docstring).

    ``listeners``: callables ``fn(channel, data)`` told of every up-channel
    byte as it is read (from inside the run, at the poll's point in emulated
    time: they must not touch the machine)."""

    def __init__(self, machine, address: Union[int, str, None] = None,
                 poll_ms: float = DEFAULT_POLL_MS):
        from emu import checks
        self.machine = machine
        self.cpu = machine.cpu
        poll_ms = checks.number("poll_ms", poll_ms, 0, 60_000.0)
        if poll_ms <= 0:
            raise ValueError("poll_ms must be above 0")
        self.period = max(1, int(round(poll_ms * TICKS_PER_MS)))
        self.fixed: Optional[int] = None        # look only here
        self.where = "RAM"
        if isinstance(address, str):
            a = machine.symbols.lookup(address)
            if a is None:
                raise ValueError(f"no symbol {address!r} in the firmware for the RTT "
                                 f"control block")
            self.fixed, self.where = a & ~1, f"{address} ({a & ~1:#010x})"
        elif address is not None:
            self.fixed = checks.integer("address", address, 0, 0xFFFFFFFF)
            self.where = f"{self.fixed:#010x}"
        else:
            a = machine.symbols.lookup("_SEGGER_RTT")
            if a is not None:
                self.fixed, self.where = a, f"_SEGGER_RTT ({a:#010x})"
        if self.fixed is not None and self._ram_at(self.fixed, HEADER) is None:
            raise ValueError(f"the RTT control block address {self.where} is not in RAM")
        self.address: Optional[int] = None      # the control block, once found
        self.up: list = []                      # [Channel] as last read
        self.down: list = []
        self.errors: list = []                  # one line per problem seen (each once)
        self.listeners: list = []
        self.polls = 0
        self.found_at: Optional[int] = None     # emulated tick it was (last) found
        self._data: dict = {}                   # up channel -> bytearray received
        self.received: dict = {}                # up channel -> bytes read in all
        self._pending: dict = {}                # down channel -> bytearray to write
        self._bad: set = set()                  # channels with a logged problem
        self._id_re = re.compile(re.escape(ID))
        ev = machine.clock.events.get(EVENT_NAME)       # a probe before this one
        if ev is None:
            ev = machine.clock.event(EVENT_NAME, self._tick)
        ev.cancel()
        ev.fn = self._tick
        self._event = ev
        # polls fall on multiples of the period in emulated time, so a run
        # restored from a snapshot polls where the run it came from did
        now = machine.clock.now
        self._event.schedule_at(-(-now // self.period) * self.period)
        self.running = True

    # ------------------------------------------------------------------
    # public API
    # ------------------------------------------------------------------
    @property
    def found(self) -> bool:
        return self.address is not None

    def data(self, channel: int = 0) -> bytes:
        """Every byte read from up ``channel`` so far (the last 4 MiB)."""
        return bytes(self._data.get(channel, b""))

    def text(self, channel: int = 0) -> str:
        return self.data(channel).decode("utf-8", "replace")

    def write(self, data: bytes, channel: int = 0) -> None:
        """Queue ``data`` for down ``channel``: written into its ring at the
        next polls, as the ring has room."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        if not isinstance(channel, int) or not 0 <= channel < MAX_CHANNELS:
            raise ValueError(f"channel must be 0..{MAX_CHANNELS - 1}")
        if data:
            self._pending.setdefault(channel, bytearray()).extend(bytes(data))

    def pending(self, channel: int = 0) -> int:
        """Bytes queued for down ``channel`` not yet in its ring."""
        return len(self._pending.get(channel, b""))

    def stop(self) -> None:
        """No more polls (a last :meth:`poll` first if you want the tail)."""
        self._event.cancel()
        self.running = False

    def poll(self) -> None:
        """Look for the control block, drain the up rings, fill the down
        rings.  Call only between runs, on the emulator's thread."""
        self.polls += 1
        if self.address is not None and not self._valid(self.address):
            log.info("RTT control block at %#010x is gone (RAM changed); looking again",
                     self.address)
            self.address = None
            self.up, self.down = [], []
        if self.address is None:
            self.address = self._find()
            if self.address is None:
                return
            self.found_at = self.machine.clock.now
            self._bad.clear()
            log.info("RTT control block found at %#010x (polled every %.3g ms of emulated "
                     "time; not modelled: a probe's throughput limit, several control "
                     "blocks)", self.address, self.period / TICKS_PER_MS)
        self._transfer()

    # ------------------------------------------------------------------
    # the probe
    # ------------------------------------------------------------------
    def _tick(self) -> None:
        try:
            self.poll()
        finally:
            if self.running:
                now = self.machine.clock.now
                self._event.schedule_at((now // self.period + 1) * self.period)

    def _ram_at(self, addr: int, size: int):
        """(base, buffer) of the RAM region holding [addr, addr+size), or None."""
        for base, (rsize, buf, _host) in self.cpu.ram_host.items():
            if base <= addr and addr + size <= base + rsize:
                return base, buf
        return None

    def _read(self, addr: int, size: int) -> Optional[bytes]:
        r = self._ram_at(addr, size)
        if r is None:
            return None
        base, buf = r
        return bytes(memoryview(buf)[addr - base:addr - base + size])

    def _write_word(self, addr: int, value: int) -> None:
        self.cpu.write_mem(addr, struct.pack("<I", value))

    def _find(self) -> Optional[int]:
        if self.fixed is not None:
            return self.fixed if self._valid(self.fixed) else None
        for base, (size, buf, _host) in sorted(self.cpu.ram_host.items()):
            view = memoryview(buf)
            for m in self._id_re.finditer(view):
                a = base + m.start()
                if a % 4 == 0 and self._valid(a):
                    return a
        return None

    def _valid(self, addr: int) -> bool:
        """A control block at ``addr``: the id, sane channel counts, and its
        descriptors inside RAM."""
        hdr = self._read(addr, HEADER)
        if hdr is None or hdr[:len(ID)] != ID:
            return False
        nup, ndown = struct.unpack_from("<ii", hdr, 16)
        if not (0 < nup <= MAX_CHANNELS and 0 <= ndown <= MAX_CHANNELS):
            return False
        return self._read(addr + HEADER, DESC * (nup + ndown)) is not None

    def _name(self, ptr: int) -> str:
        r = self.cpu.region_at(ptr) if ptr else None
        if r is None or r[2] not in ("ram", "flash"):     # never a peripheral's register
            return ""
        try:
            raw = self.cpu.read_mem(ptr, min(32, r[1] - ptr))
        except (ValueError, TypeError):
            return ""
        return raw.split(b"\0", 1)[0].decode("latin-1")

    def _problem(self, key, message: str) -> None:
        if key in self._bad:
            return
        self._bad.add(key)
        line = f"RTT {message}"
        if line not in self.errors:
            self.errors.append(line)
        log.warning("%s", line)

    def _transfer(self) -> None:
        cb = self.address
        hdr = self._read(cb, HEADER)
        nup, ndown = struct.unpack_from("<ii", hdr, 16)
        raw = self._read(cb + HEADER, DESC * (nup + ndown))
        descs = [struct.unpack_from("<6I", raw, DESC * i) for i in range(nup + ndown)]
        if len(self.up) != nup or len(self.down) != ndown or any(
                (c.buffer, c.size, c.flags) != (d[1], d[2], d[5])
                for c, d in zip(self.up + self.down, descs)):
            self.up = [Channel(i, "up", self._name(d[0]), d[1], d[2], d[5])
                       for i, d in enumerate(descs[:nup])]
            self.down = [Channel(i, "down", self._name(d[0]), d[1], d[2], d[5])
                         for i, d in enumerate(descs[nup:])]
        for i, d in enumerate(descs[:nup]):
            self._drain(i, cb + HEADER + DESC * i, d)
        for i, d in enumerate(descs[nup:]):
            if self._pending.get(i):
                self._fill(i, cb + HEADER + DESC * (nup + i), d)

    def _ring(self, key, what: str, d) -> Optional[bytearray]:
        """The ring's bytes if its descriptor makes sense, else None (logged once)."""
        _name, buf, size, wr, rd, _flags = d
        if not buf or not size:
            return None                         # a channel the firmware did not set up
        if size > MAX_BUFFER or self._ram_at(buf, size) is None:
            self._problem(key, f"{what}: buffer {buf:#010x} of {size} bytes is not in RAM")
            return None
        if wr >= size or rd >= size:
            self._problem(key, f"{what}: WrOff {wr} / RdOff {rd} not below its size {size} "
                               f"(control block at {self.address:#010x})")
            return None
        self._bad.discard(key)
        return bytearray(self._read(buf, size))

    def _drain(self, i: int, desc_addr: int, d) -> None:
        _name, buf, size, wr, rd, _flags = d
        if wr == rd:
            return
        ring = self._ring(("up", i), f"up channel {i}", d)
        if ring is None:
            return
        data = bytes(ring[rd:wr]) if wr > rd else bytes(ring[rd:] + ring[:wr])
        self._write_word(desc_addr + 16, wr)    # RdOff: the probe's
        self.received[i] = self.received.get(i, 0) + len(data)
        got = self._data.setdefault(i, bytearray())
        got += data
        if len(got) > KEEP_BYTES:
            del got[:len(got) - KEEP_BYTES]
        for fn in list(self.listeners):
            fn(i, data)

    def _fill(self, i: int, desc_addr: int, d) -> None:
        _name, buf, size, wr, rd, _flags = d
        ring = self._ring(("down", i), f"down channel {i}", d)
        if ring is None:
            return
        room = (rd - wr - 1) if rd > wr else (size - 1 - wr + rd)
        queue = self._pending[i]
        n = min(room, len(queue))
        if n <= 0:
            return
        chunk = bytes(queue[:n])
        del queue[:n]
        first = min(n, size - wr)
        self.cpu.write_mem(buf + wr, chunk[:first])
        if n > first:
            self.cpu.write_mem(buf, chunk[first:])
        self._write_word(desc_addr + 12, (wr + n) % size)     # WrOff: the probe's
