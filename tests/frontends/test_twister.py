"""Zephyr's twister against the emulator (frontends/twister.py): twister starts its
--device-serial-pty program on a pty, then runs ``west flash --skip-rebuild
-d BUILD`` (scripts/twister/west first on PATH), then reads the pty.  Here
the same sequence, with a firmware/ image in a build directory's place."""
import os
import pty
import select
import shutil
import subprocess
import sys
import time

from helpers.paths import ROOT


def _read_until(fd, needle: bytes, timeout: float) -> bytes:
    out = b""
    end = time.monotonic() + timeout
    while needle not in out and time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def test_twister_sequence(fw, tmp_path):
    build = tmp_path / "build"
    (build / "zephyr").mkdir(parents=True)
    shutil.copy(fw("cpu_svc"), build / "zephyr" / "zephyr.elf")
    env = dict(os.environ, PINETIME_EMU_TWISTER_STATE=str(tmp_path / "flashed"),
               PATH=f"{ROOT / 'scripts' / 'twister'}:{os.environ['PATH']}")
    master, slave = pty.openpty()
    serial = subprocess.Popen([sys.executable, "-m", "frontends.cli", "twister-serial",
                               "--board", "nrf52832", "--wait", "60"],
                              stdout=slave, stdin=slave, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    try:
        time.sleep(0.5)                           # twister flashes after the pty is up
        flash = subprocess.run(["west", "flash", "--skip-rebuild", "-d", str(build)],
                               env=env, capture_output=True, text=True, timeout=60)
        assert flash.returncode == 0, flash.stderr
        out = _read_until(master, b"PASS SVC calls", 60)
        assert b"PASS svc1 sum of r0-r3" in out, out[-2000:]
        serial.wait(timeout=30)                   # the harness firmware exits by itself
    finally:
        serial.kill()
        os.close(master)


def test_flash_without_a_build_is_one_line(tmp_path):
    env = dict(os.environ, PINETIME_EMU_TWISTER_STATE=str(tmp_path / "flashed"))
    r = subprocess.run([str(ROOT / "scripts" / "twister" / "west"), "flash", "-d",
                        str(tmp_path)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "no zephyr/zephyr.elf" in r.stderr
    assert "Traceback" not in r.stderr


def test_serial_without_a_flash_is_one_line(tmp_path):
    env = dict(os.environ, PINETIME_EMU_TWISTER_STATE=str(tmp_path / "flashed"))
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "twister-serial", "--wait", "0.3"],
                       env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2 and "nothing was flashed" in r.stderr
    assert r.stderr.count("\n") == 1


def test_flash_runs_without_the_emulators_dependencies():
    """scripts/twister/west falls back to the system python3, which may lack
    Unicorn: the CLI's twister-flash must not import the emulator (emu/__init__
    loads Machine lazily; the CLI's option types import no model)."""
    code = ("import sys; sys.modules['unicorn'] = None; sys.modules['capstone'] = None\n"
            "sys.argv = ['pinetime-emu', 'twister-flash', '--help']\n"
            "import frontends.cli\n"
            "frontends.cli.main()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 0 and "usage" in r.stdout and "Traceback" not in r.stderr, \
        r.stdout + r.stderr
