"""Shared fixtures: build the test firmware once, run it, read its verdict."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from helpers.paths import BUILD, FIRMWARE


@pytest.fixture(scope="session")
def firmware_dir() -> Path:
    """firmware/build, freshly built with `make` (needs gcc-arm-none-eabi)."""
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.fail("arm-none-eabi-gcc not found: install gcc-arm-none-eabi and "
                    "libnewlib-arm-none-eabi (see README)")
    jobs = os.environ.get("FIRMWARE_JOBS", "2")
    r = subprocess.run(["make", "-C", str(FIRMWARE), f"-j{jobs}", "-s"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.fail("building firmware/ failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    return BUILD


@pytest.fixture(scope="module")
def target_elf():
    """firmware/build/gdb_target.elf, built on its own (independent of other
    images), for the GDB stub's tests."""
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.fail("arm-none-eabi-gcc not found")
    r = subprocess.run(["make", "-C", str(FIRMWARE), "-s", "build/gdb_target.elf"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return str(BUILD / "gdb_target.elf")


@pytest.fixture
def fw(firmware_dir):
    """fw("name") -> path of firmware/build/name.elf"""
    def get(name: str, ext: str = "elf") -> str:
        p = firmware_dir / f"{name}.{ext}"
        assert p.exists(), f"{p} was not built"
        return str(p)
    return get


def verdict(machine, result) -> tuple[list, list]:
    """PASS and FAIL lines from a harness firmware's console."""
    lines = machine.console_text().splitlines()
    passes = [l for l in lines if l.startswith("PASS ")]
    fails = [l for l in lines if l.startswith("FAIL ")]
    return passes, fails


def assert_firmware_passed(machine, result, min_passes: int = 1) -> None:
    passes, fails = verdict(machine, result)
    text = machine.console_text()
    assert not fails, "firmware checks failed:\n" + "\n".join(fails) + "\n--- console:\n" + text
    assert result.reason == "exit", f"firmware did not exit ({result}); console:\n{text}"
    assert result.exit_code == 0, f"exit code {result.exit_code}; console:\n{text}"
    assert len(passes) >= min_passes, f"only {len(passes)} checks ran; console:\n{text}"


def run_fw(path: str, ms: float, board: str = "nrf52832", setup=None, **kw):
    """A machine for the firmware at ``path`` (``Machine(path, board=board,
    **kw)``; ``setup(machine)`` first, when given: listeners, input, a
    switch of the test build), run for ``ms`` emulated ms: (machine, result)."""
    from emu import Machine
    m = Machine(path, board=board, **kw)
    if setup is not None:
        setup(m)
    return m, m.run(ms=ms)


@pytest.fixture
def run_firmware(fw):
    """run_firmware(name, ms=100, board="nrf52832", setup=None, **kw) ->
    (machine, result): run_fw on firmware/build/name.elf"""
    def run(name: str, ms: float = 100, board: str = "nrf52832", **kw):
        return run_fw(fw(name), ms, board=board, **kw)
    return run


def cached_image(env: str, pattern: str) -> str:
    """A third-party image: ``$env``, else the newest match of ``pattern``
    under ~/.cache/pinetime-emu; the test is skipped, saying both, when
    neither exists."""
    cache = Path.home() / ".cache" / "pinetime-emu"
    p = os.environ.get(env)
    if not p:
        found = sorted(cache.glob(pattern))
        p = str(found[-1]) if found else ""
    if not p or not Path(p).exists():
        pytest.skip(f"no image: set {env} (or put one in {cache}/{pattern})")
    return p


def parity_state(m, board: bool = False) -> dict:
    """What a fast path and the path it stands for must leave the same: the
    cycles, the clock, the console, the core registers, the RAM, the
    peripheral accesses (in total and per register, op and model counted
    together: which of the two did it is what differs) and the pending
    clock events; with ``board``, the PineTime's screen, NOR and the air."""
    cpu = m.cpu
    st = {"cycles": cpu.cycles, "now": m.clock.now, "console": m.console_text(),
          "regs": cpu.core_registers(), "ram": cpu.read_mem(m.soc.RAM_BASE, m.soc.RAM_SIZE),
          "accesses": m.soc.bus.accesses,
          "per_register": {k: (s[0] + s[1], s[2] + s[3])
                           for k, s in m.soc.bus.access_stats().items()},
          "pending": m.clock.pending_events()}
    if board:
        st.update(screen=m.board.screen().tobytes(), nor=bytes(m.board.flash.data),
                  air=[tuple(p) for p in m.air.log])
    return st


IMAGES = {"wasp-os": ("PINETIME_EMU_WASP_IMAGE", "wasp-os/upstream/micropython.elf"),
          "infinitime": ("PINETIME_EMU_INFINITIME_IMAGE", "infinitime/pinetime-app-*.out")}


def both_ways(ways, start, board: bool = False, extra=None) -> list:
    """A fast path and the path it stands for (natively and in pure Python,
    a switch on and off, ...), each run to the point where they are
    compared: for each of ``ways``, ``start(way)`` returns that machine;
    its parity_state() (with ``board``), updated with ``extra(machine,
    way)`` when given (what else the test compares or checks).  The list of
    the states, in the order of ``ways``."""
    runs = []
    for way in ways:
        m = start(way)
        st = parity_state(m, board=board)
        if extra is not None:
            st.update(extra(m, way))
        runs.append(st)
    return runs


def flip(monkeypatch, owner, name: str):
    """turn(on): sets the switch ``owner.name`` (a class attribute such as
    CortexM.native_loop) for the rest of the test."""
    return lambda on: monkeypatch.setattr(owner, name, on)


def image_both_ways(which: str, seconds: float, turn, scanner: bool = True,
                    extra=None) -> list:
    """The cached image ``which`` (IMAGES; skipped when absent) run for
    ``seconds`` after ``turn(True)``, then after ``turn(False)`` (see
    flip()), with a scanner on the air unless ``scanner`` is False: the
    two parity_state()s with the board's screen, NOR and air (and
    ``extra``, as both_ways)."""
    from emu import Machine
    from emu.phone.scanner import Scanner
    path = cached_image(*IMAGES[which])

    def start(on):
        turn(on)
        m = Machine(path, flash_file=None)
        if scanner:
            Scanner(m.air)
        m.run(seconds=seconds)
        return m
    return both_ways((True, False), start, board=True, extra=extra)


def assert_same_state(a: dict, b: dict, between: str) -> None:
    """Two parity_state() dicts (a fast path and the path it stands for)
    are equal, key by key: the first that is not is named."""
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == b[k], f"{k} differs between {between}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (for --bridge/--gdb)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def repl_ready(port: int, timeout_s: float = 120.0, in_paste_mode: bytes = b"") -> int:
    """Wait, on the host's clock, until the watch behind ``run --bridge
    PORT`` shows its REPL prompt, without a Ctrl-C: a verb's Ctrl-C while
    wasp-os's boot still runs stops it half-way, on a watch too (the
    working directory stays '/', not '/flash': the files seem gone).  Enter
    is typed until a prompt comes back; bytes typed during the boot wait in
    the watch's buffer and are harmless.  A watch that answers ``=== `` is in
    paste mode: ``in_paste_mode`` is typed then (once).  Returns how many
    times that was done."""
    import time
    deadline = time.monotonic() + timeout_s
    got = b""
    pasted = 0
    while time.monotonic() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            time.sleep(0.5)
            continue
        with s:
            s.settimeout(1.0)
            got = b""
            end = min(deadline, time.monotonic() + 15)
            s.sendall(b"\r")
            while time.monotonic() < end:
                try:
                    data = s.recv(4096)
                except socket.timeout:
                    s.sendall(b"\r")
                    continue
                if not data:
                    break
                got += data
                if got.endswith(b">>> "):
                    return pasted
                if got.endswith(b"=== ") and in_paste_mode and not pasted:
                    pasted += 1
                    s.sendall(in_paste_mode)
        time.sleep(1.0)
    raise AssertionError(f"no REPL prompt from the watch on port {port} within {timeout_s:g} s "
                         f"(last: {got[-120:]!r})")


@contextlib.contextmanager
def served_run(*run_args):
    """``pinetime-emu run --headless ...`` in another process for the body of
    a ``with``; it serves until the end of the block (no --seconds), then
    SIGTERM must end it cleanly (exit 143).  A failing assertion in the block
    gets what the emulator printed, which says why a bridge closed."""
    import signal
    import sys
    import tempfile
    # stderr to a file, not a pipe: a pipe nobody reads fills up and stops
    # the emulator in the middle of a write
    log = tempfile.TemporaryFile("w+")
    run = subprocess.Popen([sys.executable, "-m", "frontends.cli", "run", *map(str, run_args),
                            "--headless"], stdout=subprocess.DEVNULL, stderr=log, text=True)

    def printed() -> str:
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()
        log.seek(0)
        return log.read()
    try:
        yield run
    except AssertionError as e:
        status = run.poll()
        if status is None:
            run.send_signal(signal.SIGTERM)
        raise AssertionError(f"{e}\n--- pinetime-emu run (exit {status} while the test "
                             f"ran) printed:\n{printed()}") from None
    else:
        assert run.poll() is None, f"the run ended under the test: {printed()}"
        run.send_signal(signal.SIGTERM)
        err = printed()
        assert run.returncode == 143 and "Traceback" not in err, (run.returncode, err)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        log.close()


@pytest.fixture
def fault_build(monkeypatch):
    """The native modules' test build (fault switches compiled in:
    emu/_faults.h) in place of the installed one for this test; machines
    made inside the test run on it.  {name: module}."""
    from helpers.nativebuild import swap_in
    return swap_in(monkeypatch, "faults")
