"""Stopping a run loses nothing (issue 45): a headless `pinetime-emu run`,
with or without --bridge, stopped by Ctrl-C (SIGINT) or `kill` (SIGTERM)
writes every file it promised, whole, and still exits 130 or 143.

Before the fix a stopped run printed "interrupted" and wrote neither its
--screenshot nor its --save-snapshot nor its --power file (the recording,
the traces and the flash file were finished by the closers; a signal that
came while they were written killed the process half-way)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from emu import Machine
from emu.png import read_png

RECORDS, PAGE = 0x10000, 256      # where pinetime_outputs.c writes "NOR n"


def _stop_a_run(fw, tmp_path, sig, extra, record):
    """Run pinetime_outputs.elf with every output until it has written three
    NOR records, send ``sig``; (exit status, stderr, stdout)."""
    out = {k: tmp_path / v for k, v in dict(png="screen.png", rec=record, snap="run.snap",
                                            power="power.json", vcd="run.vcd",
                                            trace="run.trace", flash="flash.bin",
                                            pcap="air.pcap").items()}
    run = subprocess.Popen(
        [sys.executable, "-m", "frontends.cli", "run", fw("pinetime_outputs"), "--board",
         "pinetime", "--headless", *extra, "--flash-file", out["flash"], "--screenshot",
         out["png"], "--record", out["rec"], "--save-snapshot", out["snap"], "--power",
         out["power"], "--vcd", out["vcd"], "--trace", out["trace"], "--trace-range",
         "SysTick_Handler", "--pcap", out["pcap"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        seen = []
        deadline = time.monotonic() + 120
        while not any(line.startswith("NOR 3") for line in seen):
            seen.append(run.stdout.readline())
            assert seen[-1] and time.monotonic() < deadline, "".join(seen[-20:]) + (
                "" if seen[-1] else run.stderr.read())
        run.send_signal(sig)
        stdout, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return run.returncode, err, "".join(seen) + stdout, out


@pytest.mark.parametrize("sig,status,said", [
    (signal.SIGINT, 130, "pinetime-emu: interrupted"),
    (signal.SIGTERM, 143, "pinetime-emu: terminated")])
@pytest.mark.parametrize("extra", [["--bridge", "0"], ["--seconds", "100000"]],
                         ids=["bridge", "seconds"])
def test_a_run_stopped_by_a_signal_writes_every_file_whole(fw, tmp_path, sig, status, said,
                                                           extra):
    record = "run.gif" if sig == signal.SIGINT else "run.png"       # GIF and APNG
    rc, err, stdout, out = _stop_a_run(fw, tmp_path, sig, extra, record)
    assert rc == status, err
    assert "Traceback" not in err and said in err.splitlines(), err
    for key in ("png", "snap", "power"):
        assert f"{out[key]}" in err, (key, err)
    # the screenshot and the snapshot agree: the screen at the stop; the
    # recording's last frame too, but for the bar pinetime_outputs.c redraws
    # every second (the stop may land half-way through drawing it, before
    # the frame is sent)
    screen = read_png(str(out["png"]))
    assert screen.shape == (240, 240, 3)
    m = Machine(fw("pinetime_outputs"), board="pinetime", flash_file=None)
    m.load_snapshot(str(out["snap"]))
    assert m.time > 3.0
    assert (m.board.screen() == screen).all()
    rec = Image.open(out["rec"])
    assert rec.n_frames >= 3
    rec.seek(rec.n_frames - 1)
    last = np.array(rec.convert("RGB"))
    assert (last[:100] == screen[:100]).all() and (last[140:] == screen[140:]).all()
    assert (last[100:140] != last[0, 0]).any()             # the bar is in it
    if record.endswith(".gif"):
        assert out["rec"].read_bytes().endswith(b";")              # the GIF trailer
    else:
        assert out["rec"].read_bytes().endswith(b"IEND\xaeB`\x82")
    power = json.loads(out["power"].read_text())
    assert power["seconds"] > 3.0, power.keys()
    # the streams end with whole lines; the VCD at a time stamp
    assert out["vcd"].read_text().rstrip().splitlines()[-1].startswith("#")
    trace = out["trace"].read_text()
    assert trace.endswith("\n") and "SysTick_Handler" in trace.splitlines()[-1]
    pcap = out["pcap"].read_bytes()             # a header, then whole records only
    assert pcap[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") and len(pcap) >= 24
    at = 24
    while at < len(pcap):
        at += 16 + int.from_bytes(pcap[at + 8:at + 12], "little")
    assert at == len(pcap)
    # the flash file holds every record the firmware said it wrote
    flash = out["flash"].read_bytes()
    assert len(flash) == 4 << 20
    written = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("NOR ")]
    assert written and written == list(range(len(written))), written[-5:]
    for n in written:
        assert int.from_bytes(flash[RECORDS + PAGE * n:RECORDS + PAGE * n + 4], "little") == n


def test_a_signal_while_the_files_are_written_is_noted_and_they_finish(fw):
    """Once the run is over, a signal does not stop the writing half-way: it
    is noted, and the exit status is still its own."""
    from frontends.cli import _Terminator
    m = Machine(fw("pinetime_outputs"), board="pinetime", flash_file=None)
    term = _Terminator(m)
    term.handler(signal.SIGINT, None)           # during the run: the machine halts
    assert m.halt_requested and term.status == 130
    with pytest.raises(KeyboardInterrupt):
        term.handler(signal.SIGINT, None)       # a second Ctrl-C: at once
    late = _Terminator(m)
    late.writing = True
    late.handler(signal.SIGTERM, None)          # no exception: the writing goes on
    late.handler(signal.SIGINT, None)
    assert late.status == 143


@pytest.mark.parametrize("sig,status,said", [
    (signal.SIGINT, 130, "pinetime-emu: interrupted"),
    (signal.SIGTERM, 143, "pinetime-emu: terminated")])
def test_a_signal_as_soon_as_the_run_says_it_listens_loses_nothing(fw, tmp_path, sig, status,
                                                                   said):
    """A client may act on the first "listening" line at once.  The handlers
    were installed only when the run loop began, after the servers started
    (and after --gdb-wait's wait for a debugger): a signal there killed the
    run with no files (SIGTERM) or a traceback (SIGINT).  Here the run waits
    for GDB, which never comes, and the signal ends it with its files."""
    png, snap, flash = tmp_path / "screen.png", tmp_path / "run.snap", tmp_path / "flash.bin"
    run = subprocess.Popen(
        [sys.executable, "-m", "frontends.cli", "run", fw("pinetime_outputs"), "--board",
         "pinetime", "--headless", "--bridge", "0", "--gdb", "0", "--gdb-wait",
         "--flash-file", flash, "--screenshot", png, "--save-snapshot", snap],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        seen = []
        deadline = time.monotonic() + 120
        while not any("GDB stub listening" in line for line in seen):
            seen.append(run.stderr.readline())
            assert seen[-1] and time.monotonic() < deadline, "".join(seen)
        run.send_signal(sig)
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    err = "".join(seen) + err
    assert run.returncode == status, err
    assert "Traceback" not in err and said in err.splitlines(), err
    assert read_png(str(png)).shape == (240, 240, 3)
    m = Machine(fw("pinetime_outputs"), board="pinetime", flash_file=None)
    m.load_snapshot(str(snap))                  # whole: it loads
    assert not flash.exists() or flash.stat().st_size == 4 << 20   # written when changed


def test_ctrl_c_outside_a_run_is_one_line_not_a_traceback(tmp_path):
    """Ctrl-C where no run loop handles it (here `phone --repl` waiting for
    a watch that never answers) is one line and status 130, no traceback."""
    import socket
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    port = ls.getsockname()[1]
    phone = subprocess.Popen([sys.executable, "-m", "frontends.cli", "phone", "--port",
                              str(port), "--timeout", "60", "--repl", "1+1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ls.settimeout(60)
        conn, _ = ls.accept()                   # it is connected and waits for the prompt
        with conn:
            conn.recv(100)                      # what it typed: it is waiting now
            phone.send_signal(signal.SIGINT)
            _, err = phone.communicate(timeout=60)
    finally:
        ls.close()
        if phone.poll() is None:
            phone.kill()
            phone.wait()
    assert phone.returncode == 130, err
    assert err.strip().splitlines() == ["pinetime-emu: interrupted"], err
