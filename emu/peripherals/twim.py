"""TWI master with EasyDMA (ENABLE=6), nRF52832 PS v1.4 section 34 "TWIM".

STARTTX: TXSTARTED; START + address, then TXD.MAXCNT bytes from RAM, 9 bit
times each.  STARTRX: RXSTARTED; (repeated) START + address, RXD.MAXCNT
bytes into RAM.  The bus exchange happens when the task is triggered; the
events fire at the time the last bit would leave the wire: LASTTX / LASTRX
at the end of the transfer (so SHORTS LASTTX_STARTRX / LASTTX_SUSPEND /
LASTTX_STOP / LASTRX_STARTTX / LASTRX_STOP chain transactions), ERROR with
ERRORSRC.ANACK after the address byte or DNACK after the refused data byte.
STOP ends the transaction after the byte in flight and fires STOPPED.
TXD.AMOUNT/RXD.AMOUNT count the bytes actually transferred; LIST=1 advances
PTR.  EasyDMA reaches Data RAM only: a flash TXD.PTR sends nothing
(TXD.AMOUNT 0, logged once).

Pins as the legacy TWI's (emu/peripherals/twi.py): the board's I2C bus on
PSEL.SCL/PSEL.SDA while enabled, else ANACK.

Not modelled: SUSPEND mid-byte timing (SUSPENDED fires at the next byte
boundary after the current transfer), SCL/SDA pin levels, slave clock
stretching.
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral, Reg, RO, W1C
from emu.peripherals.serial import ticks_per_bit
from emu.peripherals.spim import in_ram
from emu.peripherals.twi import TwiPins

T_STARTRX, T_STARTTX, T_STOP, T_SUSPEND, T_RESUME = 0x000, 0x008, 0x014, 0x01C, 0x020
E_STOPPED, E_ERROR, E_SUSPENDED, E_RXSTARTED, E_TXSTARTED, E_LASTRX, E_LASTTX = (
    0x104, 0x124, 0x148, 0x14C, 0x150, 0x15C, 0x160)
ERRORSRC = 0x4C4
OVERRUN, ANACK, DNACK = 1, 2, 4


class Twim(TwiPins, NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_done", "_pending", "_stop_pending", "_stopped", "_suspended")
    STRUCTURE = ("mux",)
    NAME = "TWIM"
    TASKS = {T_STARTRX: "STARTRX", T_STARTTX: "STARTTX", T_STOP: "STOP",
             T_SUSPEND: "SUSPEND", T_RESUME: "RESUME"}
    EVENTS = {E_STOPPED: "STOPPED", E_ERROR: "ERROR", E_SUSPENDED: "SUSPENDED",
              E_RXSTARTED: "RXSTARTED", E_TXSTARTED: "TXSTARTED", E_LASTRX: "LASTRX",
              E_LASTTX: "LASTTX"}
    SHORTS = {7: (E_LASTTX, T_STARTRX), 8: (E_LASTTX, T_SUSPEND), 9: (E_LASTTX, T_STOP),
              10: (E_LASTRX, T_STARTTX), 12: (E_LASTRX, T_STOP)}
    REGISTERS = [
        Reg(ERRORSRC, "ERRORSRC", access=W1C, mask=0x7),
        Reg(0x500, "ENABLE", mask=0xF),
        Reg(0x508, "PSEL_SCL", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x50C, "PSEL_SDA", 0xFFFFFFFF, write="_pins_changed"),
        Reg(0x524, "FREQUENCY", 0x04000000),
        Reg(0x534, "RXD_PTR"), Reg(0x538, "RXD_MAXCNT", mask=0xFF),
        Reg(0x53C, "RXD_AMOUNT", access=RO), Reg(0x540, "RXD_LIST", mask=0x7),
        Reg(0x544, "TXD_PTR"), Reg(0x548, "TXD_MAXCNT", mask=0xFF),
        Reg(0x54C, "TXD_AMOUNT", access=RO), Reg(0x550, "TXD_LIST", mask=0x7),
        Reg(0x588, "ADDRESS", mask=0x7F),
    ]

    def __init__(self, soc, base, name=None, irq=None):
        self._done = soc.clock.event(f"{name or 'twim'}.done", self._complete)
        self._stopped = soc.clock.event(f"{name or 'twim'}.stopped", self._stop_done)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._done.cancel()
        self._stopped.cancel()
        self._pending = None   # (kind, error bit, rx bytes, amount)
        self._stop_pending = False
        self._suspended = False

    def disable(self) -> None:
        self._done.cancel()
        self._stopped.cancel()
        self._pending = None

    def _bit(self) -> int:
        return ticks_per_bit(self.values[0x524])

    # -- tasks -------------------------------------------------------------
    def task_STARTTX(self) -> None:
        v = self.values
        ptr, n = v[0x544], v[0x548]
        bus = self.i2c_bus
        self.fire(E_TXSTARTED)
        ok = bus.start(v[0x588], False) if bus is not None else False
        sent, err = 0, 0
        if not ok:
            err = ANACK
        else:
            if n and not in_ram(ptr, n):
                self.log_once("txflash", "TXD.PTR %#x not in Data RAM: nothing sent", ptr)
                data = b""
            else:
                data = self.soc.cpu.read_mem(ptr, n) if n else b""
            for b in data:
                sent += 1
                if not bus.write(b):
                    err = DNACK
                    break
        self._pending = ("tx", err, b"", sent)
        self._done.schedule_in((1 + 9 * (1 + sent)) * self._bit())

    def task_STARTRX(self) -> None:
        v = self.values
        n = v[0x538]
        bus = self.i2c_bus
        self.fire(E_RXSTARTED)
        ok = bus.start(v[0x588], True) if bus is not None else False
        data = bytes(bus.read() for _ in range(n)) if ok else b""
        self._pending = ("rx", 0 if ok else ANACK, data, len(data))
        self._done.schedule_in((1 + 9 * (1 + len(data))) * self._bit())

    def task_STOP(self) -> None:
        if self._pending is not None:
            self._stop_pending = True
            return
        self._stopped.schedule_in(self._bit())

    def task_SUSPEND(self) -> None:
        if self._pending is None:
            self._suspended = True
            self.fire(E_SUSPENDED)
        else:
            self.log_once("susp", "SUSPEND during a transfer takes effect at its end")
            self._suspended = True

    def task_RESUME(self) -> None:
        self._suspended = False

    # ------------------------------------------------------------------
    def _complete(self) -> None:
        kind, err, data, amount = self._pending
        self._pending = None
        v = self.values
        if kind == "tx":
            v[0x54C] = amount
            if v[0x550] == 1:
                v[0x544] = (v[0x544] + v[0x548]) & 0xFFFFFFFF
        else:
            if data:
                ptr = v[0x534]
                if in_ram(ptr, len(data)):
                    self.soc.cpu.write_mem(ptr, data)
                else:
                    self.log_once("rxflash", "RXD.PTR %#x not in Data RAM: nothing stored", ptr)
                    amount = 0
            v[0x53C] = amount
            if v[0x540] == 1:
                v[0x534] = (v[0x534] + v[0x538]) & 0xFFFFFFFF
        if err:
            v[ERRORSRC] |= err
            self.fire(E_ERROR)
        elif kind == "tx":
            if self._suspended:
                self.fire(E_SUSPENDED)
            self.fire(E_LASTTX)
        else:
            self.fire(E_LASTRX)
        if self._stop_pending and self._pending is None:
            self._stop_pending = False
            self._stopped.schedule_in(self._bit())

    def _stop_done(self) -> None:
        if self.i2c_bus is not None:
            self.i2c_bus.stop()
        self.fire(E_STOPPED)

    def save_model_state(self) -> dict:
        return {"pending": self._pending, "stop_pending": self._stop_pending,
                "suspended": self._suspended, "done_at": self._done.when,
                "stopped_at": self._stopped.when}

    def load_model_state(self, st: dict) -> None:
        self._pending = tuple(st["pending"]) if st.get("pending") else None
        self._stop_pending, self._suspended = st["stop_pending"], st["suspended"]
        for ev, key in ((self._done, "done_at"), (self._stopped, "stopped_at")):
            ev.cancel()
            if st.get(key) is not None:
                ev.schedule_at(st[key])
