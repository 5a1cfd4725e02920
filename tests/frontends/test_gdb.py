"""GDB stub acceptance tests: the real gdb-multiarch in batch mode against
frontends.gdbstub serving firmware/tests/gdb_target.c, plus raw-socket protocol tests."""
from __future__ import annotations

import signal
import socket
import subprocess
import time

import pytest

from frontends.gdbstub import serve, _checksum
from emu.machine import Machine
from helpers.gdb import GDB, Served, gdb


def test_break_on_function_and_read_write_variable(target_elf):
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "break bump", "continue", "continue", "print counter",
              "set var poke = 0x1234", "print poke", "print/x $pc == (unsigned)&bump",
              "delete", "kill")
    s.join()
    assert "Breakpoint 1, bump" in out, out
    assert "$1 = 1" in out, out          # second hit: one call completed
    assert "$2 = 4660" in out, out
    assert "$3 = 0x1" in out, out


def test_step_and_next(target_elf):
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "break main", "continue", "next", "next", "next",
              "info line *$pc", "step", "step", "step", "step", "step", "step", "bt", "kill")
    s.join()
    assert "Breakpoint 1, main" in out, out
    # stepping from main eventually enters bump (a new frame in the backtrace)
    assert "bump" in out, out


def test_watchpoint_fires_on_write(target_elf):
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "watch watched", "continue", "continue", "print watched",
              "kill")
    s.join()
    assert "atchpoint 1: watched" in out, out
    # i = 0 stores an unchanged 0 (GDB stays silent), then 0 -> 1, 1 -> 2
    assert "Old value = 0\nNew value = 1" in out, out
    assert "Old value = 1\nNew value = 2" in out, out
    assert "$1 = 2" in out, out


def test_backtrace_from_interrupt_handler(target_elf):
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "break tick_work", "continue", "bt", "print/x $xpsr & 0x1ff",
              "kill")
    s.join()
    assert "Breakpoint 1, tick_work" in out, out
    assert "SysTick_Handler" in out, out
    assert "<signal handler called>" in out, out
    assert "main" in out.split("<signal handler called>", 1)[1], out
    assert "$1 = 0xf" in out, out        # IPSR: SysTick


def test_registers_fpu_and_special(target_elf):
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "break fmath", "continue", "finish", "info registers msp",
              "info registers control", "info registers primask", "print $s0",
              "print $fpscr", "set var $r5 = 0xdeadbeef", "print/x $r5", "print $d0 == $d0",
              "kill")
    s.join()
    assert "msp" in out and "control" in out and "primask" in out, out
    assert "Value returned is $1 = 2.375" in out, out     # 1.5 * 1.25 + 0.5
    assert "= 2.375" in out.split("print $s0", 1)[-1] or "$2 = 2.375" in out, out
    assert "0xdeadbeef" in out, out


def test_monitor_commands(target_elf):
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "monitor help", "break bump", "continue", "monitor cycles",
              "monitor status", "delete", "monitor reset", "maintenance flush register-cache",
              "print/x $pc", "print/x *(unsigned*)4 & ~1", "print counter", "monitor bogus",
              "kill")
    s.join()
    assert "monitor commands" in out, out
    assert "cycles: " in out and "time: " in out, out
    assert "SysTick" in out and "current exception" not in out, out   # thread mode at bump
    assert "reset: PC=" in out, out
    vals = [l.split("=", 1)[1].strip() for l in out.splitlines() if l.startswith("$")]
    assert vals[0] == vals[1], out        # PC back at the reset vector
    assert vals[2] == "0", out            # bump had not finished; .bss cleared again later
    assert "unknown monitor command" in out, out


def _packet(data: bytes) -> bytes:
    return b"$" + data + b"#" + f"{_checksum(data):02x}".encode()


class Raw:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def send(self, b: bytes):
        self.s.sendall(b)

    def reply(self) -> bytes:
        while True:
            i = self.buf.find(b"$")
            j = self.buf.find(b"#", i)
            if i >= 0 and j >= 0 and len(self.buf) >= j + 3:
                body = self.buf[i + 1:j]
                self.buf = self.buf[j + 3:]
                return body
            data = self.s.recv(65536)
            assert data, "stub closed the connection"
            self.buf += data

    def cmd(self, data: bytes) -> bytes:
        self.send(_packet(data))
        return self.reply()


