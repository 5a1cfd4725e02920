"""ADC (0x40007000, IRQ 7): the nRF51's 10-bit successive-approximation ADC.

nRF51 Series Reference Manual v3.0, section 31 "ADC".  One conversion per
TASKS_START: BUSY reads 1 until it ends, then RESULT holds the value and
EVENTS_END fires.  Conversion time (RM table "ADC conversion time"):
20 us at 8 bit, 36 us at 9 bit, 68 us at 10 bit.  TASKS_STOP abandons a
conversion in progress (no END).

CONFIG: RES [1:0] (8/9/10 bit), INPSEL [4:2] (0 AnalogInputNoPrescaling,
1 AnalogInputTwoThirdsPrescaling, 2 AnalogInputOneThirdPrescaling,
5 SupplyTwoThirdsPrescaling, 6 SupplyOneThirdPrescaling), REFSEL [6:5]
(0 VBG 1.2 V, 1 External (AREF0/1 by EXTREFSEL), 2 SupplyOneHalfPrescaling,
3 SupplyOneThirdPrescaling), PSEL [15:8] (one-hot AIN0..AIN7), EXTREFSEL
[17:16].  The result is

    RESULT = round(V_in * input_scale / V_ref * (2^RES_bits - 1)), clamped

Analogue inputs come from the board: ``set_input(ain, volts)`` for
AIN0..AIN7 (AIN0 = P0.26, AIN1 = P0.27, AIN2..AIN7 = P0.01..P0.06), and
``vdd`` (3.0 V unless set).  AREF0 = AIN0, AREF1 = AIN1 as on silicon.

POWER (+0xFFC) as for every nRF51 peripheral (``emu/peripherals/nrf51.py``).

Not modelled: input impedance, noise, offset/gain error, the analog
input-buffer disconnect of the selected pin.
"""
from __future__ import annotations

from emu.clock import us
from emu.peripherals.base import NrfPeripheral, Reg, RO, RW
from emu.peripherals.nrf51 import Power51

T_START, T_STOP = 0x000, 0x004
E_END = 0x100
CONV_US = {0: 20, 1: 36, 2: 68}
BITS = {0: 8, 1: 9, 2: 10}
AIN_PINS = (26, 27, 1, 2, 3, 4, 5, 6)


class Adc(Power51, NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_conv", "inputs", "vdd")
    NAME = "ADC"
    HAS_INTEN = False
    TASKS = {T_START: "START", T_STOP: "STOP"}
    EVENTS = {E_END: "END"}
    REGISTERS = [
        Reg(0x400, "BUSY", 0, RO, read="_rd_busy"),
        Reg(0x500, "ENABLE", 0, RW, mask=0x3),
        Reg(0x504, "CONFIG", 0x18, RW, mask=0x0003FF7F),
        Reg(0x508, "RESULT", 0, RO),
    ]

    def __init__(self, soc, base: int, name=None, irq=None):
        self._conv = soc.clock.event(f"{name or 'adc'}.end", self._conversion_done)
        self.inputs = [0.0] * 8
        self.vdd = 3.0
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._conv.cancel()

    # -- board side ----------------------------------------------------
    def set_input(self, ain: int, volts: float) -> None:
        """Voltage on AIN``ain`` (0-7)."""
        self.inputs[int(ain)] = float(volts)

    def set_vdd(self, volts: float) -> None:
        self.vdd = float(volts)

    def convert(self, config: int) -> int:
        """The RESULT a conversion with ``config`` gives for the present inputs."""
        res = config & 3
        if res not in BITS:
            self.log_once(("res", res), "CONFIG.RES=3 is reserved; converting at 10 bit")
            res = 2
        inpsel = (config >> 2) & 7
        refsel = (config >> 5) & 3
        psel = (config >> 8) & 0xFF
        extref = (config >> 16) & 3
        ain = psel.bit_length() - 1 if psel else -1
        if psel & (psel - 1):
            self.log_once(("psel", psel), "CONFIG.PSEL=%#x selects several inputs; using AIN%d",
                          psel, ain)
        vin_raw = self.inputs[ain] if ain >= 0 else 0.0
        scale = {0: (vin_raw, 1.0), 1: (vin_raw, 2 / 3), 2: (vin_raw, 1 / 3),
                 5: (self.vdd, 2 / 3), 6: (self.vdd, 1 / 3)}.get(inpsel)
        if scale is None:
            self.log_once(("inpsel", inpsel), "CONFIG.INPSEL=%d is reserved", inpsel)
            scale = (vin_raw, 1.0)
        vin = scale[0] * scale[1]
        if refsel == 0:
            vref = 1.2
        elif refsel == 1:
            vref = {1: self.inputs[0], 2: self.inputs[1]}.get(extref, 0.0)
        elif refsel == 2:
            vref = self.vdd / 2
        else:
            vref = self.vdd / 3
        full = (1 << BITS[res]) - 1
        if vref <= 0:
            return full
        return max(0, min(full, int(round(vin / vref * full))))

    # -- tasks ---------------------------------------------------------
    def task_START(self) -> None:
        if not self.values[0x500] & 1:
            self.log_once("disabled", "START while ENABLE=0: no conversion")
            return
        if self._conv.pending:
            return
        self._conv.schedule_in(us(CONV_US.get(self.values[0x504] & 3, 68)))

    def task_STOP(self) -> None:
        self._conv.cancel()

    def _conversion_done(self) -> None:
        self.values[0x508] = self.convert(self.values[0x504])
        self.fire(E_END)

    def _rd_busy(self, _off) -> int:
        return 1 if self._conv.pending else 0

    def save_model_state(self) -> dict:
        return {"when": self._conv.when, "inputs": list(self.inputs), "vdd": self.vdd}

    def load_model_state(self, s: dict) -> None:
        self.inputs = list(s["inputs"])
        self.vdd = s["vdd"]
        if s["when"] is not None:
            self._conv.schedule_at(s["when"])
