"""The bus's register-table ops (emu/soc/ops.py; in C in emu/soc/_mmio.c)
behave exactly like the models they stand for.

firmware/tests/periph_fastpath.c drives the common accesses the way real
firmware does (MicroPython's masked RTC counter reads with live compare
interrupts, an INTENSET that must raise the line, an event clear that must
lower it, a masked plain register, polled legacy SPI, stores into read-only
flash).  It runs with the native bus and with the pure-Python one: cycles,
time, console (with its checksum of every value read), accesses and pin
levels must be identical.  The companions break an op and see the firmware
fail.  The same comparison on real wasp-os is in tests/firmware/test_wasp.py."""
import pytest

from emu import Machine
from emu.peripherals.rtc import Rtc
from emu.peripherals.spi import Spi
from emu import native
from emu.soc import ops

from conftest import assert_firmware_passed


def run(path, pure=False, ms=500):
    m = Machine(path, board="nrf52832", pure_python=pure)
    assert m.soc.bus.native == (not pure)
    r = m.run(ms=ms)
    return m, r


def fingerprint(m):
    soc = m.soc
    return {"cycles": m.cpu.cycles, "now": m.clock.now, "console": m.console_text(),
            "accesses": soc.bus.accesses,
            "pins": [p.level for p in soc.pins],
            "ignored_flash_writes": m.cpu.ignored_flash_writes}


@pytest.fixture
def native_bus():
    if native.load("emu.soc._mmio", pure=False) is None:
        pytest.skip("emu.soc._mmio not built")


def test_fastpath_firmware_passes_natively(fw, native_bus, caplog):
    with caplog.at_level("ERROR"):
        m, r = run(fw("periph_fastpath"))
    assert_firmware_passed(m, r, min_passes=10)
    assert not [rec for rec in caplog.records if rec.levelname == "ERROR"]   # no model errors
    stats = m.soc.bus.access_stats()
    rtc1 = 0x40011000
    # the ticks loop really went through the ops, not the model
    assert stats[(rtc1, 0x504)][0] > 1000 and stats[(rtc1, 0x504)][1] == 0
    assert stats[(rtc1, 0x308)][2] > 1000
    assert stats[(0x40000000, 0x418)][0] > 100 and stats[(0x40000000, 0x418)][1] == 0  # LFCLKSTAT
    assert m.cpu.ignored_flash_writes == 101


def test_native_and_pure_python_bus_agree(fw, native_bus):
    m1, r1 = run(fw("periph_fastpath"))
    m2, r2 = run(fw("periph_fastpath"), pure=True)
    assert r1.reason == r2.reason == "exit"
    assert "checksum 0x" in m1.console_text()
    assert fingerprint(m1) == fingerprint(m2)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_frozen_counter_op_is_seen(fw, monkeypatch, pure):
    """Companion: a COUNTER op that ignores time breaks the firmware's ticks."""
    if not pure and native.load("emu.soc._mmio", pure=False) is None:
        pytest.skip("emu.soc._mmio not built")
    orig = Rtc.read_op

    def frozen(self, offset):
        if offset == 0x504:
            return ops.Op(ops.R_CONST, self, (5,))
        return orig(self, offset)
    monkeypatch.setattr(Rtc, "read_op", frozen)
    m, r = run(fw("periph_fastpath"), pure=pure, ms=200)
    assert "PASS rtc counter advanced" not in m.console_text()


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_spi_ready_without_its_guard_never_completes(fw, monkeypatch, pure):
    """Companion: without the guard, a polled READY never sees its byte finish."""
    if not pure and native.load("emu.soc._mmio", pure=False) is None:
        pytest.skip("emu.soc._mmio not built")

    def unguarded(self, offset):
        return self._base_read_op(offset)
    monkeypatch.setattr(Spi, "read_op", unguarded)
    m, r = run(fw("periph_fastpath"), pure=pure, ms=200)
    assert "PASS rtc counter advanced" in m.console_text()
    assert "spi READY polled" not in m.console_text()
    assert r.reason != "exit"


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
def test_intenset_op_that_never_bails_misses_the_interrupt(fw, monkeypatch, pure):
    """Companion: an INTENSET that stored the bit without raising the line
    (slow_bits covering nothing, level ignored) loses the EGU interrupt."""
    if not pure and native.load("emu.soc._mmio", pure=False) is None:
        pytest.skip("emu.soc._mmio not built")
    from emu.peripherals.base import NrfPeripheral
    orig = NrfPeripheral._base_write_op

    def no_bail(self, offset, slow_bits=0):
        if offset == 0x304 and self.name == "egu0":
            return ops.Op(ops.W_VALUE, _InTen(self), (ops.MODE_W1S,))
        return orig(self, offset, slow_bits)
    monkeypatch.setattr(NrfPeripheral, "_base_write_op", no_bail)
    m, r = run(fw("periph_fastpath"), pure=pure, ms=200)
    assert "FAIL INTENSET with the event set interrupts once" in m.console_text()


