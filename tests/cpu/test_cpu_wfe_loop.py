"""The FreeRTOS tickless idle loop ``wfe; ldr; ldr; orrs; beq <wfe>`` (InfiniTime's
vPortSuppressTicksAndSleep): after a wake-up the loop comes back to the same
WFE inside one slice, and that WFE sleeps again (issue 15: it used to be taken
for an undefined instruction).  An instruction that really is undefined right
after a WFE still faults."""
import struct

import pytest
from unicorn import arm_const as A

from conftest import assert_firmware_passed
from emu.cpu import cortexm


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_idle_loop_wfe_sleeps_again(fw, pure):
    from emu import Machine
    m = Machine(fw("cpu_wfe_loop"), board="nrf52832", pure_python=pure)
    r = m.run(ms=200)
    assert_firmware_passed(m, r, min_passes=3)
    assert m.cpu.cycles < 200_000          # slept between ticks, not busy-looping


def test_slice_start_test_alone_faults_the_idle_loop(fw, monkeypatch):
    """Companion: the old test (PC at the slice start means 'really undefined',
    however many blocks ran) stops the idle loop with a UsageFault."""
    def old(self, pc):
        prev = struct.unpack("<H", self.uc.mem_read(pc - 2, 2))[0]
        if prev != 0xBF20 or pc == self._slice_pc:
            return False
        return True
    monkeypatch.setattr(cortexm.CortexM, "_wfe_before", old)
    from emu import Machine
    m = Machine(fw("cpu_wfe_loop"), board="nrf52832")
    r = m.run(ms=200)
    assert "PASS plain idle loop" not in m.console_text()
    assert m.cpu.last_fault and "undefined" in m.cpu.last_fault["why"]


def test_undefined_instruction_right_after_wfe_still_faults():
    """``wfe; udf #0``: the core sleeps, wakes on SysTick, resumes at the UDF,
    whose previous halfword is the WFE: it must fault, not sleep again."""
    from emu.soc.nrf52832 import Nrf52832
    soc = Nrf52832()
    cpu = soc.cpu
    code = 0x20001000
    cpu.write_mem(code, struct.pack("<3H", 0xBF20, 0xDE00, 0xE7FE))   # wfe; udf #0; b .
    cpu.write_mem(0x20003000, b"\0" * 0x200)                          # vectors: all 0
    cpu.set_reg(A.UC_ARM_REG_SP, 0x20008000)
    cpu.pc = code
    cpu.event_register = 1            # the first WFE returns at once ...
    cpu.run(soc.clock.now + 1_000_000)
    assert cpu.last_fault and "undefined" in cpu.last_fault["why"]
    assert cpu.last_fault["pc"] == code + 2
