"""External devices of a board (display, touch, sensors, NOR flash, simple parts).

Devices see the SoC only through pins (emu.signals.Pin) and buses
(emu.buses.SpiBus / I2cBus contracts); they never import peripherals.
"""
