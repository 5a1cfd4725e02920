"""The NOR flash file's save temporaries (emu/devices/xt25f32.py).

A save writes a temporary beside the flash file (emu/outputs.py's
``.flash.bin.PID.*.tmp``) and renames it over the file; a process killed in
between leaves the temporary behind.  The next start removes such
temporaries when their process is gone, and ``.flash-XXXXXXXX`` left by
earlier versions once untouched for STALE_TEMP_SECONDS, and nothing else.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from emu.clock import Clock
from emu.devices.xt25f32 import STALE_TEMP_SECONDS, Xt25f32, remove_stale_temporaries
from emu.outputs import temporary_files
from helpers.paths import ROOT


# a child that saves a dirty flash and is stopped inside the save (fsync sleeps)
SAVER = """
import os, sys, time
from emu.clock import Clock
from emu.devices.xt25f32 import Xt25f32
f = Xt25f32(Clock(), sys.argv[1])
f.data[0] = 0
f.dirty = True
def slow_fsync(fd):
    print("saving", flush=True)
    time.sleep(60)
os.fsync = slow_fsync
f.save()
"""


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_a_save_killed_midway_leaves_a_temporary_the_next_start_removes(tmp_path):
    flash = tmp_path / "flash.bin"
    child = subprocess.Popen([sys.executable, "-c", SAVER, str(flash)], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "saving"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    temps = temporary_files(str(flash))
    assert len(temps) == 1 and not flash.exists(), list(tmp_path.iterdir())
    f = Xt25f32(Clock(), str(flash))              # its process is gone: removed at start
    assert not os.path.exists(temps[0])
    assert f.data[0] == 0xFF                      # the file never got the new content


def test_a_temporary_of_a_running_save_is_left_alone(tmp_path):
    flash = tmp_path / "flash.bin"
    mine = tmp_path / f".flash.bin.{os.getpid()}.abcdefgh.tmp"   # this process: alive
    mine.write_bytes(b"x")
    assert remove_stale_temporaries(str(flash)) == []
    assert mine.exists()


def test_only_stale_save_temporaries_are_removed(tmp_path):
    flash = tmp_path / "flash.bin"
    stale = tmp_path / ".flash-abc_1234"
    fresh = tmp_path / ".flash-fresh123"
    others = [tmp_path / ".flash-notes.txt", tmp_path / "flash-abcd1234",
              tmp_path / ".flash-abc12345.bak"]
    for p in [stale, fresh, *others]:
        p.write_bytes(b"x")
        if p is not fresh:
            _age(p, STALE_TEMP_SECONDS + 10)
    (tmp_path / ".flash-dir12345").mkdir()
    _age(tmp_path / ".flash-dir12345", STALE_TEMP_SECONDS + 10)
    assert remove_stale_temporaries(str(flash)) == [str(stale)]
    assert not stale.exists() and fresh.exists() and all(p.exists() for p in others)
    assert (tmp_path / ".flash-dir12345").is_dir()


def test_the_pattern_matches_what_save_writes(tmp_path):
    """save()'s temporaries are what the cleanup looks for."""
    import emu.outputs as outputs
    seen = []
    real = outputs.os.replace

    def spy(src, dst):
        seen.append(src)
        return real(src, dst)
    f = Xt25f32(Clock(), str(tmp_path / "flash.bin"))
    f.dirty = True
    outputs.os.replace = spy
    try:
        f.save()
    finally:
        outputs.os.replace = real
    assert len(seen) == 1 and os.path.basename(seen[0]).startswith(".flash.bin.")
    assert seen[0].endswith(".tmp")


def test_a_missing_directory_is_no_error(tmp_path):
    assert remove_stale_temporaries(str(tmp_path / "no" / "flash.bin")) == []
    Xt25f32(Clock(), str(tmp_path / "no" / "flash.bin"))
