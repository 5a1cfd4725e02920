"""GDB Remote Serial Protocol stub: debug the emulated firmware with gdb-multiarch.

``serve(machine, port, host="127.0.0.1", wait=False, run_seconds=None)`` is the
entry point for a headless CLI run (``wait``: stay halted at reset until GDB
connects and continues; ``run_seconds``: emulated seconds, None = until exit or
``kill``).  A window loop integrates the same way, on its emulator thread::

    stub = GdbStub(machine, host, port)
    while window_open:
        if stub.halted:                 # under debugger control: time is frozen
            stub.poll(0.02)             # serve packets (host time paces the socket only)
        else:
            stub.run_machine(machine.now + slice_ticks)   # runs, polling for Ctrl-C
        draw_frame()

Only the emulator thread touches the machine; the socket is non-blocking.
``stub.wants_halt`` is true between a Ctrl-C and the stop it causes.

Protocol (GDB manual, "Remote Protocol"): qSupported (PacketSize, no-ack mode,
qXfer features/memory-map), target description with org.gnu.gdb.arm.m-profile,
org.gnu.gdb.arm.vfp (d0-d15, fpscr) and org.gnu.gdb.arm.m-system (msp, psp) plus
a feature for primask/basepri/faultmask/control; g/G/p/P, m/M/X, Z0-Z4/z0-z4,
c/s/vCont, Ctrl-C, ?, qRcmd monitor commands, D, k, qAttached, qC, thread info,
vFlashErase/vFlashWrite/vFlashDone (GDB's ``load`` into flash).

Threads: with an RTOS the image's symbols name (emu/rtos.py: FreeRTOS,
Zephyr), its tasks are threads once the scheduler runs (qfThreadInfo/
qsThreadInfo, qThreadExtraInfo "Name: ..., State: ..., Priority: ...", qC,
T, Hg/Hc, thread:ID in stop replies); the id is the TCB's address.  ``g``/``p``
of a switched-out task read its saved context (FP registers unavailable
without an FP context; MSP and the masks are the CPU's); ``G``/``P`` on it
are refused; an unknown thread id is E01.  Without an RTOS: one thread, 1.

Breakpoints never write guest memory: each is a Unicorn UC_HOOK_CODE limited to
one address that stops the CPU before the instruction.  Watchpoints are
UC_HOOK_MEM_READ/WRITE hooks limited to the range; the stop is reported before
the access, with PC at the accessing instruction and memory holding the old
value (ARM GDB treats watchpoints as non-steppable and steps over the access;
a raw `c` from a watchpoint stop steps over it too).

Cycle accounting: the block hook charges a translation block's whole cost when
the block starts.  When the stub stops inside a block at address B, the cost of
[B, end of block) is taken back at once (so emulated time stands exactly at B
while halted); on resume Unicorn translates a new block at B and charges it
again.  A Python block hook records the current block while any breakpoint,
watchpoint or step is active (it slows emulation only then).

Not modelled:
- an interrupt whose scheduled event falls inside the very block that a
  breakpoint/step interrupted may be taken at the stop address instead of at the
  end of that block (block-granular interrupt timing is shifted, not time);
- flash programming through GDB goes straight into the flash array (`load`
  works: vFlashErase fills with 0xFF, vFlashWrite writes), without the
  NVMC's timing; M/X into flash patch the image the same way;
- non-stop mode, running one task on its own (a step or continue naming a
  switched-out task runs the CPU, i.e. the current task), writing a
  switched-out task's registers, tracepoints; a write watchpoint on a
  peripheral register reports the stop after the register write took effect
  (and the write is performed again when stepping over it).
"""
from __future__ import annotations

import logging
import re
import select
import socket
from typing import Optional

import unicorn.arm_const as A
from unicorn import (UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MEM_WRITE,
                     UcError)

from emu.clock import NEVER, TICKS_PER_SECOND

log = logging.getLogger("frontends.gdbstub")

PACKET_SIZE = 0x4000
SIGINT, SIGTRAP, SIGSEGV = 2, 5, 11

# register numbering of our target description
_GPR = [getattr(A, f"UC_ARM_REG_R{i}") for i in range(13)] + [A.UC_ARM_REG_SP, A.UC_ARM_REG_LR,
                                                             A.UC_ARM_REG_PC]
REG_XPSR, REG_MSP, REG_PSP, REG_PRIMASK, REG_BASEPRI, REG_FAULTMASK, REG_CONTROL = range(16, 23)
REG_D0 = 23
REG_FPSCR = REG_D0 + 16
NUM_REGS = REG_FPSCR + 1
_SPECIAL = {REG_MSP: A.UC_ARM_REG_MSP, REG_PSP: A.UC_ARM_REG_PSP,
            REG_PRIMASK: A.UC_ARM_REG_PRIMASK, REG_BASEPRI: A.UC_ARM_REG_BASEPRI,
            REG_FAULTMASK: A.UC_ARM_REG_FAULTMASK, REG_CONTROL: A.UC_ARM_REG_CONTROL}