class _InTen:
    """Stores into a model's inten as if it were a plain register (the break)."""

    def __init__(self, p):
        self.p = p

    @property
    def values(self):
        p = self.p

        class V(dict):
            def __getitem__(self, k):
                return p.inten

            def __setitem__(self, k, v):
                p.inten = v
        return V({0x304: p.inten})


@pytest.mark.parametrize("first,second", [(False, True), (True, False)],
                         ids=["native-then-python", "python-then-native"])
def test_snapshot_crosses_between_the_paths(fw, native_bus, tmp_path, first, second):
    """A snapshot taken mid-run on one path (events, INTEN and the RTC's counter
    base held in C memory, or in Python) restores on the other, and the run ends
    exactly as an uninterrupted one."""
    path = fw("periph_fastpath")
    whole, r = run(path, pure=first)
    assert r.reason == "exit"
    a = Machine(path, board="nrf52832", pure_python=first)
    a.run(ms=20)                                   # inside the ticks loop
    assert "PASS rtc counter advanced" not in a.console_text()
    snap = str(tmp_path / "mid.snap")
    a.save_snapshot(snap)
    b = Machine(path, board="nrf52832", pure_python=second)
    assert b.soc.bus.native == (not second)
    b.load_snapshot(snap)
    rtc = b.soc.peripherals["rtc1"]
    assert rtc.running and rtc.inten & (1 << 16)        # state came across
    r2 = b.run(ms=500)
    assert r2.reason == "exit"
    assert (b.cpu.cycles, b.clock.now, b.console_text()) == \
        (whole.cpu.cycles, whole.clock.now, whole.console_text())


def _display_run(fw, pure):
    m = Machine(fw("pinetime_display"), board="pinetime", flash_file=None, pure_python=pure)
    r = m.run(ms=3000)
    assert r.reason == "exit" and r.exit_code == 0, m.console_text()
    return m


def test_spi_streams_pixels_to_the_display_exactly(fw, native_bus):
    """The legacy SPI streams the pixel bytes in C (polled TXD/READY/RXD while
    the ST7789 is in RAMWR) and the display ends exactly as on the pure-Python
    path, byte for byte, at the same cycle."""
    m1, m2 = _display_run(fw, False), _display_run(fw, True)
    txd = m1.soc.bus.access_stats()[(0x40003000, 0x51C)]
    assert txd[2] > 100_000 and txd[3] < 100          # streamed, not the model
    assert m1.board.screen().tobytes() == m2.board.screen().tobytes()
    assert m1.board.screen().any()
    assert (m1.cpu.cycles, m1.clock.now, m1.board.spi.bytes_transferred) == \
        (m2.cpu.cycles, m2.clock.now, m2.board.spi.bytes_transferred)
    spi1, spi2 = (m.soc.peripherals["serial0"].variants[1] for m in (m1, m2))
    assert spi1.values[0x51C] == spi2.values[0x51C]    # TXD reads back the last byte
    assert spi1.save_model_state() == spi2.save_model_state()


