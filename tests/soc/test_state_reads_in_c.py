"""Two reads the bus carries out in C from the model's own state: the SCS's
ICSR (emu.cpu._core.ExcHook.icsr_read: SystemControlSpace._icsr's fields
from the CPU's pending, active, priorities and enables) and the RADIO's
STATE (an ATTR op on the ``state`` property's ``_state``).

ICSR: 3000 random NVIC states (pending and active exceptions, IPSR,
priorities, PRIGROUP, enables, SHCSR) read the same in C and in Python;
the companion's state is read with a stale priority list and differs.
STATE: firmware/tests/periph_radio.c (STATE read through its ramp-up, Rx
and Disabled, with tests/peripherals/test_radio.py's scanner and packet) passes natively and in pure Python in the same state, the
reads by the op."""
import random

import pytest

from conftest import assert_firmware_passed, assert_same_state, both_ways
from emu import Machine
from emu.soc.nrf52832 import Nrf52832

from helpers.radio import radio_run

STATE = (0x40001000, 0x550)


def _random_state(cpu, rng):
    n = 16 + cpu.num_irq
    cpu.prigroup = rng.randrange(8)
    cpu.prio = [-3, -2, -1] + [rng.randrange(256) & cpu.prio_mask for _ in range(n - 3)]
    cpu.irq_enabled = rng.getrandbits(cpu.num_irq)
    cpu.shcsr = rng.getrandbits(3) << 16
    choices = [2, 3, 4, 5, 6, 11, 12, 14, 15] + list(range(16, n))
    cpu.pending = sum(1 << e for e in rng.sample(choices, rng.randrange(5)))
    act = rng.sample(choices, rng.randrange(3))
    cpu.active = sum(1 << e for e in act)
    cpu._ipsr = rng.choice(act) if act and rng.random() < 0.8 else 0


def test_icsr_in_c_reads_as_python():
    rng = random.Random(2905)
    soc = Nrf52832()
    cpu, scs = soc.cpu, soc.scs
    h = cpu._exc_hook
    for _ in range(3000):
        _random_state(cpu, rng)
        assert h.icsr_read(0xD04) == scs._icsr(), (cpu.pending, cpu.active, cpu._ipsr)


def test_icsr_with_a_stale_priority_is_seen():
    """Companion: the same reads with the priority list the C side loaded
    before a change (a cache that is not the CPU's own) differ."""
    rng = random.Random(2905)
    soc = Nrf52832()
    cpu, scs = soc.cpu, soc.scs
    h = cpu._exc_hook
    differ = 0
    for _ in range(300):
        _random_state(cpu, rng)
        stale = list(cpu.prio)
        _random_state(cpu, rng)
        fresh, cpu.prio = cpu.prio, stale
        got = h.icsr_read(0xD04)
        cpu.prio = fresh
        differ += got != scs._icsr()
    assert differ > 10


def test_the_bus_reads_icsr_in_c(fw):
    m = Machine(fw("cpu_pendsv"), board="nrf52832")
    op = m.soc.bus.slots[0xE000E000].read_op(0xD04)
    assert op.args[0] == m.cpu._exc_hook.icsr_read


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_radio_state_firmware(fw, pure):
    m, r, _sc = radio_run(fw, pure_python=pure)
    assert_firmware_passed(m, r, min_passes=20)
    reads = m.soc.bus.access_stats()[STATE]
    assert reads[0] + reads[1] >= 4
    shorts = m.soc.bus.access_stats()[(0x40001000, 0x200)]      # SHORTS: a W_BITS op
    assert shorts[2] + shorts[3] >= 6
    if not pure:
        assert reads[1] == 0 and shorts[3] == 0    # none through the model's Python


def _air(m, pure):
    return {"air": [tuple(p) for p in m.air.log]}


def test_radio_state_native_and_python_agree(fw):
    runs = both_ways((False, True), lambda pure: radio_run(fw, pure_python=pure)[0], extra=_air)
    assert_same_state(runs[0], runs[1], "the STATE op and the model")


def test_shorts_op_that_never_clears_is_seen(fw, monkeypatch):
    """Companion: SHORTS as an op that only sets bits (W1S instead of a
    write) keeps shortcuts the firmware turned off: the radio run differs
    from the model's."""
    from emu.peripherals import base
    from emu.soc.ops import MODE_W1S, W_BITS, Op
    orig = base.NrfPeripheral._base_write_op

    def sticky(self, offset, slow_bits=0):
        if offset == 0x200:
            return Op(W_BITS, self, ("shorts", MODE_W1S, 0, None, 0))
        return orig(self, offset, slow_bits)
    def start(pure):
        if not pure:
            monkeypatch.setattr(base.NrfPeripheral, "_base_write_op", sticky)
        m, _r, _sc = radio_run(fw, pure_python=pure)
        monkeypatch.setattr(base.NrfPeripheral, "_base_write_op", orig)
        return m
    runs = both_ways((False, True), start, extra=_air)
    with pytest.raises(AssertionError):
        assert_same_state(runs[0], runs[1], "a sticky SHORTS op and the model")
