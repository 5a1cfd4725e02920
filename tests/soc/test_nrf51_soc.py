"""nRF51822 SoC at register level: no firmware, absolute addresses, exact ticks.

What differs from the nRF52832 is checked here: the Cortex-M0 core (16 MHz,
2 priority bits, ARMv6-M CPUID), the memory sizes in FICR, 1 KiB NVMC
pages, the nRF51 ADC, 16 PPI channels, 4 GPIOTE channels, the legacy-only
UART slot, and the micro:bit devices on a fake bus.
"""
from __future__ import annotations

import pytest

from emu.clock import TICKS_PER_SECOND, us
from emu.soc.nrf51822 import Nrf51822

ADC = 0x40007000
NVMC = 0x4001E000
PPI = 0x4001F000
TIMER0, TIMER1 = 0x40008000, 0x40009000
GPIOTE = 0x40006000
UART0 = 0x40002000
SCS = 0xE000E000


@pytest.fixture
def soc():
    return Nrf51822()


def rd(soc, addr):
    return soc.cpu.read32(addr)


def wr(soc, addr, value):
    soc.cpu.write32(addr, value)


def advance(soc, ticks):
    soc.clock.advance_to(soc.clock.now + ticks)


def test_memory_sizes_in_ficr(soc):
    assert rd(soc, 0x10000010) == 1024          # CODEPAGESIZE
    assert rd(soc, 0x10000014) == 256           # CODESIZE: 256 pages = 256 KiB
    assert rd(soc, 0x10000034) == 2             # NUMRAMBLOCK
    assert rd(soc, 0x10000038) == 0x2000        # SIZERAMBLOCK[0]
    assert soc.RAM_SIZE == 16 * 1024 and soc.FLASH_SIZE == 256 * 1024
    soc.cpu.write_mem(0x20003FFC, b"\x01\x02\x03\x04")      # last RAM word exists
    assert soc.cpu.read_mem(0x20003FFC, 4) == b"\x01\x02\x03\x04"
    assert soc.cpu.region_at(0x20004000) is None           # and nothing after it


def test_cortex_m0_core(soc):
    cpu = soc.cpu
    assert cpu.profile == "m0" and cpu.cycle_ticks == TICKS_PER_SECOND // 16_000_000
    assert rd(soc, SCS + 0xD00) == 0x410CC200                # CPUID: Cortex-M0 r0p0
    wr(soc, SCS + 0x400, 0xFFFFFFFF)                         # IPR0: 2 priority bits
    assert rd(soc, SCS + 0x400) == 0xC0C0C0C0
    assert cpu.group_prio(0x40) == 0x40                      # no subpriority split


def test_nvmc_erases_1k_pages(soc):
    cpu = soc.cpu
    cpu.write_mem(0x400 - 4, b"\x00" * 4)
    cpu.write_mem(0x400, b"\x00" * 1024)
    cpu.write_mem(0x800, b"\x00" * 4)
    wr(soc, NVMC + 0x504, 2)                                 # CONFIG = Een
    wr(soc, NVMC + 0x508, 0x400)                             # ERASEPAGE page 1
    assert cpu.read_mem(0x400, 1024) == b"\xff" * 1024
    assert cpu.read_mem(0x3FC, 4) == b"\x00" * 4            # neighbours untouched
    assert cpu.read_mem(0x800, 4) == b"\x00" * 4
    wr(soc, NVMC + 0x508, 0x600)                             # not page aligned: ignored
    assert rd(soc, NVMC + 0x400) == 0                        # READY: busy with the erase


def test_adc_conversion_time_and_result(soc):
    adc = soc.peripherals["adc"]
    adc.set_input(2, 0.3)
    wr(soc, ADC + 0x500, 1)                                  # ENABLE
    # RES=10 bit, INPSEL=no prescaling, REFSEL=VBG (1.2 V), PSEL=AIN2
    wr(soc, ADC + 0x504, 2 | (0 << 2) | (0 << 5) | (1 << 2 + 8))
    wr(soc, ADC + 0x304, 1)                                  # INTENSET.END
    wr(soc, ADC + 0x000, 1)                                  # START
    assert rd(soc, ADC + 0x400) == 1                         # BUSY
    advance(soc, us(68) - 1)                                 # one tick short of 68 us
    assert rd(soc, ADC + 0x100) == 0 and rd(soc, ADC + 0x400) == 1
    advance(soc, 1)
    assert rd(soc, ADC + 0x100) == 1 and rd(soc, ADC + 0x400) == 0
    assert rd(soc, ADC + 0x508) == 256                       # 0.3 / 1.2 * 1023 = 255.75
    assert soc.cpu.irq_level >> 7 & 1                        # ADC IRQ 7 asserted
    wr(soc, ADC + 0x100, 0)
    assert not soc.cpu.irq_level >> 7 & 1


