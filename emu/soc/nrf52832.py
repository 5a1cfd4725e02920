"""The nRF52832 SoC: Cortex-M4F core, memories and peripherals at their addresses.

Memory map (nRF52832 Product Specification v1.4, section 9 "Memory"):

==================  ==========  =============================================
flash               0x00000000  512 KiB, read/execute; writes through NVMC
FICR                0x10000000  4 KiB, read-only factory information
UICR                0x10001000  4 KiB, user configuration; writes through NVMC
RAM                 0x20000000  64 KiB, read/write/execute
peripherals (APB)   0x40000000  4 KiB slots, IRQ number = address bits [19:12]
GPIO P0 (AHB)       0x50000000
System Control      0xE000E000  (and ITM 0xE0000000, DWT 0xE0001000)
==================  ==========  =============================================

Accesses outside these regions, or to a peripheral slot with nothing in it,
raise a guest BusFault and a log line naming the address, PC and symbol.

Not modelled: the code-RAM alias at 0x00800000, the instruction cache
(NVMC ICACHECNF is stored), flash wait states, MWU, and the RADIO beyond
register storage.
"""
from __future__ import annotations

import hashlib
import logging
import struct
from typing import Callable, Optional

from emu.clock import CPU_TICKS, Clock
from emu.soc.ops import new_clock
from emu.cpu.cortexm import CortexM
from emu.cpu.scs import SystemControlSpace
from emu.signals import Pin
from emu.soc.bus import PeripheralBus

log = logging.getLogger("emu.soc")

FLASH_BASE, FLASH_SIZE = 0x00000000, 512 * 1024
RAM_BASE, RAM_SIZE = 0x20000000, 64 * 1024
FICR_BASE, UICR_BASE = 0x10000000, 0x10001000
ROM_TABLE_BASE = 0xF0000000
PAGE_SIZE = 4096
NUM_IRQ = 39