def test_spi_stream_that_loses_bytes_is_seen(fw, native_bus, monkeypatch):
    """Companion: a hand-over that drops the last byte of every batch leaves a
    different picture than the byte-by-byte path."""
    from emu.devices.st7789 import St7789
    orig = St7789.stream
    monkeypatch.setattr(St7789, "stream", lambda self, data: orig(self, data[:-1]))
    m1 = _display_run(fw, False)
    monkeypatch.setattr(St7789, "stream", orig)
    m2 = _display_run(fw, True)
    assert m1.board.screen().tobytes() != m2.board.screen().tobytes()


def _flash_run(fw, pure, tmp_path):
    path = str(tmp_path / ("pure.bin" if pure else "native.bin"))
    m = Machine(fw("pinetime_flash"), board="pinetime", flash_file=path, pure_python=pure)
    r = m.run(ms=1000)
    return m, r


def test_spi_streams_nor_reads_exactly(fw, native_bus, tmp_path, monkeypatch):
    """NOR reads, page programs and status polls stream in C (the XT25F32
    answers the next bytes in advance: its array, 0xFF, the status): the
    firmware's programs and long read check their data, and the run ends
    exactly as on the pure-Python path."""
    from emu.devices.xt25f32 import Xt25f32
    streamed = {}
    orig = Xt25f32.stream

    def counted(self, data):
        streamed[self._cmd] = streamed.get(self._cmd, 0) + len(data)
        return orig(self, data)
    monkeypatch.setattr(Xt25f32, "stream", counted)
    m1, r1 = _flash_run(fw, False, tmp_path)
    assert streamed.get(0x02, 0) >= 256 + 8 and streamed.get(0x03, 0) > 4500
    m2, r2 = _flash_run(fw, True, tmp_path)
    assert_firmware_passed(m1, r1, min_passes=7)
    rxd = m1.soc.bus.access_stats()[(0x40003000, 0x518)]
    assert rxd[0] > 4500           # the long read streamed (status polls go to the model)
    assert (m1.cpu.cycles, m1.clock.now, m1.console_text()) == \
        (m2.cpu.cycles, m2.clock.now, m2.console_text())
    assert m1.board.flash.data == m2.board.flash.data


def test_nor_stream_that_loses_its_place_is_seen(fw, native_bus, tmp_path, monkeypatch):
    """Companion: a hand-over that does not move the NOR's read address on
    fails the firmware's long read."""
    from emu.devices.xt25f32 import Xt25f32
    monkeypatch.setattr(Xt25f32, "stream", lambda self, data: None)
    m, r = _flash_run(fw, False, tmp_path)
    assert "FAIL nor_long_read" in m.console_text()


def test_lfclkstat_cell_not_updated_is_detected(fw, native_bus):
    """Companion: LFCLKSTAT's cell (read by the native op without the GIL)
    left behind values[0x418]: the firmware's poll never sees the LFCLK run."""
    from emu.peripherals import clock_power

    def values_only(self, v):
        self.values[0x418] = v
    orig = clock_power.ClockPower._set_lfclkstat
    clock_power.ClockPower._set_lfclkstat = values_only
    try:
        m, r = run(fw("periph_fastpath"))
    finally:
        clock_power.ClockPower._set_lfclkstat = orig
    assert "PASS LFCLKSTAT polled until the LFCLK runs" not in m.console_text()
    stats = m.soc.bus.access_stats()
    assert stats[(0x40000000, 0x418)][0] > 1000 and stats[(0x40000000, 0x418)][1] == 0


def test_spi_guard_on_the_wrong_cell_is_seen(fw, native_bus, tmp_path, monkeypatch):
    """Companion: the SPI ops' guard (a byte shifting and due, read in C
    from its two cells) pointed at the TXD buffer's cell instead of the
    shift register's never bails: bytes the firmware polls for are not
    completed, and its NOR checks fail."""
    from emu.peripherals.spi import Spi
    monkeypatch.setattr(Spi, "_GUARD", ("_shifting", "_due", 1, 2))
    m = Machine(fw("pinetime_flash"), board="pinetime", flash_file=None)
    m.run(ms=20)
    assert "FAIL nor_jedec_id" in m.console_text()
