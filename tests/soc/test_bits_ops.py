"""Bus ops that set and clear bits of a model attribute (the BITS kind of
emu/soc/ops.py).

The NVIC's ISER/ICER words (emu.cpu.scs.ScsPage.write_op):
firmware/tests/cpu_nvic_enable.c disables and enables an interrupt around
pends, natively and in pure Python, in the same cycles; an enable of a
pending interrupt goes to the model (the run loop must take it at once).
The companion's op never bails and sees the interrupt taken late.

The RTC's EVTENSET/EVTENCLR (emu.peripherals.rtc.Rtc.write_op):
firmware/tests/periph_rtc_evten.c routes COMPARE0 to PPI on and off; a
write touching TICK goes to the model (its companion never sees TICK).

The NVIC's ICPR (BITS clearing bits of the CPU's ``pending``) and ISPR
(an ATTR op with a shift): firmware/tests/periph_line_lower.c clears pends
with ICPR and reads them with ISPR, natively and in pure Python in the same
cycles; an ICPR clearing a line still asserted goes to the model (it pends
again): the companion's op never bails and the firmware sees the pend gone.
InfiniTime's first 3 s are the same with the ops and with the model's code."""
import pytest

from conftest import assert_firmware_passed, assert_same_state, image_both_ways
from emu import Machine
from emu.cpu import scs
from emu.soc import ops

