"""nRF51 variants of the nRF52 peripheral models: the differences as data.

nRF51 Series Reference Manual v3.0 (sections 13 "POWER", 14 "CLOCK", 6
"NVMC", 10 "PPI", 11 "GPIO", 28 "UART", 29 "SPI", 30 "TWI") against the
nRF52832 Product Specification: the behaviour of these blocks is the same,
only their register sets, some register names and reset values, and a few
sizes differ.  Each class here is the nRF52 model with the nRF51's register
table (names and reset values as in Nordic's nrf51.svd) and sizes:

* ClockPower51: no GPREGRET2/RAM[n] registers; adds XTALFREQ (0x550),
  RESET (0x544) and DCDCFORCE (0xA08); the MPU registers of the same slot
  (PERR0, RLENR0, PROTENSET0/1, DISABLEINDEBUG, PROTBLOCKSIZE) are storage.
* Uart51: legacy UART only (no UARTE at ENABLE=8); BAUDRATE resets to 0.
* Spi51 / Twi51: PSELSCK/PSELMOSI/PSELMISO and PSELSCL/PSELSDA spellings;
  the shared slots hold SPI (1), SPIS (2, slot 1 only) and TWI (5).
* Nvmc51: 1 KiB pages, 256 KiB flash; no READYNEXT/ICACHE registers.
* Ppi51: 16 programmable channels, 4 groups, no FORK; fixed channels 20-31
  as on the nRF52.
* Gpio51: no LATCH/DETECTMODE (DETECT is the OR of the pin conditions).
* Gpiote51: 4 channels, TASKS_OUT only (no SET/CLR tasks).
* Temp51: TEMP only (no A/B/T calibration registers).
* Radio51: no CRCOK/CRCERROR events (register storage like the nRF52 one).
* Timer51: TIMER1 and TIMER2 are at most 16 bits wide (RM 18.1): a 24- or
  32-bit BITMODE counts 16 bits there (logged once).

POWER (+0xFFC, every nRF51 peripheral but CLOCK/POWER, RM 10.1.3
"Peripheral power control"): reads 1 after reset; writing 0 powers the
block down, which returns it to its reset state (registers, events, tasks
in flight, the interrupt line; for the shared UART/SPI/TWI slots the whole
slot, ENABLE included); writing 1 powers it up again.  This is what drivers
do to recover a hung TWI (the nRF51 errata workaround).

Not modelled: a powered-down block still answers register accesses (logged
once), the MPU region protection.
"""
from __future__ import annotations

from emu.peripherals.base import Reg, RO, RW, WO, W1C
from emu.peripherals.clock_power import ClockPower
from emu.peripherals.gpio import Gpio
from emu.peripherals.gpiote import EV_PORT, Gpiote
from emu.peripherals.ecb import Ecb
from emu.peripherals.radio import Radio
from emu.peripherals.rng import Rng
from emu.peripherals.rtc import Rtc
from emu.peripherals.temp import Temp
from emu.peripherals.timer import Timer
from emu.peripherals.nvmc import T_ERASEPAGE, Nvmc
from emu.peripherals.ppi import FIXED, Ppi
from emu.peripherals.serial import ENABLE, SerialMux, Spis
from emu.peripherals.spi import RXD, TXD, Spi
from emu.peripherals.twi import ERRORSRC as TWI_ERRORSRC
from emu.peripherals.twi import Twi
from emu.peripherals.uart import BAUDRATE, ERRORSRC as UART_ERRORSRC, Uart, Uart0
from emu.peripherals.wdt import Wdt

FLASH_SIZE = 256 * 1024
PAGE = 1024
POWER = 0xFFC


