"""UART0 / UARTE0 at 0x40002000 (IRQ 2), nRF52832 PS v1.4 sections 35 "UARTE"
and 36 "UART"; ENABLE (+0x500) selects the legacy UART (4) or UARTE (8).

Bytes take 10 bit times (start + 8 data + stop) of BAUDRATE (f = value *
16 MHz / 2^32, so Baud115200 = 0x01D7E000 is 115 108 baud as on silicon).

Host side, deterministic: ``host_output`` collects every byte the firmware
sent (listeners via ``on_tx(fn)``); ``host_send(data)`` queues bytes that
arrive one per byte time while the receiver is started (the first one a
byte time after STARTRX or after the call, whichever is later).

A byte reaches the host only if PSELTXD (PSEL.TXD) selected a pin when it
was written to TXD (UARTE: at STARTTX): MicroPython on the micro:bit writes
TXD=0 before it connects P0.24, and that byte goes nowhere on silicon.

Legacy UART: TXD starts a byte after STARTTX (TXDRDY when sent); received
bytes go through a 6-byte RX FIFO, RXDRDY when one is placed in RXD; a
byte arriving with the FIFO full is lost and sets ERRORSRC.OVERRUN +
ERROR.  STOPRX gives RXTO.  UARTE: STARTTX sends TXD.MAXCNT bytes from RAM
(TXSTARTED, TXDRDY per byte, ENDTX); STARTRX fills RXD.MAXCNT bytes
(RXSTARTED, RXDRDY per byte, ENDRX; SHORTS ENDRX_STARTRX/ENDRX_STOPRX);
STOPTX gives TXSTOPPED, STOPRX gives ENDRX then RXTO.

Pins (emu/peripherals/serial.py, PinSignals): while enabled the UART
selects its TXD and RTS pins in GPIO (GPIO OUT no longer drives them): TXD
idles high (the bytes' waveforms are not modelled), RTS is held low (ready
to receive).  RXD and CTS are inputs.

Not modelled: hardware flow control (CTS/NCTS events never fire, RTS stays
low), parity and framing/break errors, the TXD/RXD pin levels, UARTE
FLUSHRX.  Logged once where a firmware uses them.
"""
from __future__ import annotations

from typing import Callable

from emu.peripherals.base import NrfPeripheral, Peripheral, Reg, RO, W1C
from emu.peripherals.serial import PinSignals, ticks_per_bit
from emu.peripherals.spim import in_ram

T_STARTRX, T_STOPRX, T_STARTTX, T_STOPTX, T_SUSPEND, T_FLUSHRX = (
    0x000, 0x004, 0x008, 0x00C, 0x01C, 0x02C)
E_CTS, E_NCTS, E_RXDRDY, E_ENDRX, E_TXDRDY, E_ENDTX, E_ERROR, E_RXTO = (
    0x100, 0x104, 0x108, 0x110, 0x11C, 0x120, 0x124, 0x144)
E_RXSTARTED, E_TXSTARTED, E_TXSTOPPED = 0x14C, 0x150, 0x158
ERRORSRC, PSELTXD, BAUDRATE = 0x480, 0x50C, 0x524


class HostLink:
    """The host end of the wire, shared by both variants."""

    def __init__(self):
        self.output = bytearray()
        self.listeners: list = []
        self.rx_queue = bytearray()


class _UartBase(PinSignals, NrfPeripheral):
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
        return 10 * ticks_per_bit(self.values[BAUDRATE])

    def txd_connected(self) -> bool:
        """PSELTXD selects a pin: CONNECT (bit 31) clear; the nRF51's
        disconnected value 0xFFFFFFFF has it set too."""
        return not self.values[PSELTXD] & 0x80000000

    def _emit(self, b: int) -> None:
        self.link.output.append(b)
        for fn in self.link.listeners:
            fn(b)

    def host_data_arrived(self) -> None:
        if self.rx_on and not self._rx_ev.pending and self.link.rx_queue:
            self._rx_ev.schedule_in(self.byte_ticks())

    def _rx_next(self) -> None:
        if self.rx_on and self.link.rx_queue:
            self._rx_ev.schedule_in(self.byte_ticks())


class Uart(_UartBase):
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
        self._tx_pending_connected = False
        self._tx_connected = False       # PSELTXD when the byte in flight was written

    def _write_config(self, v, old):
        if v:
            self.log_once("cfg", "CONFIG HWFC/PARITY stored, not modelled")

    def task_STARTTX(self) -> None:
        self.tx_on = True
        if self._tx_pending is not None and not self._tx_busy:
            b, self._tx_pending = self._tx_pending, None
            self._send(b, self._tx_pending_connected)

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
        connected = self.txd_connected()
        if self.tx_on and not self._tx_busy:
            self._send(v & 0xFF, connected)
        else:
            self._tx_pending = v & 0xFF
            self._tx_pending_connected = connected

    def _send(self, b: int, connected: bool) -> None:
        self._tx_busy = True
        self._tx_byte = b
        self._tx_connected = connected
        self._tx_ev.schedule_in(self.byte_ticks())

    def _tx_done(self) -> None:
        self._tx_busy = False
        if self._tx_connected:
            self._emit(self._tx_byte)
        self.fire(E_TXDRDY)
        if self._tx_pending is not None and self.tx_on:
            b, self._tx_pending = self._tx_pending, None
            self._send(b, self._tx_pending_connected)

    def _rx_arrive(self) -> None:
        q = self.link.rx_queue
        if not q:
            return
        b = q.pop(0)
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
    NAME = "UARTE"
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
        self._tx_connected = False       # PSEL.TXD at STARTTX
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
        self._tx_connected = self.txd_connected()
        self.tx_on = True
        v[0x54C] = 0
        self.fire(E_TXSTARTED)
        if self._tx:
            self._tx_ev.schedule_in(self.byte_ticks())
        else:
            self.fire(E_ENDTX)

    def _tx_done(self) -> None:
        if self._tx_connected:
            self._emit(self._tx[self._tx_i])
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
        q = self.link.rx_queue
        if not q or not self.rx_on:
            return
        b = q.pop(0)
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
        self._mux.variants = self.variants
        self._mux.reset()

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

    # -- bus -----------------------------------------------------------------
    def read(self, offset: int, size: int = 4) -> int:
        return self._mux.read(offset, size)

    def write(self, offset: int, value: int, size: int = 4) -> None:
        self._mux.write(offset, value, size)

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
