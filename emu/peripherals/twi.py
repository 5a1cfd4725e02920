"""Legacy TWI master (ENABLE=5), nRF52832 PS v1.4 section 33 "TWI".

A byte-level state machine timed at 9 bit times per byte (8 data + ACK) from
FREQUENCY (K100/K250/K400):

* STARTTX / STARTRX: START + address byte (9 bit times).  An address NACK
  sets ERRORSRC.ANACK and fires ERROR; the master then waits for STOP.
* TX: each byte written to TXD is sent (BB at its start, TXDSENT after its
  ACK bit, ERRORSRC.DNACK + ERROR on a data NACK).  With nothing in TXD the
  master stretches the clock until TXD is written or STOP is triggered.
* RX: BB fires at the start of each byte (SHORTS BB_SUSPEND / BB_STOP take
  effect at the end of that byte); RXDREADY when it is in RXD.  A byte
  received while RXD still holds an unread one sets ERRORSRC.OVERRUN.
  SUSPEND holds the bus after the current byte (SUSPENDED); RESUME goes on.
* STOP: after the byte in flight; STOPPED one bit time later.

Pins (emu/peripherals/serial.py, PinSignals): the bytes go to the board's
I2C bus on PSEL.SCL/PSEL.SDA (PSELSCL/PSELSDA) while enabled; with no bus
there the address is not acknowledged (ANACK).  GPIO OUT does not drive the
two pins meanwhile (the lines are left released: their pull-ups set them).

Not modelled: SCL/SDA pin levels, clock stretching by slaves, bus-busy
arbitration; the ERRORSRC bits are W1C as on silicon.
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral, Reg, RO, W1C
from emu.peripherals.serial import PinSignals, ticks_per_bit

T_STARTRX, T_STARTTX, T_STOP, T_SUSPEND, T_RESUME = 0x000, 0x008, 0x014, 0x01C, 0x020
E_STOPPED, E_RXDREADY, E_TXDSENT, E_ERROR, E_BB, E_SUSPENDED = (
    0x104, 0x108, 0x11C, 0x124, 0x138, 0x148)
ERRORSRC = 0x4C4
OVERRUN, ANACK, DNACK = 1, 2, 4


class TwiPins(PinSignals):
    """The TWI masters' pins: SCL and SDA, open-drain lines it drives itself."""
    SIGNALS = (("SCL", 0x508, "od"), ("SDA", 0x50C, "od"))
    BUS = "i2c"


