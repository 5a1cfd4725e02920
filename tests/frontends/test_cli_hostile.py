"""Hostile command lines: each bad input is one line on stderr naming the
problem, exit status 2, and nothing emulated (the demo firmware prints
"pinetime demo running" on stdout as soon as it starts, so an empty stdout
proves the run never began)."""
from __future__ import annotations

import os
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


# ---------------------------------------------------------------- issue 45
NUL = "a\x00b.png"       # a shell cannot pass one; a script calling main([...]) can
RUN_FILES = ["--screenshot", "--record", "--vcd", "--trace", "--trace-mmio", "--pcap", "--power",
             "--flash-file", "--save-snapshot", "--snapshot", "--softdevice-hex", "--bootloader"]


def in_process(argv, capsys):
    from frontends.cli import main
    try:
        rc = main(argv)
    except SystemExit as e:                       # argparse's one-line errors
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv", [
    ["run", "{fw}", "--headless", "--flash-file", "none", option, NUL] for option in RUN_FILES
] + [["run", NUL, "--headless"], ["info", NUL], ["preview", NUL, "--script", "run 1s"],
     ["preview", "{fw}", "--script", "run 1s", "--out", NUL],
     ["world", "--node", "a", NUL], ["world", "--pcap", NUL, "--node", "a", "{fw}"],
     ["world", "--node", "a", "{fw}", "--screenshot", NUL],
     ["world", "--node", "a", "{fw}", "--flash-file", NUL],
     ["fs", "ls", NUL], ["powercut", NUL, "--scenario", "s.yaml"],
     ["powercut", "{fw}", "--scenario", NUL],
     ["powercut", "{fw}", "--scenario", "s.yaml", "--junit", NUL],
     ["powercut", "{fw}", "--scenario", "s.yaml", "--flash-image", NUL]] + [
         ["phone", option, NUL] for option in
                           ("--exec", "--upload", "--push", "--pull", "--dfu", "--ota",
                            "--resources")],
    ids=lambda argv: " ".join(a for a in argv if a not in (NUL, "{fw}")))
def test_a_nul_byte_in_a_file_name_is_one_line(demo, capsys, argv):
    """Every option that names a file refuses a NUL byte in one line (the
    scenario runner's and run's raised ValueError: embedded null byte)."""
    rc, out, err = in_process([a.replace("{fw}", demo) for a in argv], capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, (rc, err)
    assert "cannot hold a NUL byte" in lines[0] and "\x00" not in lines[0], lines[0]
    assert STARTED not in out


def test_files_and_the_loader_refuse_a_nul_byte_however_they_are_called(tmp_path):
    """The checks under the command lines hold for Python callers too."""
    from emu.loader import FirmwareError, load_firmware
    from emu.outputs import Files, file_identity
    assert file_identity(NUL) == ("path", NUL)
    files = Files()
    files.read("--in", str(tmp_path / "in.bin"))
    files.write("--out", str(tmp_path / NUL))
    assert files.problem() == f"--out {tmp_path}/a\\0b.png: a file name cannot hold a NUL byte"
    ok = Files()
    ok.write("--out", str(tmp_path / "out.png"))
    assert ok.problem() is None
    with pytest.raises(FirmwareError, match="cannot hold a NUL byte"):
        load_firmware(NUL)


SURROGATE = "\udcff"     # what argv holds for a byte that is not UTF-8 (0xff)


@pytest.mark.parametrize("args,words", [
    (["--gb", "[" * 1000 + "]" * 1000], ["--gb", "nested more than 32 deep"]),
    (["--gb", '{"a": ' + "[" * 40 + "]" * 40 + "}"], ["--gb", "nested more than 32 deep"]),
    (["--upload", "/dev/zero"], ["--upload /dev/zero", "not a regular file"]),
    (["--exec", "/dev/zero"], ["--exec /dev/zero", "not a regular file"]),
    (["--push", "/dev/zero"], ["--push /dev/zero", "not a regular file"]),
    (["--dfu", "/dev/zero"], ["--dfu /dev/zero", "not a regular file"]),
    (["--ota", "/dev/zero"], ["--ota /dev/zero", "not a regular file"]),
    (["--ota", __file__], ["--ota", "corrupt DFU package"]),
    (["--resources", "/dev/zero"], ["--resources /dev/zero", "not a regular file"]),
    (["--upload", "/"], ["--upload /", "is a directory"]),
    (["--repl", SURROGATE], ["--repl", "not UTF-8 text", "\\udcff"]),
    (["--eval", "print(1)" + SURROGATE], ["--eval", "not UTF-8 text"]),
    (["--notify", SURROGATE, "body"], ["--notify", "not UTF-8 text"]),
    (["--call", "Bob", SURROGATE], ["--call", "not UTF-8 text"]),
    (["--gb", '{"t": "' + SURROGATE + '"}'], ["--gb", "not UTF-8 text"]),
    (["--music", "a", SURROGATE], ["--music", "not UTF-8 text"]),
    (["--send-notification", "--title", SURROGATE], ["--title", "not UTF-8 text"]),
    (["--send-notification", "--body", SURROGATE], ["--body", "not UTF-8 text"]),
    (["--pull", SURROGATE], ["--pull", "not UTF-8 text"]),
    (["--upload", __file__, "--as", SURROGATE], ["--as", "not UTF-8 text"]),
    (["--read", SURROGATE], ["--read", "not UTF-8 text"]),
    (["--write", "2a46", SURROGATE], ["--write", "not UTF-8 text"])])
def test_phone_refuses_what_it_cannot_send_in_one_line(args, words):
    """Found by a seeded hostile-input campaign: --gb nested a thousand deep
    raised RecursionError, --upload /dev/zero read until MemoryError, and
    arguments that are not UTF-8 raised UnicodeEncodeError once connected.
    All are refused before connecting (no bridge runs here)."""
    assert_refused(cli("phone", "--port", free_port(), *args), "pinetime-emu phone", *words)


def test_phone_refuses_a_file_larger_than_the_watch_can_hold(tmp_path):
    from frontends.bridge import MAX_INPUT
    big = tmp_path / "big.py"
    with open(big, "wb") as f:
        f.truncate(MAX_INPUT + 1)                     # sparse: no disk used
    for option in ("--upload", "--push", "--exec"):
        assert_refused(cli("phone", "--port", free_port(), option, big), option,
                       f"{MAX_INPUT + 1} bytes, more than")
    ok = tmp_path / "ok.py"
    with open(ok, "wb") as f:
        f.truncate(MAX_INPUT)                         # the largest is sent: no bridge here
    assert_refused(cli("phone", "--port", free_port(), "--upload", ok), "cannot connect")


def test_phone_upload_of_a_file_whose_name_is_not_utf8_needs_as(tmp_path):
    odd = tmp_path / os.fsdecode(b"app\xff.py")
    odd.write_text("x = 1\n")
    assert_refused(cli("phone", "--port", free_port(), "--upload", odd), "--upload",
                   "not UTF-8 text", "--as NAME")
    assert_refused(cli("phone", "--port", free_port(), "--upload", odd, "--as", "app.py"),
                   "cannot connect")


def test_gb_messages_as_gadgetbridge_nests_them_are_still_sent():
    from frontends.bridge import MAX_GB_DEPTH, _gb_json
    assert _gb_json('{"t": "notify", "a": [[1, {"b": [2]}]]}')["a"] == [[1, {"b": [2]}]]
    deepest = "[" * (MAX_GB_DEPTH - 1) + "]" * (MAX_GB_DEPTH - 1)
    assert _gb_json('{"a": ' + deepest + "}")
