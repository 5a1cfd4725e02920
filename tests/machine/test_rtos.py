"""RTOS awareness (issue 27): emu/rtos.py reads the kernel's tasks, and the
GDB stub reports them as threads.

CI: firmware/tests/rtos_tasks.c, our own scheduler with FreeRTOS's data
layout and symbols, stopped at checkpoint() (IDLE running, blinky blocked
in task_delay with known registers, worker suspended, oneshot deleted).
Real images when present: InfiniTime 1.16.1 (``$PINETIME_EMU_INFINITIME_IMAGE``
or the newest ``pinetime-app-*.out`` in ~/.cache/pinetime-emu/infinitime) and
Zephyr 3.1's philosophers and fpu_sharing test built with
CONFIG_DEBUG_THREAD_INFO (``<zephyr dir>/nrf52dk_nrf52832/philosophers_threads``
and ``fpu_sharing_threads``, the latter with PI_NUM_ITERATIONS=70000); their
tests skip with a message, saying how to build them, when the image is
absent.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from emu import Machine
from emu.inspect import GuestMemory
from emu.rtos import FreeRtos, Zephyr, detect, for_machine
from frontends.gdbstub import GdbStub, _checksum, serve
from helpers.zephyr import ZEPHYR

GDB = shutil.which("gdb-multiarch")
CACHE = Path.home() / ".cache" / "pinetime-emu"
BLINKY_PATTERN = 0x5A000000
FLOAT_PATTERN = 0x40490FDB


def u32(m, addr):
    return int.from_bytes(m.cpu.read_mem(addr, 4), "little")


def at_checkpoint(fw, n: int = 1) -> Machine:
    """rtos_tasks stopped inside checkpoint(n): every task but IDLE switched out."""
    m = Machine(fw("rtos_tasks"), board="nrf52832")
    hits = m.symbol("checkpoint_hits")
    assert m.run_until(lambda: u32(m, hits) >= n, timeout_ms=2000, poll_ms=0.2)
    return m


def release(m) -> None:
    m.cpu.write_mem(m.symbol("checkpoint_release"), (1).to_bytes(4, "little"))


# ---------------------------------------------------------------- the reader
def test_freertos_tasks_names_states_priorities_stacks(fw):
    m = at_checkpoint(fw)
    rtos = for_machine(m)
    assert isinstance(rtos, FreeRtos) and rtos.started()
    tasks = {t.name: t for t in rtos.tasks()}
    assert set(tasks) == {"IDLE", "blinky", "worker", "oneshot"}
    assert [(tasks[n].state, tasks[n].priority) for n in ("IDLE", "blinky", "worker", "oneshot")] \
        == [("running", 0), ("blocked", 1), ("suspended", 2), ("deleted", 1)]
    assert rtos.tasks()[0].name == "IDLE" and rtos.tasks()[0].current
    assert rtos.current_id() == u32(m, m.symbol("pxCurrentTCB")) == tasks["IDLE"].id
    for name, stack in (("IDLE", "stack_idle"), ("blinky", "stack_blinky"),
                        ("worker", "stack_worker")):
        t = tasks[name]
        assert t.stack_low == m.symbol(stack)
        assert t.stack_low < t.sp < t.stack_low + 1024     # its saved SP is on its stack
        assert t.id == m.symbol("tcb_" + name.lower())


def test_freertos_saved_context_with_and_without_fp(fw):
    m = at_checkpoint(fw)
    rtos = for_machine(m)
    tasks = {t.name: t for t in rtos.tasks()}
    b = rtos.registers(tasks["blinky"])
    # blinky yielded in task_yield() with r4..r11 = pattern..pattern+7, s0 =
    # pattern and s16 = pi: an FP context, so s16-s31 and the extended frame
    assert b["r4"] & 0xFF000000 == BLINKY_PATTERN and b["r11"] == b["r4"] + 7
    assert b["s0"] == b["r4"] and b["s16"] == FLOAT_PATTERN
    start, end = m.symbols.extent("task_yield")
    assert start <= b["pc"] <= end
    frame = 9 * 4 + 16 * 4 + 8 * 4 + 18 * 4
    assert b["sp"] in (tasks["blinky"].sp + frame, tasks["blinky"].sp + frame + 4)
    assert b["xpsr"] & 0x01000000 and b["xpsr"] & 0x1FF == 0     # Thumb, thread mode
    w = rtos.registers(tasks["worker"])
    assert "s0" not in w and "s16" not in w                       # no FP context
    start, end = m.symbols.extent("task_yield_plain")
    assert start <= w["pc"] <= end
    assert w["sp"] in (tasks["worker"].sp + 9 * 4 + 32, tasks["worker"].sp + 9 * 4 + 36)
    # the firmware checks every task got these registers back (it is run on)
    release(m)
    r = m.run(seconds=1)
    assert r.reason == "exit" and r.exit_code == 0, m.console_text()


def test_no_rtos_and_before_the_scheduler(fw):
    assert for_machine(Machine(fw("gdb_target"), board="nrf52832")) is None
    m = Machine(fw("rtos_tasks"), board="nrf52832")
    rtos = for_machine(m)
    assert rtos is not None and not rtos.started() and rtos.tasks() == []


def test_corrupt_lists_give_short_answers_never_hangs_or_mmio(fw):
    """Companion: a task list pointing into a peripheral or round in a loop."""
    m = at_checkpoint(fw)
    rtos = for_machine(m)
    n = len(rtos.tasks())
    d1 = m.symbol("xDelayedTaskList1")
    first = u32(m, d1 + 12)
    m.cpu.write_mem(first + 4, (first).to_bytes(4, "little"))          # pxNext -> itself
    m.cpu.write_mem(d1, (1000).to_bytes(4, "little"))                  # and a huge count
    t0 = time.monotonic()
    assert len(rtos.tasks()) == n and time.monotonic() - t0 < 1.0
    m.cpu.write_mem(d1 + 12, (0x40000000).to_bytes(4, "little"))       # into CLOCK
    names = [t.name for t in rtos.tasks()]
    assert "blinky" not in names and "IDLE" in names
    # the reader refuses peripheral space outright
    with pytest.raises(ValueError):
        rtos.read(0x40000000, 4)


def test_zephyr_offsets_reader_from_a_fake_table(fw):
    """The Zephyr reader against a table and thread list written into RAM of
    a plain image: the offsets, not a fixed layout, are what it follows."""
    from emu.loader import SymbolTable
    m = Machine(fw("gdb_target"), board="nrf52832")
    base = 0x2000C000
    table = [1, 0x08, 0x30, 0, 0x10, 0x14, 0, 0x16, 0x60, 0x80, 0xA0, 0xFFFFFFFF, 0xFFFFFFFF]
    kernel, t1, t2, tabaddr = base, base + 0x100, base + 0x200, base + 0x400
    syms = SymbolTable({"_kernel": (kernel, 0x40, "object"),
                        "_kernel_thread_info_offsets": (tabaddr, 4 * len(table), "object"),
                        "_kernel_thread_info_num_offsets": (tabaddr + 0x80, 4, "object")})
    w = lambda a, v: m.cpu.write_mem(a, v.to_bytes(4, "little"))   # noqa: E731
    for i, v in enumerate(table):
        w(tabaddr + 4 * i, v)
    w(tabaddr + 0x80, len(table))
    w(kernel + 0x08, t1)                     # current
    w(kernel + 0x30, t1)                     # thread list head
    w(t1 + 0x10, t2)
    w(t2 + 0x10, 0)
    m.cpu.write_mem(t1 + 0x14, bytes([0x80]))          # queued
    m.cpu.write_mem(t2 + 0x14, bytes([0x02]))          # pending
    m.cpu.write_mem(t2 + 0x16, bytes([0xFF]))          # prio -1 (cooperative)
    m.cpu.write_mem(t1 + 0x80, b"main\0")
    m.cpu.write_mem(t2 + 0x80, b"worker\0")
    psp = base + 0x800
    w(t2 + 0x60, psp)
    for i in range(8):
        w(t2 + 0x60 - 32 + 4 * i, 0x100 + i)             # r4..r11
    for i, v in enumerate([1, 2, 3, 4, 12, 0x1235, 0x1234, 0x01000000]):
        w(psp + 4 * i, v)
    z = detect(GuestMemory(m.cpu, syms))
    assert isinstance(z, Zephyr)
    ts = z.tasks()
    assert [(t.name, t.state, t.priority, t.current) for t in ts] == \
        [("main", "running", 0, True), ("worker", "pending", -1, False)]
    regs = z.registers(ts[1])
    assert regs["r4"] == 0x100 and regs["r11"] == 0x107 and regs["pc"] == 0x1234
    assert regs["sp"] == psp + 32 and "s0" not in regs


# ------------------------------------- one reader: machine.tasks() = the GDB threads
def disagreements(m) -> list:
    """Where machine.tasks() (emu/inspect) and the GDB stub's threads
    (emu/rtos) tell a different story about the same machine state; []
    when they agree task for task."""
    rtos = for_machine(m)
    if not isinstance(rtos, FreeRtos) or not rtos.started():
        return ["no FreeRTOS scheduler running"]
    info = {t.tcb: t for t in m.tasks() if t.tcb}
    threads = {t.id: t for t in rtos.tasks()}
    out = [f"{tcb:#x} only in machine.tasks()" for tcb in set(info) - set(threads)]
    out += [f"{tcb:#x} only in the threads" for tcb in set(threads) - set(info)]
    for tcb in set(info) & set(threads):
        i, t = info[tcb], threads[tcb]
        high = i.stack_base + i.stack_size if i.stack_size else None
        a = (i.name, i.state, i.priority, i.stack_top, i.stack_base or None, high,
             i.state == "running")
        b = (t.name, t.state, t.priority, t.sp, t.stack_low, t.stack_high, t.current)
        if a != b:
            out.append(f"{i.name}: {a} != {b}")
    if sum(t.current for t in threads.values()) != 1:
        out.append("not one current thread")
    return out


def test_task_views_agree_on_our_images(fw, monkeypatch):
    import dataclasses
    m = at_checkpoint(fw)
    assert disagreements(m) == [] and len(m.tasks()) == 4
    release(m)
    seen = set()
    for _ in range(4000):                   # wherever the scheduler happens to be
        r = m.run(ms=0.05)
        if r.reason == "exit":
            break
        assert disagreements(m) == []
        seen |= {(t.name, t.state) for t in m.tasks()}
    assert r.reason == "exit" and r.exit_code == 0, m.console_text()
    assert {("blinky", "running"), ("blinky", "blocked"), ("worker", "running"),
            ("worker", "suspended"), ("IDLE", "running")} <= seen, seen
    m = Machine(fw("heap_tasks"), board="nrf52832")
    assert m.run(ms=50).ok
    assert disagreements(m) == []
    # DWARF gives heap_tasks' pxEndOfStack: the threads know their stacks' tops
    for t in for_machine(m).tasks():
        assert t.stack_high == t.stack_low + 256, t
    # a corrupt list: both views drop and keep the same tasks
    m = at_checkpoint(fw)
    d1 = m.symbol("xDelayedTaskList1")
    m.cpu.write_mem(d1 + 12, (0x40000000).to_bytes(4, "little"))
    assert disagreements(m) == [] and "blinky" not in {t.name for t in m.tasks()}
    assert any(t.problem for t in m.tasks())
    # the check can fail: a thread list that says otherwise about one task
    real = FreeRtos.tasks
    monkeypatch.setattr(FreeRtos, "tasks", lambda self: [
        dataclasses.replace(t, state="ready") if t.name == "worker" else t for t in real(self)])
    assert any(d.startswith("worker:") for d in disagreements(m))


def test_task_views_agree_on_infinitime():
    m = Machine(_infinitime(), flash_file=None)
    assert m.run(seconds=2).ok
    names = set()
    for ms in (1, 3, 7, 13, 29, 61, 127, 251):
        m.run(ms=ms)
        assert disagreements(m) == []
        names |= {t.name for t in m.tasks()}
    assert {"IDL", "MAI", "dis", "Tmr", "ble"} <= names, names


# ---------------------------------------------------------------- GDB
class Attached:
    """A machine (already run to where the test wants it) under a GDB stub."""

    def __init__(self, m: Machine):
        self.machine = m
        self.stub = GdbStub(m, port=0)
        self.port = self.stub.port
        self.error = None

        def target():
            try:
                serve(m, self.port, wait=True, stub=self.stub)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.error = e
        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def join(self, timeout=20.0):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "emulator thread did not finish"
        assert self.error is None, self.error


def gdb_script(elf: str, port: int, script: str, timeout: float = 60.0) -> str:
    if GDB is None:
        pytest.skip("gdb-multiarch not installed")
    with tempfile.NamedTemporaryFile("w", suffix=".gdb", delete=False) as f:
        f.write(script)
    try:
        r = subprocess.run([GDB, "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", "set confirm off", "-ex", f"target remote 127.0.0.1:{port}",
                            "-x", f.name, "-ex", "kill", elf], capture_output=True, text=True,
                           timeout=timeout)
    finally:
        os.unlink(f.name)
    return r.stdout + r.stderr


def select(name: str) -> str:
    """GDB lines selecting the thread whose extra info names ``name`` (`thread N`)."""
    return ("python\nimport re\n"
            f"out = gdb.execute('thread find {name}', to_string=True)\n"
            "gdb.execute('thread ' + re.search(r'Thread (\\d+) has', out).group(1))\n"
            "end\n")


def test_gdb_info_threads_and_a_sleeping_tasks_backtrace(fw):
    elf = fw("rtos_tasks")
    a = Attached(Machine(elf, board="nrf52832"))
    refuse = ("python\ntry:\n    gdb.execute('set var $r4 = 1')\nexcept gdb.error as e:\n"
              "    print('REFUSED:', e)\nend\n")
    out = gdb_script(elf, a.port, "break checkpoint\ncontinue\ninfo threads\n"
                     + select("blinky") + "echo BT-BLINKY\\n\nbt\necho END\\n\n"
                     "p/x $r4\np/x $r11\ninfo registers d8 d0\n" + refuse
                     + select("worker") + "bt\ninfo registers d0\np/x $control\n"
                     + select("IDLE") + "delete\nset var checkpoint_release = 1\ncontinue\n")
    a.join()
    for n, st, pr in (("IDLE", "running", 0), ("blinky", "blocked", 1),
                      ("worker", "suspended", 2), ("oneshot", "deleted", 1)):
        assert f"(Name: {n}, State: {st}, Priority: {pr})" in out, out
    bt = out[out.index("BT-BLINKY"):out.index("END")]
    frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+)", bt, re.M)
    assert frames[:4] == ["task_yield", "task_delay", "blinky_wait", "blinky_task"], out
    r4 = int(re.search(r"\$1 = (0x[0-9a-f]+)", out).group(1), 16)
    r11 = int(re.search(r"\$2 = (0x[0-9a-f]+)", out).group(1), 16)
    assert r4 & 0xFF000000 == BLINKY_PATTERN and r11 == r4 + 7, out
    assert re.search(r"d8\s+\S+ \(raw 0x0*40490fdb\)", out), out          # s16 = pi
    assert re.search(r"d0\s+\S+ \(raw 0x0*%x\)" % r4, out), out            # s0 = pattern
    assert "REFUSED: Could not write register \"r4\"" in out, out       # a switched-out task
    assert "worker_step" in out and "worker_task" in out, out
    assert re.search(r"d0\s+<unavailable>", out), out                      # no FP context
    assert "$3 = 0x2" in out, out                                          # CONTROL: PSP
    assert "exited normally" in out, out                                   # the run went on


def test_thread_packets_and_errors(fw):
    m = at_checkpoint(fw)
    tasks = {t.name: t for t in for_machine(m).tasks()}
    a = Attached(m)
    s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
    buf = b""

    def cmd(data: bytes) -> bytes:
        nonlocal buf
        s.sendall(b"$" + data + b"#" + f"{_checksum(data):02x}".encode())
        while True:
            i = buf.find(b"$")
            j = buf.find(b"#", i)
            if i >= 0 and j >= 0 and len(buf) >= j + 3:
                body, buf = buf[i + 1:j], buf[j + 3:]
                return body
            got = s.recv(65536)
            assert got, "the stub closed the connection"
            buf += got
    assert cmd(b"QStartNoAckMode") == b"OK"
    buf = buf.replace(b"+", b"")
    ids = {t.id for t in tasks.values()}
    got = cmd(b"qfThreadInfo")
    assert got.startswith(b"m") and {int(x, 16) for x in got[1:].split(b",")} == ids
    assert cmd(b"qsThreadInfo") == b"l"
    assert cmd(b"qC") == b"QC%x" % tasks["IDLE"].id
    assert cmd(b"?") == b"T05thread:%x;" % tasks["IDLE"].id
    extra = bytes.fromhex(cmd(b"qThreadExtraInfo,%x" % tasks["worker"].id).decode())
    assert extra == b"Name: worker, State: suspended, Priority: 2"
    for bad in (b"T1", b"T%x" % (tasks["worker"].id + 4), b"Hg1", b"Hc12345678",
                b"qThreadExtraInfo,1", b"qThreadExtraInfo,zz", b"Tzz", b"Hg-5",
                b"vCont;s:99", b"T"):
        assert cmd(bad).startswith(b"E"), bad
    assert cmd(b"T%x" % tasks["oneshot"].id) == b"OK"
    assert cmd(b"Hg%x" % tasks["worker"].id) == b"OK"
    g = cmd(b"g").decode()
    regs = for_machine(m).registers(tasks["worker"])
    assert int.from_bytes(bytes.fromhex(g[15 * 8:16 * 8]), "little") == regs["pc"]
    assert "xx" * 8 in g                                   # d0-d15: no FP context
    assert cmd(b"p17") != b"xxxxxxxx"                      # MSP: the CPU's
    assert cmd(b"P4=01000000").startswith(b"E")            # a switched-out task: refused
    assert cmd(b"G" + g.replace("x", "0").encode()).startswith(b"E")
    assert u32(m, tasks["worker"].sp) == regs["r4"]        # nothing was written
    assert cmd(b"Hg0") == b"OK"
    assert cmd(b"p4") != b"xxxxxxxx"                       # the CPU again
    assert cmd(b"P4=01000000") == b"OK"
    s.sendall(b"$k#6b")
    s.close()
    a.join()


@pytest.mark.timeout(120, method="thread")
def test_fuzzed_thread_packets_keep_the_stub_serving(fw):
    import random
    m = at_checkpoint(fw)
    ids = [t.id for t in for_machine(m).tasks()]
    stub = GdbStub(m, port=0)
    rng = random.Random(27)
    try:
        c = socket.create_connection(("127.0.0.1", stub.port), timeout=5)
        c.setblocking(False)
        for _ in range(20):
            stub.poll(0.01)
        nums = [b"%x" % i for i in ids] + [b"0", b"-1", b"1", b"", b"zz", b"-2", b"1" * 40,
                                          b"ffffffff", b"p1.1"]
        for _case in range(300):
            n = rng.choice(nums)
            data = rng.choice([b"Hg", b"Hc", b"T", b"qThreadExtraInfo,", b"vCont;s:",
                               b"vCont;c:", b"p", b"P4=", b"g", b"Hg"]) + n
            c.sendall(b"$" + data + b"#" + f"{_checksum(data):02x}".encode())
            for _ in range(3):
                stub.poll(0.002)
                if not stub.halted and stub.exited is None:
                    stub.wants_halt = True
                    c.sendall(b"\x03")
                    stub.run_machine(m.clock.now + 64_000)
        c.setblocking(True)
        c.settimeout(5)
        c.recv(1 << 20)
        data = b"qC"
        c.sendall(b"$" + data + b"#" + f"{_checksum(data):02x}".encode())
        got = b""
        for _ in range(200):
            stub.poll(0.01)
            try:
                c.settimeout(0.01)
                got += c.recv(1 << 16)
            except socket.timeout:
                pass
            if b"$QC" in got:
                break
        assert b"$QC" in got, got[-200:]
    finally:
        stub.close()


# ---------------------------------------------------------------- real images
def _infinitime() -> str:
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if not p:
        found = sorted((CACHE / "infinitime").glob("pinetime-app-*.out"))
        p = str(found[-1]) if found else ""
    if not p or not Path(p).exists():
        pytest.skip("no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or build "
                    f"pinetime-app into {CACHE / 'infinitime'} (shared INFINITIME-BUILD.md)")
    return p


def test_infinitime_tasks_in_gdb():
    elf = _infinitime()
    m = Machine(elf, flash_file=None)
    assert m.run(seconds=3).ok
    tasks = {t.name: t for t in for_machine(m).tasks()}
    # configMAX_TASK_NAME_LEN is 4 in InfiniTime: "displayapp" is kept as "dis"
    assert {"IDL", "MAI", "dis", "Tmr"} <= set(tasks), tasks
    assert tasks["MAI"].state == "blocked" and tasks["MAI"].priority == 1
    a = Attached(m)
    out = gdb_script(elf, a.port, "info threads\n" + select("MAI") + "echo BT\\n\nbt\n")
    a.join()
    for name in ("IDL", "MAI", "dis", "Tmr"):
        assert f"Name: {name}," in out, out
    bt = out[out.index("BT"):]
    assert re.search(r"#0 .* in xQueueReceive", bt), out
    assert re.search(r"#1 .* in Pinetime::System::SystemTask::Work", bt), out


def test_zephyr_threads_in_gdb():
    p = ZEPHYR / "nrf52dk_nrf52832" / "philosophers_threads" / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p}: build samples/philosophers with "
                    "CONFIG_DEBUG_THREAD_INFO (see the MANIFEST.md beside it)")
    m = Machine(str(p))
    m.run(seconds=1)
    tasks = {t.name: t for t in for_machine(m).tasks()}
    assert {f"Philosopher {i}" for i in range(6)} <= set(tasks) and "idle" in tasks, tasks
    assert sum(t.current for t in tasks.values()) == 1
    a = Attached(m)
    out = gdb_script(str(p), a.port, "info threads\n" + select("Philosopher 3")
                     + "echo BT\\n\nbt\necho END\\n\n")
    a.join()
    assert "Name: Philosopher 5," in out and "Name: idle," in out, out
    bt = out[out.index("BT"):out.index("END")]
    frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+)", bt, re.M)
    assert "arch_swap" in frames[:2] and "philosopher" in frames, out


def test_zephyr_preempted_thread_with_an_fp_context():
    """Zephyr's FP path: with CONFIG_FPU_SHARING a preempted thread's s16-s31
    are in arch.preempt_float and its frame on the stack has s0-s15.  The pi
    loop (pi += sign / divisor; divisor += 2; sign = -sign) keeps pi/4 so
    far, the sign (+-1) and an odd divisor in s0-s15 when it is preempted."""
    import struct
    p = ZEPHYR / "nrf52dk_nrf52832" / "fpu_sharing_threads" / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p}: build tests/kernel/fpu_sharing/generic with "
                    "-DCONFIG_DEBUG_THREAD_INFO=y -DPI_NUM_ITERATIONS=70000 (with the "
                    "default iterations pi_low is first seen ready before it ever ran: no "
                    "FP frame yet)")
    m = Machine(str(p))
    rtos = for_machine(m)
    for _ in range(60):
        m.run(ms=50)
        ready = [t for t in rtos.tasks() if t.name in ("pi_low", "pi_high")
                 and t.state == "ready"]
        if ready:
            break
    assert ready, [(t.name, t.state) for t in rtos.tasks()]
    t = ready[0]
    regs = rtos.registers(t)
    assert "s0" in regs and "s31" in regs and "fpscr" in regs
    start, end = m.symbols.extent("calculate_" + t.name)
    assert start <= regs["pc"] <= end
    floats = [struct.unpack("<f", struct.pack("<I", regs[f"s{i}"]))[0] for i in range(16)]
    assert any(0.78 < f < 0.79 for f in floats), floats                 # pi / 4
    assert any(abs(f) == 1.0 for f in floats), floats                   # sign
    assert any(f >= 3 and f == int(f) and int(f) % 2 == 1 for f in floats), floats
    assert regs["sp"] - t.sp in (26 * 4, 26 * 4 + 4)        # the extended frame