class Power51:
    """Mixin: the per-peripheral POWER register at +0xFFC (reset value 1:
    every reset powers the block on again)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_power",)

    _power = 1

    def reset(self) -> None:
        self._power = 1
        super().reset()

    def read_other(self, offset: int) -> int:
        if offset == POWER:
            return self._power
        return super().read_other(offset)

    def write_other(self, offset: int, value: int) -> None:
        if offset == POWER:
            power_write(self, value)
            return
        super().write_other(offset, value)


def power_write(block, value: int) -> None:
    """POWER written on ``block`` (a model or a shared-slot multiplexer)."""
    on = value & 1
    was = block._power
    if was and not on:
        block.log_once("poweroff", "POWER=0: %s powered down (reset state)", block.name)
        block.reset()
    block._power = on


class ClockPower51(ClockPower):
    TASKS = {0x000: "HFCLKSTART", 0x004: "HFCLKSTOP", 0x008: "LFCLKSTART", 0x00C: "LFCLKSTOP",
             0x010: "CAL", 0x014: "CTSTART", 0x018: "CTSTOP", 0x078: "CONSTLAT", 0x07C: "LOWPWR"}
    EVENTS = {0x100: "HFCLKSTARTED", 0x104: "LFCLKSTARTED", 0x108: "POFWARN", 0x10C: "DONE",
              0x110: "CTTO"}
    REGISTERS = [
        # CLOCK
        Reg(0x408, "HFCLKRUN", 0, RO),
        Reg(0x40C, "HFCLKSTAT", 0, RO),
        Reg(0x414, "LFCLKRUN", 0, RO),
        Reg(0x418, "LFCLKSTAT", 0, RO),
        Reg(0x41C, "LFCLKSRCCOPY", 0, RO),
        Reg(0x518, "LFCLKSRC", 0, RW, mask=0x3),
        Reg(0x538, "CTIV", 0, RW, mask=0x7F),
        Reg(0x550, "XTALFREQ", 0xFFFFFFFF, RW, mask=0xFF),
        # POWER
        Reg(0x400, "RESETREAS", 0, W1C, mask=0x0007000F),
        Reg(0x428, "RAMSTATUS", 0, RO, read="_rd_ramstatus"),
        Reg(0x500, "SYSTEMOFF", 0, WO, write="_wr_systemoff"),
        Reg(0x510, "POFCON", 0, RW, mask=0x7),
        Reg(0x51C, "GPREGRET", 0, RW, mask=0xFF),
        Reg(0x524, "RAMON", 3, RW, mask=0x00030003),
        Reg(0x544, "RESET", 0, RW, mask=0x1),
        Reg(0x554, "RAMONB", 3, RW, mask=0x00030003),
        Reg(0x578, "DCDCEN", 0, RW, mask=0x1),
        Reg(0xA08, "DCDCFORCE", 0, RW, mask=0x3),
        # MPU (same slot): storage
        Reg(0x528, "PERR0", 0, RW),
        Reg(0x52C, "RLENR0", 0, RW),
        Reg(0x600, "PROTENSET0", 0, RW),
        Reg(0x604, "PROTENSET1", 0, RW),
        Reg(0x608, "DISABLEINDEBUG", 1, RW, mask=0x1),
        Reg(0x60C, "PROTBLOCKSIZE", 0, RW, mask=0x3),
    ]

    def read(self, offset: int, size: int = 4) -> int:   # no RAM[n] block on the nRF51
        return super(ClockPower, self).read(offset, size)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        super(ClockPower, self).write(offset, value, size)


class UartLegacy51(Power51, Uart):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("mux",)
    REGISTERS = [
        Reg(UART_ERRORSRC, "ERRORSRC", access=W1C, mask=0xF),
        Reg(0x500, "ENABLE", mask=0x7),
        Reg(0x508, "PSELRTS", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSELTXD", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x510, "PSELCTS", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x514, "PSELRXD", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x518, "RXD", access=RO, read="_read_rxd"),
        Reg(0x51C, "TXD", mask=0xFF, write="_write_txd"),
        Reg(BAUDRATE, "BAUDRATE", 0),
        Reg(0x56C, "CONFIG", mask=0xF, write="_write_config"),
    ]


class Uart51(Uart0):
    """Slot 0x40002000 of the nRF51: the legacy UART (ENABLE=4) only."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_power",)

    def __init__(self, soc, base, name=None):
        super().__init__(soc, base, name)
        self.variants = {4: UartLegacy51(soc, base, f"{self.name}.uart51", self.irq, self.link)}
        self._mux.adopt(self.variants)
        self._mux.reset()

    _power = 1

    def reset(self) -> None:
        self._power = 1                    # POWER resets to 1 (the slot is on)
        super().reset()

    def read(self, offset: int, size: int = 4) -> int:
        if offset == POWER:
            return self._power
        return self._mux.read(offset, size)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        if offset == POWER:
            power_write(self, value)       # the whole slot: ENABLE and the variant
            return
        self._mux.write(offset, value, size)

    # bus ops: the variant's, as above, but POWER is the slot's (the model)
    def read_op(self, offset: int):
        if offset == POWER or not self._own("read", Uart51):
            return None
        return self._mux.read_op(offset)

    def write_op(self, offset: int):
        if offset == POWER or not self._own("write", Uart51):
            return None
        return self._mux.write_op(offset)


