"""Shared-ID serial slots: one object per slot, the variant chosen by ENABLE.

nRF52832 PS v1.4 section 15.2 "Peripherals with shared ID": SPIM0/SPIS0/
TWIM0/TWIS0/SPI0/TWI0 share 0x40003000 (IRQ 3), instance 1 shares
0x40004000 (IRQ 4), SPIM2/SPIS2/SPI2 share 0x40023000 (IRQ 35).  Only one
variant is active at a time, selected by the value written to ENABLE
(+0x500): SPI=1, SPIS=2, TWI=5, TWIM=6, SPIM=7, TWIS=9.  All variants decode
the same addresses, so a register written while the slot is disabled (PSEL,
FREQUENCY, ADDRESS, pointers...) is seen by whichever variant is enabled
next: the multiplexer keeps that shared storage and hands it on at ENABLE.

PPI (PS 21) sees the slot as one peripheral: the variants share the slot's
``event_listeners`` list, so an event of the enabled variant reaches the
PPI at the slot's address, and :meth:`SerialMux.trigger` (a PPI task at the
slot) goes to the enabled variant's task, as a CPU write would (nothing
while the slot is disabled, logged once).  The UART0/UARTE0 slot
(emu/peripherals/uart.py) and CCM/AAR (emu/peripherals/ccm_aar.py) reuse
this.

Pins (:class:`PinSignals`): the enabled variant takes the pins its PSEL
registers select, and nothing else.  Its output signals are selected in
GPIO (``Gpio.select``: the peripheral, not GPIO OUT, controls them; SPI SCK
idles at CONFIG.CPOL and MOSI low, UART TXD idles high and RTS low; TWI SCL
and SDA are open-drain lines left released), and its bus is the board's bus
on those pins (``soc.buses``, emu/buses.py): SPI0, SPIM1 or SPIM2 reach the
PineTime's display alike when their SCK/MOSI/MISO are P0.02/03/04, and an
instance whose pins point elsewhere reaches nothing; two instances enabled
on one bus's pins both reach it (logged once, emu/buses.py).  Both are
worked out when ENABLE, a PSEL register or CONFIG changes, never per byte.

Not modelled: the SPIS and TWIS slaves (register storage, logged once);
pin-level SCK/MOSI/SDA/SCL waveforms (bytes go through the SpiBus/I2cBus;
the pins show the idle levels above).
"""
from __future__ import annotations

import types
from typing import Optional

from emu.buses import psel_pin
from emu.peripherals.base import NrfPeripheral, Peripheral

ENABLE = 0x500

# ENABLE value -> (module, class) per slot kind
_SPI_ONLY = {1: ("emu.peripherals.spi", "Spi"), 7: ("emu.peripherals.spim", "Spim"),
             2: ("emu.peripherals.serial", "Spis")}
_SPI_TWI = dict(_SPI_ONLY)
_SPI_TWI.update({5: ("emu.peripherals.twi", "Twi"), 6: ("emu.peripherals.twim", "Twim"),
                 9: ("emu.peripherals.serial", "Twis")})


