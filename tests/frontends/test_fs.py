"""pinetime-emu fs and emu/norfs.py: the littlefs inside a NOR flash image.

Images made here (InfiniTime's layout at 0xB4000 and wasp-os's over the
whole flash), the command line's verbs, its safety (a failing command never
changes FLASH; bad images and paths are one line and exit status 2), a
bounded fuzz of corrupted images, and, with a real InfiniTime image, a file
put here read by InfiniTime running in the emulator."""
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("littlefs", reason="littlefs-python is not installed")

from emu.norfs import INFINITIME, LAYOUTS, NOR_SIZE, WASP_OS, NorFs, NorFsError  # noqa: E402
from frontends import fs as fs_cli  # noqa: E402
from helpers.paths import ROOT  # noqa: E402

CACHE = Path.home() / ".cache" / "pinetime-emu" / "infinitime"
BLANK = b"\xff" * NOR_SIZE


def cli(*args, cwd=None):
    """pinetime-emu fs ARGS in a subprocess: (status, stdout bytes, stderr text)."""
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "fs", *map(str, args)],
                       capture_output=True, cwd=cwd or ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    return r.returncode, r.stdout, r.stderr.decode()


def made(layout="infinitime", files=None) -> bytes:
    fs = NorFs(BLANK, layout, format=True)
    for path, data in (files or {}).items():
        parent = os.path.dirname(path)
        if parent != "/" and not fs.exists(parent):
            fs.mkdir(parent)
        fs.write(path, data)
    return fs.image()


# -- the geometry, as the firmwares' sources give it ------------------------
def test_layouts_match_the_firmwares():
    # InfiniTime src/components/fs/FS.h: startAddress 0x0B4000, size 0x34C000, 4 KiB blocks
    assert (INFINITIME.offset, INFINITIME.block_size, INFINITIME.block_count) == \
        (0x0B4000, 4096, 844)
    assert INFINITIME.offset + INFINITIME.size == NOR_SIZE
    assert (INFINITIME.read_size, INFINITIME.prog_size, INFINITIME.lookahead_size,
            INFINITIME.name_max) == (16, 8, 16, 50)
    # wasp-os: VfsLfs2 on FlashDevice(block_size=9): 512-byte blocks over 4 MiB
    assert (WASP_OS.offset, WASP_OS.block_size, WASP_OS.block_count) == (0, 512, 8192)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_superblock_is_disk_version_2_0(layout):
    """The watches' littlefs (2.3, 2.4) mount on-disk 2.0 only: a 2.1
    superblock would make InfiniTime reformat (and lose every file)."""
    img = made(layout, {"/a.txt": b"x"})
    lay = LAYOUTS[layout]
    region = img[lay.offset:lay.offset + 2 * lay.block_size]
    i = region.find(b"littlefs")
    assert i > 0
    version, block_size, block_count, name_max = struct.unpack_from("<IIII", region, i + 12)
    assert version == 0x00020000
    assert (block_size, block_count, name_max) == (lay.block_size, lay.block_count, lay.name_max)
    # nothing outside the filesystem's region was touched
    assert img[:lay.offset] == BLANK[:lay.offset]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_round_trip_and_detection(layout):
    img = made(layout, {"/fonts/teko.bin": bytes(range(256)) * 40, "/main.py": b"print(1)\n"})
    fs = NorFs(img)                               # found without being told
    assert fs.layout.name == layout
    assert [(e.name, e.is_dir) for e in fs.ls("/")] == [("fonts", True), ("main.py", False)]
    assert fs.read("/fonts/teko.bin") == bytes(range(256)) * 40
    fs.remove("/fonts", recursive=True)
    assert [e.name for e in NorFs(fs.image()).ls("/")] == ["main.py"]


def test_api_errors_are_one_line():
    fs = NorFs(made())
    for call, text in ((lambda: fs.read("/nope"), "no such file"),
                       (lambda: fs.write("/no/dir/x", b""), "no directory /no/dir"),
                       (lambda: fs.mkdir("/" + "n" * 51), "longer than 50 bytes"),
                       (lambda: fs.remove("/"), "root"),
                       (lambda: NorFs(b"\xff" * 100), "not a 4 MiB"),
                       (lambda: NorFs(BLANK), "no littlefs found"),
                       (lambda: NorFs(BLANK, "fat"), "unknown layout")):
        with pytest.raises(NorFsError, match=text) as e:
            call()
        assert "\n" not in str(e.value)
    with pytest.raises(NorFsError, match="no space"):
        fs.write("/big", os.urandom(INFINITIME.size))


# -- the command line --------------------------------------------------------
def test_cli_verbs(tmp_path):
    flash, src = tmp_path / "nor.bin", tmp_path / "hello.txt"
    src.write_bytes(b"hello watch\n")
    assert cli("put", flash, src, "/docs/", "--format", "--layout", "infinitime", "-p")[0] == 0
    assert flash.stat().st_size == NOR_SIZE
    status, out, err = cli("ls", flash, "-R")
    assert status == 0, err
    assert b"/docs/hello.txt" in out and b"12" in out and b"infinitime littlefs" in out
    assert cli("get", flash, "/docs/hello.txt", "-")[1] == b"hello watch\n"
    assert cli("get", flash, "/docs/hello.txt", cwd=tmp_path)[0] == 0
    assert (tmp_path / "hello.txt").read_bytes() == b"hello watch\n"
    assert cli("mkdir", flash, "/a/b/c", "-p")[0] == 0
    assert cli("rm", flash, "/docs", "-r")[0] == 0
    status, out, _err = cli("ls", flash)
    assert b"a/" in out and b"docs" not in out


