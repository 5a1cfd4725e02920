"""Helpers for device-level tests: drive SPI/I2C devices without a SoC."""
from __future__ import annotations

from emu.buses import I2cBus, SpiBus
from emu.signals import Pin


class SpiRig:
    """A SpiBus with one device on a CS pin, plus a D/C pin for displays."""

    def __init__(self, make_device):
        self.cs = Pin("CS", 0)
        self.dc = Pin("DC", 1)
        self.rst = Pin("RST", 2)
        self.bus = SpiBus("test")
        self.dev = make_device(self)
        self.bus.attach(self.dev, self.cs)

    def xfer(self, data, cmd: bool = False) -> bytes:
        """One CS-low transaction (D/C low if cmd)."""
        self.cs.drive("host", False)
        out = bytes(self.bus.transfer(b) for b in data)
        self.cs.drive("host", True)
        return out

    def lcd(self, command: int, params: bytes = b"") -> bytes:
        self.cs.drive("host", False)
        self.dc.drive("host", False)
        self.bus.transfer(command)
        self.dc.drive("host", True)
        out = bytes(self.bus.transfer(b) for b in params)
        self.cs.drive("host", True)
        return out


def i2c_write(bus: I2cBus, addr: int, reg: int, data: bytes = b"") -> bool:
    ok = bus.start(addr, False)
    if ok:
        ok = bus.write(reg) and all(bus.write(b) for b in data)
    bus.stop()
    return ok


def i2c_read(bus: I2cBus, addr: int, reg: int, n: int):
    """Register read (write pointer, repeated START, read n); None on NACK."""
    if not bus.start(addr, False):
        bus.stop()
        return None
    bus.write(reg)
    if not bus.start(addr, True):
        bus.stop()
        return None
    out = bytes(bus.read() for _ in range(n))
    bus.stop()
    return out
