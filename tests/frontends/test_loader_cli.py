"""Loaders and the command line: good images run, bad images get a one-line
error naming the file and the problem, with exit status 2."""
from __future__ import annotations

import struct
import subprocess
import sys

import pytest

from frontends.cli import main
from emu.loader import FirmwareError, load_firmware


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "frontends.cli", *args], capture_output=True,
                          text=True, timeout=120)


def assert_bad(path, *words):
    r = run_cli("run", str(path), "--headless", "--seconds", "0.01", "--board", "nrf52832")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, f"expected one line, got: {r.stderr!r}"
    assert "Traceback" not in r.stderr
    assert str(path) in err[0]
    for w in words:
        assert w in err[0], (w, err[0])


def test_elf_hex_bin_load_the_same_program(fw):
    elf = load_firmware(fw("cpu_exceptions"))
    hexf = load_firmware(fw("cpu_exceptions", "hex"))
    binf = load_firmware(fw("cpu_exceptions", "bin"))
    assert elf.format == "elf" and hexf.format == "hex" and binf.format == "bin"
    assert elf.vector_table == hexf.vector_table == binf.vector_table == 0
    flat = lambda img: b"".join(d for a, d in sorted(img.segments))
    assert flat(hexf) == flat(binf)
    assert elf.symbols.lookup("main") is not None


@pytest.mark.parametrize("ext", ["elf", "hex", "bin"])
def test_cli_runs_each_format(fw, ext):
    r = run_cli("run", fw("cpu_exceptions", ext), "--headless", "--seconds", "0.01",
                "--board", "nrf52832")
    assert r.returncode == 0, r.stderr
    assert "PASS ICER clears" in r.stdout
    assert "FAIL" not in r.stdout


def test_raw_bin_defaults_to_0x26000_when_vectors_point_there(tmp_path):
    img = bytearray(b"\xff" * 256)
    struct.pack_into("<II", img, 0, 0x20010000, 0x26041)
    p = tmp_path / "app.bin"
    p.write_bytes(bytes(img))
    fi = load_firmware(str(p))
    assert fi.segments[0][0] == 0x26000
    assert fi.vector_table == 0x26000
    fi0 = load_firmware(str(p), base=0)
    assert fi0.segments[0][0] == 0


def test_full_flash_dump_is_loaded_at_zero(tmp_path, fw):
    code = open(fw("cpu_exceptions", "bin"), "rb").read()
    dump = code + b"\xff" * (512 * 1024 - len(code))
    p = tmp_path / "dump.bin"
    p.write_bytes(dump)
    fi = load_firmware(str(p))
    assert fi.format == "flashdump" and fi.segments[0][0] == 0 and fi.vector_table == 0


