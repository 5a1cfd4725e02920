"""NXP MAG3110 3-axis magnetometer (BBC micro:bit v1), I2C 0x0E.

Register map per the MAG3110 datasheet (Rev. 9, section 14): DR_STATUS 0x00
(ZYXDR bit 3, ZYXOW bit 7), OUT_X_MSB..OUT_Z_LSB 0x01..0x06 (16-bit two's
complement, 0.1 uT per count), WHO_AM_I 0x07 (0xC4), SYSMOD 0x08,
OFF_X/Y/Z 0x09..0x0E (user offset, subtracted unless CTRL_REG2.RAW),
DIE_TEMP 0x0F, CTRL_REG1 0x10 (AC bit 0 active, TM bit 1 trigger one
measurement, FR bit 2 fast read, DR/OS bits 7:3), CTRL_REG2 0x11
(AUTO_MRST_EN bit 7, RAW bit 5, Mag_RST bit 4).

In active mode a measurement is taken every output period (CTRL_REG1 DR/OS:
80 Hz / 2^(DR) at OS=0, slower with oversampling: 80/(2^DR * 2^OS) Hz as in
datasheet table 28's pattern, capped at 80 Hz); TM takes one at once.  A
measurement loads the outputs from the field set by the board, sets ZYXDR
(ZYXOW if unread) and drives the INT1 pin high (active high, push-pull).
Reading OUT_Z_LSB (or, with FR, OUT_Z_MSB) clears ZYXDR and INT1.  The
register pointer auto-increments; with FR only the MSB registers are read
(0x01 -> 0x03 -> 0x05 -> 0x07... as the datasheet describes).

The board sets the field in tenths of a microtesla (counts) on the chip's
axes with ``set_field``; DIE_TEMP with ``temperature_c``.

Not modelled: the sensor's magnetic offset and noise, the exact oversampling
table (the rate follows the pattern above), automatic magnetic sensor reset
pulses.
"""
from __future__ import annotations

from emu.buses import I2cRegisterDevice
from emu.clock import TICKS_PER_SECOND

ADDRESS = 0x0E
WHO_AM_I_VALUE = 0xC4
DR_STATUS, WHO_AM_I, SYSMOD, OFF_X, DIE_TEMP, CTRL_REG1, CTRL_REG2 = (
    0x00, 0x07, 0x08, 0x09, 0x0F, 0x10, 0x11)


class Mag3110(I2cRegisterDevice):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_meas", "field", "name", "samples", "temperature_c")
    STRUCTURE = ("clock", "int_pin")
    def __init__(self, clock, int_pin=None, name: str = "compass"):
        self.clock = clock
        self.name = name
        self.int_pin = int_pin
        self.field = [0, 0, 0]            # 0.1 uT counts
        self.temperature_c = 25
        self._meas = clock.event(f"{name}.measure", self._periodic)
        self.samples = 0
        self.reset()

    def set_field(self, x: int, y: int, z: int) -> None:
        """Magnetic field in counts of 0.1 uT on the chip axes."""
        self.field = [int(x), int(y), int(z)]

    def reset(self) -> None:
        self.regs = bytearray(0x12)
        self.regs[WHO_AM_I] = WHO_AM_I_VALUE
        self.ptr = 0
        self._first = False
        self._meas.cancel()
        self._set_int(False)

    # ------------------------------------------------------------ I2C device
    def _read_reg(self, reg: int) -> int:
        if reg == DIE_TEMP:
            v = self.temperature_c & 0xFF
        else:
            v = self.regs[reg] if reg < len(self.regs) else 0
        fast = bool(self.regs[CTRL_REG1] & 4)
        if (reg == 6 and not fast) or (reg == 5 and fast):
            self.regs[DR_STATUS] = 0
            self._set_int(False)
        return v

    def _next_read_ptr(self, reg: int) -> int:
        # FR (fast read): the LSB registers are skipped; past the map: back to 0
        if self.regs[CTRL_REG1] & 4 and reg in (1, 3, 5):
            nxt = reg + 2
        else:
            nxt = (reg + 1) & 0xFF
        return 0 if nxt >= len(self.regs) else nxt

    # --------------------------------------------------------------- private
    def _write_reg(self, reg: int, value: int) -> None:
        if reg >= len(self.regs) or reg <= 0x08 or reg == DIE_TEMP:
            return
        if reg == CTRL_REG2 and value & 0x10:          # Mag_RST: one-shot
            value &= ~0x10
        was_active = bool(self.regs[CTRL_REG1] & 1)
        self.regs[reg] = value & 0xFF
        if reg != CTRL_REG1:
            return
        active = bool(value & 1)
        self.regs[SYSMOD] = 1 if active else 0
        if value & 2:                                  # TM: one measurement now
            self.regs[CTRL_REG1] &= ~2
            self._measure()
        if active and not was_active:
            self._meas.schedule_in(self._period())
        elif not active:
            self._meas.cancel()

    def _period(self) -> int:
        c = self.regs[CTRL_REG1]
        dr, os_ = (c >> 5) & 7, (c >> 3) & 3
        hz = 80.0 / (2 ** dr) / (2 ** os_)
        return int(round(TICKS_PER_SECOND / hz))

    def _periodic(self) -> None:
        self._measure()
        if self.regs[CTRL_REG1] & 1:
            self._meas.schedule_in(self._period())

    def _measure(self) -> None:
        raw = bool(self.regs[CTRL_REG2] & 0x20)
        for i, v in enumerate(self.field):
            off = int.from_bytes(self.regs[OFF_X + 2 * i:OFF_X + 2 * i + 2], "big", signed=True)
            off >>= 1                                  # OFF registers hold bits 15:1
            out = v if raw else v - off
            out = max(-30000, min(30000, out)) & 0xFFFF
            self.regs[1 + 2 * i] = out >> 8
            self.regs[2 + 2 * i] = out & 0xFF
        if self.regs[DR_STATUS] & 0x08:
            self.regs[DR_STATUS] |= 0xF0
        self.regs[DR_STATUS] |= 0x0F
        self.samples += 1
        self._set_int(True)

    def _set_int(self, level: bool) -> None:
        if self.int_pin is not None:
            self.int_pin.drive(self.name, level)
