"""SEGGER RTT through the emulated probe (issue 27): emu/rtt.py, the CLI's
--rtt / --rtt-port / --rtt-address, and frontends/rtt.py's TCP ports.

CI: firmware/tests/rtt_echo.c (our own RTT target side, firmware/common/rtt.h:
a blocking 64-byte terminal ring, a non-blocking 32-byte log ring, a down
ring it echoes) and its companions rtt_bad_id.c (the id written wrong: never
found) and rtt_bad_wroff.c (a WrOff beyond its ring: reported, skipped).
Real images when present: an InfiniTime 1.16.1 build with NRF_LOG over RTT
(``$PINETIME_EMU_INFINITIME_RTT_IMAGE`` or
~/.cache/pinetime-emu/infinitime/infinitime-rtt-*.out, built as
docs/debugging.md says) and Zephyr 3.1's shell sample on RTT (``<zephyr dir>/nrf52dk_nrf52832/
shell_rtt``); those tests skip with a message when the image is absent.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emu import Machine
from helpers.zephyr import ZEPHYR

CACHE = Path.home() / ".cache" / "pinetime-emu"
LINES = "".join(f"line {i:02d}: abcdefghijklmnopqrstuvwxyz\n" for i in range(10))
TERMINAL = "hello from rtt\n" + LINES + "echo:ok!\n"


def echo_run(fw, name="rtt_echo", seconds=1.0, **rtt_kw):
    m = Machine(fw(name), board="nrf52832")
    rtt = m.start_rtt(**rtt_kw)
    rtt.write(b"ok!")
    r = m.run(seconds=seconds)
    rtt.poll()
    return m, rtt, r


def test_terminal_log_and_echo_through_the_probe(fw):
    m, rtt, r = echo_run(fw)
    assert r.reason == "exit" and r.exit_code == 0, m.console_text()
    assert rtt.found and rtt.address == m.symbol("_SEGGER_RTT")
    assert rtt.text(0) == TERMINAL                 # 384 bytes through a 64-byte blocking ring
    assert [(c.name, c.size, c.mode) for c in rtt.up] == [("Terminal", 64, "block"),
                                                          ("Log", 32, "skip")]
    assert [(c.name, c.size) for c in rtt.down] == [("Terminal", 16)]
    # the log ring skipped what did not fit: only whole messages arrived,
    # as many as the firmware says it wrote
    written = int(m.console_text().split("log_written=")[1].split()[0])
    assert rtt.text(1) == "".join(f"log msg #{i:02d}\n" for i in range(written))
    assert rtt.errors == [] and rtt.pending(0) == 0


def test_same_bytes_and_cycles_every_run(fw):
    runs = []
    for _ in range(2):
        m, rtt, r = echo_run(fw)
        runs.append((rtt.data(0), rtt.data(1), m.cpu.cycles, rtt.polls, m.console_text()))
    assert runs[0] == runs[1]


def test_a_run_restored_from_a_snapshot_polls_where_the_saved_one_did(fw, tmp_path):
    m = Machine(fw("rtt_echo"), board="nrf52832")
    rtt = m.start_rtt()
    m.run(ms=3)                           # mid-way through the blocking writes
    before = rtt.data(0)
    m.save_snapshot(str(tmp_path / "rtt.snap"))
    m2 = Machine.from_snapshot(str(tmp_path / "rtt.snap"))
    rtt2 = m2.start_rtt()                 # a host device: started again after a restore
    for mm, r in ((m, rtt), (m2, rtt2)):
        r.write(b"ok!")
        mm.run(seconds=1)
        r.poll()
    assert rtt.text(0) == TERMINAL and before + rtt2.data(0) == rtt.data(0)
    assert m2.cpu.cycles == m.cpu.cycles


def test_a_slower_probe_paces_a_blocking_firmware(fw):
    """Blocking mode: the firmware waits for the probe, so polling every
    5 ms instead of 1 ms makes it slower, with the same bytes."""
    fast = echo_run(fw, poll_ms=1.0)
    slow = echo_run(fw, poll_ms=5.0)
    assert fast[1].text(0) == slow[1].text(0) == TERMINAL
    assert slow[0].cpu.cycles > fast[0].cpu.cycles + 5 * 64_000


def test_polling_changes_nothing_for_firmware_without_rtt(fw):
    out = []
    for with_rtt in (False, True):
        m = Machine(fw("gdb_target"), board="nrf52832")
        if with_rtt:
            rtt = m.start_rtt(poll_ms=0.001)            # many polls, many slice ends
        r = m.run(seconds=1)
        out.append((r.reason, m.cpu.cycles, m.console_text()))
        if with_rtt:
            assert not rtt.found and rtt.polls > 10
    assert out[0] == out[1]


def test_a_corrupted_id_is_not_found(fw):
    """Companion: with the id written wrong nothing is read, so the blocking
    writes give up and the firmware's own checks fail."""
    m, rtt, r = echo_run(fw, "rtt_bad_id")
    assert not rtt.found and rtt.data(0) == b"" and rtt.up == []
    assert rtt.pending(0) == 3                           # nowhere to put "ok!"
    assert r.reason == "exit" and r.exit_code != 0
    assert "FAIL no blocking write gave up" in m.console_text()


