"""NXP MMA8653FC 3-axis 10-bit accelerometer (BBC micro:bit v1), I2C 0x1D.

Register map per the MMA8653FC datasheet (Rev. 2, section 6): STATUS 0x00
(ZYXDR bit 3, ZYXOW bit 7), OUT_X_MSB..OUT_Z_LSB 0x01..0x06 (10-bit two's
complement, left-justified: MSB = bits 9:2, LSB bits 7:6 = bits 1:0),
SYSMOD 0x0B, INT_SOURCE 0x0C (SRC_DRDY bit 0), WHO_AM_I 0x0D (0x5A),
XYZ_DATA_CFG 0x0E (FS: 0 = +/-2 g, 1 = +/-4 g, 2 = +/-8 g), CTRL_REG1 0x2A
(ACTIVE bit 0, F_READ bit 1, DR bits 5:3: 800/400/200/100/50/12.5/6.25/
1.56 Hz), CTRL_REG2..5 0x2B..0x2E (CTRL_REG3 IPOL bit 1 / PP_OD bit 0;
CTRL_REG4 INT_EN_DRDY bit 0; CTRL_REG5 INT_CFG_DRDY bit 0: 1 = INT1),
OFF_X/Y/Z 0x2F..0x31 (2 mg per LSB, added to the output).

While ACTIVE, a new sample is taken every 1/ODR: the output registers are
loaded from the acceleration set by the board, STATUS.ZYXDR is set (ZYXOW
as well if the previous sample was not read), and with INT_EN_DRDY the
interrupt pin routed by CTRL_REG5 is asserted with the CTRL_REG3 polarity
(active low, push-pull after reset).  Reading the X, Y and Z MSB registers
clears ZYXDR and the interrupt (datasheet 6.1).  The register pointer
auto-increments after each read byte; with F_READ set the LSB registers are
skipped (0x01 -> 0x03 -> 0x05 -> 0x00).  Writes to other registers than
CTRL_REG1 are only accepted in STANDBY, as on the part.

The board sets the acceleration in milli-g on the chip's own axes
(``set_acceleration``); it is quantised to the selected full-scale range
(1024/512/256 counts per g) and saturates.

Not modelled: the motion/freefall, transient, orientation and auto-sleep
engines (their registers are storage), oversampling modes, self-test,
the output noise.
"""
from __future__ import annotations

from typing import Optional

from emu.buses import I2cRegisterDevice
from emu.clock import TICKS_PER_SECOND

ADDRESS = 0x1D
WHO_AM_I_VALUE = 0x5A
STATUS, OUT_X_MSB, SYSMOD, INT_SOURCE, WHO_AM_I, XYZ_DATA_CFG = 0x00, 0x01, 0x0B, 0x0C, 0x0D, 0x0E
CTRL_REG1, CTRL_REG2, CTRL_REG3, CTRL_REG4, CTRL_REG5 = 0x2A, 0x2B, 0x2C, 0x2D, 0x2E
OFF_X = 0x2F
ODR_HZ = (800.0, 400.0, 200.0, 100.0, 50.0, 12.5, 6.25, 1.5625)