def ticks_per_bit(freq_reg: int) -> int:
    """512 MHz ticks per bit for a FREQUENCY/BAUDRATE value (f = reg * 16 MHz / 2^32)."""
    if freq_reg <= 0:
        return 1 << 40          # no clock: nothing completes
    return max(1, (32 << 32) // freq_reg)


class PinSignals:
    """Mixin for a serial peripheral's pins (SPI/SPIM, TWI/TWIM, UART/UARTE).

    ``SIGNALS``: (name, PSEL offset, kind) with kind "out" (an output: the
    peripheral's idle level, :meth:`idle_level`, direction from GPIO DIR),
    "od" (an open-drain line the peripheral drives itself: released) or
    "in" (an input: not selected).  ``BUS``: "spi", "i2c" or None.  The
    slot calls :meth:`connect_pins` when the variant is enabled and
    :meth:`disconnect_pins` when it is not; PSEL and CONFIG writes call
    :meth:`_pins_changed`."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_miso_pin", "_pins_applied", "_plan", "i2c_bus", "miso_on_bus", "pins_live",
                "spi_bus")

    SIGNALS: tuple = ()
    BUS: Optional[str] = None
    spi_bus = None            # the SpiBus this master reaches (None: none)
    i2c_bus = None            # the I2cBus this master reaches
    miso_on_bus = False       # SPI: MISO is the reached bus's MISO pin
    pins_live = False         # enabled: the pins are selected
    _miso_pin = None
    _pins_applied: dict = {}  # owner -> pin selected in GPIO
    _plan = None              # (PSEL/CONFIG values, what they select): _pin_plan

    def idle_level(self, signal: str) -> Optional[bool]:
        """The level an output signal holds on its pin (no waveforms)."""
        return None

    def signal_pins(self) -> dict:
        """signal name -> the pin its PSEL register selects, or None."""
        v = self.values
        return {name: psel_pin(v[off]) for name, off, _kind in self.SIGNALS}

    def _pin_plan(self) -> tuple:
        """(outputs to select: ((owner, pin, level, own_dir), ...), bus pins):
        worked out again only when PSEL or CONFIG changed (drivers that
        enable the block around every transfer, as InfiniTime's, reuse it)."""
        v = self.values
        key = tuple(v[off] for _name, off, _kind in self.SIGNALS) + (v.get(0x554),)
        plan = self._plan
        if plan is not None and plan[0] == key:
            return plan[1]
        pins = self.signal_pins()
        want = tuple((f"{self.name}.{name}", pins[name],
                      None if kind == "od" else self.idle_level(name), kind == "od")
                     for name, _off, kind in self.SIGNALS
                     if pins[name] is not None and kind != "in")
        bus_pins = tuple(pins[name] for name in
                         (("SCK", "MOSI", "MISO") if self.BUS == "spi" else
                          ("SCL", "SDA") if self.BUS == "i2c" else ()))
        self._plan = (key, (want, bus_pins))
        return want, bus_pins

    def connect_pins(self) -> None:
        """Enabled: select the output pins, reach the bus on the pins."""
        want, bus_pins = self._pin_plan()
        gpio = self.soc.peripherals.get("gpio")
        applied = self._pins_applied
        if gpio is not None:
            if applied:
                keep = {owner: n for owner, n, _l, _d in want}
                for owner, n in applied.items():
                    if keep.get(owner) != n:
                        gpio.deselect(n, owner)
            for owner, n, level, own_dir in want:
                gpio.select(n, owner, level, own_dir)
        self._pins_applied = {owner: n for owner, n, _l, _d in want}
        self.pins_live = True
        buses = getattr(self.soc, "buses", None)
        if self.BUS == "spi":
            self._miso_pin = bus_pins[2]
            self.spi_bus, self.miso_on_bus = (buses.route_spi(self.name, *bus_pins)
                                              if buses is not None else (None, False))
        elif self.BUS == "i2c":
            self.i2c_bus = buses.route_i2c(self.name, *bus_pins) if buses is not None else None

    def disconnect_pins(self) -> None:
        """Disabled: the pins go back to GPIO, no bus is reached."""
        if self._pins_applied:
            gpio = self.soc.peripherals.get("gpio")
            if gpio is not None:
                for owner, n in self._pins_applied.items():
                    gpio.deselect(n, owner)
            self._pins_applied = {}
        self.pins_live = False
        if self.spi_bus is not None or self.i2c_bus is not None:
            self.spi_bus = self.i2c_bus = None
            self.miso_on_bus = False
            self.soc.buses.drop(self.name)

    def _pins_changed(self, new: int = 0, old: int = 0) -> None:
        """A PSEL (or CONFIG) register was written: while enabled, again."""
        if self.pins_live:
            self.connect_pins()

    def miso_byte(self) -> int:
        """What the master shifts in when its MISO is not on the bus it
        reaches: its MISO pin's level for all 8 bits (0x00 disconnected)."""
        n = self._miso_pin
        return 0xFF if n is not None and self.soc.pins[n].level else 0x00


class Spis(NrfPeripheral):
    """SPI slave: register storage only (not modelled)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("mux",)
    NAME = "SPIS"
    STORAGE_ONLY = True     # the slot says so when ENABLE selects it

    def __init__(self, soc, base, name=None, irq=None):
        super().__init__(soc, base, name, irq)
        self.log_once("nm", "SPIS at %#010x is register storage only (not modelled)", base)

    def disable(self) -> None:
        pass


class Twis(Spis):
    """TWI slave: register storage only (not modelled)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ()
    STRUCTURE = ("mux",)
    NAME = "TWIS"


class SerialMux(Peripheral):
    """The slot object mapped on the bus; forwards to the enabled variant."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("active", "enable", "shared", "variants")
    # read/write: the active variant's, bound on the instance (load_state binds them again)
    STRUCTURE = ("event_listeners", "instance", "irq", "ops_changed", "ops_select", "read",
                 "write")

    NAME = "SERIAL"
    HAS_TWI = True

    def __init__(self, soc, base, name=None):
        super().__init__(soc, base, name)
        self.instance = int(self.name[-1]) if self.name[-1].isdigit() else 0
        self.irq = (base >> 12) & 0xFF
        variants: dict = {}
        for val, c in self._variant_classes().items():
            variants[val] = c(soc, base, f"{self.name}.{c.NAME.lower()}", self.irq)
        self.adopt(variants)                 # sets each variant's mux and listeners
        self.reset()
        buses = getattr(soc, "buses", None)
        if buses is not None:       # a bus added after ENABLE: route again
            buses.route_listeners.append(self.reconnect)

    def adopt(self, variants: dict) -> None:
        """Make ``variants`` (ENABLE value -> model) this slot's: their events
        go to the slot's ``event_listeners`` (PPI), one list shared by all."""
        self.variants = variants
        if not hasattr(self, "event_listeners"):
            self.event_listeners: list = []   # PPI subscribes here, for every variant
        for v in variants.values():
            v.mux = self
            v.event_listeners = self.event_listeners

    def _variant_classes(self) -> dict:
        """ENABLE value -> the variant's class, for this slot."""
        import importlib
        table = _SPI_TWI if self.HAS_TWI else _SPI_ONLY
        return {val: getattr(importlib.import_module(mod), cls)
                for val, (mod, cls) in table.items()}

    def reset(self) -> None:
        self.enable = 0
        self.active = None
        self.ops_changed()
        self.__dict__.pop("read", None)
        self.__dict__.pop("write", None)
        self.shared: dict = {}       # offset -> last value written while disabled
        for v in getattr(self, "variants", {}).values():
            v.reset()
            if isinstance(v, PinSignals):
                v.disconnect_pins()

    def reconnect(self) -> None:
        """Select the enabled variant's pins and route its bus again."""
        a = self.active
        if isinstance(a, PinSignals):
            a.connect_pins()

    def variant(self, enable_value: int):
        return self.variants.get(enable_value)

    def trigger(self, offset: int) -> None:
        """A task through PPI: the enabled variant's, as a CPU write of 1."""
        a = self.active
        if a is None:
            self.log_once(("task-off", offset), "task +%#x while the slot is disabled ignored",
                          offset)
            return
        a.trigger(offset)

    # -- bus -----------------------------------------------------------
    def read(self, offset: int, size: int = 4) -> int:
        a = self.active
        if a is not None:
            return a.read(offset, size)
        if offset == ENABLE:
            return self.enable
        return self.shared.get(offset, 0)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        if offset == ENABLE:
            self._set_enable(value & 0xF)
            return
        a = self.active
        if a is not None:
            a.write(offset, value, size)
            return
        if offset < 0x100:
            self.log_once(("task-off", offset), "task +%#x while the slot is disabled ignored",
                          offset)
            return
        self.shared[offset] = value & 0xFFFFFFFF

    def _write_enabled(self, offset: int, value: int, size: int = 4) -> None:
        if offset == ENABLE:
            self._set_enable(value & 0xF)
        else:
            self.active.write(offset, value, size)

    # bus ops: the enabled variant's (the bus forgets them at every change)
    def read_op(self, offset: int):
        a = self.active
        if a is None or type(self).read is not SerialMux.read:
            return None
        return a.read_op(offset)

    def write_op(self, offset: int):
        a = self.active
        if a is None or offset == ENABLE or type(self).write is not SerialMux.write:
            return None
        return a.write_op(offset)

    # ------------------------------------------------------------------
    def _set_enable(self, value: int) -> None:
        old = self.active
        self.enable = value
        new = self.variants.get(value)
        if value and new is None:
            self.log_once(("en", value), "ENABLE=%d is not a valid variant for this slot", value)
        if old is new:
            if new is not None:
                new.values[ENABLE] = value
            return
        if old is not None:
            old.disable()
            if isinstance(old, PinSignals):
                old.disconnect_pins()
            # registers written while enabled remain in the shared address space
            for off, val in old.values.items():
                self.shared[off] = val
            self.shared[0x304] = old.inten
            self.shared[0x200] = old.shorts
            old._set_irq(False)
        self.active = new
        # the ops are the enabled variant's (or none): one table per ENABLE
        self.ops_select(value)
        # the bus calls slot.read/slot.write: bind the active variant's methods
        # on the instance so an access costs one Python call, not two
        if new is not None:
            self.read, self.write = new.read, self._write_enabled
        else:
            self.__dict__.pop("read", None)
            self.__dict__.pop("write", None)
        if new is not None:
            for off, val in self.shared.items():
                if off in new._regs and off != ENABLE:
                    new.values[off] = val & new._regs[off].mask
            new.inten = self.shared.get(0x304, new.inten)
            new.shorts = self.shared.get(0x200, new.shorts)
            new.values[ENABLE] = value
            new.irq_line_level = False
            new.update_irq()
            if getattr(new, "STORAGE_ONLY", False):
                new.log_once("nm", "%s is register storage only (not modelled)", new.NAME)
            if isinstance(new, PinSignals):
                new.connect_pins()

    def save_state(self) -> dict:
        return {"enable": self.enable, "shared": dict(self.shared),
                "variants": {k: v.save_state() for k, v in self.variants.items()}}

    def load_state(self, state: dict) -> None:
        for k, v in state["variants"].items():
            self.variants[int(k)].load_state(v)
        self.shared = dict(state["shared"])
        self.enable = state["enable"]
        self.active = self.variants.get(self.enable)
        self.ops_changed()
        if self.active is not None:
            self.read, self.write = self.active.read, self._write_enabled
        else:       # the class's own (a SoftDevice's write guard, a partial, stays)
            for name in ("read", "write"):
                if isinstance(self.__dict__.get(name), types.MethodType):
                    del self.__dict__[name]
        for v in self.variants.values():
            if v is not self.active and isinstance(v, PinSignals):
                v.disconnect_pins()
        self.reconnect()


class SerialMuxSpiOnly(SerialMux):
    """Instance 2 (0x40023000): SPIM2/SPIS2/SPI2 only."""
    HAS_TWI = False
