"""Peripherals on a bare Nrf52832 (no firmware, no CPU run: register writes
and the clock advanced by hand), for the register-level tests of
tests/peripherals/: the chip and the peripherals a test drives, fake devices
on the chip's SPI and I2C buses, and SPI and TWI masters wired to them."""
from __future__ import annotations

from emu.soc.nrf52832 import Nrf52832


def soc_with(*names: str) -> tuple:
    """A bare Nrf52832 and its peripherals ``names`` (keys of
    soc.peripherals: "rtc1", "gpio", "serial0", ...): (soc, peripheral, ...)."""
    soc = Nrf52832()
    return (soc, *(soc.peripherals[n] for n in names))


class Echo:
    """Fake SPI device: returns the previous byte + 1, records traffic."""
    def __init__(self):
        self.got, self.sel, self.last = [], [], 0

    def select(self, s):
        self.sel.append(s)

    def transfer(self, b):
        self.got.append(b)
        out, self.last = self.last, (b + 1) & 0xFF
        return out


def on_pins(soc, s, sck=2, mosi=3, miso=4):
    """PSEL.SCK/MOSI/MISO of slot ``s`` (written while it is disabled)."""
    s.write(0x508, sck)
    s.write(0x50C, mosi)
    s.write(0x510, miso)


class Reg8:
    """Fake I2C register device."""
    def __init__(self):
        self.mem = bytearray(range(256))
        self.ptr = None
        self.log = []

    def i2c_start(self, read):
        self.log.append(("S", read))
        if not read:
            self.ptr = None
        return True

    def i2c_write(self, b):
        self.log.append(("W", b))
        if self.ptr is None:
            self.ptr = b
        else:
            self.mem[self.ptr] = b
            self.ptr = (self.ptr + 1) & 0xFF
        return True

    def i2c_read(self):
        b = self.mem[self.ptr]
        self.ptr = (self.ptr + 1) & 0xFF
        return b

    def i2c_stop(self):
        self.log.append(("P",))


def echo_on_spi(soc, cs: int) -> tuple:
    """An Echo on an SPI bus on pins SCK 2, MOSI 3, MISO 4, selected by pin
    ``cs`` (driven low: selected): (bus, echo)."""
    dev = Echo()
    bus = soc.buses.add_spi("spi", sck=2, mosi=3, miso=4)
    bus.attach(dev, soc.pins[cs])
    soc.pins[cs].drive("test", 0)
    return bus, dev


def spi_master(slot: str, cs: int, enable: int, freq: int = 0x80000000) -> tuple:
    """The shared-ID ``slot`` (serial0-2) of a bare Nrf52832 enabled as an SPI
    master (``enable``: 1 legacy SPI, 7 SPIM) at FREQUENCY ``freq`` on those
    pins, an Echo selected by pin ``cs``: (soc, slot, echo)."""
    soc, s = soc_with(slot)
    _bus, dev = echo_on_spi(soc, cs)
    on_pins(soc, s)
    s.write(0x524, freq)
    s.write(0x500, enable)
    return soc, s, dev


def twi_master(slot: str, addr: int, freq: int, enable: int) -> tuple:
    """The shared-ID ``slot`` (serial0-1) of a bare Nrf52832 enabled as a TWI
    master (``enable``: 5 legacy TWI, 6 TWIM) at FREQUENCY ``freq`` on SCL 7,
    SDA 6, ADDRESS ``addr``: a Reg8 there: (soc, slot, reg8)."""
    soc, t = soc_with(slot)
    dev = Reg8()
    soc.buses.add_i2c("i2c", scl=7, sda=6).attach(dev, addr)
    t.write(0x508, 7)                # PSEL.SCL
    t.write(0x50C, 6)                # PSEL.SDA
    t.write(0x524, freq)
    t.write(0x588, addr)             # ADDRESS
    t.write(0x500, enable)
    return soc, t, dev
