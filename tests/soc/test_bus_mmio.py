"""Peripheral bus hot path (emu/soc/bus.py, emu/soc/_mmio.c): guest loads and
stores reach the model exactly once each, time-dependent reads see the clock
at the access, plain and event registers read their current values even
after the model's dictionaries are rebound, errors read 0 and are logged.
Every test runs with the native callbacks and with the ctypes fallback."""
import struct

import pytest

from emu.clock import CPU_TICKS
from emu.peripherals.base import NrfPeripheral, Reg, RW
from emu.soc import ops
from emu.soc.nrf52832 import Nrf52832

BASE = 0x40030000            # an address no nRF52832 peripheral uses
CODE = 0x20001000


class Probe(NrfPeripheral):
    """A model that records every call its registers get."""
    NAME = "PROBE"
    TASKS = {0x000: "KICK"}
    EVENTS = {0x100: "DONE"}
    REGISTERS = [
        Reg(0x400, "FIFO", 0, RW, read="_rd_fifo", timed=False),   # read pops
        Reg(0x404, "NOW", 0, RW, read="_rd_now"),                  # timed (default)
        Reg(0x408, "PLAIN", 0x11223344, RW),
        Reg(0x40C, "BROKEN", 0, RW, read="_rd_broken", timed=False),
    ]

    def __init__(self, soc, base, name=None):
        self.pops = 0
        self.kicks = 0
        self.seen = []       # (clock.now, cpu time) at each NOW read
        super().__init__(soc, base, name, irq=None)

    def _rd_fifo(self, _off):
        self.pops += 1
        return 100 + self.pops

    def _rd_now(self, _off):
        cpu = self.soc.cpu
        t = cpu._cycle_base_ticks + (cpu.cs.cycles - cpu._cycle_base) * cpu.cycle_ticks
        self.seen.append((self.clock.now, t))
        return self.clock.now

    def _rd_broken(self, _off):
        raise RuntimeError("model bug")

    def task_KICK(self):
        self.kicks += 1


@pytest.fixture(params=["native", "ctypes"])
def soc(request, monkeypatch):
    if request.param == "native":
        from emu import native
        monkeypatch.delenv("PINETIME_EMU_PURE_PYTHON", raising=False)
        if native.load("emu.soc._mmio") is None:
            pytest.skip("emu.soc._mmio not built")
        monkeypatch.delenv("PINETIME_EMU_PURE_PYTHON", raising=False)
    else:
        monkeypatch.setenv("PINETIME_EMU_PURE_PYTHON", "1")
    s = Nrf52832()
    assert s.bus.native == (request.param == "native")
    s.probe = Probe(s, BASE)
    s.bus.attach(BASE, s.probe)
    return s


def run_thumb(soc, halfwords, results=0):
    """Run Thumb code at CODE with r0 = BASE; it ends in `b .`.  Returns the
    first ``results`` words it stored at 0x20002000.."""
    cpu = soc.cpu
    code = struct.pack(f"<{len(halfwords)}H", *halfwords) + struct.pack("<H", 0xE7FE)
    cpu.write_mem(CODE, code)
    from unicorn import arm_const as A
    cpu.set_reg(A.UC_ARM_REG_SP, 0x20008000)
    cpu.set_reg(A.UC_ARM_REG_R0, BASE)
    cpu.set_reg(A.UC_ARM_REG_R7, 0x20002000)
    cpu.pc = CODE
    cpu.run(soc.clock.now + 2000 * CPU_TICKS)
    return [cpu.read32(0x20002000 + 4 * i) for i in range(results)]


# ldr r1,[r0,#0x400] is 4 bytes in Thumb-2: f8d0 1400
LDR_FIFO = [0xF8D0, 0x1400]
LDR_NOW = [0xF8D0, 0x1404]
LDR_PLAIN = [0xF8D0, 0x1408]
LDR_EVENT = [0xF8D0, 0x1100]
LDR_BROKEN = [0xF8D0, 0x140C]
STR_R1_R7 = lambda i: [0xF8C7, 0x1000 | (4 * i)]   # noqa: E731  str r1,[r7,#4i]


