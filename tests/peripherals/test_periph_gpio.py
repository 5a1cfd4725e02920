"""GPIO P0 register-level tests (PS v1.4 section 22)."""
from helpers.periph import soc_with

OUT, OUTSET, OUTCLR, IN, DIR, DIRSET, DIRCLR, LATCH, DETECTMODE = (
    0x504, 0x508, 0x50C, 0x510, 0x514, 0x518, 0x51C, 0x520, 0x524)


def cnf(n):
    return 0x700 + 4 * n


def test_output_drives_pin_only_when_dir_output():
    soc, g = soc_with("gpio")
    assert g.read(cnf(5)) == 2                   # reset: input, buffer disconnected
    g.write(OUTSET, 1 << 5)
    assert not soc.pins[5].driven
    g.write(DIRSET, 1 << 5)
    assert soc.pins[5].driven and soc.pins[5].level
    assert g.read(cnf(5)) & 1 == 1               # DIR mirrored in PIN_CNF
    g.write(OUTCLR, 1 << 5)
    assert soc.pins[5].level is False and g.read(OUT) == 0
    g.write(DIRCLR, 1 << 5)
    assert not soc.pins[5].driven


def test_in_needs_connected_buffer_and_pull():
    soc, g = soc_with("gpio")
    soc.pins[3].drive("button", True)
    assert g.read(IN) & (1 << 3) == 0            # input buffer disconnected
    g.write(cnf(3), 0)                           # input, connected
    assert g.read(IN) & (1 << 3)
    soc.pins[3].drive("button", None)
    assert g.read(IN) & (1 << 3) == 0            # floating reads 0
    g.write(cnf(3), 3 << 2)                      # pull-up
    assert soc.pins[3].level and g.read(IN) & (1 << 3)


def test_selected_pin_follows_the_peripheral_not_out():
    """PS 22: a pin a peripheral selects is controlled by it; GPIO OUT applies
    again when it lets go.  An output signal still needs DIR = output."""
    soc, g = soc_with("gpio")
    pin = soc.pins[7]
    changes = []
    pin.on_change(changes.append)
    g.write(DIRSET, 1 << 7)
    g.write(OUTSET, 1 << 7)
    assert pin.drivers == {"gpio": True}
    changes.clear()
    g.select(7, "spim0.SCK", False)
    assert pin.drivers == {"spim0.SCK": False} and changes == [False]   # one hand-over
    g.write(OUTSET, 1 << 7)
    g.write(OUTCLR, 1 << 7)
    g.write(OUTSET, 1 << 7)
    assert pin.drivers == {"spim0.SCK": False} and not pin.level
    g.write(DIRCLR, 1 << 7)                      # output signal: DIR still decides
    assert not pin.driven
    g.write(DIRSET, 1 << 7)
    g.select(7, "spim0.SCK", True)               # the peripheral's level changes
    assert pin.drivers == {"spim0.SCK": True}
    changes.clear()
    g.deselect(7, "spim0.SCK")
    assert pin.drivers == {"gpio": True} and changes == []    # OUT is high too: no edge


def test_own_direction_selection_and_release_to_input():
    soc, g = soc_with("gpio")
    pin = soc.pins[9]
    g.select(9, "gpiote0", True, own_dir=True)   # DIR input: it drives anyway
    assert pin.drivers == {"gpiote0": True}
    g.select(9, "gpiote0", None, own_dir=True)   # an input now: nobody drives
    assert not pin.driven
    g.deselect(9, "gpiote0")
    assert not pin.driven and g.selected == {}


def test_no_contention_warning_between_gpio_and_a_peripheral(caplog):
    """The bogus 'contention' of a PWM and GPIO OUT on one pin is gone; two
    real drivers of different levels are still reported."""
    soc, g = soc_with("gpio")
    g.write(DIRSET, 1 << 16)
    g.write(OUTSET, 1 << 16)                     # motor idle high
    with caplog.at_level("WARNING", logger="emu.signals"):
        g.select(16, "pwm0", False)
        g.write(OUTCLR, 1 << 16)
        g.write(OUTSET, 1 << 16)
        g.deselect(16, "pwm0")
        assert "contention" not in caplog.text
        soc.pins[16].drive("somebody", False)    # an external driver against GPIO high
        assert "contention" in caplog.text


def test_sense_latch_and_detect_modes():
    soc, g = soc_with("gpio")
    port = []
    soc.peripherals["gpiote"].port_detect = lambda: port.append(soc.clock.now)
    g.write(cnf(10), (3 << 16) | (3 << 2))       # SENSE=Low, pull-up
    assert g.read(LATCH) == 0 and port == []
    soc.pins[10].drive("button", False)          # press: low
    assert g.read(LATCH) == 1 << 10 and len(port) == 1
    g.write(LATCH, 1 << 10)                      # W1C, still low: set again
    assert g.read(LATCH) == 1 << 10
    soc.pins[10].drive("button", None)           # release
    g.write(LATCH, 1 << 10)
    assert g.read(LATCH) == 0
    # LDETECT: DETECT follows LATCH, so a second press only rises after clearing
    g.write(DETECTMODE, 1)
    soc.pins[10].drive("button", False)
    assert len(port) == 2
    soc.pins[10].drive("button", None)
    soc.pins[10].drive("button", False)
    assert len(port) == 2                        # LATCH never cleared: DETECT stayed high
    soc.pins[10].drive("button", None)
    g.write(LATCH, 1 << 10)
    soc.pins[10].drive("button", False)
    assert len(port) == 3
