"""Cortex-M0 exception model on the nRF51822, from M0 firmware
(firmware/tests51/cpu_m0.c, built with -mcpu=cortex-m0)."""
from __future__ import annotations

from conftest import assert_firmware_passed, verdict


def _run(fw, patch=None):
    from emu import Machine
    m = Machine(fw("nrf51/cpu_m0"), board="microbit")
    if patch is not None:
        patch(m)
    r = m.run(ms=100)
    return m, r


def test_cpu_m0_firmware(fw):
    m, r = _run(fw)
    assert_firmware_passed(m, r, min_passes=14)
    # the WFI wait for TIMER0's 500 counts at 1 MHz took emulated time
    assert r.time_ticks >= 500 * 512


def test_cpu_m0_firmware_sees_a_broken_core(fw):
    """The same firmware reports failures when the core is modelled wrongly
    (3 priority bits instead of 2, UDIV accepted by a Cortex-M4 model)."""
    def three_bits(m):
        m.cpu.prio_mask = 0xE0
    m, r = _run(fw, three_bits)
    passes, fails = verdict(m, r)
    assert any("two_priority_bits" in f for f in fails)
    assert r.exit_code != 0
