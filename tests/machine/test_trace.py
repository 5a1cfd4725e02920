"""--trace and --trace-mmio (emu/trace.py) on firmware/tests/periph_fastpath.c."""
import re
import subprocess
import sys

import pytest

from conftest import assert_firmware_passed
from emu import Machine


FW = "periph_fastpath"


def test_mmio_trace_names_registers_with_values_times_and_pcs(fw, tmp_path):
    m = Machine(fw(FW), board="nrf52832")
    t = m.trace_mmio(str(tmp_path / "mmio.txt"))
    r = m.run(ms=500)
    t.close()
    assert_firmware_passed(m, r, min_passes=10)
    lines = (tmp_path / "mmio.txt").read_text().splitlines()
    rtc = [l.split() for l in lines if " rtc1." in l]
    # main's first RTC1 accesses, as periph_fastpath.c writes them
    assert [(f[3], f[4], f[6]) for f in rtc[:4]] == [
        ("W4", "rtc1.CC[0]", "0x00000021"), ("W4", "rtc1.INTENSET", "0x00010000"),
        ("W4", "rtc1.EVTENSET", "0x00010000"), ("W4", "rtc1.TASKS_START", "0x00000001")]
    assert all(f[2].startswith("main") for f in rtc[:4])
    counters = [int(f[6], 16) for f in rtc if f[4] == "rtc1.COUNTER"]
    assert len(counters) > 1000 and counters == sorted(counters) and counters[-1] >= 40 * 33
    times = [float(l.split()[0]) for l in lines]
    assert times == sorted(times) and times[-1] > 0.03
    # every access the bus counted is in the trace
    assert len(lines) == m.soc.bus.accesses + sum(1 for l in lines if " SCS+" in l
                                                 or " DWT" in l or " ITM" in l)


def test_traces_do_not_change_the_run(fw, tmp_path):
    a = Machine(fw(FW), board="nrf52832")
    a.run(ms=500)
    b = Machine(fw(FW), board="nrf52832")
    t1 = b.trace_mmio(str(tmp_path / "m.txt"))
    t2 = b.trace(str(tmp_path / "i.txt"), range="mix")
    b.run(ms=500)
    t1.close()
    t2.close()
    assert (a.cpu.cycles, a.clock.now, a.console_text()) == \
        (b.cpu.cycles, b.clock.now, b.console_text())


def test_instruction_trace_disassembles_with_symbols_and_changes(fw, tmp_path):
    m = Machine(fw(FW), board="nrf52832")
    t = m.trace(str(tmp_path / "i.txt"), range="main")
    m.run(ms=2)
    t.close()
    lines = (tmp_path / "i.txt").read_text().splitlines()
    start, end = m.symbols.extent("main")
    addrs = [int(l.split()[1], 16) for l in lines]
    assert addrs[0] == start and all(start <= a <= end for a in addrs)
    assert lines[0].split()[2] == "main" and lines[0].split()[3].startswith("push")
    assert re.search(r"sp=0x2000[0-9a-f]{4}$", lines[0])      # the push moved sp
    movs = next(l for l in lines if "movs r2, #0x21" in l)
    assert movs.endswith("r2=0x21")


def test_trace_stops_at_its_limit(fw, tmp_path):
    m = Machine(fw(FW), board="nrf52832")
    t = m.trace_mmio(str(tmp_path / "m.txt"), limit=2000)
    m.run(ms=50)
    t.close()
    text = (tmp_path / "m.txt").read_text()
    assert len(text) < 2100 and text.splitlines()[-1].startswith("# trace stopped at its size")


@pytest.mark.parametrize("args, message", [
    (["--trace-range", "main"], "--trace-range needs --trace FILE"),
    (["--trace", "T", "--trace-range", "no_such_function"], "no symbol 'no_such_function'"),
    (["--trace", "T", "--trace-range", "0x2000-0x1000"], "END must be above START"),
    (["--trace-mmio", "T", "--trace-limit", "lots"], "bad size 'lots'"),
])
def test_trace_options_errors(fw, tmp_path, args, message):
    args = [a.replace("T", str(tmp_path / "t.txt")) if a == "T" else a for a in args]
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("periph_fastpath"),
                        "--board", "nrf52832", "--headless", "--seconds", "0.01", *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
