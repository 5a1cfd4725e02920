"""UART0 / UARTE0 at 0x40002000 (IRQ 2), nRF52832 PS v1.4 sections 35 "UARTE"
and 36 "UART"; ENABLE (+0x500) selects the legacy UART (4) or UARTE (8).

Bytes take 10 bit times (start + 8 data + stop).  A bit lasts 1 / the
"actual rate" the PS gives for the BAUDRATE value in its UART (36.x) and
UARTE (35.x) register tables (:data:`BAUD_TABLE`, declared once): the two
blocks divide the 16 MHz clock differently, so Baud115200 is 0x01D7E000 =
115 942 baud on the UART and 0x01D60000 = 115 108 baud on the UARTE, not
the 115 203 / 114 743 of value x 16 MHz / 2^32.  A value outside the table
falls back to that formula (logged once).  The nRF51's UART uses the UART
column (the nRF51 reference manual gives the same values, without rates).

The wire is a device on pins (PS 35.x/36.x "pin configuration"): a byte
leaves on the pin PSELTXD (PSEL.TXD) selected when it was written to TXD
(UARTE: at STARTTX) and goes to the device wired to that pin
(``Pin.serial``, e.g. emu/devices/terminal.py), as a whole frame at the
end of its byte time; the receiver takes bytes from the device on the pin
PSELRXD selects, one per byte time while it is started (the first a byte
time after STARTRX or after the device had something to send, whichever is
later).  MicroPython on the micro:bit writes TXD=0 before it connects
P0.24, and that byte goes nowhere on silicon.

Host probe on the instance, whatever the pins (tests): ``host_output``
collects every byte sent on a pin (listeners via ``on_tx(fn)``);
``host_send(data)`` queues bytes that the receiver takes before those of
the device on its pin.

Legacy UART: TXD starts a byte after STARTTX (TXDRDY when sent); received
bytes go through a 6-byte RX FIFO, RXDRDY when one is placed in RXD; a
byte arriving with the FIFO full is lost and sets ERRORSRC.OVERRUN +
ERROR.  STOPRX gives RXTO.  UARTE: STARTTX sends TXD.MAXCNT bytes from RAM
(TXSTARTED, TXDRDY per byte, ENDTX); STARTRX fills RXD.MAXCNT bytes
(RXSTARTED, RXDRDY per byte, ENDRX; SHORTS ENDRX_STARTRX/ENDRX_STOPRX);
STOPTX gives TXSTOPPED, STOPRX gives ENDRX then RXTO.  The slot is a
shared-ID multiplexer (emu/peripherals/serial.py): the enabled block's
events reach PPI and PPI tasks reach the enabled block (Zephyr's UARTE
driver stops TX from ENDTX through PPI and waits for TXSTOPPED).

Pins (emu/peripherals/serial.py, PinSignals): while enabled the UART
selects its TXD and RTS pins in GPIO (GPIO OUT no longer drives them): TXD
idles high (the bytes' waveforms are not modelled), RTS is held low (ready
to receive).  RXD and CTS are inputs.

Not modelled: hardware flow control (CTS/NCTS events never fire, RTS stays
low), parity and framing/break errors, the TXD/RXD pin levels (a frame
is handed over whole), UARTE
FLUSHRX.  Logged once where a firmware uses them.
"""
from __future__ import annotations

from typing import Callable

from emu.clock import TICKS_PER_SECOND
from emu.peripherals.base import NrfPeripheral, Peripheral, Reg, RO, W1C
from emu.peripherals.serial import PinSignals, ticks_per_bit
from emu.peripherals.spim import in_ram

T_STARTRX, T_STOPRX, T_STARTTX, T_STOPTX, T_SUSPEND, T_FLUSHRX = (
    0x000, 0x004, 0x008, 0x00C, 0x01C, 0x02C)
E_CTS, E_NCTS, E_RXDRDY, E_ENDRX, E_TXDRDY, E_ENDTX, E_ERROR, E_RXTO = (
    0x100, 0x104, 0x108, 0x110, 0x11C, 0x120, 0x124, 0x144)
E_RXSTARTED, E_TXSTARTED, E_TXSTOPPED = 0x14C, 0x150, 0x158
ERRORSRC, PSELTXD, PSELRXD, BAUDRATE = 0x480, 0x50C, 0x514, 0x524
DISCONNECTED = 0x80000000          # PSEL.CONNECT (the nRF51's 0xFFFFFFFF has it too)