def _target_xml() -> str:
    core = "".join(f'<reg name="r{i}" bitsize="32" regnum="{i}" type="uint32"/>' for i in range(13))
    core += ('<reg name="sp" bitsize="32" regnum="13" type="data_ptr"/>'
             '<reg name="lr" bitsize="32" regnum="14" type="uint32"/>'
             '<reg name="pc" bitsize="32" regnum="15" type="code_ptr"/>'
             f'<reg name="xpsr" bitsize="32" regnum="{REG_XPSR}" type="uint32"/>')
    vfp = "".join(f'<reg name="d{i}" bitsize="64" regnum="{REG_D0 + i}" type="ieee_double"/>'
                  for i in range(16))
    vfp += f'<reg name="fpscr" bitsize="32" regnum="{REG_FPSCR}" type="int" group="float"/>'
    msys = (f'<reg name="msp" bitsize="32" regnum="{REG_MSP}" type="data_ptr" group="system"/>'
            f'<reg name="psp" bitsize="32" regnum="{REG_PSP}" type="data_ptr" group="system"/>')
    extra = "".join(f'<reg name="{n}" bitsize="32" regnum="{r}" type="uint32" group="system"/>'
                    for n, r in (("primask", REG_PRIMASK), ("basepri", REG_BASEPRI),
                                 ("faultmask", REG_FAULTMASK), ("control", REG_CONTROL)))
    return ('<?xml version="1.0"?><!DOCTYPE target SYSTEM "gdb-target.dtd">'
            '<target version="1.0"><architecture>arm</architecture>'
            f'<feature name="org.gnu.gdb.arm.m-profile">{core}</feature>'
            f'<feature name="org.gnu.gdb.arm.vfp">{vfp}</feature>'
            f'<feature name="org.gnu.gdb.arm.m-system">{msys}</feature>'
            f'<feature name="org.pinetime-emu.arm.m-system-masks">{extra}</feature>'
            '</target>')


def _checksum(data: bytes) -> int:
    return sum(data) & 0xFF


def _escape(data: bytes) -> bytes:
    out = bytearray()
    for b in data:
        if b in b"#$}*":
            out += bytes((0x7D, b ^ 0x20))
        else:
            out.append(b)
    return bytes(out)


def _unescape(data: bytes) -> bytes:
    out = bytearray()
    it = iter(data)
    for b in it:
        if b == 0x7D:
            out.append(next(it, 0x20) ^ 0x20)
        else:
            out.append(b)
    return bytes(out)


class GdbError(Exception):
    """A malformed request: answered with an error reply."""

    def __init__(self, code: int = 1):
        self.code = code


_HEX = re.compile(r"[0-9a-fA-F]{1,16}")


def _hex(s, most: int = 0xFFFFFFFF) -> int:
    """A number the protocol sends as hex digits: only hex digits (int(s, 16)
    alone would take '-1', '0x10', ' 1' and '1_0'), at most ``most``."""
    if isinstance(s, (bytes, bytearray)):
        s = s.decode("latin-1")
    if not _HEX.fullmatch(s):
        raise GdbError(1)
    v = int(s, 16)
    if v > most:
        raise GdbError(1)
    return v


def _addr_len(s) -> tuple:
    """'ADDR,LENGTH': an address and a length that stay within the 4 GiB space."""
    parts = (s.decode("latin-1") if isinstance(s, (bytes, bytearray)) else s).split(",")
    if len(parts) != 2:
        raise GdbError(1)
    a, ln = _hex(parts[0]), _hex(parts[1])
    if a + ln > 1 << 32:
        raise GdbError(1)
    return a, ln