def test_adc_supply_one_third_8bit(soc):
    adc = soc.peripherals["adc"]
    adc.set_vdd(3.3)
    wr(soc, ADC + 0x500, 1)
    wr(soc, ADC + 0x504, 0 | (6 << 2) | (0 << 5))            # 8 bit, VDD/3, VBG
    wr(soc, ADC + 0x000, 1)
    advance(soc, us(20))
    assert rd(soc, ADC + 0x508) == 234                       # 1.1 / 1.2 * 255 = 233.75


def test_ppi_has_16_channels_routing_tasks(soc):
    # CH[15]: TIMER0 COMPARE[0] -> TIMER1 START
    wr(soc, PPI + 0x510 + 8 * 15, TIMER0 + 0x140)
    wr(soc, PPI + 0x514 + 8 * 15, TIMER1 + 0x000)
    wr(soc, PPI + 0x504, 1 << 15)                            # CHENSET
    wr(soc, TIMER0 + 0x540, 10)                              # CC[0] = 10 counts
    wr(soc, TIMER0 + 0x000, 1)                               # START
    timer1 = soc.peripherals["timer1"]
    advance(soc, 10 * 512 - 1)                               # 1 MHz: one tick short
    assert not timer1.running
    advance(soc, 1)
    assert timer1.running
    # CH[16] does not exist on the nRF51: its EEP address is not a PPI register
    wr(soc, PPI + 0x510 + 8 * 16, TIMER0 + 0x144)
    assert soc.peripherals["ppi"].endpoints(16) == (0, 0)


def test_gpiote_has_four_channels(soc):
    wr(soc, GPIOTE + 0x51C, (3 | 5 << 8 | 1 << 20))         # CONFIG[3]: task, P0.05, high
    assert soc.pins[5].level
    wr(soc, GPIOTE + 0x520, (3 | 6 << 8 | 1 << 20))         # "CONFIG[4]": not on the nRF51
    assert not soc.pins[6].driven