FW = "cpu_nvic_enable"


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_enables_and_disables_as_ops(fw, pure):
    m = Machine(fw(FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=8)
    st = m.soc.bus.access_stats()
    iser, icer = st[(0xE000E000, 0x100)], st[(0xE000E000, 0x180)]
    assert icer[2] >= 400 and icer[3] == 0          # ICER: always the op
    if not pure:
        assert iser[2] >= 400 and iser[3] == 200    # ISER: the op, the model for the 200 pends


def test_both_paths_agree(fw):
    runs = []
    for pure in (False, True):
        m = Machine(fw(FW), board="nrf52832", pure_python=pure)
        m.run(ms=50)
        runs.append((m.cpu.cycles, m.console_text(), m.cpu.core_registers()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_enable_op_that_never_bails_is_seen(fw, monkeypatch, pure):
    """Companion: an ISER op that sets the bit even when the interrupt is
    pending leaves the run loop unaware: the interrupt is taken late."""
    real = scs.ScsPage.write_op

    def never_bails(self, offset):
        op = real(self, offset)
        if op is not None and op.kind == ops.W_BITS and op.args[3] is not None:
            op = ops.Op(op.kind, op.obj, op.args[:3] + (None, 0), mask=op.mask)
        return op
    monkeypatch.setattr(scs.ScsPage, "write_op", never_bails)
    m = Machine(fw(FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=50)
    assert "FAIL enabling a pending interrupt takes it at once" in m.console_text()
    assert r.exit_code != 0


# -- the RTC's EVTENSET/EVTENCLR (firmware/tests/periph_rtc_evten.c) -------------
RTC_FW = "periph_rtc_evten"


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_rtc_evten_as_ops(fw, pure):
    m = Machine(fw(RTC_FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=100)
    assert_firmware_passed(m, r, min_passes=8)
    st = m.soc.bus.access_stats()
    assert st[(0x40011000, 0x344)][2] >= 51 and st[(0x40011000, 0x348)][2] >= 51
    if not pure:                                  # TICK's: the model
        assert st[(0x40011000, 0x344)][3] == 1 and st[(0x40011000, 0x348)][3] == 1


def test_rtc_evten_paths_agree(fw):
    runs = []
    for pure in (False, True):
        m = Machine(fw(RTC_FW), board="nrf52832", pure_python=pure)
        m.run(ms=100)
        runs.append((m.cpu.cycles, m.console_text(), m.cpu.core_registers()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_evtenset_op_that_never_bails_is_seen(fw, monkeypatch, pure):
    """Companion: an EVTENSET op that routes TICK itself leaves the RTC's
    schedule without TICK: EVENTS_TICK is never set."""
    from emu.peripherals import rtc
    real = rtc.Rtc.write_op

    def never_bails(self, offset):
        op = real(self, offset)
        if op is not None and op.kind == ops.W_BITS:
            op = ops.Op(op.kind, op.obj, op.args[:3] + (None, 0), mask=op.mask)
        return op
    monkeypatch.setattr(rtc.Rtc, "write_op", never_bails)
    m = Machine(fw(RTC_FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=100)
    assert r.reason != "exit"
    assert "PASS TICK routed" not in m.console_text()


# -- the NVIC's ICPR (BITS on pending) and ISPR (ATTR with a shift) ----------
# firmware/tests/periph_line_lower.c clears pends with ICPR and reads them
# back with ISPR around a line that is asserted (it pends again at once: the
# ICPR write goes to the model) and one that is lowered (the op clears it).
LINE_FW = "periph_line_lower"
SCS = 0xE000E000


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_icpr_ispr_as_ops(fw, pure):
    m = Machine(fw(LINE_FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=50)
    assert_firmware_passed(m, r, min_passes=11)
    st = m.soc.bus.access_stats()
    icpr, ispr = st[(SCS, 0x280)], st[(SCS, 0x200)]
    assert ispr[0] >= 7 and ispr[1] == 0              # ISPR[0]: the op, never the model
    if not pure:         # ICPR[0]: the op, the model for the two asserted lines
        assert icpr[2] >= 3 and icpr[3] == 2


def test_icpr_ispr_paths_agree(fw):
    runs = []
    for pure in (False, True):
        m = Machine(fw(LINE_FW), board="nrf52832", pure_python=pure)
        m.run(ms=50)
        runs.append((m.cpu.cycles, m.console_text(), m.cpu.core_registers()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_icpr_op_that_never_bails_is_seen(fw, monkeypatch, pure):
    """Companion: an ICPR op that clears an asserted line's pend for good:
    the line no longer pends again."""
    real = scs.ScsPage.write_op

    def never_bails(self, offset):
        op = real(self, offset)
        if op is not None and op.kind == ops.W_BITS and op.args[0] == "pending":
            op = ops.Op(op.kind, op.obj, op.args[:3] + (None, 0), mask=op.mask)
        return op
    monkeypatch.setattr(scs.ScsPage, "write_op", never_bails)
    m = Machine(fw(LINE_FW), board="nrf52832", pure_python=pure)
    r = m.run(ms=50)
    assert "FAIL a line still high pends again after ICPR" in m.console_text()
    assert r.exit_code != 0


def test_icpr_ispr_ops_change_nothing_on_infinitime(monkeypatch):
    """InfiniTime's first 3 s (FreeRTOS's tickless idle: ~680 ICPR writes
    and ~900 ISPR reads an emulated second; advertising heard by a scanner):
    with the ops or with the model's code for them (the CALL op and
    write_word), the same cycles, accesses per register, screen, air, RAM."""
    def with_ops(on):
        if not on:
            real_w, real_r = scs.ScsPage.write_op, scs.ScsPage.read_op
            monkeypatch.setattr(scs.ScsPage, "write_op", lambda self, off: None
                                if 0x280 <= off < 0x300 else real_w(self, off))
            monkeypatch.setattr(scs.ScsPage, "read_op", lambda self, off: ops.Op(
                ops.R_CALL, self, (self._rd_pending,)) if 0x200 <= off < 0x300
                else real_r(self, off))
    on, off = image_both_ways(
        "infinitime", 3.0, with_ops,
        extra=lambda m, on: {"icpr_by_model": m.soc.bus.access_stats()[(SCS, 0x280)][3]})
    assert on.pop("icpr_by_model") < off.pop("icpr_by_model")   # the ops did the work
    assert_same_state(on, off, "the ops and the model")
