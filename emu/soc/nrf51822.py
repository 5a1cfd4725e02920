"""The nRF51822 SoC: Cortex-M0 core, memories and peripherals at their addresses.

Memory map (nRF51 Series Reference Manual v3.0, section 5 "Memory"; nRF51822
Product Specification v3.1, section 6 "Memory map"), as on the BBC micro:bit
v1 (nRF51822-QFAA: 256 KiB flash, 16 KiB RAM):

==================  ==========  =============================================
flash               0x00000000  256 KiB (256 pages of 1 KiB); writes via NVMC
FICR                0x10000000  factory information (CODEPAGESIZE 1024, ...)
UICR                0x10001000  user configuration; writes through NVMC
RAM                 0x20000000  16 KiB, read/write/execute
peripherals (APB)   0x40000000  4 KiB slots, IRQ number = address bits [19:12]
GPIO (AHB)          0x50000000
System Control      0xE000E000  (ARMv6-M subset; no DWT cycle counter)
==================  ==========  =============================================

The CPU is a Cortex-M0 at 16 MHz (one cycle = 32 ticks of the 512 MHz
clock), 32 external interrupts, 2 priority bits, no VTOR, and on the nRF51
no SysTick timer (its registers read as zero; the SysTick exception can
still be pended through ICSR).  Peripherals reuse the
nRF52832 models where the registers are the same; where the nRF51 differs
(fewer registers, other reset values, the ADC, 1 KiB flash pages) the
difference is data in ``emu/peripherals/nrf51.py`` and ``adc51.py``.

Shared slots: 0x40003000 holds SPI0/TWI0 and 0x40004000 SPI1/SPIS1/TWI1,
chosen by ENABLE (SPI 1, SPIS 2, TWI 5) exactly like the nRF52's
multiplexer; 0x40002000 holds the legacy UART (ENABLE 4).

Not modelled: the RADIO, AAR/CCM, LPCOMP and QDEC beyond register storage
(logged once when built), the MPU/PROTENSET region protection in the
POWER/MPU slot (stored), flash wait states, the TEMP sensor's non-linearity
(the reading is the temperature set on the model, in 0.25 degC steps).
"""
from __future__ import annotations

import logging
import struct
from typing import Callable, Optional

from emu.clock import Clock
from emu.soc.nrf52832 import Nrf52832

log = logging.getLogger("emu.soc.nrf51")

FLASH_BASE, FLASH_SIZE = 0x00000000, 256 * 1024
RAM_BASE, RAM_SIZE = 0x20000000, 16 * 1024
FICR_BASE, UICR_BASE = 0x10000000, 0x10001000
ROM_TABLE_BASE = 0xF0000000
PAGE_SIZE = 1024
NUM_IRQ = 32
CPU_CYCLE_TICKS = 32          # 16 MHz


