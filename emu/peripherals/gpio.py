"""GPIO P0: 32 general-purpose pins.

nRF52832 Product Specification v1.4, section 22 "GPIO - General purpose
input/output".  Slot 0x50000000 (AHB), no interrupt.

OUT/OUTSET/OUTCLR, DIR/DIRSET/DIRCLR (DIR mirrors PIN_CNF[n].DIR), IN (the
resolved ``soc.pins`` level for pins whose input buffer is connected, else
0), LATCH (W1C), DETECTMODE and PIN_CNF[n] (DIR, INPUT, PULL -> ``Pin.set_pull``,
DRIVE stored, SENSE).  A pin configured as output is driven with
``pin.drive("gpio", OUT[n])``; an input releases it.

Pins selected by a peripheral (nRF52832 PS v1.4, 22 "GPIO": a pin is
controlled by a peripheral while that peripheral is enabled and selects it
in a PSEL register; the peripheral chapters ask for the GPIO configuration
that holds the pin while it is not selected).  A peripheral calls
``soc.gpio.select(n, owner, level, own_dir)`` when it takes pin n and
whenever the level it outputs changes, ``deselect(n, owner)`` when it
releases it.  While any peripheral selects a pin, GPIO OUT does not drive
it; the peripheral's level does:

* an output signal (SPI SCK/MOSI, UART TXD/RTS, PWM OUT[n]) drives the pin
  only while GPIO DIR[n] says output, as the PS tables "GPIO configuration
  before enabling peripheral" require of the firmware (with DIR input the
  pin is not driven, logged once);
* a peripheral that sets the direction itself (``own_dir``: GPIOTE task and
  event modes, TWI/TWIM SCL/SDA as open-drain lines) drives its level or
  releases the pin whatever DIR says.

When the peripheral releases the pin, GPIO OUT/DIR apply again; the hand-
over is one pin change (``Pin.drive_many``), never a glitch or a contention
warning.  Input signals (SPI MISO, UART RXD/CTS) are not selections: GPIO
keeps whatever drive the firmware gave the pin.  Two peripherals driving
one pin at once are logged once (the PS allows one); a GPIOTE event channel
watching a pin another peripheral drives is fine (InfiniTime's SPIM
anomaly 58 workaround counts SCK edges that way).

DETECT (22.2): pin n meets its SENSE condition when SENSE=High and the pin
is high, or SENSE=Low and the pin is low.  LATCH[n] is set while the
condition holds (and set again after a W1C if it still holds).  With
DETECTMODE=Default, DETECT is the OR of the pin conditions; with
DETECTMODE=LDETECT, DETECT is LATCH != 0.  A rising DETECT sets GPIOTE
EVENTS_PORT (``soc.peripherals['gpiote'].port_detect()``) and wakes the chip
from System OFF (``clock_power.wake_from_off()``).

Reset: GPIO keeps its whole state (PIN_CNF, OUT, DIR, LATCH, DETECTMODE)
through the reset that wakes the chip from System OFF, so the pins hold
their levels and LATCH tells the firmware which pin woke it (Nordic's
anomaly 81 on the nRF52840 lists losing PIN_CNF there, in debug interface
mode only, as a defect); every other reset returns it to reset values.

Not modelled: DRIVE strengths (S0S1/H0H1/open drain are stored; an
open-drain "disconnect 1" output is driven high), the input buffer's
analog characteristics, the 20 mA high-drive limit.
"""
from __future__ import annotations

import logging
from typing import Optional

from emu.peripherals.base import W1S, NrfPeripheral, Reg, RO, RW, W1C
from emu.soc.ops import R_ATTR, Op

NUM_PINS = 32