def test_cli_failure_leaves_flash_alone(tmp_path):
    flash = tmp_path / "nor.bin"
    flash.write_bytes(made(files={"/keep.txt": b"keep"}))
    before = flash.read_bytes()
    os.utime(flash, (1, 1))
    for args, text in ((("rm", flash, "/nope"), "no such file"),
                       (("rm", flash, "/keep.txt", "/nope"), "no such file"),   # half done
                       (("mkdir", flash, "/keep.txt"), "already exists"),
                       (("put", flash, tmp_path / "missing", "/x"), "no such file"),
                       (("get", flash, "/keep.txt", flash), "same file"),
                       (("put", flash, flash, "/x"), None)):                   # too big
        status, _out, err = cli(*args)
        assert status == 2, (args, err)
        assert err.count("\n") == 1 and err.startswith("pinetime-emu fs: error: "), err
        if text:
            assert text in err
        assert flash.read_bytes() == before and flash.stat().st_mtime == 1, args
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]    # no temporaries


@pytest.mark.parametrize("content,text", [
    (b"", "not a 4 MiB"), (b"\xff" * 1000, "not a 4 MiB"),
    (bytes(NOR_SIZE), "no littlefs found"), (None, "no such file")])
def test_cli_bad_images(tmp_path, content, text):
    flash = tmp_path / "nor.bin"
    if content is not None:
        flash.write_bytes(content)
    status, _out, err = cli("ls", flash)
    assert status == 2 and text in err and err.count("\n") == 1, err
    status, _out, err = cli("ls", tmp_path)
    assert status == 2 and "not a regular file" in err


def test_cli_format_needs_layout(tmp_path):
    status, _out, err = cli("mkdir", tmp_path / "n.bin", "/a", "--format")
    assert status == 2 and "--layout" in err
    assert not (tmp_path / "n.bin").exists()


def test_corrupt_superblocks_refused():
    """Both copies of InfiniTime's root metadata pair overwritten: no
    filesystem (and a companion: one copy left, it still mounts)."""
    img = bytearray(made(files={"/a": b"1"}))
    o, b = INFINITIME.offset, INFINITIME.block_size
    one = bytearray(img)
    one[o:o + b] = os.urandom(b)
    assert NorFs(bytes(one)).read("/a") == b"1"
    img[o:o + 2 * b] = os.urandom(2 * b)
    with pytest.raises(NorFsError, match="no littlefs found"):
        NorFs(bytes(img))


def test_fuzz_corrupted_images_bounded():
    """Seeded: pieces of the metadata blocks overwritten; every outcome is a
    result or a NorFsError, never another exception or a hang."""
    fs = NorFs(made())
    for i in range(20):
        fs.write(f"/f{i}", bytes([i]) * (i * 300))
    base = fs.image()
    rng = random.Random(26)
    errors = 0
    for _ in range(120):
        d = bytearray(base)
        for _ in range(rng.randint(1, 8)):
            off = INFINITIME.offset + rng.randrange(0, 4 * INFINITIME.block_size)
            n = rng.randint(1, 256)
            d[off:off + n] = bytes(rng.randrange(256) for _ in range(n))
        try:
            f = NorFs(bytes(d))
            for path, e in f.walk("/"):
                if not e.is_dir:
                    f.read(path)
            f.write("/new", b"abc" * 100)
            f.image()
        except NorFsError:
            errors += 1
    assert errors < 120


def test_main_in_process(tmp_path, capsys):
    flash = tmp_path / "n.bin"
    assert fs_cli.main(["mkdir", str(flash), "/x", "--format", "--layout", "wasp-os"]) == 0
    assert fs_cli.main(["ls", str(flash)]) == 0
    assert "wasp-os littlefs" in capsys.readouterr().out


# -- InfiniTime reads a file put here ------------------------------------------
def _infinitime() -> str:
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if not p:
        found = sorted(CACHE.glob("pinetime-app-*.out"))
        p = str(found[-1]) if found else ""
    if not p or not Path(p).exists():
        pytest.skip("no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or build "
                    f"pinetime-app into {CACHE} (shared INFINITIME-BUILD.md)")
    return p


# AlarmController::AlarmSettings (InfiniTime src/components/alarm/AlarmController.h):
# version 1, hours, minutes, RecurType (an int), isEnabled
ALARM = struct.pack("<BBBxIBxxx", 1, 13, 37, 1, 0)


@pytest.mark.parametrize("with_file", [True, False], ids=["put", "companion-absent"])
def test_infinitime_reads_a_file_we_put(tmp_path, with_file):
    """/.system/alarm.dat put with ``fs put``: InfiniTime's AlarmController
    loads it at boot (13:37, daily); without it the default 07:00 stays."""
    from emu import Machine
    image = _infinitime()
    flash, src = tmp_path / "nor.bin", tmp_path / "alarm.dat"
    src.write_bytes(ALARM)
    if with_file:
        assert cli("put", flash, src, "/.system/alarm.dat", "-p", "--format",
                   "--layout", "infinitime")[0] == 0
    else:
        assert cli("mkdir", flash, "/.system", "--format", "--layout", "infinitime")[0] == 0
    m = Machine(image, flash_file=str(flash))
    try:
        r = m.run(seconds=3)
        assert r.ok, r
        start, end = m.symbols.extent("alarmController")
        ram = m.cpu.read_mem(start, end - start)
    finally:
        m.close()
    assert (ALARM[:3] in ram) == with_file
    assert (bytes([1, 7, 0]) in ram) == (not with_file)
    # InfiniTime mounted our filesystem rather than formatting a new one
    assert NorFs(flash.read_bytes()).exists("/.system")