# nRF52832 PS v1.4 BAUDRATE tables: nominal -> (UART value, its actual rate,
# UARTE value, its actual rate); the PS gives no "actual rate" for 31250,
# 250000 and 1M, which are exact.
BAUD_TABLE = {
    1200: (0x0004F000, 1205, 0x0004F000, 1205),
    2400: (0x0009D000, 2396, 0x0009D000, 2396),
    4800: (0x0013B000, 4808, 0x0013B000, 4808),
    9600: (0x00275000, 9598, 0x00275000, 9598),
    14400: (0x003B0000, 14414, 0x003AF000, 14401),
    19200: (0x004EA000, 19208, 0x004EA000, 19208),
    28800: (0x0075F000, 28829, 0x0075C000, 28777),
    31250: (0x00800000, 31250, 0x00800000, 31250),
    38400: (0x009D5000, 38462, 0x009D0000, 38369),
    56000: (0x00E50000, 55944, 0x00E50000, 55944),
    57600: (0x00EBF000, 57762, 0x00EB0000, 57554),
    76800: (0x013A9000, 76923, 0x013A9000, 76923),
    115200: (0x01D7E000, 115942, 0x01D60000, 115108),
    230400: (0x03AFB000, 231884, 0x03B00000, 231884),
    250000: (0x04000000, 250000, 0x04000000, 250000),
    460800: (0x075F7000, 470588, 0x07400000, 457143),
    921600: (0x0EBED000, 941176, 0x0F000000, 941176),
    1000000: (0x10000000, 1000000, 0x10000000, 1000000),
}
UART_RATES = {row[0]: row[1] for row in BAUD_TABLE.values()}     # BAUDRATE -> actual baud
UARTE_RATES = {row[2]: row[3] for row in BAUD_TABLE.values()}