def test_each_load_reaches_the_model_exactly_once(soc):
    code = []
    for i in range(5):
        code += LDR_FIFO + STR_R1_R7(i)
    before = soc.bus.accesses
    got = run_thumb(soc, code, results=5)
    assert got == [101, 102, 103, 104, 105]           # first (slow path) and cached ones
    assert soc.probe.pops == 5
    assert soc.bus.accesses - before == 5


def test_store_to_task_triggers_once_and_byte_load_reads_its_lane(soc):
    code = [0x2101,                    # movs r1, #1
            0x6001,                    # str r1, [r0]       TASKS_KICK
            0x6001,                    # str r1, [r0]
            0xF890, 0x140A,            # ldrb r1, [r0, #0x40a]  byte 2 of PLAIN
            ] + STR_R1_R7(0)
    got = run_thumb(soc, code, results=1)
    assert soc.probe.kicks == 2
    assert got == [0x22]


def test_timed_read_sees_the_clock_at_the_access(soc):
    code = []
    for i in range(4):              # time advances per basic block: end one after each read
        code += LDR_NOW + STR_R1_R7(i) + [0xBF00] * (3 * i) + [0xE7FF]   # nops; b next
    got = run_thumb(soc, code, results=4)
    seen = soc.probe.seen
    assert len(seen) == 4
    assert all(now == t for now, t in seen)           # synced to the cycle of the access
    assert got == [now & 0xFFFFFFFF for now, _t in seen]
    assert got[0] < got[1] < got[2] < got[3]


def test_plain_and_event_reads_follow_rebound_dictionaries(soc):
    p = soc.probe
    code = LDR_PLAIN + STR_R1_R7(0) + LDR_EVENT + STR_R1_R7(1)
    assert run_thumb(soc, code, results=2) == [0x11223344, 0]
    state = p.save_state()
    state["values"][0x408] = 0xCAFEF00D
    state["events"][0x100] = 1
    p.load_state(state)                               # new dict objects
    assert run_thumb(soc, code, results=2) == [0xCAFEF00D, 1]


def test_model_error_reads_zero_is_logged_and_emulation_goes_on(soc, caplog):
    code = [0x2105] + LDR_BROKEN + STR_R1_R7(0) + LDR_BROKEN + STR_R1_R7(1) \
        + LDR_FIFO + STR_R1_R7(2)
    with caplog.at_level("ERROR", logger="emu.bus"):
        got = run_thumb(soc, code, results=3)
    assert got == [0, 0, 101]
    errors = [r for r in caplog.records if "internal error in probe model" in r.getMessage()]
    assert len(errors) == 2 and errors[0].exc_info is not None


def test_models_overriding_read_keep_their_own_path(soc):
    """CLOCK/POWER overrides read() (RAM[n].POWERSET reads POWER): no op there."""
    cp = soc.peripherals["clock_power"]
    assert cp.read_op(0x904) is None and cp.write_op(0x904) is None
    assert cp.read_op(0x104).kind == ops.R_EVENT              # EVENTS_LFCLKSTARTED
    rtc = soc.peripherals["rtc1"]
    op = rtc.read_op(0x504)                                   # COUNTER: computed and timed
    assert op.kind == ops.R_COUNTER and op.timed
    gpio = soc.peripherals["gpio"]
    op = gpio.read_op(0x510)
    # IN does not depend on time, and the model keeps it in an attribute
    assert op.kind == ops.R_ATTR and op.args == ("_in",) and not op.timed
    op = rtc.write_op(0x540)       # CC re-plans: the RTC's C core, or the model (pure Python)
    assert (op is None) if rtc._core is None else (op.kind == ops.W_CALL and op.timed)
    assert rtc.write_op(0x304).slow_bits == 1                 # INTENSET.TICK re-plans
