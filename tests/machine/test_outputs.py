"""Nothing the emulator writes destroys what it was given, or what was there
before (issue 31; emu/outputs.py).

* every output of every command against the firmware, a symbolic link to
  it, a hard link to it and another output: exit 2, one line, nothing
  touched; the deliberate exception (--snapshot S --save-snapshot S) works;
* whole-file outputs are atomic: a write that fails halfway (an injected
  ENOSPC, a real full tmpfs where one can be mounted) keeps the previous file
  byte for byte and leaves no temporary file; a kill -9 mid-save leaves a
  snapshot that loads;
* streams (traces, VCD) that hit a write error stop with one line and a
  non-zero exit, leaving whole lines (and a whole VCD header);
* a NOR flash file that cannot be saved is one line and a non-zero exit.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import emu.outputs as outputs
from emu.outputs import Files, StreamOutput, atomic_write, temporary_files
from helpers.paths import ROOT

STARTED = "pinetime demo running"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def cli(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "frontends.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd, env=ENV)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    return lines[0]


def enospc_after(budget: int):
    """An os.write that writes ``budget`` bytes in all (the last write short),
    then fails with ENOSPC: a disk that fills up mid-write."""
    left = [budget]

    def write(fd, data):
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = min(len(data), left[0])
        left[0] -= n
        return os.write(fd, bytes(memoryview(data)[:n]))
    return write


def no_temporary_files(folder: Path) -> bool:
    return not [p for p in os.listdir(folder) if p.endswith(outputs.TMP_SUFFIX)]


# ---------------------------------------------------------------------------
# the module: identities and clashes
# ---------------------------------------------------------------------------
def test_files_see_symbolic_links_hard_links_and_spellings(tmp_path):
    fw = tmp_path / "fw.elf"
    fw.write_bytes(b"firmware")
    (tmp_path / "sym.elf").symlink_to("fw.elf")
    os.link(fw, tmp_path / "hard.elf")
    (tmp_path / "sub").mkdir()
    for same in ("sym.elf", "hard.elf", "sub/../fw.elf", "./fw.elf"):
        f = Files()
        f.read("FIRMWARE", str(fw))
        f.write("--vcd", str(tmp_path / same))
        assert f.problem() == (f"--vcd {tmp_path / same} is the same file as FIRMWARE {fw}: "
                               f"it would be overwritten; give another file name"), same
    # files that do not exist yet: the resolved path (a dangling link included)
    (tmp_path / "dangling").symlink_to("new.vcd")
    f = Files()
    f.write("--vcd", str(tmp_path / "new.vcd"))
    f.write("--trace", str(tmp_path / "dangling"))
    assert "--vcd" in f.problem() and "--trace" in f.problem()
    assert "same file" in f.problem()
    # companion: different files are fine
    f = Files()
    f.read("FIRMWARE", str(fw))
    f.write("--vcd", str(tmp_path / "a.vcd"))
    f.write("--trace", str(tmp_path / "b.trace"))
    assert f.problem() is None


def test_files_exceptions_are_only_the_declared_ones(tmp_path):
    snap = tmp_path / "s.snap"
    snap.write_bytes(b"x")
    f = Files()
    f.read("--snapshot", str(snap))
    f.write("--save-snapshot", str(snap), may_replace=("--snapshot",))
    assert f.problem() is None
    f.write("--screenshot", str(snap))                  # not allowed to replace it
    assert f.problem().startswith(f"--screenshot {snap} is the same file as --snapshot")
    g = Files()
    g.write("step 1", str(tmp_path / "a.png"), kind="shot", may_replace=("shot",))
    g.write("step 2", str(tmp_path / "a.png"), kind="shot", may_replace=("shot",))
    assert g.problem() is None
    g.write("--junit", str(tmp_path / "a.png"))
    assert "--junit" in g.problem() and "step 1" in g.problem()


# ---------------------------------------------------------------------------
# the module: atomic writes and streams
# ---------------------------------------------------------------------------
def test_atomic_write_failing_halfway_keeps_the_previous_file(tmp_path, monkeypatch):
    dest = tmp_path / "out.bin"
    dest.write_bytes(b"previous" * 1000)
    monkeypatch.setattr(outputs, "_os_write", enospc_after(3000))
    with pytest.raises(OSError) as e:
        atomic_write(str(dest), b"new" * 5000)
    assert e.value.errno == errno.ENOSPC
    assert dest.read_bytes() == b"previous" * 1000
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]
    # a new file that fails is not created at all
    with pytest.raises(OSError):
        atomic_write(str(tmp_path / "new.bin"), b"new" * 5000)
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]
    monkeypatch.undo()
    atomic_write(str(dest), b"new")            # companion: the writer does write
    assert dest.read_bytes() == b"new"


def test_atomic_write_through_a_link_keeps_the_link_and_the_mode(tmp_path):
    target = tmp_path / "real.png"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.png"
    link.symlink_to("real.png")
    atomic_write(str(link), b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert (target.stat().st_mode & 0o777) == 0o640
    old_mask = os.umask(0o027)
    try:                                  # a new file: as open() makes it, not mkstemp's 0600
        atomic_write(str(tmp_path / "new.png"), b"new")
    finally:
        os.umask(old_mask)
    assert ((tmp_path / "new.png").stat().st_mode & 0o777) == 0o640
    assert no_temporary_files(tmp_path)


def test_temporary_files_of_dead_processes_are_swept(tmp_path):
    dest = tmp_path / "s.snap"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f".s.snap.{dead}.abc{outputs.TMP_SUFFIX}"
    live = tmp_path / f".s.snap.{os.getppid()}.abc{outputs.TMP_SUFFIX}"  # alive: kept
    stale.write_bytes(b"half")
    live.write_bytes(b"half")
    atomic_write(str(dest), b"whole")
    assert not stale.exists() and live.exists()
    assert temporary_files(str(dest)) == [str(live)]


def test_stream_failing_mid_chunk_leaves_whole_lines(tmp_path, monkeypatch):
    path = tmp_path / "t.txt"
    told = []
    s = StreamOutput(str(path), on_error=told.append, chunk=100)
    monkeypatch.setattr(outputs, "_os_write", enospc_after(250))
    for i in range(100):
        s.write(f"line {i:04d} of the stream\n")
    s.close()
    assert told == [f"{path}: cannot write (No space left on device)"]
    assert s.error == told[0]
    data = path.read_text()
    assert 0 < len(data) <= 250 and data.endswith("\n")
    for i, line in enumerate(data.splitlines()):
        assert line == f"line {i:04d} of the stream"


# ---------------------------------------------------------------------------
# run: every output against the firmware, links to it, another output
# ---------------------------------------------------------------------------
RUN_OUTPUTS = ["--vcd", "--trace", "--trace-mmio", "--save-snapshot", "--screenshot",
               "--record", "--flash-file"]
OTHER = {"--vcd": "--trace", "--trace": "--trace-mmio", "--trace-mmio": "--vcd",
         "--save-snapshot": "--screenshot", "--screenshot": "--record",
         "--record": "--save-snapshot", "--flash-file": "--vcd"}


@pytest.fixture
def workdir(tmp_path, fw):
    shutil.copy(fw("pinetime_demo"), tmp_path / "fw.elf")
    (tmp_path / "sym.elf").symlink_to("fw.elf")
    os.link(tmp_path / "fw.elf", tmp_path / "hard.elf")
    return tmp_path


@pytest.mark.parametrize("option", RUN_OUTPUTS)
@pytest.mark.parametrize("target", ["fw.elf", "sym.elf", "hard.elf", "other"])
def test_run_refuses_an_output_that_is_an_input_or_another_output(workdir, option, target):
    before = (workdir / "fw.elf").read_bytes()
    listing = sorted(os.listdir(workdir))
    if target == "other":
        extra = [OTHER[option], "out.png"]
        target = "out.png"
    else:
        extra = []
    # were the check missing, this short run would exit 0 over the firmware
    r = cli("run", "fw.elf", "--headless", "--seconds", "0.05", "--console", "none",
            *(["--flash-file", "none"] if option != "--flash-file" else []),
            option, target, *extra, cwd=workdir)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = one_line(r.stderr)
    assert f"{option} {target}" in line and "same file" in line, line
    if extra:
        assert f"{extra[0]} out.png" in line, line
    else:
        assert "FIRMWARE fw.elf" in line, line
    assert STARTED not in r.stdout
    assert (workdir / "fw.elf").read_bytes() == before
    assert sorted(os.listdir(workdir)) == listing           # nothing created


def test_run_refuses_outputs_over_the_softdevice_hex_and_the_snapshot(workdir):
    (workdir / "s132.hex").write_text(":00000001FF\n")
    r = cli("run", "fw.elf", "--headless", "--softdevice-hex", "s132.hex",
            "--screenshot", "s132.hex", cwd=workdir)
    assert r.returncode == 2
    assert "--screenshot s132.hex is the same file as --softdevice-hex" in one_line(r.stderr)
    (workdir / "s.snap").write_bytes(b"not really")
    r = cli("run", "fw.elf", "--headless", "--snapshot", "s.snap", "--vcd", "s.snap",
            cwd=workdir)
    assert r.returncode == 2
    assert "--vcd s.snap is the same file as --snapshot s.snap" in one_line(r.stderr)
    assert (workdir / "s.snap").read_bytes() == b"not really"


def test_snapshot_continues_in_place(workdir):
    r = cli("run", "fw.elf", "--headless", "--seconds", "0.2", "--flash-file", "none",
            "--save-snapshot", "s.snap", cwd=workdir)
    assert r.returncode == 0, r.stderr
    r = cli("run", "fw.elf", "--headless", "--seconds", "0.2", "--snapshot", "s.snap",
            "--save-snapshot", "s.snap", cwd=workdir)
    assert r.returncode == 0, r.stderr
    assert "restored s.snap (t=0.200000 s)" in r.stderr
    assert "snapshot saved to s.snap (t=0.400000 s)" in r.stderr
    from emu.snapshot import read_snapshot
    meta, _blob = read_snapshot(str(workdir / "s.snap"))
    assert int(0.4 * 512e6) <= meta["time_ticks"] < int(0.401 * 512e6)   # run on from 0.2 s
    assert no_temporary_files(workdir)


# ---------------------------------------------------------------------------
# test and phone
# ---------------------------------------------------------------------------
def write_scenario(path: Path, steps: str) -> Path:
    path.write_text("name: t\nsteps:\n" + textwrap.indent(textwrap.dedent(steps), "  "))
    return path


@pytest.mark.parametrize("target", ["fw.elf", "sym.elf", "hard.elf", "shot.png", "t.yaml",
                                    "golden.png"])
def test_test_refuses_a_report_over_an_input_or_another_output(workdir, target):
    (workdir / "golden.png").write_bytes(b"golden")
    write_scenario(workdir / "t.yaml", """\
        - run: {ms: 5}
        - screenshot: shot.png
        - expect_screen: golden.png
        """)
    listing = sorted(os.listdir(workdir))
    before = {p: (workdir / p).read_bytes() for p in listing if (workdir / p).is_file()}
    r = cli("test", "t.yaml", "--firmware", "fw.elf", "--junit", target, cwd=workdir)
    assert r.returncode == 2, r.stdout + r.stderr
    line = one_line(r.stderr)
    assert f"--junit {target}" in line and "same file" in line, line
    assert "scenario" not in r.stdout                    # nothing ran
    assert sorted(os.listdir(workdir)) == listing
    assert all((workdir / p).read_bytes() == b for p, b in before.items())


def test_test_refuses_steps_that_overwrite_inputs(workdir):
    (workdir / "golden.png").write_bytes(b"golden")
    # compared with, then overwritten: the golden image would be lost
    write_scenario(workdir / "t.yaml", "- expect_screen: golden.png\n- screenshot: golden.png\n")
    r = cli("test", "t.yaml", "--firmware", "fw.elf", cwd=workdir)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "t.yaml step 2 (screenshot) " in line and "t.yaml step 1 (expect_screen)" in line
    assert (workdir / "golden.png").read_bytes() == b"golden"
    write_scenario(workdir / "u.yaml", "- save_snapshot: fw.elf\n")
    r = cli("test", "u.yaml", "--firmware", "sym.elf", cwd=workdir)
    assert r.returncode == 2
    assert "--firmware sym.elf" in one_line(r.stderr)
    (workdir / "s.snap").write_bytes(b"snap")
    write_scenario(workdir / "v.yaml", "- save_snapshot: s.snap\n")
    r = cli("test", "v.yaml", "--firmware", "fw.elf", "--snapshot", "s.snap", cwd=workdir)
    assert r.returncode == 2 and "--snapshot s.snap" in one_line(r.stderr)


def test_test_allows_save_then_load_and_a_repeated_screenshot(workdir):
    write_scenario(workdir / "t.yaml", """\
        - run: {ms: 5}
        - screenshot: out/shot.png
        - save_snapshot: out/a.snap
        - run: {ms: 5}
        - load_snapshot: out/a.snap
        - screenshot: out/shot.png
        - expect_screen: out/shot.png
        """)
    r = cli("test", "t.yaml", "--firmware", "fw.elf", "--junit", "report.xml", cwd=workdir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (workdir / "out" / "shot.png").read_bytes()[:4] == b"\x89PNG"
    assert "<testsuite" in (workdir / "report.xml").read_text()
    assert no_temporary_files(workdir) and no_temporary_files(workdir / "out")


def test_phone_checks_the_pull_destination_before_connecting(tmp_path):
    (tmp_path / "main.py").mkdir()
    port = 1                    # nothing listens: were the check late, it would say so
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "phone", "--port", str(port),
                        "--pull", "/flash/main.py"], capture_output=True, text=True,
                       cwd=tmp_path, env=ENV, timeout=60)
    assert r.returncode == 2
    assert one_line(r.stderr) == "pinetime-emu phone: error: --pull main.py: is a directory"
    from frontends.bridge import phone_files

    class A:
        exec_file = upload = push = None
        pull = "/flash/x.py"
    assert [(e.label, e.path, e.output) for e in phone_files(A).entries] == \
        [("--pull", "x.py", True)]


# ---------------------------------------------------------------------------
# atomic saves through the command line (in-process, an injected full disk)
# ---------------------------------------------------------------------------
def run_in_process(argv, capsys):
    from frontends import cli as cli_mod
    rc = cli_mod.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("option,name", [("--save-snapshot", "s.snap"),
                                         ("--screenshot", "shot.png"),
                                         ("--record", "rec.gif")])
def test_a_save_that_fails_halfway_keeps_the_previous_file(workdir, monkeypatch, capsys,
                                                           option, name):
    previous = os.urandom(50_000)
    (workdir / name).write_bytes(previous)
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(outputs, "_os_write", enospc_after(50))
    rc, out, err = run_in_process(["run", "fw.elf", "--headless", "--seconds", "0.1",
                                   "--flash-file", "none", "--console", "none", option, name],
                                  capsys)
    assert rc == 2, err
    line = one_line(err)
    assert name in line and "No space left on device" in line, line
    assert (workdir / name).read_bytes() == previous
    assert no_temporary_files(workdir)
    monkeypatch.setattr(outputs, "_os_write", os.write)        # companion: it saves
    rc, out, err = run_in_process(["run", "fw.elf", "--headless", "--seconds", "0.1",
                                   "--flash-file", "none", "--console", "none", option, name],
                                  capsys)
    assert rc == 0, err
    assert (workdir / name).read_bytes() != previous


def test_a_junit_report_that_fails_keeps_the_previous_one(workdir, monkeypatch, capsys):
    from frontends.scenario import main as test_main
    write_scenario(workdir / "t.yaml", "- run: {ms: 5}\n")
    (workdir / "report.xml").write_text("previous report\n")
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(outputs, "_os_write", enospc_after(10))
    rc = test_main(["t.yaml", "--firmware", "fw.elf", "--junit", "report.xml"])
    err = capsys.readouterr().err
    assert rc == 2 and "report.xml" in one_line(err)
    assert (workdir / "report.xml").read_text() == "previous report\n"
    assert no_temporary_files(workdir)


def test_flash_file_that_cannot_be_saved_is_one_line_and_exit_2(tmp_path, fw, monkeypatch,
                                                                 capsys):
    """pinetime_flash.c writes a record to the NOR flash on its first boot: the
    save at the end fails (full disk), the old image stays whole."""
    flash = tmp_path / "flash.bin"
    old = bytes([0xFF]) * (4 << 20)
    flash.write_bytes(old)
    monkeypatch.setattr(outputs, "_os_write", enospc_after(1 << 20))
    rc, out, err = run_in_process(["run", fw("pinetime_flash"), "--headless", "--seconds", "0.5",
                                   "--console", "none", "--flash-file", str(flash)], capsys)
    assert rc == 2, err
    assert one_line(err) == (f"pinetime-emu: error: {flash}: cannot save the flash (No space "
                             f"left on device); its last changes are not in the file")
    assert flash.read_bytes() == old and no_temporary_files(tmp_path)
    monkeypatch.setattr(outputs, "_os_write", os.write)        # companion: it persists
    rc, out, err = run_in_process(["run", fw("pinetime_flash"), "--headless", "--seconds", "0.5",
                                   "--console", "none", "--flash-file", str(flash)], capsys)
    assert rc == 0, err
    assert flash.read_bytes() != old


# ---------------------------------------------------------------------------
# streams through the command line
# ---------------------------------------------------------------------------
TRACE_LINE = re.compile(r"^\d+\.\d{9} 0x[0-9a-f]{8} \S+ +\S.*$")
VCD_LINE = re.compile(r"^(#\d+|[01xzXZ][!-~]+|b[01xzXZ]+ [!-~]+|\$\S+.*|\s*)$")


@pytest.mark.parametrize("option", ["--trace", "--vcd"])
def test_a_stream_that_hits_a_write_error_stops_with_one_line(workdir, monkeypatch, capsys,
                                                              option):
    budget = 200_000
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(outputs, "_os_write", enospc_after(budget))
    t0 = time.monotonic()
    rc, out, err = run_in_process(["run", "fw.elf", "--headless", "--seconds", "30",
                                   "--flash-file", "none", "--console", "none",
                                   option, "out.txt"], capsys)
    assert rc == 2, err
    assert one_line(err) == "pinetime-emu: error: out.txt: cannot write (No space left on device)"
    assert time.monotonic() - t0 < 25            # the run stopped; it did not go on 30 s
    data = (workdir / "out.txt").read_text()
    assert 0 < len(data) <= budget and data.endswith("\n")
    lines = data.splitlines()
    if option == "--trace":
        bad = [l for l in lines if not TRACE_LINE.match(l)]
    else:
        assert "$enddefinitions $end" in lines           # the whole header
        bad = [l for l in lines if not VCD_LINE.match(l)]
    assert not bad, bad[:3]


# ---------------------------------------------------------------------------
# a real full disk (a small tmpfs in a user and mount namespace) and kill -9
# ---------------------------------------------------------------------------
def _tmpfs_available(where: Path) -> str:
    if shutil.which("unshare") is None:
        return "no unshare(1)"
    where.mkdir(exist_ok=True)
    r = subprocess.run(["unshare", "-rm", "sh", "-c",
                        f"mount -t tmpfs -o size=64k tmpfs '{where}'"],
                       capture_output=True, text=True)
    return "" if r.returncode == 0 else f"cannot mount a tmpfs: {r.stderr.strip()}"


def test_a_real_full_disk(workdir, fw):
    mnt = workdir / "mnt"
    why = _tmpfs_available(mnt)
    if why:
        pytest.skip(f"no real full disk here ({why})")
    r = cli("run", "fw.elf", "--headless", "--seconds", "0.2", "--flash-file", "none",
            "--save-snapshot", "s.snap", cwd=workdir)
    assert r.returncode == 0, r.stderr
    shutil.copy(fw("pinetime_flash"), workdir / "flash.elf")
    py = sys.executable
    script = textwrap.dedent(f"""\
        set -u
        mount -t tmpfs -o size=1m tmpfs mnt || exit 90
        cp s.snap mnt/s.snap
        # fill the disk, leaving 96 KiB: the snapshot fits, a trace or the flash does not
        dd if=/dev/zero of=mnt/keep bs=4k count=24 2>/dev/null
        dd if=/dev/zero of=mnt/fill bs=4k 2>/dev/null
        rm mnt/keep
        run() {{ PYTHONPATH='{ROOT}' '{py}' -m frontends.cli run "$@"; }}
        dd if=/dev/zero of=mnt/fill2 bs=4k 2>/dev/null
        echo "== snapshot"
        run fw.elf --headless --seconds 0.2 --flash-file none --console none \\
            --snapshot s.snap --save-snapshot mnt/s.snap 2>&1; echo "rc=$?"
        cmp -s s.snap mnt/s.snap && echo "snapshot unchanged"
        ls -A mnt | grep -c tmp
        rm mnt/fill2
        echo "== trace"
        run fw.elf --headless --seconds 5 --flash-file none --console none \\
            --trace mnt/t.trace 2>&1; echo "rc=$?"
        cp mnt/t.trace t.trace; rm mnt/t.trace
        echo "== flash"
        run flash.elf --headless --seconds 0.5 --console none \\
            --flash-file mnt/flash.bin 2>&1; echo "rc=$?"
        ls -A mnt
        """)
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                       cwd=workdir, timeout=300)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    snap, trace, flash = out.split("== snapshot\n")[1].split("== trace\n")[0], \
        out.split("== trace\n")[1].split("== flash\n")[0], out.split("== flash\n")[1]
    assert "restored s.snap" in snap and "rc=2" in snap, snap
    assert "--save-snapshot mnt/s.snap: cannot write (No space left on device); the previous " \
           "file is unchanged" in snap, snap
    assert "snapshot unchanged" in snap and snap.strip().endswith("0"), snap   # no temp file
    assert "error: mnt/t.trace: cannot write (No space left on device)" in trace, trace
    assert "rc=2" in trace, trace
    data = (workdir / "t.trace").read_text()
    assert data and data.endswith("\n")
    assert all(TRACE_LINE.match(l) for l in data.splitlines())
    assert ("error: mnt/flash.bin: cannot save the flash (No space left on device)"
            in flash), flash
    assert "rc=2" in flash and "tmp" not in flash, flash


KILL_CHILD = """\
import os, sys, time
import emu.outputs as outputs
from emu import Machine
m = Machine(sys.argv[1], board="pinetime", flash_file=None)
m.run(ms=float(sys.argv[3]))
real = os.write
if sys.argv[4] == "halfway":
    def write(fd, data):          # half the snapshot reaches the disk, then we are killed
        n = real(fd, bytes(memoryview(data)[:len(data) // 2]))
        print("HALF", n, flush=True)
        time.sleep(600)
    outputs._os_write = write
print("SAVING", flush=True)
while True:
    m.save_snapshot(sys.argv[2])
    m.run(ms=1)
"""


def test_kill_9_during_a_snapshot_save_leaves_a_snapshot_that_loads(workdir, fw):
    from emu import Machine
    from emu.snapshot import read_snapshot
    snap = workdir / "s.snap"
    demo = str(workdir / "fw.elf")
    m = Machine(demo, board="pinetime", flash_file=None)
    m.run(ms=50)
    m.save_snapshot(str(snap))
    old = snap.read_bytes()
    assert len(old) > 20_000

    def child(mode, ms):
        return subprocess.Popen([sys.executable, "-c", KILL_CHILD, demo, str(snap), str(ms),
                                 mode], stdout=subprocess.PIPE, text=True, env=ENV)
    # killed with half the new snapshot written: the old one is whole
    p = child("halfway", 80)
    line = p.stdout.readline()
    assert line.startswith("SAVING"), line
    line = p.stdout.readline()
    assert line.startswith("HALF"), line
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert snap.read_bytes() == old
    assert len(temporary_files(str(snap))) == 1          # the half-written new one
    Machine(demo, board="pinetime", flash_file=None).load_snapshot(str(snap))
    # killed at random moments of repeated saves: always a snapshot that loads
    for delay in (0.05, 0.13, 0.29, 0.41):
        p = child("loop", 60)
        assert p.stdout.readline().startswith("SAVING")
        time.sleep(delay)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        meta, _blob = read_snapshot(str(snap))
        Machine(demo, board="pinetime", flash_file=None).load_snapshot(str(snap))
    # the next save sweeps what the killed processes left
    m.save_snapshot(str(snap))
    assert temporary_files(str(snap)) == []