def test_uart_slot_is_legacy_only(soc):
    uart = soc.peripherals["uart0"]
    wr(soc, UART0 + 0x500, 8)                                # UARTE value: no such variant
    assert uart.active is None
    wr(soc, UART0 + 0x500, 4)
    assert uart.active is not None and uart.active.NAME == "UART"
    wr(soc, UART0 + 0x524, 0x01D7E000)                       # 115200
    wr(soc, UART0 + 0x50C, 24)                               # PSELTXD: P0.24
    wr(soc, UART0 + 0x008, 1)                                # STARTTX
    wr(soc, UART0 + 0x51C, ord("A"))
    advance(soc, 10 * ((32 << 32) // 0x01D7E000))            # one byte time
    assert bytes(uart.host_output) == b"A"


def test_timer_compare_not_missed_when_cpu_runs_past_it(soc):
    """At 16 MHz one 1 MHz count is 16 CPU cycles: the scheduler may run the
    compare event when the clock is already past the count; it must still fire."""
    t0 = soc.peripherals["timer0"]
    wr(soc, TIMER0 + 0x510, 4)                               # PRESCALER 4: 1 MHz
    wr(soc, TIMER0 + 0x540, 100)
    wr(soc, TIMER0 + 0x000, 1)
    soc.clock.now += 100 * 512 + 700                         # CPU time overshoots by >1 count
    soc.clock.run_due()
    assert t0.events[0x140] == 1


def test_armv6m_system_registers(soc):
    # the nRF51's Cortex-M0 has no SysTick: the registers read as zero and
    # enabling it does nothing
    wr(soc, SCS + 0x014, 1000)                               # SYST_RVR
    wr(soc, SCS + 0x010, 7)                                  # SYST_CSR: ENABLE|TICKINT|CLKSOURCE
    assert rd(soc, SCS + 0x010) == 0 and rd(soc, SCS + 0x014) == 0
    assert not soc.cpu.systick.enabled
    wr(soc, SCS + 0xD08, 0x20000000)                         # VTOR: not implemented
    assert rd(soc, SCS + 0xD08) == 0 and soc.cpu.vtor == 0
    assert rd(soc, SCS + 0xD14) == 0x208                     # CCR: STKALIGN|UNALIGN_TRP, RO
    wr(soc, SCS + 0xD14, 0)
    assert rd(soc, SCS + 0xD14) == 0x208
    assert rd(soc, SCS + 0xD28) == 0                         # no CFSR on ARMv6-M
    # SHPR2/SHPR3 exist, with 2 bits per priority
    wr(soc, SCS + 0xD20, 0xFFFF0000)
    assert rd(soc, SCS + 0xD20) == 0xC0C00000


def test_timer1_is_16_bits_wide(soc):
    t1 = soc.peripherals["timer1"]
    wr(soc, TIMER1 + 0x508, 3)                               # BITMODE 32: not on TIMER1
    wr(soc, TIMER1 + 0x510, 4)                               # 1 MHz
    wr(soc, TIMER1 + 0x540, 0x10005)                         # CC[0] beyond 16 bits
    wr(soc, TIMER1 + 0x000, 1)
    advance(soc, 5 * 512)                                    # counts 0..5: 0x10005 & 0xFFFF
    assert t1.events[0x140] == 1
    assert soc.peripherals["timer0"]._mask() == 0xFFFF       # TIMER0 reset BITMODE 16
    wr(soc, TIMER0 + 0x508, 3)
    assert soc.peripherals["timer0"]._mask() == 0xFFFFFFFF   # TIMER0 is 32 bits wide


def test_power_register_resets_a_block(soc):
    """POWER (+0xFFC): 0 powers the block down to its reset state, 1 back up."""
    assert rd(soc, TIMER1 + 0xFFC) == 1
    wr(soc, TIMER1 + 0x510, 4)
    wr(soc, TIMER1 + 0x540, 7)
    wr(soc, TIMER1 + 0x000, 1)
    assert soc.peripherals["timer1"].running
    wr(soc, TIMER1 + 0xFFC, 0)
    assert rd(soc, TIMER1 + 0xFFC) == 0
    t1 = soc.peripherals["timer1"]
    assert not t1.running and rd(soc, TIMER1 + 0x540) == 0 and rd(soc, TIMER1 + 0x510) == 4
    wr(soc, TIMER1 + 0xFFC, 1)
    assert rd(soc, TIMER1 + 0xFFC) == 1


def test_power_register_on_a_shared_slot_resets_enable(soc):
    twi = 0x40003000
    wr(soc, twi + 0x500, 5)                                  # ENABLE = TWI
    wr(soc, twi + 0x588, 0x1D)                               # ADDRESS
    assert soc.peripherals["serial0"].active is not None
    wr(soc, twi + 0xFFC, 0)                                  # the errata's TWI recovery
    wr(soc, twi + 0xFFC, 1)
    assert soc.peripherals["serial0"].active is None
    assert rd(soc, twi + 0x500) == 0
    uart = soc.peripherals["uart0"]
    wr(soc, UART0 + 0x500, 4)
    wr(soc, UART0 + 0xFFC, 0)
    assert uart.active is None and rd(soc, UART0 + 0xFFC) == 0


def test_soft_reset_keeps_gpregret(soc):
    """SYSRESETREQ on the nRF51 (no GPREGRET2) keeps GPREGRET, sets RESETREAS.SREQ."""
    cp = soc.peripherals["clock_power"]
    wr(soc, 0x4000051C, 0x5A)
    cp.system_reset("sysresetreq")
    assert rd(soc, 0x4000051C) == 0x5A
    assert rd(soc, 0x40000400) & (1 << 2)
    assert 0x520 not in cp.values


@pytest.mark.parametrize("base", [0x40002000, 0x40003000, 0x40008000, 0x4000B000])
def test_power_register_resets_to_one(base):
    """POWER=0 powers a block down; any reset powers it on again (reset value 1)."""
    from emu.soc.nrf51822 import Nrf51822
    soc = Nrf51822()
    p = soc.peripheral_at(base)
    assert p.read(0xFFC) == 1
    p.write(0xFFC, 0)
    assert p.read(0xFFC) == 0
    p.reset()
    assert p.read(0xFFC) == 1