def test_hostile_packets_get_errors_and_stub_keeps_serving(target_elf):
    s = Served(target_elf)
    r = Raw(s.port)
    assert r.cmd(b"QStartNoAckMode") == b"OK"
    r.send(b"$g#00")                              # bad checksum, ignored in no-ack mode
    assert r.cmd(b"mzz,4").startswith(b"E")       # bad hex
    assert r.cmd(b"m0,").startswith(b"E")
    assert r.cmd(b"mfffffff0,100").startswith(b"E")   # wraps past 4 GiB
    assert r.cmd(b"m30000000,4").startswith(b"E")     # unmapped
    assert r.cmd(b"m20000000,100000").startswith(b"E")  # too long
    assert r.cmd(b"M20000000,4:0102").startswith(b"E")  # length mismatch
    assert r.cmd(b"p99").startswith(b"E")
    assert r.cmd(b"Z2,20000000,0").startswith(b"E")
    r.send(b"$" + b"m" * 70000)                   # oversized, never terminated
    assert r.reply().startswith(b"E")
    assert r.cmd(b"M20000000,4:01020304") == b"OK"
    assert r.cmd(b"m20000000,4") == b"01020304"
    assert len(r.cmd(b"g")) > 16 * 8
    r.cmd(b"k") if False else None
    r.s.close()                                    # disconnect mid-session
    s.join(timeout=20)                             # the firmware runs to its end
    assert s.machine.exit_code == 0
    assert "PASS counter" in s.machine.console_text()


def test_step_takes_pending_interrupt_at_handler_first_instruction(target_elf):
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "break bump", "continue",
              "set *(unsigned *)0xE000ED04 = 1 << 26",     # ICSR.PENDSTSET
              "stepi", "info symbol $pc", "print/x $pc == ((unsigned)&SysTick_Handler & ~1)",
              "print/x $xpsr & 0x1ff", "kill")
    s.join()
    assert "SysTick_Handler in section .text" in out, out
    vals = [l.split("=", 1)[1].strip() for l in out.splitlines() if l.startswith("$")]
    assert vals == ["0x1", "0xf"], out


def _plain_run(elf):
    m = Machine(elf)
    r = m.run(ms=50)
    assert m.exit_code == 0, (r, m.console_text())
    return m.cpu.cycles, m.clock.now, m.console_text()


def test_breakpoints_and_steps_do_not_change_what_firmware_observes(target_elf):
    cycles, now, text = _plain_run(target_elf)
    s = Served(target_elf)
    out = gdb(target_elf, s.port, "break bump", "break tick_work", "continue", "continue",
              "continue", "stepi", "stepi", "stepi", "next", "step", "stepi", "delete 1",
              "continue", "stepi", "stepi", "stepi", "stepi", "finish", "continue", "delete",
              "watch watched", "continue", "stepi", "stepi", "delete", "continue")
    s.join()
    assert "Breakpoint 2, tick_work" in out, out
    assert "in SysTick_Handler ()" in out, out   # finish returned into the handler
    assert "exited normally" in out, out
    assert s.machine.console_text() == text
    assert s.machine.cpu.cycles == cycles
    # time of exit may be later only by idle time, never different CPU work
    assert "cyc=" in text


