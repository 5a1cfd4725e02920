"""EGU register-level tests (PS v1.4 section 38)."""
from emu.soc.nrf52832 import Nrf52832


def test_trigger_sets_triggered_and_level_irq():
    soc = Nrf52832()
    for i in range(6):
        egu = soc.peripherals[f"egu{i}"]
        irq = 20 + i
        egu.write(4 * 5, 1)                        # TASKS_TRIGGER[5]
        assert egu.read(0x100 + 4 * 5) == 1
        assert egu.read(0x100 + 4 * 4) == 0
        assert not (soc.cpu.irq_level >> irq) & 1
        egu.write(0x304, 1 << 5)                   # INTENSET after the event
        assert (soc.cpu.irq_level >> irq) & 1
        egu.write(0x100 + 4 * 5, 0)
        assert not (soc.cpu.irq_level >> irq) & 1


def test_ppi_listener_sees_event():
    soc = Nrf52832()
    egu = soc.peripherals["egu3"]
    seen = []
    egu.event_listeners.append(lambda p, off: seen.append((p.base + off)))
    egu.trigger(4 * 15)
    assert seen == [0x40017000 + 0x100 + 60]
