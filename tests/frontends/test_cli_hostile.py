"""Hostile command lines: each bad input is one line on stderr naming the
problem, exit status 2, and nothing emulated (the demo firmware prints
"pinetime demo running" on stdout as soon as it starts, so an empty stdout
proves the run never began)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import free_port
from helpers.paths import EXAMPLES

STARTED = "pinetime demo running"


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "frontends.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def assert_refused(r, *words):
    """Exit 2, one stderr line holding every word, no traceback, nothing run."""
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got: {r.stderr!r}"
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert STARTED not in r.stdout


@pytest.fixture
def demo(fw):
    return fw("pinetime_demo")


def run_demo(demo, *args):
    # a long run: if a check is missing the test times out instead of passing
    return cli("run", demo, "--headless", "--flash-file", "none", *args)


@pytest.mark.parametrize("value,words", [
    ("inf", ["--seconds", "finite"]), ("nan", ["--seconds", "finite"]),
    ("-inf", ["--seconds"]), ("1e300", ["--seconds", "at most"]),
    ("0", ["--seconds", "greater than 0"]), ("ten", ["--seconds", "not a number"])])
def test_seconds_must_be_finite_positive_and_in_range(demo, value, words):
    assert_refused(run_demo(demo, "--seconds", value), *words)


@pytest.mark.parametrize("option,value,words", [
    ("--base", "-1", ["--base", "32-bit address"]),
    ("--base", "0x100000000", ["--base", "32-bit address"]),
    ("--scale", "0", ["--scale", "1 to 8"]),
    ("--scale", "two", ["--scale", "not a number"]),
    ("--bridge", "65536", ["--bridge", "TCP port"]),
    ("--gdb", "-1", ["--gdb", "TCP port"]),
    ("--log-level", "loud", ["--log-level"]),
    ("--bogus", None, ["unrecognized arguments: --bogus", "pinetime-emu run --help"])])
def test_bad_option_values_are_one_line(demo, option, value, words):
    extra = [option] if value is None else [option, value]
    assert_refused(run_demo(demo, "--seconds", "1", *extra), *words)


def test_screenshot_into_a_missing_directory_is_refused_before_the_run(demo, tmp_path):
    out = tmp_path / "no" / "such" / "x.png"
    r = run_demo(demo, "--seconds", "100000", "--screenshot", out)
    assert_refused(r, "--screenshot", str(out), "does not exist")
    assert_refused(run_demo(demo, "--seconds", "1", "--screenshot", tmp_path),
                   "--screenshot", "is a directory")


def test_save_snapshot_into_a_missing_directory_is_refused_before_the_run(demo, tmp_path):
    out = tmp_path / "no" / "x.snap"
    assert_refused(run_demo(demo, "--seconds", "100000", "--save-snapshot", out),
                   "--save-snapshot", "does not exist")


def test_flash_file_that_cannot_persist_is_refused(demo, tmp_path):
    # without the check this run exits 0 and the flash silently does not persist
    r = cli("run", demo, "--headless", "--seconds", "1",
            "--flash-file", tmp_path / "missing" / "flash.bin")
    assert_refused(r, "--flash-file", "does not exist")
    r = cli("run", demo, "--headless", "--seconds", "1", "--flash-file", tmp_path)
    assert_refused(r, "--flash-file", "is a directory")


def test_flash_file_never_clobbers_a_file_that_is_not_a_flash_image(demo, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")
    r = cli("run", demo, "--headless", "--seconds", "1", "--flash-file", notes)
    assert_refused(r, "--flash-file", "not a 4 MiB flash image")
    assert notes.read_text() == "precious\n"
    assert_refused(cli("run", demo, "--headless", "--seconds", "1", "--flash-file", demo),
                   "--flash-file", "the same file as FIRMWARE")


def test_flash_file_new_or_4mib_is_accepted(demo, tmp_path):
    new = tmp_path / "flash.bin"
    r = cli("run", demo, "--headless", "--seconds", "0.1", "--flash-file", new)
    assert r.returncode == 0, r.stderr
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    r = cli("run", demo, "--headless", "--seconds", "0.1", "--flash-file", empty)
    assert r.returncode == 0, r.stderr


def test_options_the_board_cannot_honour(demo, fw, tmp_path):
    bare = fw("cpu_exceptions")
    r = cli("run", bare, "--board", "nrf52832", "--headless", "--seconds", "0.1",
            "--flash-file", tmp_path / "f.bin")
    assert_refused(r, "--flash-file", "nrf52832", "no external SPI flash")
    r = cli("run", bare, "--board", "nrf52832", "--headless", "--seconds", "0.1",
            "--screenshot", tmp_path / "x.png")
    assert_refused(r, "--screenshot", "nrf52832", "no screen")
    assert not (tmp_path / "x.png").exists()
    assert_refused(run_demo(demo, "--seconds", "1", "--gdb-wait"), "--gdb-wait", "--gdb")
    assert_refused(run_demo(demo, "--seconds", "1", "--board", "apple-watch"),
                   "unknown board")


def test_text_file_named_elf_is_not_an_elf_file(tmp_path):
    p = tmp_path / "x.elf"
    p.write_text("this is not firmware\n")
    assert_refused(cli("run", p, "--headless", "--seconds", "1"), str(p), "not an ELF file")
    assert_refused(cli("info", p), str(p), "not an ELF file")


def test_other_files_that_are_not_firmware(tmp_path):
    z = tmp_path / "x.zip"
    z.write_text("hello\n")
    assert_refused(cli("run", z, "--headless", "--seconds", "1"), str(z), "not a zip file")
    t = tmp_path / "notes.bin"
    t.write_text("hello, world\n")
    assert_refused(cli("run", t, "--headless", "--seconds", "1"), str(t), "text file")
    short = tmp_path / "short.bin"
    short.write_bytes(b"\x00\x10\x00")
    assert_refused(cli("run", short, "--headless", "--seconds", "1"), "too short")
    # a character device would be read forever
    assert_refused(cli("run", "/dev/zero", "--headless", "--seconds", "1", timeout=30),
                   "/dev/zero", "not a regular file")


def test_run_help_names_every_format():
    r = cli("run", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for fmt in (".elf", ".hex", ".bin", "flash dump", "DFU .zip"):
        assert fmt in text, fmt


@pytest.mark.parametrize("command,words", [
    ("test", ["usage: pinetime-emu test", "--firmware", "--junit"]),
    ("phone", ["usage: pinetime-emu phone", "--port", "--repl", "--call"])])
def test_subcommand_help(command, words):
    r = cli(command, "--help")
    assert r.returncode == 0, r.stderr
    for w in words:
        assert w in r.stdout, w


def test_test_command_checks_its_report_path_before_running(demo, tmp_path):
    scen = str(EXAMPLES / "scenarios" / "pinetime_demo.yaml")
    r = cli("test", scen, "--firmware", demo, "--junit", tmp_path / "no" / "out.xml")
    assert_refused(r, "--junit", "does not exist")
    assert "PASSED" not in r.stdout and "scenario" not in r.stdout
    assert_refused(cli("test", scen), "--firmware")
    assert_refused(cli("test", scen, "--firmware", demo, "--bogus"), "--bogus")


@pytest.mark.parametrize("args,words", [
    ([], ["--gb", "--repl"]),                       # nothing to send
    (["--port", "70000", "--repl", "1"], ["--port", "TCP port"]),
    (["--gb", "{not json", ], ["--gb", "not JSON"]),
    (["--gb", "[1, 2]"], ["--gb", "JSON object"]),
    (["--wait", "nan", "--repl", "1"], ["--wait"]),
    (["--wait", "inf", "--repl", "1"], ["--wait"]),
    (["--binary", "--battery"], ["--binary", "--upload"]),
    (["--battery", "--id", "x"], ["--id"])])
def test_phone_bad_options(args, words):
    assert_refused(cli("phone", *args), "pinetime-emu phone", *words)


def test_phone_without_a_bridge_says_so():
    port = free_port()
    r = cli("phone", "--port", port, "--repl", "1+1")
    assert_refused(r, f"127.0.0.1:{port}", "--bridge")