def bit_ticks(rates: dict, value: int) -> int:
    """512 MHz ticks per bit for BAUDRATE ``value`` from a table of actual rates
    (None when the value is not in it)."""
    baud = rates.get(value)
    return None if baud is None else (TICKS_PER_SECOND + baud // 2) // baud


class HostLink:
    """The host end of the wire, shared by both variants."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("output", "rx_queue")
    STRUCTURE = ("listeners",)

    def __init__(self):
        self.output = bytearray()
        self.listeners: list = []
        self.rx_queue = bytearray()


class _UartBase(PinSignals, NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_rx_ev", "_tx_ev", "rx_on", "tx_on")
    STRUCTURE = ("link",)
    RATES: dict = UART_RATES          # BAUDRATE -> actual baud (the PS's table)
    SIGNALS = (("RTS", 0x508, "out"), ("TXD", 0x50C, "out"), ("CTS", 0x510, "in"),
               ("RXD", 0x514, "in"))

    def idle_level(self, signal: str):
        return signal == "TXD"          # TXD idles high (mark); RTS low: ready

    def __init__(self, soc, base, name, irq, link):
        self.link = link
        self._tx_ev = soc.clock.event(f"{name}.tx", self._tx_done)
        self._rx_ev = soc.clock.event(f"{name}.rx", self._rx_arrive)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._tx_ev.cancel()
        self._rx_ev.cancel()
        self.rx_on = False
        self.tx_on = False

    def disable(self) -> None:
        self._tx_ev.cancel()
        self._rx_ev.cancel()
        self.rx_on = self.tx_on = False

    def byte_ticks(self) -> int:
        """Ticks of one 10-bit frame at BAUDRATE."""
        v = self.values[BAUDRATE]
        t = bit_ticks(self.RATES, v)
        if t is None:
            self.log_once(("baud", v), "BAUDRATE %#010x is not in the PS's table: "
                          "value x 16 MHz / 2^32", v)
            t = ticks_per_bit(v)
        return 10 * t

    def txd_pin(self):
        """The pin PSELTXD (PSEL.TXD) selects, or None (CONNECT, bit 31, set)."""
        v = self.values[PSELTXD]
        return None if v & DISCONNECTED else v & 0x1F

    def txd_connected(self) -> bool:
        return self.txd_pin() is not None

    def _emit(self, b: int, pin) -> None:
        """A frame left on ``pin`` (None: on no pin, nobody sees it)."""
        if pin is None:
            return
        self.link.output.append(b)
        for fn in self.link.listeners:
            fn(b)
        dev = self.soc.pins[pin].serial
        if dev is not None:
            dev.frame(pin, b)

    # -- what the receiver takes: the host probe's bytes, then the pin's device
    def _rx_device(self):
        v = self.values[PSELRXD]
        if v & DISCONNECTED:
            return None, None
        pin = v & 0x1F
        return self.soc.pins[pin].serial, pin

    def _rx_waiting(self) -> bool:
        if self.link.rx_queue:
            return True
        dev, pin = self._rx_device()
        return dev is not None and dev.has_data(pin)

    def _rx_take(self):
        """The next byte on the RXD line, or None."""
        q = self.link.rx_queue
        if q:
            return q.pop(0)
        dev, pin = self._rx_device()
        return dev.take(pin) if dev is not None else None

    def host_data_arrived(self) -> None:
        if self.rx_on and not self._rx_ev.pending and self._rx_waiting():
            self._rx_ev.schedule_in(self.byte_ticks())

    def _rx_next(self) -> None:
        if self.rx_on and self._rx_waiting():
            self._rx_ev.schedule_in(self.byte_ticks())


class Uart(_UartBase):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_tx_busy", "_tx_byte", "_tx_pending", "_tx_pending_pin", "_tx_pin", "fifo")
    STRUCTURE = ("mux",)
    _tx_byte = 0          # the byte on its way out (set by the first TXD)
    NAME = "UART"
    HAS_INTEN = False
    TASKS = {T_STARTRX: "STARTRX", T_STOPRX: "STOPRX", T_STARTTX: "STARTTX",
             T_STOPTX: "STOPTX", T_SUSPEND: "SUSPEND"}
    EVENTS = {E_CTS: "CTS", E_NCTS: "NCTS", E_RXDRDY: "RXDRDY", E_TXDRDY: "TXDRDY",
              E_ERROR: "ERROR", E_RXTO: "RXTO"}
    SHORTS = {3: (E_CTS, T_STARTRX), 4: (E_NCTS, T_STOPRX)}
    REGISTERS = [
        Reg(ERRORSRC, "ERRORSRC", access=W1C, mask=0xF),
        Reg(0x500, "ENABLE", mask=0xF),
        Reg(0x508, "PSELRTS", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSELTXD", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x510, "PSELCTS", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x514, "PSELRXD", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x518, "RXD", access=RO, read="_read_rxd"),
        Reg(0x51C, "TXD", mask=0xFF, write="_write_txd"),
        Reg(BAUDRATE, "BAUDRATE", 0x04000000),
        Reg(0x56C, "CONFIG", mask=0xF, write="_write_config"),
    ]

    def reset(self) -> None:
        super().reset()
        self.fifo: list = []
        self._tx_busy = False
        self._tx_pending = None
        self._tx_pending_pin = None
        self._tx_pin = None              # PSELTXD's pin when the byte in flight was written

    def _write_config(self, v, old):
        if v:
            self.log_once("cfg", "CONFIG HWFC/PARITY stored, not modelled")

    def task_STARTTX(self) -> None:
        self.tx_on = True
        if self._tx_pending is not None and not self._tx_busy:
            b, self._tx_pending = self._tx_pending, None
            self._send(b, self._tx_pending_pin)

    def task_STOPTX(self) -> None:
        self.tx_on = False

    def task_STARTRX(self) -> None:
        self.rx_on = True
        self.host_data_arrived()

    def task_STOPRX(self) -> None:
        self.rx_on = False
        self._rx_ev.cancel()
        self.fire(E_RXTO)

    def task_SUSPEND(self) -> None:
        self.task_STOPTX()
        self.rx_on = False
        self._rx_ev.cancel()

    def _write_txd(self, v, old) -> None:
        pin = self.txd_pin()
        if self.tx_on and not self._tx_busy:
            self._send(v & 0xFF, pin)
        else:
            self._tx_pending = v & 0xFF
            self._tx_pending_pin = pin

    def _send(self, b: int, pin) -> None:
        self._tx_busy = True
        self._tx_byte = b
        self._tx_pin = pin
        self._tx_ev.schedule_in(self.byte_ticks())

    def _tx_done(self) -> None:
        self._tx_busy = False
        self._emit(self._tx_byte, self._tx_pin)
        self.fire(E_TXDRDY)
        if self._tx_pending is not None and self.tx_on:
            b, self._tx_pending = self._tx_pending, None
            self._send(b, self._tx_pending_pin)

    def _rx_arrive(self) -> None:
        b = self._rx_take()
        if b is None:
            return
        if len(self.fifo) >= 6:
            self.values[ERRORSRC] |= 1      # OVERRUN
            self.fire(E_ERROR)
        else:
            self.fifo.append(b)
            if len(self.fifo) == 1:
                self.fire(E_RXDRDY)
        self._rx_next()

    def _read_rxd(self, offset) -> int:
        if not self.fifo:
            return 0
        b = self.fifo.pop(0)
        if self.fifo:
            self.fire(E_RXDRDY)
        return b


class Uarte(_UartBase):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_rx_max", "_rx_n", "_rx_ptr", "_tx", "_tx_i", "_tx_pin")
    STRUCTURE = ("mux",)
    NAME = "UARTE"
    RATES = UARTE_RATES
    TASKS = {T_STARTRX: "STARTRX", T_STOPRX: "STOPRX", T_STARTTX: "STARTTX",
             T_STOPTX: "STOPTX", T_FLUSHRX: "FLUSHRX"}
    EVENTS = {E_CTS: "CTS", E_NCTS: "NCTS", E_RXDRDY: "RXDRDY", E_ENDRX: "ENDRX",
              E_TXDRDY: "TXDRDY", E_ENDTX: "ENDTX", E_ERROR: "ERROR", E_RXTO: "RXTO",
              E_RXSTARTED: "RXSTARTED", E_TXSTARTED: "TXSTARTED", E_TXSTOPPED: "TXSTOPPED"}
    SHORTS = {5: (E_ENDRX, T_STARTRX), 6: (E_ENDRX, T_STOPRX)}
    REGISTERS = [
        Reg(ERRORSRC, "ERRORSRC", access=W1C, mask=0xF),
        Reg(0x500, "ENABLE", mask=0xF),
        Reg(0x508, "PSEL_RTS", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSEL_TXD", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x510, "PSEL_CTS", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x514, "PSEL_RXD", 0xFFFFFFFF, write="_pins_changed"),
        Reg(BAUDRATE, "BAUDRATE", 0x04000000),
        Reg(0x534, "RXD_PTR"), Reg(0x538, "RXD_MAXCNT", mask=0xFF),
        Reg(0x53C, "RXD_AMOUNT", access=RO),
        Reg(0x544, "TXD_PTR"), Reg(0x548, "TXD_MAXCNT", mask=0xFF),
        Reg(0x54C, "TXD_AMOUNT", access=RO),
        Reg(0x56C, "CONFIG", mask=0xF),
    ]

    def reset(self) -> None:
        super().reset()
        self._tx = b""
        self._tx_i = 0
        self._tx_pin = None              # PSEL.TXD's pin at STARTTX
        self._rx_ptr = 0
        self._rx_max = 0
        self._rx_n = 0

    # -- TX ----------------------------------------------------------------
    def task_STARTTX(self) -> None:
        v = self.values
        ptr, n = v[0x544], v[0x548]
        if n and not in_ram(ptr, n):
            self.log_once("txflash", "TXD.PTR %#x not in Data RAM: nothing sent", ptr)
            n = 0
        self._tx = self.soc.cpu.read_mem(ptr, n) if n else b""
        self._tx_i = 0
        self._tx_pin = self.txd_pin()
        self.tx_on = True
        v[0x54C] = 0
        self.fire(E_TXSTARTED)
        if self._tx:
            self._tx_ev.schedule_in(self.byte_ticks())
        else:
            self.fire(E_ENDTX)

    def _tx_done(self) -> None:
        self._emit(self._tx[self._tx_i], self._tx_pin)
        self._tx_i += 1
        self.values[0x54C] = self._tx_i
        self.fire(E_TXDRDY)
        if self._tx_i < len(self._tx):
            self._tx_ev.schedule_in(self.byte_ticks())
        else:
            self.tx_on = False
            self.fire(E_ENDTX)

    def task_STOPTX(self) -> None:
        if self._tx_ev.pending:
            self._tx_ev.cancel()
            self.fire(E_ENDTX)
        self.tx_on = False
        self.fire(E_TXSTOPPED)

    # -- RX ----------------------------------------------------------------
    def task_STARTRX(self) -> None:
        v = self.values
        self._rx_ptr, self._rx_max, self._rx_n = v[0x534], v[0x538], 0
        self.rx_on = True
        self.fire(E_RXSTARTED)
        self.host_data_arrived()

    def _rx_arrive(self) -> None:
        if not self.rx_on:
            return
        b = self._rx_take()
        if b is None:
            return
        if self._rx_n < self._rx_max and in_ram(self._rx_ptr + self._rx_n, 1):
            self.soc.cpu.write_mem(self._rx_ptr + self._rx_n, bytes([b]))
            self._rx_n += 1
            self.values[0x53C] = self._rx_n
            self.fire(E_RXDRDY)
            if self._rx_n == self._rx_max:
                self.rx_on = False
                self.fire(E_ENDRX)         # SHORTS may restart RX here
        else:
            self.values[ERRORSRC] |= 1
            self.fire(E_ERROR)
        self._rx_next()

    def task_STOPRX(self) -> None:
        was = self.rx_on
        self.rx_on = False
        self._rx_ev.cancel()
        if was:
            self.values[0x53C] = self._rx_n
            self.fire(E_ENDRX)
        self.fire(E_RXTO)

    def task_FLUSHRX(self) -> None:
        self.log_once("flush", "FLUSHRX not modelled (no RX FIFO kept after STOPRX)")
        self.values[0x53C] = 0
        self.fire(E_ENDRX)


class Uart0(Peripheral):
    """Slot 0x40002000: UART (ENABLE=4) or UARTE (ENABLE=8) over one host link."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("irq", "link")
    STRUCTURE = ("_mux", "event_listeners", "variants")

    NAME = "UART0"

    def __init__(self, soc, base, name=None):
        super().__init__(soc, base, name)
        self.irq = (base >> 12) & 0xFF
        self.link = HostLink()
        self.variants = {4: Uart(soc, base, f"{self.name}.uart", self.irq, self.link),
                         8: Uarte(soc, base, f"{self.name}.uarte", self.irq, self.link)}
        from emu.peripherals.serial import SerialMux
        self._mux = SerialMux.__new__(SerialMux)   # reuse the ENABLE/shared-storage logic
        Peripheral.__init__(self._mux, soc, base, self.name)
        self._mux.adopt(self.variants)
        self.event_listeners = self._mux.event_listeners   # PPI: the enabled block's events
        # the enabled variant's bus ops are this slot's: the bus that maps the
        # slot hears the multiplexer's changes (ENABLE) through the slot's hooks
        self._mux.ops_changed = self.ops_changed
        self._mux.ops_select = self.ops_select
        self._mux.reset()
        # a device on a pin has bytes for the chip: the receiver looks if it listens there
        for pin in getattr(soc, "pins", ()):
            pin.serial_listeners.append(self._pin_has_data)

    # -- host API ------------------------------------------------------------
    @property
    def host_output(self) -> bytearray:
        return self.link.output

    def on_tx(self, fn: Callable[[int], None]) -> None:
        self.link.listeners.append(fn)

    def host_send(self, data: bytes) -> None:
        self.link.rx_queue.extend(data)
        a = self._mux.active
        if a is not None:
            a.host_data_arrived()

    def _pin_has_data(self, pin: int) -> None:
        a = self._mux.active
        if a is not None:
            a.host_data_arrived()

    def trigger(self, offset: int) -> None:
        """A task through PPI: the enabled block's."""
        self._mux.trigger(offset)

    # -- bus -----------------------------------------------------------------
    def read(self, offset: int, size: int = 4) -> int:
        return self._mux.read(offset, size)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        self._mux.write(offset, value, size)

    # bus ops: the enabled variant's, as read()/write() above forward to it
    # (micro:bit MicroPython polls TXDRDY ~28 000 times to print one answer)
    def read_op(self, offset: int):
        if not self._own("read", Uart0):
            return None
        return self._mux.read_op(offset)

    def write_op(self, offset: int):
        if not self._own("write", Uart0):
            return None
        return self._mux.write_op(offset)

    def reset(self) -> None:
        if hasattr(self, "_mux"):
            self._mux.reset()
            self.link.rx_queue.clear()

    @property
    def active(self):
        return self._mux.active

    def save_state(self) -> dict:
        return {"mux": self._mux.save_state(), "rxq": bytes(self.link.rx_queue)}

    def load_state(self, state: dict) -> None:
        self._mux.load_state(state["mux"])
        self.link.rx_queue[:] = state["rxq"]