def _wait_for(pred, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_ctrl_c_interrupts_running_target_and_detach_keeps_it_running(target_elf):
    s = Served(target_elf)
    r = Raw(s.port)
    assert r.cmd(b"QStartNoAckMode") == b"OK"
    assert r.cmd(b"?").startswith(b"S05")
    main = s.machine.symbol("main") & ~1
    assert r.cmd(b"Z1,%x,2" % main) == b"OK"
    assert r.cmd(b"c").startswith(b"T05")          # at main: .bss is initialised
    assert r.cmd(b"z1,%x,2" % main) == b"OK"
    addr = s.machine.symbol("spin_forever")
    assert r.cmd(b"M%x,4:01000000" % addr) == b"OK"
    started = s.machine.clock.now
    r.send(_packet(b"vCont;c"))
    # let it run a little (polled, not a fixed sleep: a loaded host may be slow)
    _wait_for(lambda: s.machine.clock.now > started + 1_000_000, 10)
    t0 = s.machine.clock.now
    r.send(b"\x03")
    rep = r.reply()
    assert rep.startswith(b"T02"), rep
    halted_at = s.machine.clock.now
    assert halted_at > t0 >= 0
    time.sleep(0.2)
    assert s.machine.clock.now == halted_at            # halted: emulated time frozen
    cnt = s.machine.symbol("counter")
    c1 = int.from_bytes(bytes.fromhex(r.cmd(b"m%x,4" % cnt).decode()), "little")
    assert c1 > 200                                    # it was spinning
    assert r.cmd(b"D") == b"OK"                        # detach: target runs on
    r.s.close()
    assert _wait_for(lambda: s.machine.clock.now > halted_at, 10)
    s.machine.halt_requested = False
    s.stub.killed = True                                # end the serve loop
    s.join()


def test_gdb_ctrl_c_while_running(target_elf):
    """Ctrl-C in gdb (SIGINT to the gdb process) makes it send 0x03 to the stub."""
    if GDB is None:
        pytest.skip("gdb-multiarch not installed")
    s = Served(target_elf)
    args = [GDB, "-batch", "-nx", "-ex", "set pagination off", "-ex",
            f"target remote 127.0.0.1:{s.port}", "-ex", "break main", "-ex", "continue",
            "-ex", "delete", "-ex", "set var spin_forever = 1", "-ex", "continue",
            "-ex", "print counter > 200", "-ex", "kill", target_elf]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 10
        # wait for the second continue: running, breakpoints gone, past reset
        while time.monotonic() < deadline:
            if not s.stub.halted and s.machine.clock.now > 0 and not s.stub.breakpoints:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
    s.join()
    assert "received signal SIGINT" in out, out
    assert "$1 = 1" in out, out


def test_raw_watchpoint_stops_before_the_store_and_continue_steps_over_it(target_elf):
    s = Served(target_elf)
    r = Raw(s.port)
    assert r.cmd(b"QStartNoAckMode") == b"OK"
    w = s.machine.symbol("watched")
    main = s.machine.symbol("main") & ~1
    assert r.cmd(b"Z0,%x,2" % main) == b"OK"
    assert r.cmd(b"c").startswith(b"T05swbreak:")   # Z0 -> swbreak
    assert r.cmd(b"z0,%x,2" % main) == b"OK"
    assert r.cmd(b"Z2,%x,4" % w) == b"OK"
    seen = []
    for _ in range(3):
        rep = r.cmd(b"c")
        assert rep.startswith(b"T05watch:%x;" % w), rep
        seen.append(int.from_bytes(bytes.fromhex(r.cmd(b"m%x,4" % w).decode()), "little"))
    # each stop is before the store of i: memory still holds i - 1
    assert seen == [0, 0, 1], seen
    assert r.cmd(b"z2,%x,4" % w) == b"OK"
    r.send(_packet(b"k"))
    s.join()


def test_protocol_queries(target_elf):
    s = Served(target_elf)
    r = Raw(s.port)
    r.send(_packet(b"qSupported:multiprocess+;swbreak+;hwbreak+"))
    assert r.s.recv(1) == b"+"                     # ack mode until QStartNoAckMode
    sup = r.reply()
    r.send(b"+")
    assert b"PacketSize=" in sup and b"QStartNoAckMode+" in sup
    assert b"qXfer:features:read+" in sup and b"qXfer:memory-map:read+" in sup
    r.send(_packet(b"QStartNoAckMode"))
    assert r.reply() == b"OK"
    xml = b""
    off = 0
    while True:
        rep = r.cmd(b"qXfer:features:read:target.xml:%x,200" % off)
        xml += rep[1:]
        off += len(rep) - 1
        if rep[:1] == b"l":
            break
        assert rep[:1] == b"m", rep
    for needle in (b"org.gnu.gdb.arm.m-profile", b"org.gnu.gdb.arm.vfp", b'name="d15"',
                   b'name="fpscr"', b'name="msp"', b'name="psp"', b'name="primask"',
                   b'name="basepri"', b'name="faultmask"', b'name="control"', b'name="xpsr"'):
        assert needle in xml, needle
    mm = r.cmd(b"qXfer:memory-map:read::0,4000")
    assert mm.startswith(b"l")
    assert b'<memory type="flash" start="0x0" length="0x80000"><property name="blocksize">' in mm
    assert b'<memory type="ram" start="0x20000000" length="0x10000"/>' in mm
    assert r.cmd(b"vCont?").startswith(b"vCont;c;C;s;S")
    assert r.cmd(b"qC") == b"QC1"
    assert r.cmd(b"qAttached") == b"1"
    assert r.cmd(b"qfThreadInfo") == b"m1" and r.cmd(b"qsThreadInfo") == b"l"
    assert r.cmd(b"qUnknownThing") == b""
    # p 15 is the PC: reset vector entry
    pc = int.from_bytes(bytes.fromhex(r.cmd(b"pf").decode()), "little")
    assert pc == s.machine.cpu.pc
    # single step from reset advances the PC by exactly one instruction
    rep = r.cmd(b"vCont;s:1")
    assert rep.startswith(b"T05"), rep
    pc2 = int.from_bytes(bytes.fromhex(r.cmd(b"pf").decode()), "little")
    assert pc2 in (pc + 2, pc + 4), (hex(pc), hex(pc2))
    r.send(_packet(b"k"))
    s.join()


def _reg(r, n):
    return int.from_bytes(bytes.fromhex(r.cmd(b"p%x" % n).decode()), "little")


def test_single_step_out_of_interrupt_handler_lands_in_thread_code(target_elf):
    s = Served(target_elf)
    r = Raw(s.port)
    assert r.cmd(b"QStartNoAckMode") == b"OK"
    h = s.machine.symbol("SysTick_Handler") & ~1
    assert r.cmd(b"Z0,%x,2" % h) == b"OK"
    assert r.cmd(b"c").startswith(b"T05")
    assert _reg(r, 15) == h and _reg(r, 16) & 0x1FF == 15
    assert r.cmd(b"z0,%x,2" % h) == b"OK"
    sp = _reg(r, 13)
    stacked_pc = int.from_bytes(bytes.fromhex(r.cmd(b"m%x,4" % (sp + 24)).decode()), "little")
    cycles = []
    for _ in range(60):                              # through tick_work and the return
        assert r.cmd(b"s").startswith(b"T05")
        cycles.append(s.machine.cpu.cycles)
        if _reg(r, 16) & 0x1FF == 0:
            break
    assert _reg(r, 16) & 0x1FF == 0, "never left the handler"
    assert _reg(r, 15) == stacked_pc                # back where the interrupt came in
    assert _reg(r, 13) == sp + 0x20 or _reg(r, 13) == sp + 0x68   # frame popped
    assert cycles == sorted(cycles) and cycles[-1] > cycles[0]
    r.send(_packet(b"k"))
    s.join()


def test_client_vanishing_while_running_leaves_emulator_running(target_elf):
    s = Served(target_elf)
    r = Raw(s.port)
    assert r.cmd(b"QStartNoAckMode") == b"OK"
    main = s.machine.symbol("main") & ~1
    assert r.cmd(b"Z0,%x,2" % main) == b"OK"
    assert r.cmd(b"c").startswith(b"T05")
    assert r.cmd(b"z0,%x,2" % main) == b"OK"
    assert r.cmd(b"M%x,4:01000000" % s.machine.symbol("spin_forever")) == b"OK"
    r.send(_packet(b"c"))
    time.sleep(0.2)
    r.s.close()                                     # no detach, no kill
    time.sleep(0.3)
    t1 = s.machine.clock.now
    time.sleep(0.3)
    assert s.machine.clock.now > t1                 # still running
    assert s.stub.conn is None
    s.stub.killed = True
    s.join()


def test_serve_without_client_runs_like_a_plain_run(target_elf):
    cycles, _now, text = _plain_run(target_elf)
    m = Machine(target_elf)
    stub = serve(m, 0, wait=False, run_seconds=0.05)
    assert stub.exited == 0 and m.exit_code == 0
    assert m.console_text() == text and m.cpu.cycles == cycles


def test_lockup_is_reported_as_sigsegv(target_elf):
    s = Served(target_elf)
    r = Raw(s.port)
    assert r.cmd(b"QStartNoAckMode") == b"OK"
    # PC and SP both in unmapped space: the fetch faults and the HardFault
    # entry cannot stack its frame -> lockup
    assert r.cmd(b"Pd=00000030") == b"OK"
    assert r.cmd(b"Pf=00000030") == b"OK"
    rep = r.cmd(b"c")
    assert rep.startswith(b"T0b"), rep
    assert r.cmd(b"qRcmd," + b"status".hex().encode()).startswith(b"50433d")   # "PC="
    r.send(_packet(b"k"))
    s.join()