def default_ficr(device_id: int = 0x8E7B6A10D50F00D5) -> bytes:
    """FICR of an nRF51822-QFAA (nRF51 RM v3.0 section 7.1 "FICR")."""
    f = bytearray(b"\xff" * 0x1000)

    def w(off, v):
        struct.pack_into("<I", f, off, v & 0xFFFFFFFF)
    w(0x010, PAGE_SIZE)                # CODEPAGESIZE
    w(0x014, FLASH_SIZE // PAGE_SIZE)  # CODESIZE
    w(0x028, 0xFFFFFFFF)               # CLENR0: no pre-programmed factory code
    w(0x02C, 0xFFFFFFFF)               # PPFC: not present
    w(0x034, 2)                        # NUMRAMBLOCK
    for i in range(4):                 # SIZERAMBLOCK[n]: two 8 KiB blocks
        w(0x038 + 4 * i, 0x2000)
    w(0x05C, 0xFFFF0072)               # CONFIGID: HWID 0x0072 (QFAA G0)
    w(0x060, device_id & 0xFFFFFFFF)   # DEVICEID[0]
    w(0x064, device_id >> 32)          # DEVICEID[1]
    for i in range(4):
        w(0x080 + 4 * i, 0x51822000 + i)   # ER
        w(0x090 + 4 * i, 0x0B0C1A00 ^ i)   # IR
    w(0x0A0, 0xFFFFFFFF)               # DEVICEADDRTYPE: random
    w(0x0A4, 0x3B1D2C4E)               # DEVICEADDR[0]
    w(0x0A8, 0xFFFFC2A5)               # DEVICEADDR[1]
    w(0x0AC, 0xFFFFFFFF)               # OVERRIDEEN: no overrides
    return bytes(f)


def default_uicr() -> bytes:
    u = bytearray(b"\xff" * 0x1000)    # CLENR0, RBPCONF, XTALFREQ (16 MHz), ...
    return bytes(u)


# base, module, class, instance name
PERIPHERALS: list = [
    (0x40000000, "emu.peripherals.nrf51", "ClockPower51", "clock_power"),
    (0x40001000, "emu.peripherals.nrf51", "Radio51", "radio"),
    (0x40002000, "emu.peripherals.nrf51", "Uart51", "uart0"),
    (0x40003000, "emu.peripherals.nrf51", "SerialMux51", "serial0"),
    (0x40004000, "emu.peripherals.nrf51", "SerialMux51", "serial1"),
    (0x40006000, "emu.peripherals.nrf51", "Gpiote51", "gpiote"),
    (0x40007000, "emu.peripherals.adc51", "Adc", "adc"),
    (0x40008000, "emu.peripherals.nrf51", "Timer51", "timer0"),
    (0x40009000, "emu.peripherals.nrf51", "Timer51", "timer1"),
    (0x4000A000, "emu.peripherals.nrf51", "Timer51", "timer2"),
    (0x4000B000, "emu.peripherals.nrf51", "Rtc51", "rtc0"),
    (0x4000C000, "emu.peripherals.nrf51", "Temp51", "temp"),
    (0x4000D000, "emu.peripherals.nrf51", "Rng51", "rng"),
    (0x4000E000, "emu.peripherals.nrf51", "Ecb51", "ecb"),
    (0x40010000, "emu.peripherals.nrf51", "Wdt51", "wdt"),
    (0x40011000, "emu.peripherals.nrf51", "Rtc51", "rtc1"),
    (0x4001E000, "emu.peripherals.nrf51", "Nvmc51", "nvmc"),
    (0x4001F000, "emu.peripherals.nrf51", "Ppi51", "ppi"),
    (0x50000000, "emu.peripherals.nrf51", "Gpio51", "gpio"),
]

STORAGE_SLOTS = {
    0x40000000: "clock_power", 0x40001000: "radio", 0x40002000: "uart0",
    0x40003000: "serial0", 0x40004000: "serial1", 0x40006000: "gpiote", 0x40007000: "adc",
    0x40008000: "timer0", 0x40009000: "timer1", 0x4000A000: "timer2", 0x4000B000: "rtc0",
    0x4000C000: "temp", 0x4000D000: "rng", 0x4000E000: "ecb", 0x4000F000: "aar_ccm",
    0x40010000: "wdt", 0x40011000: "rtc1", 0x40012000: "qdec", 0x40013000: "lpcomp",
    0x40014000: "swi0", 0x40015000: "swi1", 0x40016000: "swi2", 0x40017000: "swi3",
    0x40018000: "swi4", 0x40019000: "swi5", 0x4001E000: "nvmc", 0x4001F000: "ppi",
    0x50000000: "gpio",
}


class Nrf51822(Nrf52832):
    """The chip: Cortex-M0, memories, peripheral bus, 32 GPIO pins, interrupts.

    Shares the SoC plumbing (peripheral table, reset requests, NVMC flash
    writes, image loading) with :class:`Nrf52832`; only the data differ.
    """
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("aar_ccm", "adc", "clock_power", "ecb", "gpio", "gpiote", "lpcomp", "nvmc",
                 "ppi", "qdec", "radio", "rng", "rtc0", "rtc1", "serial0", "serial1", "swi0",
                 "swi1", "swi2", "swi3", "swi4", "swi5", "temp", "timer0", "timer1", "timer2",
                 "uart0", "wdt")

    NAME = "nRF51822"
    FLASH_SIZE = FLASH_SIZE
    RAM_BASE = RAM_BASE
    RAM_SIZE = RAM_SIZE
    NUM_PINS = 32
    PERIPHERALS = PERIPHERALS
    STORAGE_SLOTS = STORAGE_SLOTS

    NUM_IRQ = NUM_IRQ
    CPU_PROFILE = "m0"
    PRIO_BITS = 2
    CYCLE_TICKS = CPU_CYCLE_TICKS
    HAS_SYSTICK = False                 # the nRF51 has no SysTick timer
    ROM_PIDR = (0x01, 0x00, 0x40, 0x00)   # PID0..3 of nRF51 revision 3

    def __init__(self, clock: Optional[Clock] = None, *, force_python_counter: bool = False,
                 symbolizer: Optional[Callable[[int], str]] = None):
        super().__init__(clock, force_python_counter=force_python_counter,
                         symbolizer=symbolizer, uicr_pselreset=None)

    def _info_pages(self, uicr_pselreset) -> tuple:
        return default_ficr(), default_uicr()
