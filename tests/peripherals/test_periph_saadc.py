"""SAADC: PS conversion formula, timing, EasyDMA int16 results, limits."""
import struct

from emu.soc.nrf52832 import Nrf52832

RAM = 0x20005000
US = 512


def setup(soc, pselp=8, config=(2 << 8) | (1 << 12) | (2 << 16), res=2):
    a = soc.saadc
    a.write(0x500, 1)
    a.write(0x510, pselp)          # CH[0].PSELP = AIN7
    a.write(0x518, config)         # gain 1/4, VDD/4, TACQ 10 us
    a.write(0x5F0, res)            # 12 bit
    a.write(0x62C, RAM)
    a.write(0x630, 1)
    return a


def test_battery_channel_pinetime_style():
    soc = Nrf52832()
    a = setup(soc)
    a.set_input(7, 1.95)           # half of a 3.9 V battery through the divider
    a.write(0x000, 1)
    assert a.read(0x100) == 1      # STARTED
    t0 = soc.clock.now
    a.write(0x004, 1)
    soc.clock.advance_to(t0 + 12 * US - 1)   # TACQ 10 us + tCONV 2 us, one tick short
    assert a.read(0x104) == 0 and a.read(0x400) == 1
    soc.clock.advance_to(t0 + 12 * US)
    assert a.read(0x104) == 1 and a.read(0x108) == 1
    raw = struct.unpack("<h", soc.cpu.read_mem(RAM, 2))[0]
    assert raw == round(1.95 / 3.3 * 4096)
    assert a.read(0x634) == 1


def test_internal_reference_and_differential():
    soc = Nrf52832()
    a = setup(soc, pselp=1, config=(5 << 8) | (1 << 20))   # gain 1, 0.6 V, differential
    a.write(0x514, 2)              # PSELN = AIN1
    a.set_input(0, 0.5)
    a.set_input(1, 0.2)
    assert a.convert(0) == round(0.3 / 0.6 * 2048)
    a.set_input(1, 1.5)            # -1.0 V difference: clamped at -2048
    assert a.convert(0) == -2048


def test_two_channels_fill_buffer_and_limit_events():
    soc = Nrf52832()
    a = setup(soc, pselp=1, config=(5 << 8))
    a.write(0x520, 9)              # CH[1].PSELP = VDD
    a.write(0x528, (0 << 8) | (1 << 12))   # CH[1] gain 1/6, VDD/4
    a.write(0x51C, (100 << 16) | 0)        # CH[0] LIMIT high=100 low=0
    a.write(0x630, 2)
    a.set_input(0, 0.3)
    a.write(0x000, 1)
    a.write(0x004, 1)
    soc.clock.advance_to(soc.clock.now + 100 * US)
    vals = struct.unpack("<2h", soc.cpu.read_mem(RAM, 4))
    assert vals[0] == 2048 and vals[1] == round(3.3 / 6 / (3.3 / 4) * 4096)
    assert a.read(0x118) == 1 and a.read(0x11C) == 0     # CH[0].LIMITH only
    assert a.read(0x104) == 1


def test_sample_before_start_does_nothing_and_stop():
    soc = Nrf52832()
    a = setup(soc)
    a.write(0x004, 1)
    soc.clock.advance_to(soc.clock.now + 100 * US)
    assert a.read(0x108) == 0
    a.write(0x000, 1)
    a.write(0x008, 1)
    assert a.read(0x114) == 1


def test_firmware_battery_sample(fw):
    from conftest import assert_firmware_passed
    from emu import Machine
    m = Machine(fw("periph_saadc"), board="nrf52832")
    m.soc.saadc.set_input(7, 1.95)
    r = m.run(ms=20)
    assert_firmware_passed(m, r, min_passes=2)


def test_firmware_battery_sample_can_fail(fw):
    from emu import Machine
    m = Machine(fw("periph_saadc"), board="nrf52832")
    m.soc.saadc.set_input(7, 1.0)
    r = m.run(ms=20)
    assert "FAIL saadc battery result" in m.console_text()
