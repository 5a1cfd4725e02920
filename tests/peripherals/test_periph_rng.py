"""RNG register-level tests (PS v1.4 section 26)."""
from emu.clock import us
from emu.soc.nrf52832 import Nrf52832

START, STOP, VALRDY, SHORTS, INTENSET, CONFIG, VALUE = 0x0, 0x4, 0x100, 0x200, 0x304, 0x504, 0x508


def collect(soc, rng, n, dt):
    vals = []
    for i in range(n):
        soc.clock.advance_to(soc.clock.now + dt)
        assert rng.read(VALRDY) == 1
        vals.append(rng.read(VALUE))
        rng.write(VALRDY, 0)
    return vals


def test_valrdy_timing_irq_and_determinism():
    soc = Nrf52832()
    rng = soc.peripherals["rng"]
    rng.write(INTENSET, 1)
    rng.write(START, 1)
    soc.clock.advance_to(us(30) - 1)        # one tick short of the first byte
    assert rng.read(VALRDY) == 0 and not (soc.cpu.irq_level >> 13) & 1
    soc.clock.advance_to(us(30))
    assert rng.read(VALRDY) == 1 and (soc.cpu.irq_level >> 13) & 1
    rng.write(VALRDY, 0)
    assert not (soc.cpu.irq_level >> 13) & 1
    a = [rng.read(VALUE)] + collect(soc, rng, 31, us(30))
    soc2 = Nrf52832()
    r2 = soc2.peripherals["rng"]
    r2.write(START, 1)
    b = collect(soc2, r2, 32, us(30))
    assert a == b                           # same seed, same stream
    assert len(set(a)) > 8                  # and it is not constant


def test_dercen_slower_and_short_stop():
    soc = Nrf52832()
    rng = soc.peripherals["rng"]
    rng.write(CONFIG, 1)
    rng.write(SHORTS, 1)                    # VALRDY_STOP
    rng.write(START, 1)
    soc.clock.advance_to(us(100))
    assert rng.read(VALRDY) == 0
    soc.clock.advance_to(us(120))
    assert rng.read(VALRDY) == 1
    v = rng.read(VALUE)
    rng.write(VALRDY, 0)
    soc.clock.advance_to(us(1000))
    assert rng.read(VALRDY) == 0 and rng.read(VALUE) == v   # stopped by the short