class Mma8653(I2cRegisterDevice):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_read_msb", "_sample", "accel_mg", "int_pins", "name", "samples")
    STRUCTURE = ("clock",)
    def __init__(self, clock, int1_pin=None, int2_pin=None, name: str = "accelerometer"):
        self.clock = clock
        self.name = name
        self.int_pins = (int1_pin, int2_pin)
        self.accel_mg = [0.0, 0.0, -1000.0]      # face up on a table: -1 g on Z
        self._sample = clock.event(f"{name}.sample", self._take_sample)
        self.samples = 0
        self.reset()

    # ------------------------------------------------------------------ API
    def set_acceleration(self, x_mg: float, y_mg: float, z_mg: float) -> None:
        """Acceleration (gravity plus motion) in milli-g on the chip axes."""
        self.accel_mg = [float(x_mg), float(y_mg), float(z_mg)]

    def counts_per_g(self) -> int:
        return {0: 256, 1: 128, 2: 64}.get(self.regs[XYZ_DATA_CFG] & 3, 64)

    def reset(self) -> None:
        self.regs = bytearray(0x32)
        self.regs[WHO_AM_I] = WHO_AM_I_VALUE
        self.ptr = 0
        self._first = False
        self._read_msb = set()
        self._sample.cancel()
        self._drive_int(False)

    # ------------------------------------------------------------ I2C device
    def _read_reg(self, reg: int) -> int:
        v = self.regs[reg] if reg < len(self.regs) else 0
        if reg in (1, 3, 5):
            self._read_msb.add(reg)
            if len(self._read_msb) == 3:
                self._data_read()
        return v

    def _next_write_ptr(self, reg: int) -> int:
        return (self.ptr + 1) & 0xFF        # from 0 after a software reset (RST)

    def _next_read_ptr(self, reg: int) -> int:
        return self._next(reg)

    # --------------------------------------------------------------- private
    def _next(self, reg: int) -> int:
        if 1 <= reg <= 6:
            if self.regs[CTRL_REG1] & 2:           # F_READ: MSBs only
                return {1: 3, 3: 5, 5: 0}.get(reg, reg + 1)
            return 0 if reg == 6 else reg + 1
        return (reg + 1) & 0xFF

    @property
    def active(self) -> bool:
        return bool(self.regs[CTRL_REG1] & 1)

    def _write_reg(self, reg: int, value: int) -> None:
        if reg >= len(self.regs) or reg in (STATUS, 1, 2, 3, 4, 5, 6, SYSMOD, INT_SOURCE,
                                            WHO_AM_I):
            return                                   # read-only
        if reg == CTRL_REG2 and value & 0x40:        # RST: software reset
            self.reset()
            return
        if reg != CTRL_REG1 and self.active:
            return                                   # only CTRL_REG1 changes in ACTIVE
        was = self.active
        self.regs[reg] = value & 0xFF
        if reg == CTRL_REG1:
            self.regs[SYSMOD] = 1 if self.active else 0
            if self.active and not was:
                self._sample.schedule_in(self._period())
            elif not self.active:
                self._sample.cancel()
        self._update_int()

    def _period(self) -> int:
        return int(round(TICKS_PER_SECOND / ODR_HZ[(self.regs[CTRL_REG1] >> 3) & 7]))

    def _take_sample(self) -> None:
        cpg = self.counts_per_g()
        for i, mg in enumerate(self.accel_mg):
            off = (self.regs[OFF_X + i] ^ 0x80) - 0x80       # 2 mg per LSB
            c = int(round((mg + 2 * off) * cpg / 1000.0))
            c = max(-512, min(511, c)) & 0x3FF
            self.regs[1 + 2 * i] = c >> 2
            self.regs[2 + 2 * i] = (c & 3) << 6
        if self.regs[STATUS] & 0x08:
            self.regs[STATUS] |= 0xF0                         # overwrite flags
        self.regs[STATUS] |= 0x0F
        self.regs[INT_SOURCE] |= 0x01
        self._read_msb.clear()
        self.samples += 1
        self._update_int()
        if self.active:
            self._sample.schedule_in(self._period())

    def _data_read(self) -> None:
        self.regs[STATUS] = 0
        self.regs[INT_SOURCE] &= ~0x01
        self._read_msb.clear()
        self._update_int()

    def _update_int(self) -> None:
        asserted = bool(self.regs[CTRL_REG4] & 1 and self.regs[INT_SOURCE] & 1)
        self._drive_int(asserted)

    def _drive_int(self, asserted: bool) -> None:
        regs = self.regs
        route_int1 = bool(regs[CTRL_REG5] & 1)
        active_high = bool(regs[CTRL_REG3] & 2)
        open_drain = bool(regs[CTRL_REG3] & 1)
        for n, pin in enumerate(self.int_pins):
            if pin is None:
                continue
            mine = asserted and ((n == 0) == route_int1)
            level: Optional[bool] = active_high if mine else (not active_high)
            if open_drain and level:
                level = None                                  # released: pull-up
            pin.drive(self.name, level)