def test_truncated_elf(tmp_path, fw):
    data = open(fw("cpu_exceptions"), "rb").read()
    p = tmp_path / "trunc.elf"
    p.write_bytes(data[: len(data) // 3])
    assert_bad(p, "ELF")


def test_corrupt_elf(tmp_path):
    p = tmp_path / "garbage.elf"
    p.write_bytes(b"\x7fELF" + bytes(range(256)) * 4)
    assert_bad(p, "ELF")


def test_wrong_architecture(tmp_path, fw):
    data = bytearray(open(fw("cpu_exceptions"), "rb").read())
    struct.pack_into("<H", data, 18, 3)  # e_machine = EM_386
    p = tmp_path / "x86.elf"
    p.write_bytes(bytes(data))
    assert_bad(p, "not ARM")


def test_64bit_elf(tmp_path):
    p = tmp_path / "host.elf"
    p.write_bytes(open(sys.executable, "rb").read(4096 * 4))
    r = run_cli("run", str(p), "--headless", "--seconds", "0.01", "--board", "nrf52832")
    assert r.returncode == 2 and str(p) in r.stderr and "Traceback" not in r.stderr


def test_corrupt_hex(tmp_path, fw):
    lines = open(fw("cpu_exceptions", "hex")).read().splitlines()
    lines[3] = lines[3][:-2] + ("00" if lines[3][-2:] != "00" else "01")  # bad checksum
    p = tmp_path / "bad.hex"
    p.write_text("\n".join(lines) + "\n")
    assert_bad(p, "Intel HEX")


def test_image_outside_flash(tmp_path):
    from intelhex import IntelHex
    ih = IntelHex()
    for i in range(16):
        ih[0x90000000 + i] = i
    p = tmp_path / "far.hex"
    ih.write_hex_file(str(p))
    assert_bad(p, "outside flash")


def _elf_with_segments(segs):
    """A minimal ARM ELF32 with the given (paddr, bytes) PT_LOAD segments."""
    ehsize, phentsize = 52, 32
    off = ehsize + phentsize * len(segs)
    phdrs, blobs = b"", b""
    for paddr, data in segs:
        phdrs += struct.pack("<IIIIIIII", 1, off + len(blobs), paddr, paddr, len(data),
                             len(data), 5, 4)
        blobs += data
    ident = b"\x7fELF\x01\x01\x01" + b"\0" * 9
    eh = ident + struct.pack("<HHIIIIIHHHHHH", 2, 40, 1, 0x101, ehsize, 0, 0x05000400, ehsize,
                             phentsize, len(segs), 40, 0, 0)
    return eh + phdrs + blobs


def test_image_overlapping_itself(tmp_path):
    vec = struct.pack("<II", 0x20010000, 0x101) + b"\0" * 56
    p = tmp_path / "overlap.elf"
    p.write_bytes(_elf_with_segments([(0, vec), (0x20, b"\x00" * 64)]))
    assert_bad(p, "overlaps itself")


def test_empty_vector_table(tmp_path):
    p = tmp_path / "erased.bin"
    p.write_bytes(b"\xff" * 1024)
    assert_bad(p, "empty vector table")


def test_empty_file_and_missing_file(tmp_path):
    p = tmp_path / "empty.bin"
    p.write_bytes(b"")
    assert_bad(p, "empty file")
    assert_bad(tmp_path / "nope.elf", "no such file")


def test_fault_reports_pc_symbol_registers(fw):
    r = run_cli("run", fw("cli_fault"), "--headless", "--seconds", "1", "--board", "nrf52832")
    assert r.returncode == 1
    assert "about to fault" in r.stdout
    assert "read_bad_address" in r.stderr
    assert "0x60000000" in r.stderr          # BFAR / the bad address
    assert "pc=" in r.stderr and "r0=" in r.stderr and "CFSR=" in r.stderr
    assert "Traceback" not in r.stderr


def test_semihosting_exit_status(fw):
    r = run_cli("run", fw("cli_exit3"), "--headless", "--seconds", "1", "--board", "nrf52832")
    assert r.returncode == 1
    assert "exiting with 3" in r.stdout
    assert "status 3" in r.stderr


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ["--headless", "--seconds", "--screenshot", "--scale", "--bridge", "--gdb",
                "--gdb-wait", "--base", "--board", "--flash-file", "--fast", "--log-level"]:
        assert opt in out


def test_bad_option_value_is_usage_error():
    r = run_cli("run", "x.elf", "--seconds", "-1", "--headless")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_window_without_display_says_use_headless(fw):
    import os
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")}
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("cpu_exceptions"),
                        "--board", "nrf52832"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 2
    assert "--headless" in r.stderr and "Traceback" not in r.stderr


def test_cli_gdb_wait_then_gdb_multiarch_breaks_on_main(fw):
    import shutil
    import socket
    if shutil.which("gdb-multiarch") is None:
        pytest.fail("gdb-multiarch not installed (scripts/setup.sh installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emu_p = subprocess.Popen([sys.executable, "-m", "frontends.cli", "run", fw("gdb_target"),
                              "--board", "nrf52832", "--headless", "--gdb", str(port),
                              "--gdb-wait", "--console", "none"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = emu_p.stderr.readline()      # the stub says when it listens
        assert "GDB stub listening on 127.0.0.1" in line, line
        g = subprocess.run(["gdb-multiarch", "-batch", "-nx", "-ex",
                            f"target remote 127.0.0.1:{port}", "-ex", "break main", "-ex",
                            "continue", "-ex", "bt", "-ex", "kill", fw("gdb_target")],
                           capture_output=True, text=True, timeout=60)
        assert "#0  main" in g.stdout, g.stdout + g.stderr
        emu_p.wait(timeout=30)
    finally:
        emu_p.kill()


def test_symbol_table_reader_matches_pyelftools(fw):
    """The struct-based symbol reader gives exactly what pyelftools' per-symbol
    parsing gives (functions with the Thumb bit cleared, objects, labels
    without mapping symbols or undefined ones; the first of a name wins)."""
    import io

    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    from emu import loader
    for name in ("pinetime_demo", "sd_nus", "cpu_exceptions"):
        elf = ELFFile(io.BytesIO(open(fw(name), "rb").read()))
        ref, got = {}, {}
        for sec in elf.iter_sections():
            if not isinstance(sec, SymbolTableSection):
                continue
            loader._read_symbols(sec, elf.get_section(sec["sh_link"]).data(), got)
            for sym in sec.iter_symbols():
                t = sym["st_info"]["type"]
                if not sym.name or t not in ("STT_FUNC", "STT_OBJECT", "STT_NOTYPE"):
                    continue
                if t == "STT_NOTYPE" and (sym.name.startswith("$")
                                          or sym["st_shndx"] == "SHN_UNDEF"):
                    continue
                kind = {"STT_FUNC": "func", "STT_OBJECT": "object"}.get(t, "label")
                addr = sym["st_value"] & ~1 if kind == "func" else sym["st_value"]
                ref.setdefault(sym.name, (addr, sym["st_size"], kind))
        assert got == ref and len(got) > 20, name


def test_info_names_a_softdevice_and_how_to_run_it(tmp_path):
    """``info`` on an image holding a SoftDevice info structure (magic at
    0x3004) gives its firmware ID and where the application starts, read
    from that structure; an image without one says so."""
    import struct
    import subprocess
    import sys
    img = bytearray(b"\xff" * 0x3100)
    img[0:8] = struct.pack("<II", 0x20000400, 0xA81)           # an MBR-like vector table
    img[0x3000:0x3010] = struct.pack("<IIII", 0xFFFFFF2C, 0x51B1E5DB, 0x26000, 0xFFFF00B7)
    p = tmp_path / "sd.bin"
    p.write_bytes(bytes(img))

    def info(path):
        return subprocess.run([sys.executable, "-m", "frontends.cli", "info", str(path)],
                              capture_output=True, text=True, timeout=60)
    r = info(p)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("SoftDevice:")][0]
    assert "firmware ID 0x00b7" in line and "application from 0x26000" in line
    assert "--softdevice-hex" in line
    img[0x3004:0x3008] = b"\xff" * 4                          # no magic: no SoftDevice
    p.write_bytes(bytes(img))
    assert "SoftDevice:    not in image" in info(p).stdout