class Gpio(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_connected", "_in", "_levels", "detect", "selected")
    NAME = "GPIO"
    TASKS: dict = {}
    EVENTS: dict = {}
    REGISTERS = [
        Reg(0x504, "OUT", 0, RW, write="_wr_out", changes_only=True),
        Reg(0x508, "OUTSET", 0, W1S, read="_rd_out", write="_wr_out", timed=False,
            target=0x504, changes_only=True),
        Reg(0x50C, "OUTCLR", 0, W1C, read="_rd_out", write="_wr_out", timed=False,
            target=0x504, changes_only=True),
        Reg(0x510, "IN", 0, RO, read="_rd_in", timed=False),
        Reg(0x514, "DIR", 0, RW, write="_wr_dir"),
        Reg(0x518, "DIRSET", 0, RW, read="_rd_dir", write="_wr_dirset", timed=False),
        Reg(0x51C, "DIRCLR", 0, RW, read="_rd_dir", write="_wr_dirclr", timed=False),
        Reg(0x520, "LATCH", 0, W1C, write="_wr_latch"),
        Reg(0x524, "DETECTMODE", 0, RW, mask=1, write="_wr_detect"),
        Reg(0x700, "PIN_CNF", 2, RW, mask=0x0003070F, write="_wr_pin_cnf", count=NUM_PINS),
    ]

    def __init__(self, soc, base: int, name=None, irq=None):
        self.selected: dict = {}        # pin -> {owner: (level or None, own_dir)}
        self.detect = False
        super().__init__(soc, base, name, irq=None)
        for i, pin in enumerate(soc.pins):
            pin.on_change(lambda level, i=i: self._pin_changed(i))

    _connected = None
    _in = 0

    def reset(self) -> None:
        super().reset()
        self._connected = None
        pins = getattr(self.soc, "pins", None) or []
        self._levels = sum(1 << i for i, p in enumerate(pins) if p.level)
        self._update_in()
        self.detect = False
        if hasattr(self, "selected"):
            for n, sel in self.selected.items():
                self.soc.pins[n].drive_many({owner: None for owner in sel})
            self.selected = {}
            for i in range(min(NUM_PINS, len(self.soc.pins))):
                self.soc.pins[i].drive("gpio", None)
                self.soc.pins[i].set_pull(None)

    def system_reset(self, reason: str) -> None:
        if reason != "off":          # the System OFF wake-up reset keeps GPIO
            self.reset()

    # -- public --------------------------------------------------------
    def select(self, pin: int, owner: str, level: Optional[bool] = None,
               own_dir: bool = False) -> None:
        """Peripheral ``owner`` selects the pin and outputs ``level`` on it
        (None: it does not drive it).  ``own_dir``: the peripheral sets the
        direction itself; otherwise ``level`` reaches the pin only while
        DIR[n] is output.  Called again when the level changes."""
        sel = self.selected.get(pin)
        if sel is None:
            sel = self.selected[pin] = {}
        entry = (None if level is None else bool(level), bool(own_dir))
        if sel.get(owner) == entry:
            return
        sel[owner] = entry
        self._apply_pin(pin)

    def deselect(self, pin: int, owner: str) -> None:
        """``owner`` releases the pin: GPIO OUT/DIR apply again (if no other
        peripheral selects it)."""
        sel = self.selected.get(pin)
        if sel is not None:
            sel.pop(owner, None)
            if not sel:
                del self.selected[pin]
        self._apply_pin(pin, released=owner)

    def pin_cnf(self, n: int) -> int:
        return self.values[0x700 + 4 * n]

    # -- registers -----------------------------------------------------
    def _rd_out(self, _off) -> int:
        return self.values[0x504]

    def _rd_dir(self, _off) -> int:
        return self.values[0x514]

    def _rd_in(self, _off) -> int:
        return self._in

    def write_op(self, offset: int):
        # OUT, OUTSET and OUTCLR: a write that changes no pin is a bus op
        # (micro:bit MicroPython's display scan sets and clears rows and
        # columns already so about 11 000 times a workload); one that does
        # goes to write() and drives the pins
        if 0x504 <= offset <= 0x50C and self._own("write", Gpio):
            return self._base_write_op(offset)
        return super().write_op(offset)

    def read_op(self, offset: int):
        # IN is kept up to date in ``_in`` (pin changes, PIN_CNF writes,
        # reset, a snapshot): the bus reads the attribute, no Python runs
        # (wasp-os's tick reads IN once: ~1 000 model calls an emulated second)
        if offset == 0x510 and self._own("read", NrfPeripheral):
            return Op(R_ATTR, self, ("_in",), timed=self._regs[0x510].timed)
        return super().read_op(offset)

    def _update_in(self) -> None:
        """IN: the pin levels where the input buffer is connected.  The
        pin levels are kept as a bitmask by the pin listeners; the
        input-buffer mask is recomputed only after a PIN_CNF write or a
        reset."""
        connected = self._connected
        if connected is None:
            vals = self.values
            connected = 0
            for i in range(NUM_PINS):
                if not vals[0x700 + 4 * i] & 2:
                    connected |= 1 << i
            self._connected = connected
        self._in = self._levels & connected

    def _wr_out(self, new, old) -> None:
        self._apply_changed(new ^ old)

    def _wr_dir(self, new, old) -> None:
        self._set_dir(new)

    def _wr_dirset(self, new, old) -> None:
        self._set_dir(self.values[0x514] | new)

    def _wr_dirclr(self, new, old) -> None:
        self._set_dir(self.values[0x514] & ~new)

    def _set_dir(self, v: int) -> None:
        old = self.values[0x514]
        self.values[0x514] = v & 0xFFFFFFFF
        for i in range(NUM_PINS):
            off = 0x700 + 4 * i
            self.values[off] = (self.values[off] & ~1) | ((v >> i) & 1)
        self._apply_changed(old ^ v)

    def _wr_pin_cnf(self, new, old) -> None:
        # which pin: the written offset is found in write()
        self._connected = None

    def write(self, offset: int, value: int, size: int = 4) -> None:
        super().write(offset, value, size)
        if 0x700 <= offset < 0x780:
            self._update_in()
            n = (offset - 0x700) >> 2
            cnf = self.values[offset]
            if cnf & 0x700 not in (0x000, 0x100, 0x200, 0x300):
                self.log_once(("drive", n), "PIN_CNF[%d].DRIVE=%d stored, not modelled", n,
                              (cnf >> 8) & 7)
            d = self.values[0x514]
            self.values[0x514] = (d & ~(1 << n)) | ((cnf & 1) << n)
            pull = (cnf >> 2) & 3
            self.soc.pins[n].set_pull({0: None, 1: False, 3: True}.get(pull))
            if pull == 2:
                self.log_once(("pull", n), "PIN_CNF[%d].PULL=2 is reserved", n)
            self._apply_pin(n)
            self._update_detect()

    def _wr_latch(self, new, old) -> None:
        self._update_detect()

    def _wr_detect(self, new, old) -> None:
        self._update_detect()

    # -- internals -----------------------------------------------------
    def _apply_changed(self, mask: int) -> None:
        i = 0
        while mask:
            if mask & 1:
                self._apply_pin(i)
            mask >>= 1
            i += 1

    def _apply_pin(self, n: int, released: Optional[str] = None) -> None:
        pin = self.soc.pins[n]
        out = self.values[0x514] >> n & 1
        sel = self.selected.get(n)
        if sel is None:
            level = bool(self.values[0x504] >> n & 1) if out else None
            if released is None:
                pin.drive("gpio", level)
            else:
                pin.drive_many({released: None, "gpio": level})
            return
        levels = {"gpio": None}
        if released is not None:
            levels[released] = None
        for owner, (level, own_dir) in sel.items():
            if not (own_dir or out) and level is not None:
                self.log_once(("dir", n, owner), "P0.%02d: %s outputs on it but GPIO DIR is "
                              "input: not driven (the PS asks for an output)", n, owner)
                level = None
            levels[owner] = level
        if len(sel) > 1 and sum(lv is not None for lv in levels.values()) > 1:
            self.log_once(("two", n), "P0.%02d driven by %s at once (the PS allows one "
                          "peripheral per pin)", n,
                          ", ".join(sorted(o for o, lv in levels.items() if lv is not None)),
                          level=logging.WARNING)
        pin.drive_many(levels)

    def _pin_changed(self, n: int) -> None:
        if self.soc.pins[n].level:
            self._levels |= 1 << n
        else:
            self._levels &= ~(1 << n)
        self._update_in()
        if self.values[0x700 + 4 * n] & 0x30000:
            self._update_detect()

    def _update_detect(self) -> None:
        cond = 0
        pins = self.soc.pins
        vals = self.values
        for i in range(NUM_PINS):
            sense = (vals[0x700 + 4 * i] >> 16) & 3
            if sense == 2 and pins[i].level or sense == 3 and not pins[i].level:
                cond |= 1 << i
        vals[0x520] |= cond
        det = bool(vals[0x520]) if vals[0x524] & 1 else bool(cond)
        if det and not self.detect:
            self.detect = True
            gpiote = self.soc.peripherals.get("gpiote")
            fn = getattr(gpiote, "port_detect", None)
            if fn is not None:
                fn()
            power = self.soc.peripherals.get("clock_power")
            wake = getattr(power, "wake_from_off", None)
            if wake is not None:
                wake()
        elif not det:
            self.detect = False

    def save_model_state(self) -> dict:
        return {"detect": self.detect,
                "selected": {k: {o: list(e) for o, e in v.items()}
                             for k, v in self.selected.items()}}

    def load_model_state(self, s: dict) -> None:
        self.detect = s["detect"]
        self.selected = {int(k): {o: tuple(e) for o, e in v.items()}
                         for k, v in s.get("selected", {}).items()}
        self._connected = None
        for n in range(NUM_PINS):
            self._apply_pin(n)
        self._levels = sum(1 << i for i, p in enumerate(self.soc.pins) if p.level)
        self._update_in()
