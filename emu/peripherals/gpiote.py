"""GPIOTE: GPIO tasks and events.

nRF52832 Product Specification v1.4, section 23 "GPIOTE - GPIO tasks and
events".  Slot 0x40006000, IRQ 6.

Eight channels CONFIG[n] (MODE Disabled/Event/Task, PSEL, POLARITY
None/LoToHi/HiToLo/Toggle, OUTINIT).  In Task mode the channel selects its
pin (``soc.gpio.select``, owner ``gpiote<n>``, setting the direction itself
as the PS says: the pin is an output whatever GPIO DIR holds) and drives it,
starting at OUTINIT; TASKS_OUT[n] acts per POLARITY, TASKS_SET[n]/TASKS_CLR[n]
drive high/low.  In Event mode the channel selects the pin as an input (GPIO
OUT does not drive it) and sets EVENTS_IN[n] on the selected edges of
``Pin.level`` (listened to with ``Pin.on_change``).  EVENTS_PORT is set when GPIO's DETECT signal rises
(GPIO calls :meth:`port_detect`).  Interrupts: INTENSET/INTENCLR (IN[n] =
bit n, PORT = bit 31).

Not modelled: the PS restriction that a pin may be used by only one channel
(the second claim simply shares it, logged); IN event latency (events fire at
the instant of the edge); the low-power PORT vs high-accuracy IN power
difference.
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral, Reg, RW

NUM_CH = 8
EV_PORT = 0x17C


class Gpiote(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_last", "active")
    NAME = "GPIOTE"
    HAS_INTEN = False
    TASKS = {}
    for _n in range(NUM_CH):
        TASKS[0x000 + 4 * _n] = f"OUT[{_n}]"
        TASKS[0x030 + 4 * _n] = f"SET[{_n}]"
        TASKS[0x060 + 4 * _n] = f"CLR[{_n}]"
    EVENTS = {0x100 + 4 * _n: f"IN[{_n}]" for _n in range(NUM_CH)}
    EVENTS[EV_PORT] = "PORT"
    REGISTERS = [Reg(0x510, "CONFIG", 0, RW, mask=0x00131F03, count=NUM_CH)]

    def __init__(self, soc, base: int, name=None, irq=None):
        self.active: list = [None] * NUM_CH      # (mode, pin) currently applied
        super().__init__(soc, base, name, irq)
        self._last = [p.level for p in soc.pins]
        for i, pin in enumerate(soc.pins):
            pin.on_change(lambda level, i=i: self._pin_changed(i, level))

    def reset(self) -> None:
        for n in range(NUM_CH):
            self._unapply(n)
        super().reset()

    # -- public --------------------------------------------------------
    def port_detect(self) -> None:
        """GPIO DETECT rose: EVENTS_PORT."""
        self.fire(EV_PORT)

    # -- tasks ---------------------------------------------------------
    def task_OUT(self, n: int) -> None:
        cfg = self.values[0x510 + 4 * n]
        if cfg & 3 != 3:
            return
        pol = (cfg >> 16) & 3
        pin = self.soc.pins[(cfg >> 8) & 0x1F]
        cur = pin.drivers.get(f"gpiote{n}", False)
        if pol == 1:
            self._drive(n, True)
        elif pol == 2:
            self._drive(n, False)
        elif pol == 3:
            self._drive(n, not cur)

    def task_SET(self, n: int) -> None:
        if self.values[0x510 + 4 * n] & 3 == 3:
            self._drive(n, True)

    def task_CLR(self, n: int) -> None:
        if self.values[0x510 + 4 * n] & 3 == 3:
            self._drive(n, False)

    # -- registers -----------------------------------------------------
    def write(self, offset: int, value: int, size: int = 4) -> None:
        super().write(offset, value, size)
        if 0x510 <= offset < 0x530:
            n = (offset - 0x510) >> 2
            self._unapply(n)
            cfg = self.values[offset]
            mode, psel = cfg & 3, (cfg >> 8) & 0x1F
            gpio = self.soc.peripherals.get("gpio")
            if mode in (1, 3):
                if any(a is not None and a[1] == psel for a in self.active):
                    self.log_once(("share", psel), "two GPIOTE channels on pin %d", psel)
                self.active[n] = (mode, psel)
                if mode == 3:
                    self._drive(n, bool(cfg >> 20 & 1))
                elif gpio is not None:
                    gpio.select(psel, f"gpiote{n}", None, own_dir=True)
                self._last[psel] = self.soc.pins[psel].level
            elif mode == 2:
                self.log_once("mode2", "CONFIG[%d].MODE=2 is reserved", n)
            if self.power_watch is not None:
                self.power_watch(self)

    # -- internals -----------------------------------------------------
    def _drive(self, n: int, level: bool) -> None:
        psel = (self.values[0x510 + 4 * n] >> 8) & 0x1F
        gpio = self.soc.peripherals.get("gpio")
        if gpio is not None:
            gpio.select(psel, f"gpiote{n}", level, own_dir=True)
        else:
            self.soc.pins[psel].drive(f"gpiote{n}", level)

    def _unapply(self, n: int) -> None:
        a = self.active[n]
        if a is None:
            return
        self.active[n] = None
        mode, psel = a
        gpio = self.soc.peripherals.get("gpio")
        if gpio is not None:
            gpio.deselect(psel, f"gpiote{n}")
        else:
            self.soc.pins[psel].drive(f"gpiote{n}", None)

    def _pin_changed(self, i: int, level: bool) -> None:
        last = self._last[i]
        if level == last:
            return
        self._last[i] = level
        for n in range(NUM_CH):
            a = self.active[n]
            if a is None or a[0] != 1 or a[1] != i:
                continue
            pol = (self.values[0x510 + 4 * n] >> 16) & 3
            if pol == 3 or (pol == 1 and level) or (pol == 2 and not level):
                self.fire(0x100 + 4 * n)

    def save_model_state(self) -> dict:
        return {"active": list(self.active), "last": list(self._last)}

    def load_model_state(self, s: dict) -> None:
        self.active = [tuple(a) if a else None for a in s["active"]]
        self._last = list(s["last"])
