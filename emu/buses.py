"""SPI and I2C buses: how the SoC's serial peripherals reach devices.

The board creates the buses, attaches devices, and hands each bus to the
peripheral that drives it (legacy SPI or SPIM, legacy TWI or TWIM).
Peripherals never import devices; devices never import peripherals.

SPI device contract::

    select(selected: bool)      chip select changed (True = asserted)
    transfer(byte: int) -> int  one full-duplex byte while selected

A device is selected while its chip-select pin is *driven low* (an input or
undriven pin does not select it, as on the PineTime where NOR_CS is
configured late in boot).  With no device selected, MISO reads 0xFF.

I2C device contract (byte level, as the TWI/TWIM peripherals see the wire)::

    i2c_start(read: bool) -> bool   addressed after a (repeated) START; True = ACK
    i2c_write(byte: int) -> bool    one byte from the master; True = ACK
    i2c_read() -> int               one byte to the master
    i2c_stop()                      STOP condition

A device that does not answer (asleep, in reset) returns False from
``i2c_start``: the master sees an address NACK.  :class:`I2cRegisterDevice`
implements the contract for the usual sensor protocol (a register pointer
set by the first byte written).
"""
from __future__ import annotations

import logging
from typing import Optional

from emu.signals import Pin

log = logging.getLogger("emu.buses")


class SpiBus:
    def __init__(self, name: str):
        self.name = name
        self.devices: list = []      # [(device, cs_pin)]
        self._selected: dict = {}    # id(device) -> bool
        self.bytes_transferred = 0
        # fn(mosi, miso) for every byte (emu/vcd.py); while there are any the
        # bus does not stream (each byte is seen at its own time)
        self.listeners: list = []

    def attach(self, device, cs_pin: Pin) -> None:
        self.devices.append((device, cs_pin))
        self._selected[id(device)] = False
        cs_pin.on_change(lambda _lvl, d=device, p=cs_pin: self._cs_changed(d, p))

    def _cs_changed(self, device, pin: Pin) -> None:
        sel = pin.driven_low()
        if sel != self._selected[id(device)]:
            self._selected[id(device)] = sel
            device.select(sel)

    def streamable(self):
        """Whether the bytes now may go to the selected device as a stream,
        and what it answers: False (not now); True (each byte answered 0xFF:
        its ``stream_ready()``); or bytes, the answers to the next bytes, at
        most that many (its ``stream_answers()``).  Streamable means exactly
        one device is selected and nothing it does depends on when a byte
        arrives."""
        if self.listeners:
            return False
        one = None
        selected = self._selected
        for dev, _pin in self.devices:
            if selected[id(dev)]:
                if one is not None:
                    return False
                one = dev
        ready = getattr(one, "stream_ready", None)
        if ready is not None and ready():
            return True
        answers = getattr(one, "stream_answers", None)
        if answers is not None:
            a = answers()
            if a:
                return a
        return False

    def stream(self, data: bytes) -> None:
        """Bytes a streaming master completed (streamable() was true for each):
        the same as transfer() of each, answers dropped, in one call."""
        self.bytes_transferred += len(data)
        for dev, _pin in self.devices:
            if self._selected[id(dev)]:
                dev.stream(data)

    def transfer(self, byte: int) -> int:
        self.bytes_transferred += 1
        out = 0xFF
        n = 0
        for dev, pin in self.devices:
            if self._selected[id(dev)]:
                out &= dev.transfer(byte & 0xFF) & 0xFF
                n += 1
        for fn in self.listeners:
            fn(byte & 0xFF, out)
        return out


class I2cRegisterDevice:
    """Mixin: the I2C contract of a device with a register pointer, as on the
    BMA421, HRS3300, CST816S, MMA8653 and MAG3110.  After a START for
    writing, the first byte sets the pointer; each later byte goes to
    ``_write_reg(ptr, byte)``; each byte read comes from ``_read_reg(ptr)``;
    after either, the pointer moves to ``_next_write_ptr``/``_next_read_ptr``
    (default: the next register, wrapping at ``PTR_MASK + 1``).  Subclasses
    keep ``regs`` (a bytearray) or override the two register methods."""

    PTR_MASK = 0xFF
    ptr = 0
    _first = False

    def i2c_start(self, read: bool) -> bool:
        self._first = not read
        return True

    def i2c_write(self, byte: int) -> bool:
        if self._first:
            self.ptr = byte & self.PTR_MASK
            self._first = False
            return True
        reg = self.ptr
        self._write_reg(reg, byte)
        self.ptr = self._next_write_ptr(reg)
        return True

    def i2c_read(self) -> int:
        reg = self.ptr
        v = self._read_reg(reg)
        self.ptr = self._next_read_ptr(reg)
        return v

    def i2c_stop(self) -> None:
        pass

    def _write_reg(self, reg: int, value: int) -> None:
        self.regs[reg] = value

    def _read_reg(self, reg: int) -> int:
        return self.regs[reg] if reg < len(self.regs) else 0

    def _next_write_ptr(self, reg: int) -> int:
        return (reg + 1) & self.PTR_MASK

    def _next_read_ptr(self, reg: int) -> int:
        return (reg + 1) & self.PTR_MASK


class I2cBus:
    def __init__(self, name: str):
        self.name = name
        self.devices: dict = {}      # 7-bit address -> device
        self._current = None
        self.transactions = 0
        self.listeners: list = []    # fn(kind, value): "start" addr, "write"/"read" byte, "stop"

    def attach(self, device, address: int) -> None:
        if address in self.devices:
            raise ValueError(f"I2C bus {self.name}: address {address:#04x} used twice")
        self.devices[address] = device

    def start(self, address: int, read: bool) -> bool:
        """(Repeated) START + address byte.  Returns ACK."""
        self.transactions += 1
        for fn in self.listeners:
            fn("start", address & 0x7F)
        dev = self.devices.get(address & 0x7F)
        self._current = dev
        if dev is None:
            return False
        ok = bool(dev.i2c_start(read))
        if not ok:
            self._current = None
        return ok

    def write(self, byte: int) -> bool:
        for fn in self.listeners:
            fn("write", byte & 0xFF)
        if self._current is None:
            return False
        return bool(self._current.i2c_write(byte & 0xFF))

    def read(self) -> int:
        v = 0xFF if self._current is None else self._current.i2c_read() & 0xFF
        for fn in self.listeners:
            fn("read", v)
        return v

    def stop(self) -> None:
        for fn in self.listeners:
            fn("stop", 0)
        if self._current is not None:
            self._current.i2c_stop()
        self._current = None
