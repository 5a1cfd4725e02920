"""Legacy SPI master (ENABLE=1), nRF52832 PS v1.4 section 31 "SPI".

Polled drivers write TXD, wait for EVENTS_READY, read RXD.  TXD and RXD are
double-buffered: a byte written to TXD while one is shifting starts as soon
as the first completes; received bytes queue in a two-entry RXD FIFO and
READY is generated each time a byte becomes visible in RXD (on completion if
RXD was empty, otherwise when the CPU reads RXD and the next one moves up).
A byte completes 8 bit times of FREQUENCY after it starts (8 MHz: 1 us).
Polled transfers (the PineTime display path, ~115 KB per frame) complete
lazily: the byte is finished when the CPU next reads the block at or after
its completion tick (every MMIO access brings the clock up to the CPU), so
no clock event and no Unicorn stop is needed per byte.  A clock event is
armed only when something must see READY asynchronously: INTEN.READY set
or the PPI routing an event of this slot (a PPI in use for other blocks,
NimBLE's radio timing, leaves the SPI lazy: :meth:`Spi._watched`).

Pins (emu/peripherals/serial.py, PinSignals): the bytes go to the board's
SPI bus whose SCK/MOSI are PSEL.SCK/PSEL.MOSI (PSELSCK/PSELMOSI) while the
block is enabled; with PSEL.MISO off that bus's MISO, or no bus reached,
RXD gets the MISO pin's level (0x00 or 0xFF).  SCK idles at CONFIG.CPOL and
MOSI low on their pins (selected in GPIO).

Not modelled: the SCK/MOSI/MISO pin waveforms and CONFIG (ORDER/CPHA/CPOL
are stored; the byte is handed to the device as written); the stall when
the RXD FIFO is full (the oldest byte is overwritten instead, logged once);
with READY polled (no interrupt, no PPI) a completed byte reaches the device
at the next access to this block, so a firmware that releases chip select
without ever reading READY/RXD after the last byte would lose that byte; a
PPI channel from READY enabled through CHENSET while a byte shifts takes
effect from the next access to this block.
Measured: a 115 200-byte polled frame costs ~2.9 s of host CPU (lazy) vs
~4.0 s with one clock event per byte; the CPU's READY polling (~15 MMIO
reads per byte at 8 MHz) is the rest.
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral, Reg, RO
from emu.peripherals.serial import PinSignals, ticks_per_bit
from emu.soc.ops import W_TXD, Op, cell_property, opt_cell_property


_opt_cell = opt_cell_property      # a byte or None

EVENTS_READY = 0x108
RXD, TXD = 0x518, 0x51C


class SpiPins(PinSignals):
    """The SPI masters' pins: SCK and MOSI driven (idle levels), MISO read."""
    SIGNALS = (("SCK", 0x508, "out"), ("MOSI", 0x50C, "out"), ("MISO", 0x510, "in"))
    BUS = "spi"

    def idle_level(self, signal: str):
        return bool(self.values[0x554] & 4) if signal == "SCK" else False   # CPOL


