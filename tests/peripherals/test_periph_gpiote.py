"""GPIOTE register-level tests (PS v1.4 section 23), incl. PPI-driven toggle."""
from emu.clock import HF16_TICKS as T16
from emu.soc.nrf52832 import Nrf52832

G = 0x40006000


def config(mode, psel, pol=0, outinit=0):
    return mode | (psel << 8) | (pol << 16) | (outinit << 20)


def test_task_mode_out_set_clr():
    soc = Nrf52832()
    gt = soc.peripherals["gpiote"]
    gt.write(0x510 + 4 * 2, config(3, 17, pol=3, outinit=1))
    assert soc.pins[17].level and "gpiote2" in soc.pins[17].drivers
    gt.write(0x000 + 4 * 2, 1)                   # OUT: toggle
    assert soc.pins[17].level is False
    gt.write(0x030 + 4 * 2, 1)                   # SET
    assert soc.pins[17].level
    gt.write(0x060 + 4 * 2, 1)                   # CLR
    assert soc.pins[17].level is False
    gt.write(0x510 + 4 * 2, 0)                   # disable: released
    assert not soc.pins[17].driven


def test_event_mode_edges_and_irq():
    soc = Nrf52832()
    gt = soc.peripherals["gpiote"]
    gt.write(0x510, config(1, 4, pol=2))         # HiToLo on P0.04
    gt.write(0x510 + 4, config(1, 4, pol=1))     # LoToHi on P0.04
    soc.pins[4].drive("ext", True)
    assert gt.read(0x100) == 0 and gt.read(0x104) == 1
    soc.pins[4].drive("ext", False)
    assert gt.read(0x100) == 1
    assert not (soc.cpu.irq_level >> 6) & 1
    gt.write(0x304, 1)                           # INTENSET IN[0] after the event
    assert (soc.cpu.irq_level >> 6) & 1
    gt.write(0x100, 0)
    assert not (soc.cpu.irq_level >> 6) & 1


def test_port_event_from_gpio_detect():
    soc = Nrf52832()
    gt = soc.peripherals["gpiote"]
    gpio = soc.peripherals["gpio"]
    gt.write(0x304, 1 << 31)
    gpio.write(0x700 + 4 * 9, 2 << 16)           # SENSE=High, input connected
    assert gt.read(0x17C) == 0
    soc.pins[9].drive("ext", True)
    assert gt.read(0x17C) == 1 and (soc.cpu.irq_level >> 6) & 1


def test_ppi_timer_compare_toggles_pin_without_cpu():
    soc = Nrf52832()
    edges = []

    def on_change(lvl):                          # level changes only (not driven-state)
        if not edges or edges[-1][1] != lvl:
            edges.append((soc.clock.now, lvl))
    soc.peripherals["gpiote"].write(0x510, config(3, 20, pol=3))
    edges.append((0, soc.pins[20].level))        # OUTINIT=0
    soc.pins[20].on_change(on_change)
    ppi, t0 = soc.peripherals["ppi"], soc.peripherals["timer0"]
    ppi.write(0x510, 0x40008140)                 # CH[0].EEP = TIMER0 COMPARE[0]
    ppi.write(0x514, G + 0x000)                  # CH[0].TEP = GPIOTE OUT[0]
    ppi.write(0x504, 1)
    t0.write(0x510, 0)                           # 16 MHz
    t0.write(0x540, 160)                         # 10 us
    t0.write(0x200, 1)                           # COMPARE0_CLEAR
    t0.write(0x000, 1)
    soc.clock.advance_to(160 * T16 * 5)
    edges = edges[1:]
    assert [t for t, _ in edges] == [160 * T16 * k for k in range(1, 6)]
    assert [lvl for _, lvl in edges] == [True, False, True, False, True]


def test_firmware_rng_temp_ecb_and_port_detect(fw):
    from emu import Machine
    from conftest import assert_firmware_passed
    m = Machine(fw("periph_misc"), board="nrf52832")
    armed = m.symbol("armed")
    assert m.run_until(lambda: m.cpu.read32(armed) == 1, timeout_ms=50)
    assert "FAIL" not in m.console_text()
    m.soc.pins[13].drive("button", False)  # press: P0.13 low meets SENSE=Low
    r = m.run(ms=10)
    assert_firmware_passed(m, r, min_passes=8)
