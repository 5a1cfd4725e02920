"""HRS3300: registers, bit layout, sampling on the clock, plausible BPM."""
import pytest

from emu.buses import I2cBus
from emu.clock import TICKS_PER_MS, Clock
from emu.devices.hrs3300 import Hrs3300
from helpers.devices import i2c_read, i2c_write


def make(bpm=70, seed=1):
    clock = Clock()
    dev = Hrs3300(clock, bpm=bpm, seed=seed)
    bus = I2cBus("twi1")
    bus.attach(dev, 0x44)
    return clock, bus, dev


def read_hrs(bus):
    m, h, l = (i2c_read(bus, 0x44, r, 1)[0] for r in (0x09, 0x0A, 0x0F))
    return ((l & 0x30) << 12) | (m << 8) | ((h & 0x0F) << 4) | (l & 0x0F)


def read_als(bus):
    m, h, l = (i2c_read(bus, 0x44, r, 1)[0] for r in (0x08, 0x0D, 0x0E))
    return ((h & 0x3F) << 11) | (m << 3) | (l & 0x07)


def test_id_and_defaults():
    clock, bus, dev = make()
    assert i2c_read(bus, 0x44, 0x00, 1) == b"\x21"
    assert read_hrs(bus) == 0


def test_bit_layout_matches_sample():
    clock, bus, dev = make()
    dev.ambient = 0x1ABCD
    i2c_write(bus, 0x44, 0x01, bytes([0x80 | (6 << 4)]))   # HEN, 12.5 ms
    clock.advance_to(100 * TICKS_PER_MS)
    v = dev.ppg_value(clock.now, dev.samples)
    assert dev.samples > 0
    assert read_als(bus) == 0x1ABCD
    assert 50000 < read_hrs(bus) < 70000


def collect(bpm, seed=3, seconds=10):
    clock, bus, dev = make(bpm, seed)
    i2c_write(bus, 0x44, 0x01, bytes([0x80 | (6 << 4)]))
    out = []
    t = 0
    while t < seconds * 1000:
        t += 40
        clock.advance_to(t * TICKS_PER_MS)
        out.append(read_hrs(bus))
    return out


def peaks_bpm(samples, period_ms=40):
    mean = sum(samples) / len(samples)
    above = [s > mean + 0.5 * (max(samples) - mean) for s in samples]
    rises = sum(1 for a, b in zip(above, above[1:]) if b and not a)
    return rises * 60000 / (len(samples) * period_ms)


@pytest.mark.parametrize("bpm", [60, 90, 120])
def test_peak_counting_gives_bpm(bpm):
    assert abs(peaks_bpm(collect(bpm)) - bpm) <= 12


def test_deterministic_and_seeded():
    assert collect(70, seed=5, seconds=2) == collect(70, seed=5, seconds=2)
    assert collect(70, seed=5, seconds=2) != collect(70, seed=6, seconds=2)


def test_disable_stops_sampling():
    clock, bus, dev = make()
    i2c_write(bus, 0x44, 0x01, bytes([0x80 | (6 << 4)]))
    clock.advance_to(50 * TICKS_PER_MS)
    i2c_write(bus, 0x44, 0x01, b"\x00")
    n = dev.samples
    clock.advance_to(500 * TICKS_PER_MS)
    assert dev.samples == n
