"""Legacy SPI master (ENABLE=1), nRF52832 PS v1.4 section 31 "SPI".

Polled drivers write TXD, wait for EVENTS_READY, read RXD.  TXD and RXD are
double-buffered: a byte written to TXD while one is shifting starts as soon
as the first completes; received bytes queue in a two-entry RXD FIFO and
READY is generated each time a byte becomes visible in RXD (on completion if
RXD was empty, otherwise when the CPU reads RXD and the next one moves up).
One clock event per byte, at 8 bit times of FREQUENCY (8 MHz: 1 us).

Not modelled: the SCK/MOSI/MISO pin waveforms and CONFIG (ORDER/CPHA/CPOL
are stored; the byte is handed to the device as written); the stall when
the RXD FIFO is full (the oldest byte is overwritten instead, logged once).
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral, Reg, RO
from emu.peripherals.serial import ticks_per_bit

EVENTS_READY = 0x108
RXD, TXD = 0x518, 0x51C


class Spi(NrfPeripheral):
    NAME = "SPI"
    HAS_INTEN = False
    EVENTS = {EVENTS_READY: "READY"}
    REGISTERS = [
        Reg(0x500, "ENABLE", mask=0xF),
        Reg(0x508, "PSEL_SCK", 0xFFFFFFFF),
        Reg(0x50C, "PSEL_MOSI", 0xFFFFFFFF),
        Reg(0x510, "PSEL_MISO", 0xFFFFFFFF),
        Reg(RXD, "RXD", access=RO, read="_read_rxd"),
        Reg(TXD, "TXD", mask=0xFF, write="_write_txd"),
        Reg(0x524, "FREQUENCY", 0x04000000),
        Reg(0x554, "CONFIG", mask=0x7),
    ]

    def __init__(self, soc, base, name=None, irq=None):
        self._done = soc.clock.event(f"{name or 'spi'}.byte", self._byte_done)
        self.spi_bus = None
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._done.cancel()
        self._shifting = None     # byte in the shift register
        self._tx_buf = None       # byte waiting in TXD
        self._rx = []             # RXD FIFO, [0] is what RXD reads

    def disable(self) -> None:
        self._done.cancel()
        self._shifting = None
        self._tx_buf = None

    # -- registers -------------------------------------------------------
    def _write_txd(self, value: int, old: int) -> None:
        if self._shifting is None:
            self._start(value & 0xFF)
        else:
            if self._tx_buf is not None:
                self.log_once("txov", "TXD written while both TX buffers full (byte lost)")
            self._tx_buf = value & 0xFF

    def _read_rxd(self, offset: int) -> int:
        rx = self._rx
        if not rx:
            return 0
        v = rx.pop(0)
        if rx:
            self.fire(EVENTS_READY)
        return v

    # -- shifting ----------------------------------------------------------
    def _start(self, byte: int) -> None:
        self._shifting = byte
        self._done.schedule_in(8 * ticks_per_bit(self.values[0x524]))

    def _byte_done(self) -> None:
        byte = self._shifting
        self._shifting = None
        bus = self.spi_bus
        rx = bus.transfer(byte) if bus is not None else 0xFF
        if len(self._rx) >= 2:
            self.log_once("rxov", "RXD FIFO overflow: oldest byte dropped")
            self._rx.pop(0)
        self._rx.append(rx)
        if self._tx_buf is not None:
            b, self._tx_buf = self._tx_buf, None
            self._start(b)
        if len(self._rx) == 1:
            self.fire(EVENTS_READY)

    def save_model_state(self) -> dict:
        return {"shifting": self._shifting, "tx_buf": self._tx_buf, "rx": list(self._rx),
                "done_at": self._done.when if self._done.pending else None}

    def load_model_state(self, st: dict) -> None:
        self._shifting, self._tx_buf, self._rx = st["shifting"], st["tx_buf"], list(st["rx"])
        self._done.cancel()
        if st.get("done_at") is not None:
            self._done.schedule_at(st["done_at"])