class Twi(TwiPins, NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_read", "_rxd_unread", "_state", "_step", "_stop_pending", "_suspend_pending",
                "_tx_byte", "_tx_pending")
    STRUCTURE = ("mux",)
    _tx_byte = 0          # the byte on its way out (set by the first TXD)
    NAME = "TWI"
    HAS_INTEN = False
    TASKS = {T_STARTRX: "STARTRX", T_STARTTX: "STARTTX", T_STOP: "STOP",
             T_SUSPEND: "SUSPEND", T_RESUME: "RESUME"}
    EVENTS = {E_STOPPED: "STOPPED", E_RXDREADY: "RXDREADY", E_TXDSENT: "TXDSENT",
              E_ERROR: "ERROR", E_BB: "BB", E_SUSPENDED: "SUSPENDED"}
    SHORTS = {0: (E_BB, T_SUSPEND), 1: (E_BB, T_STOP)}
    REGISTERS = [
        Reg(ERRORSRC, "ERRORSRC", access=W1C, mask=0x7),
        Reg(0x500, "ENABLE", mask=0xF),
        Reg(0x508, "PSEL_SCL", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSEL_SDA", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x518, "RXD", access=RO, read="_read_rxd"),
        Reg(0x51C, "TXD", mask=0xFF, write="_write_txd"),
        Reg(0x524, "FREQUENCY", 0x04000000),
        Reg(0x588, "ADDRESS", mask=0x7F),
    ]

    def __init__(self, soc, base, name=None, irq=None):
        self._step = soc.clock.event(f"{name or 'twi'}.step", self._step_done)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._step.cancel()
        self._state = "idle"     # idle|addr|tx|rx|wait_tx|suspended|error|stopping
        self._read = False
        self._tx_pending = False
        self._rxd_unread = False
        self._stop_pending = False
        self._suspend_pending = False

    def disable(self) -> None:
        self._step.cancel()
        self._state = "idle"

    def _bit(self) -> int:
        return ticks_per_bit(self.values[0x524])

    # -- registers -------------------------------------------------------
    def _write_txd(self, value: int, old: int) -> None:
        self._tx_pending = True
        if self._state == "wait_tx":
            self._begin_byte()

    def _read_rxd(self, offset: int) -> int:
        self._rxd_unread = False
        return self.values[0x518]

    # -- tasks ------------------------------------------------------------
    def task_STARTTX(self) -> None:
        self._start(read=False)

    def task_STARTRX(self) -> None:
        self._start(read=True)

    def _start(self, read: bool) -> None:
        self._read = read
        self._stop_pending = self._suspend_pending = False
        self._state = "addr"
        self._step.schedule_in(9 * self._bit() + self._bit())   # START + address + ACK

    def task_STOP(self) -> None:
        if self._state in ("addr", "tx", "rx"):
            self._stop_pending = True
        elif self._state != "stopping":
            self._do_stop()

    def task_SUSPEND(self) -> None:
        if self._state in ("tx", "rx", "addr"):
            self._suspend_pending = True
        elif self._state in ("wait_tx",):
            self._suspend_now()

    def task_RESUME(self) -> None:
        self._suspend_pending = False
        if self._state == "suspended":
            if self._read:
                self._begin_byte()
            elif self._tx_pending:
                self._begin_byte()
            else:
                self._state = "wait_tx"

    # ------------------------------------------------------------------
    def _begin_byte(self) -> None:
        self._state = "rx" if self._read else "tx"
        if not self._read:
            self._tx_byte = self.values[0x51C]
            self._tx_pending = False
        self._step.schedule_in(9 * self._bit())
        self.fire(E_BB)

    def _after_byte(self) -> None:
        if self._stop_pending:
            self._do_stop()
        elif self._suspend_pending:
            self._suspend_now()
        elif self._read:
            self._begin_byte()
        elif self._tx_pending:
            self._begin_byte()
        else:
            self._state = "wait_tx"

    def _suspend_now(self) -> None:
        self._suspend_pending = False
        self._state = "suspended"
        self.fire(E_SUSPENDED)

    def _do_stop(self) -> None:
        self._stop_pending = False
        self._state = "stopping"
        self._step.schedule_in(self._bit())

    def _error(self, bit: int) -> None:
        self.values[ERRORSRC] |= bit
        self._state = "error"
        self.fire(E_ERROR)
        if self._stop_pending:
            self._do_stop()

    def _step_done(self) -> None:
        st = self._state
        bus = self.i2c_bus
        if st == "addr":
            ok = bus.start(self.values[0x588], self._read) if bus is not None else False
            if not ok:
                self._error(ANACK)
                return
            if self._stop_pending and not self._read:
                self._do_stop()
            elif self._suspend_pending:
                self._suspend_now()
            elif self._read or self._tx_pending:
                self._begin_byte()
            else:
                self._state = "wait_tx"
        elif st == "tx":
            ok = bus.write(self._tx_byte) if bus is not None else False
            if not ok:
                self._error(DNACK)
                return
            self.fire(E_TXDSENT)
            if self._state == "tx":
                self._after_byte()
        elif st == "rx":
            b = bus.read() if bus is not None else 0xFF
            if self._rxd_unread:
                self.values[ERRORSRC] |= OVERRUN
            self.values[0x518] = b
            self._rxd_unread = True
            self.fire(E_RXDREADY)
            if self._state == "rx":
                self._after_byte()
        elif st == "stopping":
            if bus is not None:
                bus.stop()
            self._state = "idle"
            self.fire(E_STOPPED)

    def save_model_state(self) -> dict:
        return {k: getattr(self, k) for k in ("_state", "_read", "_tx_pending", "_rxd_unread",
                                                "_stop_pending", "_suspend_pending")} | {
            "step_at": self._step.when, "tx_byte": self._tx_byte}

    def load_model_state(self, st: dict) -> None:
        for k in ("_state", "_read", "_tx_pending", "_rxd_unread", "_stop_pending",
                  "_suspend_pending"):
            setattr(self, k, st[k])
        self._tx_byte = st.get("tx_byte", 0)
        self._step.cancel()
        if st.get("step_at") is not None:
            self._step.schedule_at(st["step_at"])