class GdbStub:
    """Serves one GDB client at a time on a TCP port (0 picks a free port)."""

    def __init__(self, machine, host: str = "127.0.0.1", port: int = 0):
        self.m = machine
        self.cpu = machine.cpu
        self.uc = machine.cpu.uc
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(1)
        self.listener.setblocking(False)
        self.host, self.port = self.listener.getsockname()[:2]
        self.conn: Optional[socket.socket] = None
        self.inbuf = bytearray()
        self.no_ack = False
        self.halted = False          # stopped under debugger control
        self.wants_halt = False      # a client asked to stop the target
        self.killed = False
        self.exited: Optional[int] = None
        self.breakpoints: dict = {}  # addr -> hook handle
        self._bp_kind: dict = {}     # addr -> 0 (Z0, "software") or 1 (Z1, hardware)
        self.watchpoints: dict = {}  # (kind, addr, length) -> hook handle
        self._block_hook = None
        self._last_block = (0, 0)
        self._hit: Optional[str] = None   # stop reply prepared by a hook
        self._step = None
        self._on_watch = False       # last stop was a watchpoint (step over it on resume)
        self._ignore_watch = False
        self._watch_undo: Optional[tuple] = None
        self.xml = _target_xml().encode()
        # RTOS awareness (emu/rtos.py): the kernel's tasks as GDB threads
        from emu.rtos import for_machine
        self.rtos = for_machine(machine)
        self._sel_g: Optional[int] = None   # Hg: a switched-out task, or None (the CPU)
        self._rtos_cache: Optional[tuple] = None
        self._ctx_cache: dict = {}
        self._warned_step = False
        if self.rtos is not None:
            log.info("gdb: %s tasks are reported as threads (not modelled: running one "
                     "task on its own, writing a switched-out task's registers)",
                     self.rtos.name)

    # ------------------------------------------------------------------
    # public API for run loops
    # ------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.conn is not None

    def close(self) -> None:
        self._drop_client()
        self.listener.close()

    def poll(self, timeout: float = 0.0) -> None:
        """Accept a client, read and answer packets.  Never blocks longer than
        ``timeout`` seconds (host time here only paces the socket, never the emulation)."""
        socks = [self.listener] + ([self.conn] if self.conn else [])
        try:
            readable, _, _ = select.select(socks, [], [], timeout)
        except (OSError, ValueError):
            readable = []
        if self.listener in readable and self.conn is not None:
            self._refuse_extra_client()
        elif self.listener in readable and self.conn is None:
            try:
                conn, _ = self.listener.accept()
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.conn = conn
                self.inbuf.clear()
                self.no_ack = False
                self.halted = True       # GDB attaches to a stopped target
                log.info("gdb client connected")
            except OSError:
                pass
        if self.conn is not None and (self.conn in readable or self.inbuf):
            self._read_and_serve()

    def _refuse_extra_client(self) -> None:
        """One client at a time: a second one is told so and closed (left in the
        listen queue it would make every poll return at once)."""
        try:
            extra, _ = self.listener.accept()
        except OSError:
            return
        try:
            extra.setblocking(False)
            extra.send(b"$E01#a6")
        except OSError:
            pass
        extra.close()
        log.info("a second gdb client was refused: one client at a time")

    def run_machine(self, until_tick: int, chunk_ticks: int = TICKS_PER_SECOND // 1000) -> str:
        """Run the machine up to ``until_tick`` while serving the socket.
        Returns 'deadline', 'halted', 'exit' or 'killed'."""
        m = self.m
        while True:
            self.poll(0.0)
            if self.killed:
                return "killed"
            if self.exited is not None:
                return "exit"
            if self.halted:
                return "halted"
            if m.clock.now >= until_tick:
                return "deadline"
            self._resume_run(min(until_tick, m.clock.now + chunk_ticks))

    # ------------------------------------------------------------------
    # executing
    # ------------------------------------------------------------------
    def _stop_pred(self) -> bool:
        return self._hit is not None

    def _resume_run(self, until: int) -> None:
        r = self.m.run(until_tick=until, stop=self._stop_pred)
        self._after_run(r)

    def _after_run(self, r) -> None:
        reason = str(r.reason)
        if self._watch_undo is not None:
            addr, old = self._watch_undo
            self._watch_undo = None
            self.uc.mem_write(addr, old)
        if self._hit is not None:
            self._report_stop(self._hit)
            self._hit = None
            return
        if reason == "exit" or self.m.exit_code is not None and reason not in ("deadline", "break",
                                                                              "sleep"):
            code = self.m.exit_code if self.m.exit_code is not None else 0
            self.exited = code
            if self.conn is not None and not self.halted:
                self._send(f"W{code & 0xFF:02x}")
            self.halted = True
            return
        if reason in ("lockup", "fault", "halt", "error"):
            self._report_stop(f"T{SIGSEGV:02x}")
            return
        if self.wants_halt:
            self.wants_halt = False
            self._report_stop(f"T{SIGINT:02x}")

    def _report_stop(self, reply: str) -> None:
        self.halted = True
        self.wants_halt = False
        self._forget_threads()
        self._del_step()
        if self.conn is not None:
            self._send(reply + (f"thread:{self._current_tid():x};" if reply.startswith("T")
                                else ""))

    def _correct_cycles(self, addr: int) -> None:
        """Take back the cost of [addr, end of the current block): not executed."""
        a, s = self._last_block
        if not (a <= addr < a + s):
            return
        try:
            code = bytes(self.uc.mem_read(addr, a + s - addr))
            cost = self.cpu.cost_model.block_cost(code, addr)
        except Exception:  # noqa: BLE001 - never raise out of a Unicorn hook
            return
        cs = self.cpu.cs
        cs.cycles = max(0, cs.cycles - cost)

    def _stop_cpu(self, addr: int, reply: str) -> None:
        self._correct_cycles(addr)
        self._hit = reply
        self.cpu.cs.reason = 2   # "flag" stop: not a WFI return
        self.uc.emu_stop()

    def _hook_block(self, uc, address, size, _ud):
        self._last_block = (address, size)

    def _hook_bp(self, uc, address, size, _ud):
        if self._hit is None:
            kind = "swbreak" if self._bp_kind.get(address) == 0 else "hwbreak"
            self._stop_cpu(address, f"T{SIGTRAP:02x}{kind}:;")

    def _hook_watch(self, uc, access, address, size, value, _ud):
        if self._hit is not None or self._ignore_watch:
            return
        write = access == UC_MEM_WRITE
        for (k, a, ln) in self.watchpoints:
            if a < address + size and address < a + ln:
                if (k == 2 and not write) or (k == 3 and write):
                    continue
                tag = {2: "watch", 3: "rwatch", 4: "awatch"}[k]
                # report the stop before the access: PC is the accessing instruction
                # (its register writeback has not happened) but Unicorn completes
                # the store itself, so the old bytes are put back after the stop.
                if write:
                    try:
                        r = self._region(address)
                        if r is not None and r[2] != "mmio":
                            self._watch_undo = (address, bytes(uc.mem_read(address, size)))
                    except UcError:
                        pass
                self._stop_cpu(uc.reg_read(A.UC_ARM_REG_PC), f"T{SIGTRAP:02x}{tag}:{address:x};")
                self._on_watch = True
                return

    def _hook_step(self, uc, address, size, _ud):
        st = self._step
        if st is None or self._hit is not None:
            return
        if st[1] == 0 and address == st[0]:
            self._step = (st[0], 1)
            return
        self._stop_cpu(address, f"T{SIGTRAP:02x}")

    def _need_block_hook(self) -> None:
        want = bool(self.breakpoints or self.watchpoints or self._step)
        if want and self._block_hook is None:
            self._block_hook = self.uc.hook_add(UC_HOOK_BLOCK, self._hook_block)
            self.uc.ctl_flush_tb()
        elif not want and self._block_hook is not None:
            self.uc.hook_del(self._block_hook)
            self._block_hook = None
            self.uc.ctl_flush_tb()

    def _del_step(self) -> None:
        if self._step is not None:
            self._step = None
            self.uc.hook_del(self._step_hook)
            self.uc.ctl_flush_tb()
            self._need_block_hook()

    def step(self) -> None:
        """Execute exactly one instruction (or enter a pending exception: the step
        then stops at the handler's first instruction).  Emulated time is not paced."""
        self._on_watch = False
        self._forget_threads()
        self._step = (self.cpu.pc, 0)
        self._step_hook = self.uc.hook_add(UC_HOOK_CODE, self._hook_step)
        self._need_block_hook()
        self.uc.ctl_flush_tb()
        self.halted = False
        start = self.m.clock.now
        while not self.halted and self.exited is None and not self.killed:
            r = self.m.run(until_tick=self.m.clock.now + TICKS_PER_SECOND // 100,
                           stop=self._stop_pred)
            self._after_run(r)
            if not self.halted and self.m.clock.now - start >= TICKS_PER_SECOND:
                # asleep with nothing to wake it: the step ends where it is
                self._report_stop(f"T{SIGTRAP:02x}")
        self._del_step()

    def resume(self) -> None:
        """Continue: step off a breakpoint at PC first, then run freely."""
        if self.cpu.pc in self.breakpoints or self._on_watch:
            saved = self.conn
            self.conn = None          # swallow the step's stop reply
            self._ignore_watch = True
            try:
                self.step()
            finally:
                self._ignore_watch = False
                self.conn = saved
            if self._hit_reply_is_final():
                return
        self._forget_threads()
        self.halted = False

    def _hit_reply_is_final(self) -> bool:
        return self.exited is not None or self.killed

    # ------------------------------------------------------------------
    # socket and packets
    # ------------------------------------------------------------------
    def _drop_client(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
            self.conn = None
            log.info("gdb client gone; target keeps running")
        self.inbuf.clear()
        for addr in list(self.breakpoints):
            self._remove_bp(addr)
        for key in list(self.watchpoints):
            self._del_hook(self.watchpoints.pop(key))
        self._bp_kind.clear()
        try:
            self._need_block_hook()
            self.uc.ctl_flush_tb()
        except (UcError, OverflowError, ValueError):
            log.exception("gdb: clearing the translation cache failed")
        self.halted = False

    def _send_raw(self, data: bytes) -> None:
        if self.conn is None:
            return
        try:
            self.conn.setblocking(True)
            self.conn.settimeout(5.0)
            self.conn.sendall(data)
            self.conn.setblocking(False)
        except OSError:
            self._drop_client()

    def _send(self, payload) -> None:
        if isinstance(payload, str):
            payload = payload.encode("latin-1")
        body = _escape(payload)
        self._send_raw(b"$" + body + b"#" + f"{_checksum(body):02x}".encode())

    def _read_and_serve(self) -> None:
        conn = self.conn
        try:
            data = conn.recv(65536)
            if not data:
                self._drop_client()
                return
            self.inbuf += data
        except BlockingIOError:
            pass
        except OSError:
            self._drop_client()
            return
        buf = self.inbuf
        while buf and self.conn is not None:
            c = buf[0]
            if c == 0x03:
                del buf[0]
                if not self.halted:
                    self.wants_halt = True
                    self._hit = f"T{SIGINT:02x}"
                    self.cpu.request_stop()
                continue
            if c in (0x2B, 0x2D):   # '+', '-'
                del buf[0]
                continue
            if c != 0x24:           # junk before '$'
                del buf[0]
                continue
            end = buf.find(b"#")
            # a '$' inside a packet (GDB escapes it in data) starts a new one: the
            # client gave up on a broken packet and sent another
            nxt = buf.find(b"$", 1, len(buf) if end < 0 else min(end + 3, len(buf)))
            if nxt > 0:
                del buf[:nxt]
                if not self.no_ack:
                    self._send_raw(b"-")
                continue
            if end < 0:
                if len(buf) > PACKET_SIZE * 2 + 16:
                    del buf[:]
                    if not self.no_ack:
                        self._send_raw(b"-")
                    self._send("E01")
                return
            if len(buf) < end + 3:
                return
            body = bytes(buf[1:end])
            csum = bytes(buf[end + 1:end + 3])
            del buf[:end + 3]
            try:
                ok = int(csum, 16) == _checksum(body)
            except ValueError:
                ok = False
            if not ok:              # dropped; GDB retransmits after a NAK
                if not self.no_ack:
                    self._send_raw(b"-")
                continue
            if not self.no_ack:
                self._send_raw(b"+")
            if len(body) > PACKET_SIZE:
                self._send("E01")
                continue
            try:
                reply = self._handle(_unescape(body))
            except GdbError as e:
                reply = f"E{e.code:02x}"
            except (ValueError, IndexError, KeyError, UcError, OverflowError):
                reply = "E01"
            except Exception:       # noqa: BLE001 - a client never stops the stub
                log.exception("gdb: packet %r failed", body[:64])
                reply = "E01"
            if reply is not None:
                self._send(reply)

    # ------------------------------------------------------------------
    # packet handlers
    # ------------------------------------------------------------------
    def _handle(self, pkt: bytes) -> Optional[str]:
        if not pkt:
            return ""
        cmd = chr(pkt[0])
        s = pkt.decode("latin-1")
        if s.startswith("qSupported"):
            return (f"PacketSize={PACKET_SIZE:x};QStartNoAckMode+;qXfer:features:read+;"
                    "qXfer:memory-map:read+;swbreak+;hwbreak+;vContSupported+")
        if s == "QStartNoAckMode":
            self._send("OK")
            self.no_ack = True
            return None
        if s.startswith("qXfer:features:read:target.xml:"):
            return self._xfer(self.xml, s.split(":", 4)[4])
        if s.startswith("qXfer:memory-map:read::"):
            return self._xfer(self._memory_map().encode(), s.split(":", 4)[4])
        if s.startswith("qXfer:"):
            return "E00"
        if s == "qAttached":
            return "1"
        if s == "qC":
            return f"QC{self._current_tid():x}"
        if s == "qfThreadInfo":
            return "m" + ",".join(f"{t:x}" for t in self._thread_ids())
        if s == "qsThreadInfo":
            return "l"
        if s.startswith("qThreadExtraInfo,"):
            return self._thread_extra(_hex(s[17:]))
        if cmd == "H" and len(s) >= 2 and s[1] in "gc":
            return self._select_thread(s[1], s[2:])
        if cmd == "T":
            if _hex(s[1:]) not in self._thread_ids():
                raise GdbError(1)
            return "OK"
        if s.startswith("qRcmd,"):
            return self._monitor(bytes.fromhex(s[6:]).decode("latin-1", "replace").strip())
        if cmd == "H":
            return "OK"
        if s == "?":
            if self.exited is not None:
                return f"W{self.exited & 0xFF:02x}"
            # with RTOS threads, say which one stopped (GDB warns otherwise)
            return f"T{SIGTRAP:02x}thread:{self._current_tid():x};" if self._tasks()[0] \
                else f"S{SIGTRAP:02x}"
        if s == "vCont?":
            return "vCont;c;C;s;S"
        if s.startswith("vCont;"):
            act = s[6:].split(";")[0].split(":")[0]
            self._note_thread_action(s[6:].split(";")[0])
            if act and act[0] in "sS":
                return self._do_step()
            if act and act[0] in "cC":
                return self._do_continue()
            raise GdbError(1)
        if s.startswith("vFlashErase:"):
            # GDB's `load` into the memory map's flash (Cortex-Debug's
            # target-download): erased bytes read 0xFF, as after an NVMC erase
            a, ln = _addr_len(s[12:])
            r = self._region(a)
            if r is None or r[2] != "flash" or a + ln > r[1] or ln > 1 << 24:
                raise GdbError(1)
            self._write_mem(a, b"\xff" * ln)
            return "OK"
        if s.startswith("vFlashWrite:"):
            colon = pkt.index(b":", 12)
            a = _hex(pkt[12:colon])
            data = pkt[colon + 1:]          # binary, already unescaped with the packet
            r = self._region(a)
            if r is None or r[2] != "flash":
                raise GdbError(1)
            self._write_mem(a, data)
            return "OK"
        if s == "vFlashDone":
            return "OK"
        if s.startswith("vMustReplyEmpty") or s.startswith("v"):
            return ""
        if cmd == "g":
            return "".join(self._reg_hex(i) for i in range(NUM_REGS))
        if cmd == "G":
            self._refuse_suspended_write()
            data = bytes.fromhex(s[1:])
            off = 0
            for i in range(NUM_REGS):
                n = self._reg_size(i)
                if off + n > len(data):
                    break
                self._set_reg(i, int.from_bytes(data[off:off + n], "little"))
                off += n
            return "OK"
        if cmd == "p":
            n = _hex(s[1:])
            if not 0 <= n < NUM_REGS:
                raise GdbError(1)
            return self._reg_hex(n)
        if cmd == "P":
            r, v = s[1:].split("=")
            n = _hex(r)
            if not 0 <= n < NUM_REGS:
                raise GdbError(1)
            raw = bytes.fromhex(v)
            if len(raw) != self._reg_size(n):
                raise GdbError(1)
            self._refuse_suspended_write()
            self._set_reg(n, int.from_bytes(raw, "little"))
            return "OK"
        if cmd == "m":
            a, ln = _addr_len(s[1:])
            if ln > PACKET_SIZE // 2:
                raise GdbError(1)
            return self._read_mem(a, ln).hex()
        if cmd == "M":
            hdr, hexdata = s[1:].split(":", 1)
            a, ln = _addr_len(hdr)
            data = bytes.fromhex(hexdata)
            if len(data) != ln:
                raise GdbError(1)
            self._write_mem(a, data)
            return "OK"
        if cmd == "X":
            colon = pkt.index(b":")
            a, ln = _addr_len(pkt[1:colon])
            data = pkt[colon + 1:]          # already unescaped with the packet
            if len(data) != ln:
                raise GdbError(1)
            if ln:
                self._write_mem(a, data)
            return "OK"
        if cmd in "Zz":
            return self._bp_packet(cmd == "Z", s[1:])
        if cmd in "cC":
            if cmd == "c" and len(s) > 1:
                self.cpu.pc = _hex(s[1:])
            return self._do_continue()
        if cmd in "sS":
            if cmd == "s" and len(s) > 1:
                self.cpu.pc = _hex(s[1:])
            return self._do_step()
        if cmd == "D":
            self._send("OK")
            self._drop_client()
            return None
        if cmd == "k":
            self.killed = True
            self._drop_client()
            return None
        return ""

    def _xfer(self, data: bytes, rng: str) -> str:
        off, ln = _addr_len(rng)
        chunk = data[off:off + min(ln, PACKET_SIZE)]
        return ("l" if off + len(chunk) >= len(data) else "m") + chunk.decode("latin-1")

    def _memory_map(self) -> str:
        parts = ['<?xml version="1.0"?><!DOCTYPE memory-map PUBLIC "+//IDN gnu.org//DTD GDB '
                 'Memory Map V1.0//EN" "http://sourceware.org/gdb/gdb-memory-map.dtd">'
                 '<memory-map>']
        for start, end, kind, name in sorted(self.cpu.regions):
            size = end - start
            if kind == "flash" and name == "flash":
                parts.append(f'<memory type="flash" start="{start:#x}" length="{size:#x}">'
                             '<property name="blocksize">0x1000</property></memory>')
            elif kind in ("ram", "flash", "mmio"):
                typ = "rom" if kind == "flash" else "ram"
                parts.append(f'<memory type="{typ}" start="{start:#x}" length="{size:#x}"/>')
        parts.append("</memory-map>")
        return "".join(parts)

    # registers ------------------------------------------------------------
    @staticmethod
    def _reg_size(n: int) -> int:
        return 8 if REG_D0 <= n < REG_D0 + 16 else 4

    def _reg_value(self, n: int) -> int:
        uc = self.uc
        if n < 16:
            return uc.reg_read(_GPR[n])
        if n == REG_XPSR:
            return (uc.reg_read(A.UC_ARM_REG_XPSR) & ~0x1FF) | self.cpu.ipsr
        if n in _SPECIAL:
            return self.cpu.read_special((_SPECIAL[n],))[0]   # whatever the privilege
        if REG_D0 <= n < REG_D0 + 16:
            return uc.reg_read(getattr(A, f"UC_ARM_REG_D{n - REG_D0}"))
        if n == REG_FPSCR:
            return uc.reg_read(A.UC_ARM_REG_FPSCR)
        raise GdbError(1)

    def _reg_hex(self, n: int) -> str:
        size = self._reg_size(n)
        task = self._selected_task()
        if task is not None:                  # a switched-out task: its saved context
            v = self._saved_reg(task, n)
            return "xx" * size if v is None else v.to_bytes(size, "little").hex()
        return (self._reg_value(n) & ((1 << (8 * size)) - 1)).to_bytes(size, "little").hex()

    def _set_reg(self, n: int, v: int) -> None:
        uc = self.uc
        if n < 16:
            uc.reg_write(_GPR[n], v & ~1 if n == 15 else v)
        elif n == REG_XPSR:
            uc.reg_write(A.UC_ARM_REG_APSR, v & 0xF80F0000)
        elif n in _SPECIAL:
            self.cpu.write_special(((_SPECIAL[n], v),))
            self.cpu._refresh_flags()
        elif REG_D0 <= n < REG_D0 + 16:
            uc.reg_write(getattr(A, f"UC_ARM_REG_D{n - REG_D0}"), v)
        elif n == REG_FPSCR:
            uc.reg_write(A.UC_ARM_REG_FPSCR, v)

    # threads: the RTOS's tasks (emu/rtos.py) ----------------------------------
    def _forget_threads(self) -> None:
        self._rtos_cache = None
        self._ctx_cache.clear()

    def _tasks(self) -> tuple:
        """(tasks by id, current id) while the RTOS schedules tasks, else
        ({}, 1): one thread, the CPU.  Read once per stop."""
        if self._rtos_cache is None:
            tasks = self.rtos.tasks() if self.rtos is not None else []
            cur = [t.id for t in tasks if t.current]
            if tasks and cur:
                self._rtos_cache = ({t.id: t for t in tasks}, cur[0])
            else:
                self._rtos_cache = ({}, 1)
        return self._rtos_cache

    def _thread_ids(self) -> list:
        tasks, cur = self._tasks()
        return list(tasks) if tasks else [cur]

    def _current_tid(self) -> int:
        return self._tasks()[1]

    def _selected_task(self):
        """The switched-out task Hg selected, or None for the CPU's registers."""
        if self._sel_g is None:
            return None
        tasks, cur = self._tasks()
        t = tasks.get(self._sel_g)
        if t is None or t.id == cur:
            return None
        return t

    def _select_thread(self, which: str, arg: str) -> str:
        if arg in ("0", "-1", ""):            # any thread / all threads: the current one
            tid = None
        else:
            tid = _hex(arg)
            if tid not in self._thread_ids():
                raise GdbError(1)
        if which == "g":
            self._sel_g = None if tid == self._current_tid() else tid
        return "OK"

    def _thread_extra(self, tid: int) -> str:
        tasks, cur = self._tasks()
        if not tasks:
            if tid != cur:
                raise GdbError(1)
            return ""
        t = tasks.get(tid)
        if t is None:
            raise GdbError(1)
        return f"Name: {t.name}, State: {t.state}, Priority: {t.priority}".encode().hex()

    def _saved_reg(self, task, n: int) -> Optional[int]:
        """Register ``n`` of a switched-out task from its saved context; None
        (unavailable) for the FP registers of a task without an FP context
        and for anything of a task whose stack cannot be read.  MSP and the
        interrupt masks are the CPU's (one for all tasks; GDB's M-profile
        unwinder needs MSP); PSP is the task's stack pointer; CONTROL says
        thread mode on PSP, with FPCA set when the task had an FP context."""
        regs = self._ctx_cache.get(task.id)
        if regs is None:
            regs = self._ctx_cache[task.id] = self.rtos.registers(task)
        if not regs:
            return None
        if n < 16:
            return regs.get(("r%d" % n) if n < 13 else ("sp", "lr", "pc")[n - 13])
        if n == REG_XPSR:
            return regs.get("xpsr")
        if n == REG_PSP:
            return regs.get("sp")
        if n == REG_CONTROL:
            live = self._reg_value(REG_CONTROL)
            return (live & 1) | 2 | (4 if "s0" in regs else 0)
        if n in (REG_MSP, REG_PRIMASK, REG_BASEPRI, REG_FAULTMASK):
            return self._reg_value(n)
        if REG_D0 <= n < REG_D0 + 16:
            i = 2 * (n - REG_D0)
            lo, hi = regs.get(f"s{i}"), regs.get(f"s{i + 1}")
            return None if lo is None or hi is None else lo | (hi << 32)
        if n == REG_FPSCR:
            return regs.get("fpscr")
        return None

    def _refuse_suspended_write(self) -> None:
        """Registers of a switched-out task are not written: E01."""
        if self._selected_task() is not None:
            raise GdbError(1)

    def _note_thread_action(self, action: str) -> None:
        """A step or continue names a thread: the CPU can only run the
        current task, so it is the one that runs (as with OpenOCD)."""
        _act, _sep, tid_s = action.partition(":")
        if not tid_s or tid_s in ("0", "-1") or self._warned_step:
            return
        tid = _hex(tid_s)
        if tid not in self._thread_ids():
            raise GdbError(1)
        if tid != self._current_tid():
            self._warned_step = True
            log.warning("gdb: a switched-out task cannot run on its own; the current task "
                        "runs instead")

    # memory -----------------------------------------------------------------
    def _region(self, addr: int):
        for start, end, kind, name in self.cpu.regions:
            if start <= addr < end:
                return start, end, kind, name
        return None

    def _read_mem(self, addr: int, ln: int) -> bytes:
        """Debugger reads, like a probe's: memory directly, registers through
        their models (SCS reads such as FPCCR are needed for unwinding)."""
        out = bytearray()
        a = addr
        while a < addr + ln:
            r = self._region(a)
            if r is None:
                if not out:
                    raise GdbError(1)
                break
            n = min(addr + ln, r[1]) - a
            out += bytes(self.uc.mem_read(a, n))
            a += n
        return bytes(out)

    def _write_mem(self, addr: int, data: bytes) -> None:
        r = self._region(addr)
        if r is None or addr + len(data) > r[1]:
            raise GdbError(1)
        self.uc.mem_write(addr, data)
        self._forget_threads()
        if r[2] == "flash" or addr in self.breakpoints:
            self.cpu.invalidate_code(addr, addr + len(data))

    # breakpoints ----------------------------------------------------------
    def _bp_packet(self, insert: bool, args: str) -> str:
        parts = args.split(",")
        if len(parts) < 3:
            raise GdbError(1)
        kind_s, addr_s, len_s = parts[:3]
        kind, addr, ln = _hex(kind_s, 0xFF), _hex(addr_s), _hex(len_s.split(";")[0])
        if kind in (0, 1):
            if addr + 4 > 1 << 32:
                raise GdbError(1)
            if insert:
                if addr not in self.breakpoints:
                    h = self.uc.hook_add(UC_HOOK_CODE, self._hook_bp, begin=addr, end=addr)
                    try:
                        self.uc.ctl_remove_cache(addr, addr + 4)
                    except Exception:
                        self._del_hook(h)           # no half-made breakpoint stays
                        raise
                    self.breakpoints[addr] = h
                self._bp_kind[addr] = kind
            else:
                self._remove_bp(addr)
            self._need_block_hook()
            return "OK"
        if kind in (2, 3, 4):
            if not 0 < ln <= 0x10000 or addr + ln > 1 << 32:
                raise GdbError(1)
            key = (kind, addr, ln)
            if insert:
                if key not in self.watchpoints:
                    flags = {2: UC_HOOK_MEM_WRITE, 3: UC_HOOK_MEM_READ,
                             4: UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE}[kind]
                    self.watchpoints[key] = self.uc.hook_add(flags, self._hook_watch,
                                                             begin=addr, end=addr + ln - 1)
                    self.uc.ctl_flush_tb()
            elif key in self.watchpoints:
                self.uc.hook_del(self.watchpoints.pop(key))
                self.uc.ctl_flush_tb()
            self._need_block_hook()
            return "OK"
        return ""

    def _remove_bp(self, addr: int) -> None:
        """Never raises: it runs when a client goes, whatever the client sent."""
        h = self.breakpoints.pop(addr, None)
        self._bp_kind.pop(addr, None)
        if h is not None:
            self._del_hook(h)
            try:
                self.uc.ctl_remove_cache(addr, addr + 4)
            except (UcError, OverflowError, ValueError):
                self.uc.ctl_flush_tb()

    def _del_hook(self, h) -> None:
        try:
            self.uc.hook_del(h)
        except (UcError, KeyError, ValueError):
            log.exception("gdb: removing a hook failed")

    # execution commands -----------------------------------------------------
    def _do_step(self) -> Optional[str]:
        if self.exited is not None:
            return f"W{self.exited & 0xFF:02x}"
        self.step()
        return None   # the stop reply was sent by step()

    def _do_continue(self) -> Optional[str]:
        if self.exited is not None:
            return f"W{self.exited & 0xFF:02x}"
        self.resume()
        return None

    # monitor ----------------------------------------------------------------
    def _monitor(self, line: str) -> str:
        words = line.split()
        cmd = words[0] if words else "help"
        if cmd == "reset":
            self.m.system_reset("debugger")
            self.exited = None
            text = f"reset: PC={self.cpu.pc:#010x}\n"
        elif cmd == "halt":
            self.halted = True
            text = "halted\n"
        elif cmd == "cycles":
            text = (f"cycles: {self.cpu.cycles}\n"
                    f"time: {self.m.clock.now} ticks = {self.m.clock.now / TICKS_PER_SECOND:.9f} s\n")
        elif cmd == "status":
            text = self._status()
        elif cmd == "help":
            text = ("monitor commands:\n  reset   system reset (core and peripherals)\n"
                    "  halt    stop the target\n  cycles  CPU cycles and emulated time\n"
                    "  status  interrupts: pending/enabled/active with names and priorities\n"
                    "  help    this text\n")
        else:
            text = f"unknown monitor command {cmd!r}; try 'monitor help'\n"
        return text.encode().hex()

    def _irq_names(self) -> dict:
        names = {}
        for name, p in getattr(self.m.soc, "peripherals", {}).items():
            base = getattr(p, "base", None)
            if base is not None and 0x40000000 <= base < 0x40100000:
                names.setdefault((base >> 12) & 0xFF, name)
        return names

    def _status(self) -> str:
        cpu = self.cpu
        names = self._irq_names()
        lines = [f"PC={cpu.pc:#010x} current exception: {cpu.ipsr} ({cpu.exc_name(cpu.ipsr)})"
                 if cpu.ipsr else f"PC={cpu.pc:#010x} thread mode",
                 f"cycles={cpu.cycles} time={self.m.clock.now / TICKS_PER_SECOND:.9f} s "
                 f"sleeping={getattr(cpu, 'sleeping', False)}",
                 "exc  name                 prio  enabled pending active"]
        for e in range(2, 16 + cpu.num_irq):
            pend = (cpu.pending >> e) & 1
            act = (cpu.active >> e) & 1
            en = cpu.exc_enabled(e)
            if e >= 16 and not (pend or act or en) or e in range(7, 11) or e == 13:
                continue
            nm = names.get(e - 16, cpu.exc_name(e)) if e >= 16 else cpu.exc_name(e)
            lines.append(f"{e:3d}  {nm:20s} {cpu.prio[e]:5d}  {int(en):7d} {pend:7d} {act:6d}")
        return "\n".join(lines) + "\n"


def serve(machine, port: int, host: str = "127.0.0.1", wait: bool = False,
          run_seconds: Optional[float] = None, stub: Optional[GdbStub] = None) -> GdbStub:
    """Run ``machine`` headless under a GDB stub on host:port.

    wait: halt at reset until a GDB client connects and continues.
    run_seconds: stop after that much emulated time (None: until the firmware
    exits or GDB kills it).  Returns the stub (closed)."""
    stub = stub or GdbStub(machine, host, port)
    log.warning("GDB stub listening on %s:%d", stub.host, stub.port)
    end = NEVER if run_seconds is None else machine.clock.now + int(run_seconds * TICKS_PER_SECOND)
    if wait:
        while stub.conn is None:
            stub.poll(0.2)
    try:
        while not stub.killed:
            if stub.halted or stub.exited is not None:
                stub.poll(0.1)
                if stub.conn is None and stub.exited is not None:
                    break
                if stub.conn is None and stub.halted:
                    stub.halted = False
                continue
            if machine.clock.now >= end:
                break
            r = stub.run_machine(end)
            if r == "deadline":
                break
    finally:
        stub.close()
    return stub
