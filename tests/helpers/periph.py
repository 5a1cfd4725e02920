"""Peripherals on a bare Nrf52832 (no firmware, no CPU run: register writes
and the clock advanced by hand), for the register-level tests of
tests/peripherals/: fake devices on the chip's SPI and I2C buses."""
from __future__ import annotations


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
