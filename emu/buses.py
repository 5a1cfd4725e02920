"""SPI and I2C buses: how the SoC's serial peripherals reach devices.

A bus lies on pins, as on the board: the board creates it on its pins
(``soc.buses.add_spi("spi", sck=2, mosi=3, miso=4)``,
``soc.buses.add_i2c("i2c", scl=7, sda=6)``) and attaches devices.  A master
(legacy SPI or SPIM, legacy TWI or TWIM, of any instance) reaches the bus
while it is enabled with its PSEL registers on the bus's pins, as on
silicon, where the wires go to pins, not to an instance (:class:`PinBuses`).
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


def psel_pin(value: int) -> Optional[int]:
    """The pin a PSEL register connects, or None (disconnected).

    nRF52832 PS v1.4: the EasyDMA peripherals' PSEL.* registers hold PIN in
    bits [4:0] and CONNECT in bit 31 (1 = disconnected); the legacy SPI, TWI
    and UART registers (PSELSCK, PSELSCL, PSELTXD, ...) hold a pin number or
    0xFFFFFFFF (disconnected), as on the nRF51.  Both read the same way."""
    return None if value & 0x80000000 else value & 0x1F


class SpiBus:
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("bytes_transferred", "devices", "miso", "mosi", "name", "sck")
    STRUCTURE = ("_selected", "listeners")
    def __init__(self, name: str, sck: Optional[int] = None, mosi: Optional[int] = None,
                 miso: Optional[int] = None):
        self.name = name
        self.sck, self.mosi, self.miso = sck, mosi, miso   # pin numbers (None: no wire)
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
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_first", "ptr", "regs")

    PTR_MASK = 0xFF
    ptr = 0
    _first = False
    #: fn() after each register write (an instance list: the energy model,
    #: emu/power.py, re-reads the part's power state)
    power_listeners: tuple = ()

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
        for fn in self.power_listeners:
            fn()
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
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_current", "devices", "name", "scl", "sda", "transactions")
    STRUCTURE = ("listeners",)
    def __init__(self, name: str, scl: Optional[int] = None, sda: Optional[int] = None):
        self.name = name
        self.scl, self.sda = scl, sda                      # pin numbers
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


def _pins_text(**pins) -> str:
    return " ".join(f"{k.upper()} " + ("-" if v is None else f"P0.{v:02d}")
                    for k, v in pins.items())


class PinBuses:
    """The board's SPI and I2C buses by their pins, and the masters reaching them.

    Routes are resolved when a master's ENABLE or PSEL registers change
    (:meth:`route_spi` / :meth:`route_i2c` from the serial peripherals), never
    per byte: the master then holds the bus it reaches (or None).

    * SPI: a master reaches a bus when its SCK and MOSI are the bus's SCK and
      MOSI pins (the devices are clocked and get the bytes).  With its MISO
      on the bus's MISO too it reads the devices' answers; with MISO
      elsewhere or disconnected it reads the level of its own MISO pin (0xFF
      high, 0x00 low or disconnected) for every byte, as it does when it
      reaches no bus at all.
    * I2C: a master reaches a bus when its SCL and SDA are the bus's pins;
      otherwise nothing acknowledges its address (ERRORSRC.ANACK).
    * Two enabled masters on one bus's pins both reach it: each one's
      transfers go to the devices (the PS allows one peripheral per pin; on
      silicon two would fight over the lines).  Logged once per bus.

    Not modelled: a master clocking the bus with its MOSI (or one of SCL/SDA)
    elsewhere (the devices see nothing), several pins per signal.
    """
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_at", "_logged", "routes")
    STRUCTURE = ("i2c", "route_listeners", "spi")

    def __init__(self):
        self.spi: list = []
        self.i2c: list = []
        self.routes: dict = {}       # master name -> the bus it reaches
        self._at: dict = {}          # ("spi", SCK, MOSI) / ("i2c", SCL, SDA) -> bus
        # fn() for each master, called when a bus is added (masters enabled
        # before the board finished wiring route again); wiring, not state
        self.route_listeners: list = []
        self._logged: set = set()

    # -- the board ---------------------------------------------------------
    def add_spi(self, name: str, sck: int, mosi: int, miso: Optional[int]) -> SpiBus:
        """A new SPI bus on these pins (a pin belongs to one bus)."""
        bus = SpiBus(name, sck, mosi, miso)
        self._add(self.spi, bus, (sck, mosi, miso), ("spi", sck, mosi))
        return bus

    def add_i2c(self, name: str, scl: int, sda: int) -> I2cBus:
        """A new I2C bus on these pins (a pin belongs to one bus)."""
        bus = I2cBus(name, scl, sda)
        self._add(self.i2c, bus, (scl, sda), ("i2c", scl, sda))
        return bus

    def _add(self, where: list, bus, pins: tuple, key: tuple) -> None:
        pins = [p for p in pins if p is not None]
        if len(set(pins)) != len(pins):
            raise ValueError(f"bus {bus.name}: a pin used for two signals")
        for other in self.spi + self.i2c:
            if other.name == bus.name:
                raise ValueError(f"two buses named {bus.name}")
            shared = set(pins) & set(self._pins_of(other))
            if shared:
                raise ValueError(f"bus {bus.name}: P0.{min(shared):02d} is already "
                                 f"bus {other.name}'s")
        where.append(bus)
        self._at[key] = bus
        for fn in list(self.route_listeners):
            fn()

    @staticmethod
    def _pins_of(bus) -> tuple:
        if isinstance(bus, SpiBus):
            return tuple(p for p in (bus.sck, bus.mosi, bus.miso) if p is not None)
        return (bus.scl, bus.sda)

    # -- the masters -------------------------------------------------------
    def route_spi(self, master: str, sck, mosi, miso) -> tuple:
        """(bus or None, MISO on the bus) for a master enabled on these pins."""
        bus = self._at.get(("spi", sck, mosi))
        if bus is None:
            self._unrouted(master, sck=sck, mosi=mosi, miso=miso)
            return None, False
        self._set(master, bus)
        miso_ok = miso is not None and miso == bus.miso
        if not miso_ok:
            self._log_once(("miso", master, miso), logging.INFO,
                           "%s: MISO %s is not bus %s's: it reads its MISO pin, not the "
                           "devices", master,
                           "disconnected" if miso is None else f"P0.{miso:02d}", bus.name)
        return bus, miso_ok

    def route_i2c(self, master: str, scl, sda):
        """The bus a master enabled on these pins reaches, or None."""
        bus = self._at.get(("i2c", scl, sda))
        if bus is None:
            self._unrouted(master, scl=scl, sda=sda)
            return None
        self._set(master, bus)
        return bus

    def drop(self, master: str) -> None:
        """The master is disabled: it reaches nothing."""
        self.routes.pop(master, None)

    def masters_of(self, bus) -> list:
        return sorted(m for m, b in self.routes.items() if b is bus)

    def _set(self, master: str, bus) -> None:
        routes = self.routes
        if routes.get(master) is bus:
            return
        routes[master] = bus
        if len(routes) > 1:
            others = [m for m in self.masters_of(bus) if m != master]
            if others:
                self._log_once(("two", bus.name), logging.WARNING,
                               "bus %s: %s and %s are both enabled on its pins: both drive "
                               "it (the PS allows one peripheral per pin)", bus.name,
                               ", ".join(others), master)

    def _unrouted(self, master: str, **pins) -> None:
        self.routes.pop(master, None)
        if self.spi or self.i2c:
            self._log_once(("none", master, tuple(pins.values())), logging.INFO,
                           "%s enabled on %s: no bus of this board there", master,
                           _pins_text(**pins))

    def _log_once(self, key, level, msg, *args) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log.log(level, msg, *args)