def test_a_wroff_beyond_the_ring_is_reported_and_skipped(fw):
    """Companion: the firmware puts the Log ring's WrOff past its end."""
    m, rtt, r = echo_run(fw, "rtt_bad_wroff")
    assert rtt.text(0) == TERMINAL                       # the other channels still work
    assert rtt.data(1) == b""
    assert len(rtt.errors) == 1 and "up channel 1: WrOff 40" in rtt.errors[0] \
        and "size 32" in rtt.errors[0]


def test_where_to_look(fw):
    m, rtt, _r = echo_run(fw, address="_SEGGER_RTT")
    assert rtt.text(0) == TERMINAL
    m, rtt, _r = echo_run(fw, address=Machine(fw("rtt_echo")).symbol("_SEGGER_RTT"))
    assert rtt.text(0) == TERMINAL
    m, rtt, _r = echo_run(fw, address=0x2000F000, seconds=0.2)   # nothing there
    assert not rtt.found and rtt.data(0) == b""
    m = Machine(fw("rtt_echo"), board="nrf52832")
    with pytest.raises(ValueError, match="no symbol"):
        m.start_rtt(address="nosuch")
    with pytest.raises(ValueError, match="not in RAM"):
        m.start_rtt(address=0x1000)
    with pytest.raises(ValueError):
        m.start_rtt(poll_ms=0)


def test_a_stray_id_without_a_block_behind_it_is_skipped(fw):
    """A RAM scan (an image without the _SEGGER_RTT symbol) finds the string,
    but only a block whose counts and descriptors make sense counts."""
    m = Machine(fw("gdb_target"), board="nrf52832")
    m.run(seconds=0.1)
    rtt = m.start_rtt()
    assert rtt.fixed is None
    m.cpu.write_mem(0x2000E000, b"SEGGER RTT\0\0\0\0\0\0" + (0).to_bytes(4, "little") * 2)
    m.cpu.write_mem(0x2000E100, b"SEGGER RTT\0\0\0\0\0\0" + (5000).to_bytes(4, "little") * 2)
    m.cpu.write_mem(0x2000E202, b"SEGGER RTT\0\0\0\0\0\0" + (1).to_bytes(4, "little") * 2)
    rtt.poll()
    assert not rtt.found                  # no up channel, absurd counts, misaligned
    m.cpu.write_mem(0x2000E100 + 16, (1).to_bytes(4, "little") + (0).to_bytes(4, "little"))
    rtt.poll()
    assert rtt.found and rtt.address == 0x2000E100
    m.cpu.write_mem(0x2000E100, b"X")     # its id overwritten: looked for again
    rtt.poll()
    assert not rtt.found


def test_tcp_ports_one_channel_each(fw):
    """--rtt-port's servers in process: the first client gets what was written
    before it came, and what it sends goes into the down ring."""
    from frontends.rtt import RttTcpServer
    m = Machine(fw("rtt_echo"), board="nrf52832")
    rtt = m.start_rtt()
    term, log_ = RttTcpServer(rtt, 0), RttTcpServer(rtt, 1)
    try:
        m.run(ms=2)                       # the greeting, before any client
        c0 = socket.create_connection(("127.0.0.1", term.port), timeout=5)
        c1 = socket.create_connection(("127.0.0.1", log_.port), timeout=5)
        c0.sendall(b"ok!")
        got0, got1 = b"", b""
        for _ in range(400):
            for s in (term, log_):
                s.poll()
            r = m.run(ms=1)
            for c, name in ((c0, 0), (c1, 1)):
                c.setblocking(False)
                try:
                    data = c.recv(4096)
                except BlockingIOError:
                    data = b""
                if name == 0:
                    got0 += data
                else:
                    got1 += data
            if r.reason == "exit" and got0.endswith(b"echo:ok!\n"):
                break
        assert got0.decode() == TERMINAL
        assert got1.decode().startswith("log msg #00\n")
        assert r.exit_code == 0, m.console_text()
    finally:
        term.close()
        log_.close()


def run_cli(*args, stdin=b"", timeout=60):
    return subprocess.run([sys.executable, "-m", "frontends.cli", "run", *map(str, args),
                           "--headless"], input=stdin, capture_output=True, timeout=timeout)


def test_cli_rtt_prints_channel_0_and_types_stdin(fw):
    r = run_cli(fw("rtt_echo"), "--board", "nrf52832", "--rtt", "--seconds", "1", stdin=b"ok!")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert out.startswith(TERMINAL), out               # RTT first, then the harness lines
    assert "PASS down bytes arrived" in out