class Spi51(Power51, Spi):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("mux",)
    REGISTERS = [
        Reg(0x500, "ENABLE", mask=0x7),
        Reg(0x508, "PSELSCK", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSELMOSI", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x510, "PSELMISO", 0xFFFFFFFF, write="_pins_changed"),
        Reg(RXD, "RXD", access=RO, read="_read_rxd"),
        Reg(TXD, "TXD", mask=0xFF, write="_write_txd"),
        Reg(0x524, "FREQUENCY", 0x04000000),
        Reg(0x554, "CONFIG", mask=0x7, write="_pins_changed"),
    ]


class Twi51(Power51, Twi):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("mux",)
    REGISTERS = [
        Reg(TWI_ERRORSRC, "ERRORSRC", access=W1C, mask=0x7),
        Reg(0x500, "ENABLE", mask=0x7),
        Reg(0x508, "PSELSCL", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSELSDA", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x518, "RXD", access=RO, read="_read_rxd"),
        Reg(0x51C, "TXD", mask=0xFF, write="_write_txd"),
        Reg(0x524, "FREQUENCY", 0x04000000),
        Reg(0x588, "ADDRESS", mask=0x7F),
    ]


class SerialMux51(SerialMux):
    """0x40003000: SPI0/TWI0; 0x40004000: SPI1/SPIS1/TWI1 (chosen by ENABLE)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_power",)

    _power = 1

    def reset(self) -> None:
        self._power = 1                    # POWER resets to 1 (the slot is on)
        super().reset()

    def _variant_classes(self) -> dict:
        table = {1: Spi51, 5: Twi51}
        if self.instance == 1:
            table[2] = Spis
        return table

    # POWER belongs to the slot: powering down resets ENABLE and the variants.
    # (The multiplexer binds the enabled variant's read and its own
    # _write_enabled on the instance; both paths come through here.)
    def read(self, offset: int, size: int = 4) -> int:
        if offset == POWER:
            return self._power
        return super().read(offset, size)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        if offset == POWER:
            power_write(self, value)
            return
        super().write(offset, value, size)

    def _write_enabled(self, offset: int, value: int, size: int = 4) -> None:
        if offset == POWER:
            power_write(self, value)
            return
        super()._write_enabled(offset, value, size)

    # bus ops: the enabled variant's, as SerialMux's, but POWER is the slot's
    # (micro:bit MicroPython polls the TWI's events for the accelerometer)
    def read_op(self, offset: int):
        a = self.active
        if a is None or offset == POWER or type(self).read is not SerialMux51.read:
            return None
        return a.read_op(offset)

    def write_op(self, offset: int):
        a = self.active
        if a is None or offset in (POWER, ENABLE) or type(self).write is not SerialMux51.write:
            return None
        return a.write_op(offset)


class Nvmc51(Nvmc):
    REGISTERS = [
        Reg(0x400, "READY", 0, RO, read="_rd_ready"),
        Reg(0x504, "CONFIG", 0, RW, mask=0x3),
        Reg(0x508, "ERASEPAGE", 0, RW, write="_wr_erasepage"),
        Reg(0x50C, "ERASEALL", 0, RW, mask=1, write="_wr_eraseall"),
        Reg(0x510, "ERASEPCR0", 0, RW, write="_wr_erasepage"),
        Reg(0x514, "ERASEUICR", 0, RW, mask=1, write="_wr_eraseuicr"),
    ]

    FLASH_SIZE = FLASH_SIZE
    PAGE = PAGE

    def _wr_erasepage(self, new, old) -> None:   # code flash pages only (no UICR address)
        if not self._erase_enabled("ERASEPAGE"):
            return
        if new % PAGE or not (0 <= new < FLASH_SIZE):
            self.log.warning("ERASEPAGE %#010x: not a flash page address, ignored", new)
            return
        self._erase(new, new + PAGE, T_ERASEPAGE)


NUM_PROG_51 = 16
NUM_GROUPS_51 = 4


class Ppi51(Ppi):
    TASKS = {}
    for _n in range(NUM_GROUPS_51):
        TASKS[8 * _n] = f"CHG[{_n}].EN"
        TASKS[8 * _n + 4] = f"CHG[{_n}].DIS"
    REGISTERS = [
        Reg(0x500, "CHEN", 0, RW, write="_wr_chen"),
        Reg(0x504, "CHENSET", 0, RW, read="_rd_chen", write="_wr_chenset"),
        Reg(0x508, "CHENCLR", 0, RW, read="_rd_chen", write="_wr_chenclr"),
        Reg(0x510, "CH_EEP", 0, RW, write="_wr_map", count=NUM_PROG_51, stride=8),
        Reg(0x514, "CH_TEP", 0, RW, write="_wr_map", count=NUM_PROG_51, stride=8),
        Reg(0x800, "CHG", 0, RW, count=NUM_GROUPS_51),
    ]

    def reset(self) -> None:
        super().reset()
        # No FORK on the nRF51: the routing code reads FORK[n].TEP, which is
        # kept at 0 (no second task) outside the declared, bus-visible set.
        for ch in range(32):
            self.values[0x910 + 4 * ch] = 0

    def endpoints(self, ch: int):
        if ch in FIXED:
            return FIXED[ch]
        if ch >= NUM_PROG_51:
            return 0, 0                      # channels 16-19 do not exist
        return self.values[0x510 + 8 * ch], self.values[0x514 + 8 * ch]


class Gpio51(Gpio):
    # the nRF52's registers but LATCH and DETECTMODE (nRF51 RM v3.0 14.1)
    REGISTERS = [r for r in Gpio.REGISTERS if r.offset not in (0x520, 0x524)]

    def reset(self) -> None:
        # DETECT logic shared with the nRF52 model reads LATCH/DETECTMODE:
        # held at 0 (DETECTMODE=Default, i.e. the OR of the pin conditions)
        # outside the bus-visible registers.
        super().reset()
        self.values[0x520] = 0
        self.values[0x524] = 0

    def _update_detect(self) -> None:
        self.values[0x520] = 0
        super()._update_detect()


NUM_GPIOTE_51 = 4


class Gpiote51(Power51, Gpiote):
    TASKS = {4 * _n: f"OUT[{_n}]" for _n in range(NUM_GPIOTE_51)}
    EVENTS = {0x100 + 4 * _n: f"IN[{_n}]" for _n in range(NUM_GPIOTE_51)}
    EVENTS[EV_PORT] = "PORT"
    REGISTERS = [Reg(0x510, "CONFIG", 0, RW, mask=0x00131F03, count=NUM_GPIOTE_51)]

    def write(self, offset: int, value: int, size: int = 4) -> None:
        if 0x510 + 4 * NUM_GPIOTE_51 <= offset < 0x530:     # CONFIG[4..7]: not on the nRF51
            self.write_other(offset, value)
            return
        super().write(offset, value, size)


class Temp51(Power51, Temp):
    REGISTERS = [Reg(0x508, "TEMP", 0, RO)]


class Radio51(Power51, Radio):
    """The nRF51's RADIO: no CRCOK/CRCERROR events, no MODECNF0 (the ramp-up
    is always the default one), POWER through the nRF51 mixin."""
    EVENTS = {k: v for k, v in Radio.EVENTS.items() if v not in ("CRCOK", "CRCERROR")}
    REGISTERS = [r for r in Radio.REGISTERS if r.name not in ("MODECNF0", "POWER")]


class Timer51(Power51, Timer):
    """TIMER0 is 32 bits wide on the nRF51; TIMER1 and TIMER2 only 16."""

    def __init__(self, soc, base: int, *args, **kwargs):
        if base != 0x40008000:
            self.max_mask = 0xFFFF
        super().__init__(soc, base, *args, **kwargs)

    def _wr_cfg(self, new, old) -> None:
        if self.max_mask == 0xFFFF and self.values[0x508] & 3 in (2, 3):
            self.log_once("bitmode", "BITMODE %d on %s: this timer is 16 bits wide",
                          self.values[0x508] & 3, self.name)
        super()._wr_cfg(new, old)


class Rtc51(Power51, Rtc):
    pass


class Rng51(Power51, Rng):
    pass


class Ecb51(Power51, Ecb):
    pass


class Wdt51(Power51, Wdt):
    pass