class Spi(SpiPins, NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_done",)
    STRUCTURE = ("_clk", "_streams", "mux")
    NAME = "SPI"
    HAS_INTEN = False
    EVENTS = {EVENTS_READY: "READY"}
    REGISTERS = [
        Reg(0x500, "ENABLE", mask=0xF),
        Reg(0x508, "PSEL_SCK", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSEL_MOSI", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x510, "PSEL_MISO", 0xFFFFFFFF, write="_pins_changed"),
        Reg(RXD, "RXD", access=RO, read="_read_rxd"),
        Reg(TXD, "TXD", mask=0xFF, write="_write_txd"),
        Reg(0x524, "FREQUENCY", 0x04000000),
        Reg(0x554, "CONFIG", mask=0x7, write="_pins_changed"),
    ]

    # The shifting state lives in the Cells, where the native bus can stream
    # (emu/soc/_mmio.c, "Streams": the cell numbers are fixed there).
    NATIVE_CELLS = ("_shifting", "_tx_buf", "_due", "_rx_n", "_rx0", "_rx1", "_streaming",
                    "_byte_ticks")
    _shifting = _opt_cell(0, "byte in the shift register, or None")
    # the ops' guard: a byte shifting and due (its two cells, read in C)
    _GUARD = ("_shifting", "_due", 0, 2)
    _tx_buf = _opt_cell(1, "byte waiting in TXD, or None")
    _due = cell_property(2, "completion tick of the byte shifting")
    _rx_n = cell_property(3, "bytes in the RXD FIFO (0-2)")
    _rx0 = cell_property(4, "RXD FIFO[0]: what RXD reads")
    _rx1 = cell_property(5, "RXD FIFO[1]")
    _streaming = cell_property(6, "1: the native bus does TXD/READY/RXD in C")
    _byte_ticks = cell_property(7, "ticks per byte at FREQUENCY (for the stream)")

    def __init__(self, soc, base, name=None, irq=None):
        self._done = soc.clock.event(f"{name or 'spi'}.byte", self._byte_done)
        self._clk = soc.clock
        self.spi_bus = None
        super().__init__(soc, base, name, irq)
        streams = getattr(getattr(soc, "bus", None), "streams", None)
        if not hasattr(self._cells, "take_pending"):
            streams = None                  # pure-Python cells: no streaming
        self._streams = streams
        if streams is not None:
            streams.register(self._cells, self._stream_flush)

    def reset(self) -> None:
        super().reset()
        self._done.cancel()
        self._due = 0             # completion tick of the byte shifting
        self._shifting = None     # byte in the shift register
        self._tx_buf = None       # byte waiting in TXD
        self._rx_n = 0            # RXD FIFO empty
        self._streaming = 0

    def disable(self) -> None:
        self._stream_off()
        self._done.cancel()
        self._shifting = None
        self._tx_buf = None

    # -- the RXD FIFO (two cells) ------------------------------------------
    @property
    def _rx(self) -> list:
        """The RXD FIFO as a list ([0] is what RXD reads); a copy."""
        return [self._rx0, self._rx1][:self._rx_n]

    def _rx_push(self, v: int) -> None:
        if self._rx_n >= 2:
            self.log_once("rxov", "RXD FIFO overflow: oldest byte dropped")
            self._rx0, self._rx_n = self._rx1, 1
        if self._rx_n == 0:
            self._rx0 = v
        else:
            self._rx1 = v
        self._rx_n += 1

    def _rx_pop(self) -> int:
        v = self._rx0
        self._rx0 = self._rx1
        self._rx_n -= 1
        return v

    # -- streaming: the native bus completes bytes in C (emu/soc/_mmio.c) ----
    def _stream_flush(self) -> None:
        """Hand the bytes C completed to the device (before any Python runs)."""
        data, last = self._cells.take_pending()
        if last >= 0:
            self.values[TXD] = last
        if data:
            self.spi_bus.stream(data)

    def _stream_off(self) -> None:
        if self._streaming:
            self._streaming = 0
            self._stream_flush()

    def _stream_update(self) -> None:
        """Stream while nothing but the CPU's polling can see a byte complete:
        no READY interrupt, no PPI, and a device that takes a byte stream with
        answers known in advance (checked again at every Python access)."""
        bus = self.spi_bus
        if self._streams is None or self.inten or self._watched() or bus is None \
                or not self.miso_on_bus:
            self._streaming = 0
            return
        mode = bus.streamable()
        if mode is False:
            self._streaming = 0
            return
        self._cells.set_answers(None if mode is True else mode)
        self._byte_ticks = self._byte_time()
        self._streaming = 1

    # -- bus: complete a due byte before any access ----------------------
    # (the hot paths read the cells directly: _shifting is cell0 >= 0, _due cell2)
    def read(self, offset: int, size: int = 4) -> int:
        c = self._cells
        while c.cell0 >= 0 and self._clk.now >= c.cell2:
            self._byte_done()
        if offset == EVENTS_READY:          # the polling hot path
            v = self.events[EVENTS_READY]
        else:
            v = NrfPeripheral.read(self, offset, size)
        self._stream_update()
        return v

    def write(self, offset: int, value: int, size: int = 4) -> None:
        c = self._cells
        while c.cell0 >= 0 and self._clk.now >= c.cell2:
            self._byte_done()
        NrfPeripheral.write(self, offset, value, size)
        if offset == 0x304 and self._shifting is not None and not self._done.pending:
            self._done.schedule_at(self._due)
        self._stream_update()

    # -- bus ops: the base's, bailing to read()/write() while a byte is due
    # EVENTS_READY, RXD and TXD also stream (carried out in C while streaming).
    def read_op(self, offset: int):
        if not self._own("read", Spi):
            return None
        op = self._base_read_op(offset)
        stream = offset in (EVENTS_READY, RXD)
        return op.with_guard(self._GUARD, stream) if op is not None else None

    def write_op(self, offset: int):
        if offset == 0x304 or offset == 0x524 or not self._own("write", Spi):
            return None         # INTENSET may arm the completion; FREQUENCY re-times it
        if offset == TXD:
            return Op(W_TXD, self, timed=True, stream=True)
        op = self._base_write_op(offset)
        stream = offset == EVENTS_READY
        return op.with_guard(self._GUARD, stream) if op is not None else None

    # -- registers -------------------------------------------------------
    def _write_txd(self, value: int, old: int) -> None:
        if self._shifting is None:
            self._start(value & 0xFF, self.clock.now)
        else:
            if self._tx_buf is not None:
                self.log_once("txov", "TXD written while both TX buffers full (byte lost)")
            self._tx_buf = value & 0xFF

    def _read_rxd(self, offset: int) -> int:
        if not self._rx_n:
            return 0
        v = self._rx_pop()
        if self._rx_n:
            self.fire(EVENTS_READY)
        return v

    # -- shifting ----------------------------------------------------------
    def _byte_time(self) -> int:
        """Ticks one byte takes at FREQUENCY (8 bit times)."""
        return 8 * ticks_per_bit(self.values[0x524])

    def _start(self, byte: int, start: int) -> None:
        self._shifting = byte
        self._due = start + self._byte_time()
        if self.inten or self._watched():
            self._done.schedule_at(self._due)

    def _watched(self) -> bool:
        """A listener must see READY when it happens: one that is not the PPI,
        or the PPI while an enabled channel starts at this slot (routes_from)."""
        for fn in self.event_listeners:
            routes = getattr(getattr(fn, "__self__", None), "routes_from", None)
            if routes is None or routes(self.base):
                return True
        return False

    def _byte_done(self) -> None:
        byte = self._shifting
        if byte is None:
            return
        self._done.cancel()
        self._shifting = None
        bus = self.spi_bus
        if bus is not None and self.miso_on_bus:
            rx = bus.transfer(byte)
        else:                       # the devices get it (if reached), RXD the MISO pin
            if bus is not None:
                bus.transfer(byte)
            rx = self.miso_byte()
        self._rx_push(rx)
        if self._tx_buf is not None:
            b, self._tx_buf = self._tx_buf, None
            self._start(b, self._due)       # back to back on the wire
        if self._rx_n == 1:
            self.fire(EVENTS_READY)

    def save_model_state(self) -> dict:
        self._stream_off()
        return {"shifting": self._shifting, "tx_buf": self._tx_buf, "rx": self._rx,
                "due": self._due, "armed": self._done.pending}

    def load_model_state(self, st: dict) -> None:
        self._stream_off()
        self._shifting, self._tx_buf = st["shifting"], st["tx_buf"]
        self._rx_n = 0
        for v in st["rx"]:
            self._rx_push(v)
        self._due = st.get("due", 0)
        self._done.cancel()
        if st.get("armed"):
            self._done.schedule_at(self._due)