def test_cli_rtt_option_errors(fw):
    for args, msg in (((["--rtt-address", "_SEGGER_RTT"]), "--rtt-address needs --rtt"),
                      ((["--rtt", "--rtt-address", "nosuch"]), "no symbol 'nosuch'"),
                      ((["--rtt", "--rtt-address", "0x1000"]), "not in RAM"),
                      ((["--rtt-port", "70000"]), "not a TCP port"),
                      ((["--rtt-port", "4000:99"]), "channel must be 0 to 63"),
                      ((["--rtt-port", "4000", "--rtt-port", "4000:1"]), "given twice"),
                      ((["--rtt-port", "4000", "--gdb", "4000"]), "also the --gdb port")):
        r = run_cli(fw("rtt_echo"), "--board", "nrf52832", "--seconds", "0.1", *args)
        err = r.stderr.decode()
        assert r.returncode == 2 and msg in err and "Traceback" not in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------- real images
def _infinitime_rtt() -> str:
    p = os.environ.get("PINETIME_EMU_INFINITIME_RTT_IMAGE")
    if not p:
        found = sorted((CACHE / "infinitime").glob("infinitime-rtt-*.out"))
        p = str(found[-1]) if found else ""
    if not p or not Path(p).exists():
        pytest.skip("no InfiniTime image with NRF_LOG over RTT: set "
                    "PINETIME_EMU_INFINITIME_RTT_IMAGE or build pinetime-app with "
                    "-DNRF_LOG_ENABLED=1 -DNRF_LOG_BACKEND_RTT_ENABLED=1 in the C and C++ "
                    f"flags into {CACHE / 'infinitime'}/infinitime-rtt-*.out "
                    "(docs/debugging.md)")
    return p


def test_infinitime_logs_its_boot_over_rtt_the_same_every_run():
    logs = []
    for _ in range(2):
        m = Machine(_infinitime_rtt(), flash_file=None)
        rtt = m.start_rtt()
        assert m.run(seconds=2).ok
        rtt.poll()
        logs.append((rtt.data(0), m.cpu.cycles))
    text = logs[0][0].decode()
    for line in ("<info> app: systemtask task started!", "<info> app: Logger task started!",
                 "<info> app: displayapp task started!"):
        assert line in text, text
    assert logs[0] == logs[1]


def test_polling_leaves_stock_infinitime_untouched():
    found = sorted((CACHE / "infinitime").glob("pinetime-app-*.out"))
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE") or (str(found[-1]) if found else "")
    if not p or not Path(p).exists():
        pytest.skip("no InfiniTime image (PINETIME_EMU_INFINITIME_IMAGE)")
    out = []
    for with_rtt in (False, True):
        m = Machine(p, flash_file=None)
        if with_rtt:
            rtt = m.start_rtt(poll_ms=1)
        m.run(seconds=1.5)
        out.append((m.cpu.cycles, m.board.screen().tobytes()))
        if with_rtt:
            assert not rtt.found
    assert out[0] == out[1]


def test_zephyr_shell_over_rtt():
    p = ZEPHYR / "nrf52dk_nrf52832" / "shell_rtt" / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p}: build samples/subsys/shell/shell_module with "
                    "-DCONF_FILE=prj_minimal_rtt.conf -DCONFIG_KERNEL_SHELL=y and the segger "
                    "module in ZEPHYR_MODULES (SHELL_MINIMAL leaves the kernel commands out)")
    m = Machine(str(p))
    rtt = m.start_rtt()
    assert m.run_until(lambda: b"rtt:~$ " in rtt.data(0), timeout_ms=2000)
    rtt.write(b"kernel version\r\n")
    assert m.run_until(lambda: b"Zephyr version 3.1.0" in rtt.data(0), timeout_ms=2000), \
        rtt.text(0)
    rtt.write(b"kernel threads\r\n")
    assert m.run_until(lambda: rtt.data(0).count(b"rtt:~$ ") >= 3, timeout_ms=2000)
    assert "shell_rtt" in rtt.text(0) and "sysworkq" in rtt.text(0)


def test_zephyr_shell_on_a_tcp_port():
    """The CLI end to end: --rtt-port serves the shell; a client types."""
    from conftest import free_port, served_run
    p = ZEPHYR / "nrf52dk_nrf52832" / "shell_rtt" / "zephyr.elf"
    if not p.exists():
        pytest.skip(f"no Zephyr image {p} (see test_zephyr_shell_over_rtt)")
    port = free_port()
    with served_run(p, "--rtt-port", port, "--fast"):
        deadline = time.monotonic() + 30
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "the RTT port never listened"
                time.sleep(0.1)
        got = b""
        s.settimeout(0.5)
        sent = False
        while time.monotonic() < deadline and b"Zephyr version" not in got:
            try:
                got += s.recv(4096)
            except socket.timeout:
                pass
            if b"rtt:~$ " in got and not sent:
                s.sendall(b"kernel version\r\n")
                sent = True
        s.close()
        assert b"Zephyr version 3.1.0" in got, got
