"""Cortex-M0 exception model on the nRF51822, from M0 firmware
(firmware/tests51/cpu_m0.c, built with -mcpu=cortex-m0)."""
from __future__ import annotations

from conftest import assert_firmware_passed, run_fw, verdict


def test_cpu_m0_firmware(fw):
    m, r = run_fw(fw("nrf51/cpu_m0"), 100, board="microbit")
    assert_firmware_passed(m, r, min_passes=14)
    # the WFI wait for TIMER0's 500 counts at 1 MHz took emulated time
    assert r.time_ticks >= 500 * 512


def test_cpu_m0_firmware_sees_a_broken_core(fw):
    """The same firmware reports failures when the core is modelled wrongly
    (3 priority bits instead of 2, UDIV accepted by a Cortex-M4 model)."""
    def three_bits(m):
        m.cpu.prio_mask = 0xE0
    m, r = run_fw(fw("nrf51/cpu_m0"), 100, board="microbit", setup=three_bits)
    passes, fails = verdict(m, r)
    assert any("two_priority_bits" in f for f in fails)
    assert r.exit_code != 0


def test_cortex_m0_instruction_costs():
    """Cortex-M0 TRM (DDI 0432C) table 3-1 costs, per instruction."""
    import struct
    from emu.cpu.cycles import CostModel
    m0 = CostModel("m0")

    def cost(*halfwords):
        return m0.block_cost(struct.pack(f"<{len(halfwords)}H", *halfwords), 0x1000)
    assert cost(0x2001) == 1                  # movs r0, #1
    assert cost(0x6801) == 2                  # ldr r1, [r0]
    assert cost(0xB510) == 3                  # push {r4, lr}: 1 + N
    assert cost(0xBD10) == 6                  # pop {r4, pc}: 1 + N + 3
    assert cost(0x4770) == 3                  # bx lr
    assert cost(0xF3BF, 0x8F5F) == 3          # dmb
    assert cost(0xF3EF, 0x8010) == 3          # mrs r0, primask
    assert cost(0xBF30) == 2                  # wfi
    assert cost(0xF000, 0xF800) == 4          # bl
    assert cost(0xC10C) == 3                  # stmia r1!, {r2, r3}: 1 + N
