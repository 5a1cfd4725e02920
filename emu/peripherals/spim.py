"""SPI master with EasyDMA (ENABLE=7), nRF52832 PS v1.4 section 32 "SPIM".

START: STARTED, then max(TXD.MAXCNT, RXD.MAXCNT) bytes shift at 8 bit times
each; bytes past TXD.MAXCNT are the ORC character, bytes past RXD.MAXCNT are
discarded.  The bus exchange happens when the transaction is started (the
firmware holds chip select and D/C steady until END); RX data lands in RAM
and ENDTX/ENDRX/END fire at the completion time.  TXD.LIST/RXD.LIST=1
(ArrayList) advance PTR by MAXCNT after each transaction.  STOP during a
transfer ends it at the current byte boundary (AMOUNT = bytes done) and
fires STOPPED.  SHORTS END_START restarts (for list transfers).

Pins as the legacy SPI's (emu/peripherals/spi.py, serial.py PinSignals):
the bytes reach the board's SPI bus on PSEL.SCK/PSEL.MOSI while enabled.

EasyDMA reaches Data RAM only (PS 15.3): a TXD.PTR outside RAM sends ORC and
TXD.AMOUNT stays 0; RXD.PTR outside RAM stores nothing.  Logged once.

Not modelled: SUSPEND/RESUME (logged), pin waveforms, CONFIG bits (stored),
the nRF52832 anomaly 58 (1-byte transfer glitch).
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral, Reg, RO
from emu.peripherals.serial import ticks_per_bit
from emu.peripherals.spi import SpiPins

RAM_LO, RAM_HI = 0x20000000, 0x20010000
T_START, T_STOP, T_SUSPEND, T_RESUME = 0x010, 0x014, 0x01C, 0x020
E_STOPPED, E_ENDRX, E_END, E_ENDTX, E_STARTED = 0x104, 0x110, 0x118, 0x120, 0x14C


def in_ram(ptr: int, n: int) -> bool:
    return RAM_LO <= ptr and ptr + n <= RAM_HI


class Spim(SpiPins, NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_end", "_xfer")
    STRUCTURE = ("mux",)
    NAME = "SPIM"
    HAS_INTEN = False   # only INTENSET/INTENCLR (nRF52832 PS v1.4, SPIM registers)
    TASKS = {T_START: "START", T_STOP: "STOP", T_SUSPEND: "SUSPEND", T_RESUME: "RESUME"}
    EVENTS = {E_STOPPED: "STOPPED", E_ENDRX: "ENDRX", E_END: "END", E_ENDTX: "ENDTX",
              E_STARTED: "STARTED"}
    SHORTS = {17: (E_END, T_START)}
    REGISTERS = [
        Reg(0x500, "ENABLE", mask=0xF),
        Reg(0x508, "PSEL_SCK", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSEL_MOSI", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x510, "PSEL_MISO", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x524, "FREQUENCY", 0x04000000),
        Reg(0x534, "RXD_PTR"), Reg(0x538, "RXD_MAXCNT", mask=0xFF),
        Reg(0x53C, "RXD_AMOUNT", access=RO), Reg(0x540, "RXD_LIST", mask=0x3),
        Reg(0x544, "TXD_PTR"), Reg(0x548, "TXD_MAXCNT", mask=0xFF),
        Reg(0x54C, "TXD_AMOUNT", access=RO), Reg(0x550, "TXD_LIST", mask=0x3),
        Reg(0x554, "CONFIG", mask=0x7, write="_pins_changed"),
        Reg(0x5C0, "ORC", mask=0xFF),
    ]

    def __init__(self, soc, base, name=None, irq=None):
        self._end = soc.clock.event(f"{name or 'spim'}.end", self._complete)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._end.cancel()
        self._xfer = None     # (start tick, byte ticks, tx_n, rx bytes, rx_n, rx_ptr)

    def disable(self) -> None:
        self._end.cancel()
        self._xfer = None

    @property
    def busy(self) -> bool:
        return self._xfer is not None

    # -- tasks -------------------------------------------------------------
    def task_START(self) -> None:
        if self._xfer is not None:
            self.log_once("restart", "START while a transfer is running ignored")
            return
        v = self.values
        tx_ptr, tx_n = v[0x544], v[0x548]
        rx_ptr, rx_n = v[0x534], v[0x538]
        n = max(tx_n, rx_n)
        cpu = self.soc.cpu
        if tx_n and not in_ram(tx_ptr, tx_n):
            self.log_once("txflash", "TXD.PTR %#x is not in Data RAM: EasyDMA sends ORC", tx_ptr)
            tx = b""
            tx_amount = 0
        else:
            tx = cpu.read_mem(tx_ptr, tx_n) if tx_n else b""
            tx_amount = tx_n
        orc = v[0x5C0]
        bus = self.spi_bus
        rx = bytearray(n)
        for i in range(n):
            b = tx[i] if i < len(tx) else orc
            if bus is not None and self.miso_on_bus:
                rx[i] = bus.transfer(b)
            else:                   # the devices get it (if reached), RXD the MISO pin
                if bus is not None:
                    bus.transfer(b)
                rx[i] = self.miso_byte()
        bt = 8 * ticks_per_bit(v[0x524])
        self._xfer = (self.clock.now, bt, tx_amount, bytes(rx[:rx_n]), rx_n, rx_ptr, n)
        self.fire(E_STARTED)
        self._end.schedule_in(max(1, n * bt))

    def task_STOP(self) -> None:
        x = self._xfer
        if x is None:
            self.fire(E_STOPPED)
            return
        start, bt, tx_amount, rx, rx_n, rx_ptr, n = x
        done = min(n, (self.clock.now - start) // bt)
        self._end.cancel()
        self._finish(min(tx_amount, done), rx[:min(rx_n, done)], rx_ptr, end_events=False)
        self.fire(E_STOPPED)

    def task_SUSPEND(self) -> None:
        self.log_once("susp", "SUSPEND/RESUME not modelled")

    def task_RESUME(self) -> None:
        self.log_once("susp", "SUSPEND/RESUME not modelled")

    # ------------------------------------------------------------------
    def _complete(self) -> None:
        start, bt, tx_amount, rx, rx_n, rx_ptr, n = self._xfer
        self._finish(tx_amount, rx, rx_ptr, end_events=True)

    def _finish(self, tx_amount: int, rx: bytes, rx_ptr: int, end_events: bool) -> None:
        self._xfer = None
        v = self.values
        if rx:
            if in_ram(rx_ptr, len(rx)):
                self.soc.cpu.write_mem(rx_ptr, rx)
                v[0x53C] = len(rx)
            else:
                self.log_once("rxflash", "RXD.PTR %#x is not in Data RAM: nothing stored", rx_ptr)
                v[0x53C] = 0
        else:
            v[0x53C] = 0
        v[0x54C] = tx_amount
        if v[0x550] == 1:
            v[0x544] = (v[0x544] + v[0x548]) & 0xFFFFFFFF
        if v[0x540] == 1:
            v[0x534] = (v[0x534] + v[0x538]) & 0xFFFFFFFF
        if end_events:
            self.fire(E_ENDTX)
            self.fire(E_ENDRX)
            self.fire(E_END)

    def save_model_state(self) -> dict:
        return {"xfer": self._xfer, "end_at": self._end.when}

    def load_model_state(self, st: dict) -> None:
        self._xfer = tuple(st["xfer"]) if st.get("xfer") else None
        self._end.cancel()
        if st.get("end_at") is not None:
            self._end.schedule_at(st["end_at"])
