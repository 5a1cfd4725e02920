"""The RTC's clock event, its re-planning and CPU writes of CC in C
(emu.peripherals._cores.RtcCore, used by emu.peripherals.rtc.Rtc when its Cells are
native): the same steps as Rtc._on_event, _rearm and Rtc.write's CC and
INTENSET/INTENCLR branches (the latter when TICK's routing changes: the
INTEN ops' ``slow``).

firmware/tests/periph_rtc_core.c (a periodic compare re-armed from its
handler as wasp-os's tick does, two CCs on one edge, an unrouted compare
polled, one routed to PPI and enabled, the N+1 window, TICK and overflow
interrupts) passes natively and in pure Python in the same cycles,
accesses per register and registers; the companion gives the core only
CC[0] and sees CC[1]'s event missing.  A snapshot taken mid-tick restores
into a machine whose core goes on in the same cycles.  On real firmware
(wasp-os's 1 kHz tick, InfiniTime's advertising and tickless idle), when the
images are present, the core on or off gives the same cycles, accesses per
register, screen, NOR, air and RAM."""

import pytest

from conftest import (assert_firmware_passed, assert_same_state, both_ways, image_both_ways,
                      flip, parity_state, run_fw)
from emu import Machine
from emu.peripherals import rtc

FW = "periph_rtc_core"
RTC1 = 0x40011000


def _rtc1(m):
    return m.soc.bus.slots[RTC1]


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_rtc_core_firmware_passes(fw, pure):
    m = Machine(fw(FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=100)
    assert_firmware_passed(m, r, min_passes=11)
    core = _rtc1(m)._core
    if pure:
        assert core is None
    else:      # the periodic ticks in C, the routed compare handed to the model
        assert core.fired >= 40 and core.handed >= 1
        st = m.soc.bus.access_stats()
        cc = st[(RTC1, 0x540)]
        assert cc[2] >= 30 and cc[3] == 0          # CC[0] writes: all by the op
        # INTENSET/INTENCLR switching TICK: the core's write_inten, not the model
        assert st[(RTC1, 0x304)][3] <= 1 and st[(RTC1, 0x308)][3] == 0


def test_native_and_python_agree(fw):
    runs = both_ways((False, True), lambda pure: run_fw(fw(FW), 100, pure_python=pure)[0])
    assert_same_state(runs[0], runs[1], "the core and the model")


def test_core_knowing_only_cc0_is_seen(fw, monkeypatch):
    """Companion: a core told the RTC has one CC register never sets CC[1]'s
    event: the firmware sees it missing on the shared edge."""
    from emu.peripherals import _cores
    real = _cores.RtcCore

    def one_cc(model, ev, clock, cells, num_cc, *rest):
        return real(model, ev, clock, cells, 1, *rest)
    monkeypatch.setattr(_cores, "RtcCore", one_cc)
    m = Machine(fw(FW), board="nrf52832")
    r = m.run(ms=100)
    assert "FAIL CC[1] on the shared edge" in m.console_text()
    assert r.exit_code != 0


def test_snapshot_mid_tick_goes_on_the_same(fw, tmp_path):
    """Save while the periodic compares run (the core's next edge pending),
    restore into a new machine: it ends in the same state as one never saved."""
    whole = Machine(fw(FW), board="nrf52832")
    whole.run(ms=100)
    m = Machine(fw(FW), board="nrf52832")
    m.run(us=300)
    assert _rtc1(m)._core.fired > 0
    path = str(tmp_path / "mid.snap")
    m.save_snapshot(path)
    r = Machine.from_snapshot(path)
    r.run(ms=100 - r.time * 1000)
    a, b = parity_state(whole), parity_state(r)
    for k in ("cycles", "console", "regs", "ram"):
        assert a[k] == b[k], f"{k} differs after the snapshot"


@pytest.mark.parametrize("which", ["wasp-os", "infinitime"])
def test_core_changes_nothing_on_real_firmware(monkeypatch, which):
    """wasp-os's boot and 1 kHz tick to 5 emulated s, InfiniTime's first 3 s
    (advertising heard by a scanner, FreeRTOS's tickless idle on RTC1, NimBLE
    on RTC0): the RTC core on or off, the same cycles, accesses per register,
    pending events, screen, NOR, air and RAM."""
    def fired(m, on):
        core = _rtc1(m)._core
        return {"fired": core.fired if core is not None else None}
    on, off = image_both_ways(which, 5.0 if which == "wasp-os" else 3.0,
                              flip(monkeypatch, rtc.Rtc, "native_core"), extra=fired)
    assert on.pop("fired") > 500 and off.pop("fired") is None    # the core did the ticks
    assert on["cycles"] > 60_000_000
    assert_same_state(on, off, "the RTC core and the model")


def test_a_replaced_step_turns_the_core_off(fw, monkeypatch):
    """A test (or subclass) replacing one of the steps the core writes again
    on the class gets the model's Python for all of them (it used to keep
    the core, which would not see the replacement)."""
    rearm = rtc.Rtc._rearm
    monkeypatch.setattr(rtc.Rtc, "_rearm", lambda self: rearm(self))
    m = Machine(fw(FW), board="nrf52832")
    assert _rtc1(m)._core is None
    assert_firmware_passed(m, m.run(ms=100), min_passes=11)