def default_ficr(device_id: int = 0x5A17E5EED00DF00D) -> bytes:
    """FICR contents of an nRF52832-QFAA rev 2 (values a PineTime reads)."""
    f = bytearray(b"\xff" * 0x1000)

    def w(off, v):
        struct.pack_into("<I", f, off, v & 0xFFFFFFFF)
    w(0x010, PAGE_SIZE)          # CODEPAGESIZE
    w(0x014, FLASH_SIZE // PAGE_SIZE)  # CODESIZE
    w(0x060, device_id & 0xFFFFFFFF)   # DEVICEID[0]
    w(0x064, device_id >> 32)          # DEVICEID[1]
    for i in range(4):
        w(0x080 + 4 * i, 0x1234_5678 * (i + 1))  # ER
        w(0x090 + 4 * i, 0x9ABC_DEF0 ^ i)        # IR
    w(0x0A0, 0xFFFFFFFF)         # DEVICEADDRTYPE: random static
    w(0x0A4, 0xEDC0FFEE)         # DEVICEADDR[0]
    w(0x0A8, 0xFFFFC1D0 | 0xC000)  # DEVICEADDR[1]
    w(0x100, 0x00052832)         # INFO.PART
    w(0x104, 0x41414530)         # INFO.VARIANT "AAE0"
    w(0x108, 0x00002000)         # INFO.PACKAGE QF
    w(0x10C, 0x00000040)         # INFO.RAM 64 KiB
    w(0x110, 0x00000200)         # INFO.FLASH 512 KiB
    w(0x130, 0x00000006)         # part code used by the nrfx errata checks (nRF52832)
    w(0x134, 0x00000006)         # revision code (rev 2)
    for i, v in enumerate([0x0000005A, 0x000000B5, 0x00000000, 0x00000000]):  # TEMP calibration
        w(0x404 + 4 * i, v)
    w(0x450, 0x00000000)         # NFC TAGHEADER0..
    return bytes(f)


def default_uicr(pselreset: Optional[int] = None) -> bytes:
    u = bytearray(b"\xff" * 0x1000)
    if pselreset is not None:
        struct.pack_into("<I", u, 0x200, pselreset)
        struct.pack_into("<I", u, 0x204, pselreset)
    return bytes(u)


# base, module, class, instance name.  Filled in as models are written; the
# slots not listed get register storage (see ``STORAGE_SLOTS``).
PERIPHERALS: list = [
    (0x40001000, "emu.peripherals.radio", "Radio", "radio"),
    (0x40002000, "emu.peripherals.uart", "Uart0", "uart0"),
    (0x40003000, "emu.peripherals.serial", "SerialMux", "serial0"),
    (0x40007000, "emu.peripherals.saadc", "Saadc", "saadc"),
    (0x40012000, "emu.peripherals.qdec", "Qdec", "qdec"),
    (0x40013000, "emu.peripherals.comp", "CompLpcomp", "comp_lpcomp"),
    (0x4001C000, "emu.peripherals.pwm", "Pwm", "pwm0"),
    (0x4001D000, "emu.peripherals.pdm", "Pdm", "pdm"),
    (0x40025000, "emu.peripherals.i2s", "I2s", "i2s"),
    (0x40021000, "emu.peripherals.pwm", "Pwm", "pwm1"),
    (0x40022000, "emu.peripherals.pwm", "Pwm", "pwm2"),
    (0x40004000, "emu.peripherals.serial", "SerialMux", "serial1"),
    (0x40023000, "emu.peripherals.serial", "SerialMuxSpiOnly", "serial2"),
    (0x4000B000, "emu.peripherals.rtc", "Rtc", "rtc0"),
    (0x40011000, "emu.peripherals.rtc", "Rtc", "rtc1"),
    (0x40024000, "emu.peripherals.rtc", "Rtc", "rtc2"),
    (0x40008000, "emu.peripherals.timer", "Timer", "timer0"),
    (0x40009000, "emu.peripherals.timer", "Timer", "timer1"),
    (0x4000A000, "emu.peripherals.timer", "Timer", "timer2"),
    (0x4001A000, "emu.peripherals.timer", "Timer", "timer3"),
    (0x4001B000, "emu.peripherals.timer", "Timer", "timer4"),
    (0x40000000, "emu.peripherals.clock_power", "ClockPower", "clock_power"),
    (0x50000000, "emu.peripherals.gpio", "Gpio", "gpio"),
    (0x40006000, "emu.peripherals.gpiote", "Gpiote", "gpiote"),
    (0x4001E000, "emu.peripherals.nvmc", "Nvmc", "nvmc"),
    (0x4001F000, "emu.peripherals.ppi", "Ppi", "ppi"),
    (0x40010000, "emu.peripherals.wdt", "Wdt", "wdt"),
    (0x4000C000, "emu.peripherals.temp", "Temp", "temp"),
    (0x4000D000, "emu.peripherals.rng", "Rng", "rng"),
    (0x4000E000, "emu.peripherals.ecb", "Ecb", "ecb"),
    (0x4000F000, "emu.peripherals.ccm_aar", "CcmAar", "ccm_aar"),
    (0x40014000, "emu.peripherals.egu", "Egu", "egu0"),
    (0x40015000, "emu.peripherals.egu", "Egu", "egu1"),
    (0x40016000, "emu.peripherals.egu", "Egu", "egu2"),
    (0x40017000, "emu.peripherals.egu", "Egu", "egu3"),
    (0x40018000, "emu.peripherals.egu", "Egu", "egu4"),
    (0x40019000, "emu.peripherals.egu", "Egu", "egu5"),
]

STORAGE_SLOTS = {
    0x40000000: "clock_power", 0x40001000: "radio", 0x40002000: "uart0", 0x40003000: "serial0",
    0x40004000: "serial1", 0x40005000: "nfct", 0x40006000: "gpiote", 0x40007000: "saadc",
    0x40008000: "timer0", 0x40009000: "timer1", 0x4000A000: "timer2", 0x4000B000: "rtc0",
    0x4000C000: "temp", 0x4000D000: "rng", 0x4000E000: "ecb", 0x4000F000: "ccm_aar",
    0x40010000: "wdt", 0x40011000: "rtc1", 0x40012000: "qdec", 0x40013000: "comp_lpcomp",
    0x40014000: "egu0", 0x40015000: "egu1", 0x40016000: "egu2", 0x40017000: "egu3",
    0x40018000: "egu4", 0x40019000: "egu5", 0x4001A000: "timer3", 0x4001B000: "timer4",
    0x4001C000: "pwm0", 0x4001D000: "pdm", 0x4001E000: "nvmc", 0x4001F000: "ppi",
    0x40020000: "mwu", 0x40021000: "pwm1", 0x40022000: "pwm2", 0x40023000: "serial2",
    0x40024000: "rtc2", 0x40025000: "i2s", 0x40026000: "fpu", 0x50000000: "gpio",
}


class Nrf52832:
    """The chip: CPU, memories, peripheral bus, 32 GPIO pins, interrupts.

    Another Nordic chip (emu/soc/nrf51822.py) reuses this class and changes
    only the data below: core profile, memory sizes, peripheral table, FICR,
    UICR and ROM-table contents."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("ficr", "pure_python", "uicr_default")
    # peripherals first: a model's path is its name there (machine.soc.peripherals['rtc1'])
    STRUCTURE = ("peripherals", "bus", "buses", "ccm_aar", "clock", "clock_power", "comp_lpcomp", "cpu",
                 "ecb", "egu0", "egu1", "egu2", "egu3", "egu4", "egu5", "fpu", "gpio",
                 "gpiote", "i2s", "irq_listeners", "mwu", "nfct", "nvmc", "pdm", "pins", "ppi",
                 "pwm0", "pwm1", "pwm2", "qdec", "radio", "reset_request_handler", "rng",
                 "rtc0", "rtc1", "rtc2", "saadc", "scs", "serial0", "serial1", "serial2",
                 "symbolize", "temp", "timer0", "timer1", "timer2", "timer3", "timer4",
                 "uart0", "wdt")

    NAME = "nRF52832"
    FLASH_SIZE = FLASH_SIZE
    RAM_BASE = RAM_BASE
    RAM_SIZE = RAM_SIZE
    NUM_PINS = 32
    NUM_IRQ = NUM_IRQ
    CPU_PROFILE = "m4"
    PRIO_BITS = 3
    CYCLE_TICKS = CPU_TICKS             # 512 MHz ticks per CPU cycle: 64 MHz
    HAS_SYSTICK = True
    ROM_PIDR = (0x06, 0x00, 0x50, 0x00)   # PID0..3: nRF52832 rev 2 (nrfx errata checks)
    PERIPHERALS = PERIPHERALS
    STORAGE_SLOTS = STORAGE_SLOTS

    def __init__(self, clock: Optional[Clock] = None, *, force_python_counter: bool = False,
                 symbolizer: Optional[Callable[[int], str]] = None,
                 uicr_pselreset: Optional[int] = 21):
        # without one given: the C clock with the native helpers (the peripherals'
        # cores and the C run loop drive only it), else the Python reference
        self.clock = clock if clock is not None else new_clock(pure=force_python_counter)
        self.symbolize = symbolizer or (lambda a: "")
        self.pure_python = force_python_counter   # no native helpers at all (models read it)
        self.cpu = CortexM(self.clock, profile=self.CPU_PROFILE, num_irq=self.NUM_IRQ,
                           prio_bits=self.PRIO_BITS, force_python_counter=force_python_counter,
                           symbolizer=lambda a: self.symbolize(a), cycle_ticks=self.CYCLE_TICKS)
        self.clock.on_earlier_deadline = self.cpu.deadline_changed
        self.irq_listeners: list = []   # fn(irq, level) on every line change (emu/vcd.py)
        self.scs = SystemControlSpace(self.cpu, has_systick=self.HAS_SYSTICK)
        self.scs.map(scs_on_bus=True)     # the bus maps the SCS page (ScsPage)
        cpu = self.cpu
        cpu.map_memory(FLASH_BASE, self.FLASH_SIZE, "flash", flash=True)
        cpu.map_memory(FICR_BASE, 0x1000, "FICR", writable=False, executable=False, flash=True)
        cpu.map_memory(UICR_BASE, 0x1000, "UICR", writable=False, executable=False, flash=True)
        cpu.map_memory(self.RAM_BASE, self.RAM_SIZE, "RAM")
        # CoreSight ROM table page: system code identifies the part and its
        # revision from the peripheral ID registers (0xF0000FE0..FEC)
        cpu.map_memory(ROM_TABLE_BASE, 0x1000, "ROM table", writable=False, executable=False,
                       flash=True)
        self.ficr, self.uicr_default = self._info_pages(uicr_pselreset)
        cpu.write_mem(FLASH_BASE, b"\xff" * self.FLASH_SIZE)
        cpu.write_mem(FICR_BASE, self.ficr)
        cpu.write_mem(UICR_BASE, self.uicr_default)
        rom = bytearray(0x1000)
        struct.pack_into("<4I", rom, 0xFE0, *self.ROM_PIDR)
        cpu.write_mem(ROM_TABLE_BASE, bytes(rom))
        self.pins = [Pin(f"P0.{i:02d}", i) for i in range(self.NUM_PINS)]
        # force_python_counter: the whole pure-Python path (counter, bus, registers)
        self.bus = PeripheralBus(cpu, symbolize=lambda a: self.symbolize(a),
                                 native=False if force_python_counter else None)
        from emu.cpu.scs import DWT_BASE, SCS_BASE
        self.bus.attach(DWT_BASE, self.scs.dwt)     # CYCCNT as an op (see DwtPage)
        self.bus.attach(SCS_BASE, self.scs.page)    # NVIC pending words as ops (ScsPage)
        self.peripherals: dict = {}
        from emu.buses import PinBuses
        # the board's SPI/I2C buses by their pins (emu/buses.py): the serial
        # peripherals reach the one their PSEL registers select
        self.buses = PinBuses()
        # set by the board: fn(reason) asks for a system reset at the next
        # slice boundary (watchdog, reset pin, SYSTEMOFF wake-up, ...)
        self.reset_request_handler = None
        self._build_peripherals()
        cpu.flash_write_handler = self._flash_write
        nvmc = self.peripherals.get("nvmc")
        if nvmc is not None and hasattr(nvmc, "cpu_flash_write"):
            cpu.set_flash_config(nvmc, nvmc.offset_of("CONFIG"))

    def _info_pages(self, uicr_pselreset: Optional[int]) -> tuple:
        """(FICR, UICR) contents at power-on."""
        return default_ficr(), default_uicr(uicr_pselreset)

    def set_identity(self, name: str) -> bytes:
        """Give this chip factory values of its own, derived from ``name``:
        DEVICEID, the random static DEVICEADDR (its two top bits set, as
        the Bluetooth Core spec wants of a static address) and the ER/IR
        keys, and a seed of its own for the RNG (two chips that draw the same
        random numbers would pick the same advertising delays and collide
        forever).  Every emulated chip otherwise has the same ones (two
        nodes on one air must not share an address).  Returns the 6-byte
        address, least significant byte first (as it goes on the air)."""
        h = hashlib.sha256(b"pinetime-emu identity:" + name.encode()).digest()
        f = bytearray(self.ficr)
        f[0x060:0x068] = h[0:8]                       # DEVICEID[0..1]
        f[0x080:0x090] = h[8:24]                      # ER
        f[0x090:0x0A0] = h[16:32]                     # IR
        addr = bytearray(h[24:30])
        addr[5] |= 0xC0
        f[0x0A4:0x0AA] = bytes(addr)                  # DEVICEADDR[0], DEVICEADDR[1] low half
        f[0x0AA:0x0AC] = b"\xff\xff"
        self.ficr = bytes(f)
        self.cpu.write_mem(FICR_BASE, self.ficr)
        rng = self.peripherals.get("rng")
        if rng is not None:
            rng.set_seed(int.from_bytes(h[:8], "little"))
        return bytes(addr)

    @property
    def device_address(self) -> bytes:
        """FICR.DEVICEADDR as it goes on the air (6 bytes, LSB first; the
        two top bits set for a random static address)."""
        a = bytearray(self.ficr[0x0A4:0x0AA])
        a[5] |= 0xC0
        return bytes(a)

    # ------------------------------------------------------------------
    def _build_peripherals(self) -> None:
        import importlib
        from emu.peripherals.storage import StoragePeripheral
        modelled = set()
        for base, modname, clsname, name in self.PERIPHERALS:
            cls = getattr(importlib.import_module(modname), clsname)
            p = cls(self, base, name)
            self.add_peripheral(name, p)
            modelled.add(base)
        for base, name in self.STORAGE_SLOTS.items():
            if base not in modelled:
                p = StoragePeripheral(self, base, name)
                self.add_peripheral(name, p)

    def add_peripheral(self, name: str, p) -> None:
        if name in self.peripherals:
            raise ValueError(f"two peripherals named {name}")
        self.peripherals[name] = p
        self.bus.attach(p.base, p)
        setattr(self, name, p)

    def request_reset(self, reason: str) -> None:
        """A peripheral asks for a chip reset (reason: 'dog', 'lockup', 'pin', 'off', ...)."""
        if self.reset_request_handler is not None:
            self.reset_request_handler(reason)
        else:
            log.warning("reset request (%s) with no board to perform it", reason)

    def peripheral_at(self, address: int):
        """The peripheral whose 4 KiB slot holds ``address`` (for PPI), or None."""
        return self.bus.slots.get(address & ~0xFFF)

    def set_irq(self, irq: int, level: bool) -> None:
        self.cpu.set_irq_level(irq, level)
        for fn in self.irq_listeners:
            fn(irq, level)

    def line_sink(self) -> tuple:
        """(cpu, irq_listeners): what set_irq(irq, False) acts on, for the bus
        ops that lower a line in C (NrfPeripheral._line_sink): the CPU's
        ``irq_level`` bit is cleared (lowering pends nothing) and the ops
        hand the write to the model while anyone listens; () when set_irq or
        the CPU's set_irq_level is not this class's own."""
        if (type(self).set_irq is not Nrf52832.set_irq or "set_irq" in self.__dict__
                or type(self.cpu).set_irq_level is not CortexM.set_irq_level
                or "set_irq_level" in self.cpu.__dict__):
            return ()
        return (self.cpu, self.irq_listeners)

    # ------------------------------------------------------------------
    def _flash_write(self, lo: int, before: bytes, after: bytes) -> bytes:
        """CPU stores into flash/UICR: the NVMC decides (bits only clear)."""
        nvmc = self.peripherals.get("nvmc")
        handler = getattr(nvmc, "cpu_flash_write", None)
        if handler is None:
            log.warning("CPU write to flash at %#010x ignored: no NVMC model", lo)
            return before
        return handler(lo, before, after)

    def load_image(self, segments) -> None:
        """Program (address, bytes) segments into flash/RAM, as a debugger would."""
        for addr, data in segments:
            self.cpu.write_mem(addr, data)

    def flash_bytes(self) -> bytes:
        return self.cpu.read_mem(FLASH_BASE, self.FLASH_SIZE)

    def uicr_bytes(self) -> bytes:
        return self.cpu.read_mem(UICR_BASE, 0x1000)
