"""A value change dump of the chip's signals over emulated time (pyvcd).

``pinetime-emu run FIRMWARE --vcd out.vcd`` or ``VcdRecorder(machine,
"out.vcd")`` ... ``close()``; open the file in GTKWave or PulseView.

Signals (timescale 1 ns; the emulated clock's 512 MHz ticks rounded down):

* ``gpio.P0_NN``: every pin's level, ``z`` while nothing drives it and no
  pull holds it;
* ``<bus>.mosi`` / ``<bus>.miso``: each byte on the board's SPI bus
  (``spi`` on the PineTime, whichever SPI/SPIM instance drives it) when it
  is transferred, with ``<bus>.byte`` pulsing for each one (chip selects and
  the display's D/C are GPIO pins above); while a VCD is written the legacy
  SPI does not batch bytes (it would time a batch at its end);
* ``<bus>.addr`` of an I2C bus (``i2c``; at each START, ``<bus>.start``/
  ``<bus>.stop`` pulse), ``<bus>.data`` each byte written or read;
* ``nvic.irqNN_name``: each peripheral's interrupt line;
* on the PineTime: ``board.backlight`` (level 0-3) and ``board.motor``.

Pulses (``byte``, ``start``, ``stop``) are 1 for one nanosecond.  Nothing
is written until something changes; the run is not changed by recording
(the same cycles, tested).

The file is written as the run goes, in whole lines (emu/outputs.py's
StreamOutput): a write error (a full disk, a removed folder) stops the dump,
leaves a valid prefix of it (the header and whole value changes) and calls
``on_error`` with one line naming the file.

Not recorded: analog levels (SAADC inputs), the RADIO's packets (see
``machine.air.log``), the SPI/TWI clock and data waveforms bit by bit.
"""
from __future__ import annotations

from vcd import VCDWriter

from emu.outputs import StreamOutput

NS_PER_TICK = 1000 / 512


class VcdRecorder:
    def __init__(self, machine, path: str, on_error=None):
        self.m = machine
        self.clock = machine.clock
        self._f = StreamOutput(path, encoding="ascii", on_error=on_error)
        self.w = VCDWriter(self._f, timescale="1 ns", date="emulated",
                           comment=f"pinetime-emu {getattr(machine, 'board_name', '')}")
        self._t = 0
        self.closed = False
        self._pulses: list = []
        self._bus_fns: list = []          # (bus, listener) to take off at close
        soc = machine.soc
        w = self.w
        self._pins = {}
        for pin in soc.pins:
            var = w.register_var("gpio", pin.name.replace(".", "_"), "wire", size=1,
                                 init=self._pin_value(pin))
            self._pins[pin.name] = var
            pin.on_change(lambda _lvl, p=pin, v=var: self._change(v, self._pin_value(p)))
        buses = getattr(soc, "buses", None)
        for bus in getattr(buses, "spi", []):
            vs = (w.register_var(bus.name, "mosi", "wire", size=8),
                  w.register_var(bus.name, "miso", "wire", size=8),
                  w.register_var(bus.name, "byte", "wire", size=1, init=0))
            fn = (lambda mosi, miso, vs=vs: self._spi(vs, mosi, miso))
            bus.listeners.append(fn)
            self._bus_fns.append((bus, fn))
        for bus in getattr(buses, "i2c", []):
            vs = {k: w.register_var(bus.name, k, "wire", size=n, init=0 if n == 1 else None)
                  for k, n in (("addr", 7), ("data", 8), ("start", 1), ("stop", 1))}
            fn = (lambda kind, value, vs=vs: self._i2c(vs, kind, value))
            bus.listeners.append(fn)
            self._bus_fns.append((bus, fn))
        self._irqs = {}
        for name, p in sorted(soc.peripherals.items(), key=lambda kv: kv[1].base):
            irq = getattr(p, "irq", None)
            if irq is not None and irq not in self._irqs:
                self._irqs[irq] = w.register_var("nvic", f"irq{irq:02d}_{name}", "wire",
                                                 size=1, init=0)
        soc.irq_listeners.append(self._irq)
        board = machine.board
        self._backlight = None
        if getattr(board, "backlight", None) is not None:
            bl = board.backlight
            self._backlight = w.register_var("board", "backlight", "wire", size=2,
                                             init=int(bl.level))
            for p in bl.pins:
                p.on_change(lambda _lvl, bl=bl: self._change(self._backlight, int(bl.level)))
        motor_pin = getattr(getattr(board, "motor", None), "pin", None)
        if motor_pin is not None:
            mv = w.register_var("board", "motor", "wire", size=1,
                                init=self._pin_value(motor_pin))
            motor_pin.on_change(lambda _lvl, p=motor_pin, v=mv: self._change(v, self._pin_value(p)))

    @staticmethod
    def _pin_value(pin):
        if not pin.drivers and pin.pull is None:
            return "z"
        return int(pin.level)

    def _now(self) -> int:
        t = int(self.clock.now * NS_PER_TICK)
        if t < self._t:
            t = self._t
        # end the one-nanosecond pulses of the instant before
        if self._pulses and t > self._t:
            for v in self._pulses:
                self.w.change(v, self._t + 1 if t > self._t + 1 else t, 0)
            self._pulses = []
        self._t = t
        return t

    def _change(self, var, value) -> None:
        if not self.closed:
            self.w.change(var, self._now(), value)

    def _pulse(self, var) -> None:
        t = self._now()
        self.w.change(var, t, 1)
        self._pulses.append(var)

    def _spi(self, vs, mosi: int, miso: int) -> None:
        if self.closed:
            return
        t = self._now()
        self.w.change(vs[0], t, mosi & 0xFF)
        self.w.change(vs[1], t, miso & 0xFF)
        self._pulse(vs[2])

    def _i2c(self, vs, kind: str, value: int) -> None:
        if self.closed:
            return
        t = self._now()
        if kind == "start":
            self.w.change(vs["addr"], t, value & 0x7F)
            self._pulse(vs["start"])
        elif kind == "stop":
            self._pulse(vs["stop"])
        else:
            self.w.change(vs["data"], t, value & 0xFF)

    def _irq(self, irq: int, level: bool) -> None:
        var = self._irqs.get(irq)
        if var is not None:
            self._change(var, int(bool(level)))

    def close(self) -> None:
        if self.closed:
            return
        t = self._now()
        self.closed = True
        soc = self.m.soc
        for bus, fn in self._bus_fns:
            if fn in bus.listeners:
                bus.listeners.remove(fn)
        try:
            soc.irq_listeners.remove(self._irq)
        except ValueError:
            pass
        self.w.close(t + 1)
        self._f.close()

    @property
    def error(self):
        """The one-line write error that stopped the dump, or None."""
        return self._f.error

