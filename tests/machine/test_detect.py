"""Board detection (emu/detect.py): the chip and board an image was built for,
from what the image says about itself, not from its initial stack pointer.

* every image firmware/ builds, for both chips, in every format it builds;
* copies with a low initial SP (where Zephyr puts it, at the top of its
  interrupt stack), which the old rule (SP <= 0x20004000: micro:bit) ran on
  the Cortex-M0, where they faulted at their first Thumb-2 instruction;
* a raw .bin and an Intel HEX (no attributes, no symbols: judged by the
  vector table's length and the code reached from it), and a raw .bin that
  holds nothing to judge by;
* conflicting evidence: one line naming the boards, exit status 2, no
  traceback, before anything runs (CLI), BoardDetectionError (Python API);
* Debian's micro:bit MicroPython hex is still a micro:bit;
* real Zephyr 3.1 builds for nrf52dk_nrf52832 and pinetime_devkit0 (and
  bbc_microbit) when present: ``$PINETIME_EMU_ZEPHYR_DIR`` or
  ``~/.cache/pinetime-emu/zephyr``, laid out as
  ``<board>/<sample>/zephyr.{elf,hex,bin}`` (skipped otherwise).
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from emu import Machine
from emu.detect import BOARD_CHIP, NRF51, NRF52, BoardDetectionError, detect
from emu.loader import FirmwareError, load_firmware
from helpers.images import mcuboot_image
from helpers.microbit import MICROBIT_HEX
from helpers.zephyr import ZEPHYR as ZEPHYR_DIR
from helpers.paths import FIRMWARE

ZEPHYR_BOARDS = {"nrf52dk_nrf52832": "nrf52dk", "pinetime_devkit0": "pinetime",
                 "bbc_microbit": "microbit"}
TESTS = FIRMWARE / "tests"
LOW_SP = 0x200010F8             # Zephyr 3.1 hello_world's initial SP on the nRF52 DK


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "frontends.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120, input=stdin)


def old_rule(path) -> str:
    """What detect_board said before: the initial SP alone."""
    img = load_firmware(str(path))
    sp, reset = img.word_at(img.vector_table), img.word_at(img.vector_table + 4)
    return "microbit" if 0x20000000 < sp <= 0x20004000 and reset < 0x40000 else "pinetime"


def with_sp(src, dst: Path, sp: int) -> Path:
    """A copy of ``src`` whose vector table's word 0 (the initial SP) is ``sp``:
    for an ELF the file offset comes from its PT_LOAD segments."""
    data = bytearray(Path(src).read_bytes())
    vt = load_firmware(str(src)).vector_table
    if str(src).endswith(".hex"):
        from intelhex import IntelHex
        ih = IntelHex(str(src))
        ih.puts(vt, struct.pack("<I", sp))
        ih.write_hex_file(str(dst))
        assert load_firmware(str(dst)).word_at(vt) == sp
        return dst
    if data[:4] == b"\x7fELF":
        from elftools.elf.elffile import ELFFile
        with open(src, "rb") as f:
            seg = next(s for s in ELFFile(f).iter_segments()
                       if s["p_type"] == "PT_LOAD" and s["p_paddr"] <= vt < s["p_paddr"] +
                       s["p_filesz"])
            off = seg["p_offset"] + vt - seg["p_paddr"]
    else:
        off = vt - load_firmware(str(src)).segments[0][0]
    struct.pack_into("<I", data, off, sp)
    dst.write_bytes(bytes(data))
    assert load_firmware(str(dst)).word_at(vt) == sp
    return dst


def raw_bin(elf, dst: Path) -> Path:
    """The flash contents of an ELF as a raw binary from 0 (objcopy -O binary)."""
    img = load_firmware(str(elf))
    flash = sorted((a, d) for a, d in img.segments if a < 0x10000000)
    out = bytearray(b"\xff" * max(a + len(d) for a, d in flash))
    for a, d in flash:
        out[a:a + len(d)] = d
    dst.write_bytes(bytes(out))
    return dst


def assert_one_line_exit_2(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got: {r.stderr!r}"
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert r.stdout == ""                          # nothing ran


# ------------------------------------------------------------ the firmware/ table
def _table():
    """(path, chip, board) for every image firmware/ builds, from the Makefile's
    rules: tests51/ is compiled for the Cortex-M0 (the micro:bit), the rest for
    the Cortex-M4F; the PineTime tests (pinetime.h) and the S132 applications
    (wasp-os's layout) are PineTime images, the rest generic nRF52 ones (the
    PineTime by default).  The MCUBoot build is a raw binary linked at 0x8020:
    tested wrapped in its header below."""
    build = TESTS.parent / "build"
    rows = []
    for src in sorted(TESTS.glob("*.c")):
        for ext in ("elf", "hex", "bin"):
            rows.append((f"{src.stem}.{ext}", NRF52, "pinetime"))
    for src in sorted((TESTS.parent / "tests51").glob("*.c")):
        for ext in ("elf", "hex"):
            rows.append((f"nrf51/{src.stem}.{ext}", NRF51, "microbit"))
    for name in ("sd_nus",):
        for ext in ("elf", "hex", "bin"):
            rows.append((f"s132/{name}.{ext}", NRF52, "pinetime"))
    return [(build / p, chip, board) for p, chip, board in rows]


@pytest.mark.parametrize("path,chip,board", _table(),
                         ids=[str(p.relative_to(p.parents[1] if p.parent.name != "build"
                                                else p.parent)) for p, _c, _b in _table()])
def test_every_firmware_image(firmware_dir, path, chip, board):
    d = detect(str(path))
    assert (d.chip, d.board, d.problem) == (chip, board, None), [str(e) for e in d.evidence]
    # decided by decisive or supporting evidence, never by the SP alone
    assert any(e.points_to == chip and e.strength >= 2 for e in d.chip_evidence)
    src = TESTS / f"{path.stem}.c"
    if path.suffix == ".elf" and src.exists() and '#include "pinetime.h"' in src.read_text():
        assert not d.guessed and any(e.points_to == "pinetime" for e in d.board_evidence)
    if path.parent.name == "s132":
        assert not d.guessed                       # the layout says PineTime


def test_generic_nrf52_image_runs_on_the_pinetime_with_a_note(fw):
    d = detect(fw("cpu_exceptions"))
    assert d.board == "pinetime" and d.guessed
    assert "--board nrf52832" in d.note and "--board nrf52dk" in d.note
    r = run_cli("run", fw("cpu_exceptions"), "--headless", "--seconds", "0.01")
    assert r.returncode == 0, r.stderr
    assert "PASS ICER clears" in r.stdout
    notes = [l for l in r.stderr.splitlines() if "note:" in l]
    assert len(notes) == 1 and "--board nrf52832" in notes[0], r.stderr


def test_mcuboot_image_is_an_nrf52_pinetime_image(firmware_dir, tmp_path):
    p = tmp_path / "app-image.bin"
    p.write_bytes(mcuboot_image((firmware_dir / "mcuboot" / "cpu_exceptions.bin").read_bytes(),
                               version=(1, 0, 0, 0)))
    d = detect(str(p))
    assert (d.chip, d.board, d.guessed) == (NRF52, "pinetime", False), d.evidence
    assert any("MCUBoot" in e.what for e in d.board_evidence)


def test_raw_bin_linked_elsewhere_is_refused_with_a_hint(firmware_dir):
    """build/mcuboot/cpu_exceptions.bin is linked at 0x8020 but, as a raw .bin,
    loads at 0: its handlers lie outside it, nothing can be judged."""
    path = firmware_dir / "mcuboot" / "cpu_exceptions.bin"
    d = detect(str(path))
    assert d.board is None and "outside the image" in d.problem
    r = run_cli("run", path, "--headless", "--seconds", "0.01")
    assert_one_line_exit_2(r, str(path), "--board pinetime", "microbit")


# ------------------------------------------------------------ a low initial SP
def test_low_sp_nrf52_elf_is_still_nrf52_and_runs(fw, tmp_path):
    """The Zephyr case: SP at the top of a small interrupt stack.  The old rule
    called this a micro:bit; detection still sees a Cortex-M4F image, and the
    program runs to its PASS lines without --board."""
    p = with_sp(fw("cpu_exceptions"), tmp_path / "low_sp.elf", LOW_SP)
    assert old_rule(p) == "microbit"               # the fixture shows the bug
    d = detect(str(p))
    assert (d.chip, d.board) == (NRF52, "pinetime")
    assert any(e.points_to == NRF51 and e.strength == 1 for e in d.chip_evidence)  # weak SP
    r = run_cli("run", p, "--headless", "--seconds", "0.01")
    assert r.returncode == 0, r.stderr
    assert "PASS ICER clears" in r.stdout and "FAIL" not in r.stdout
    m = Machine(str(p))
    assert m.board_name == "pinetime" and m.detection.chip == NRF52


@pytest.mark.parametrize("ext", ["hex", "bin"])
def test_low_sp_nrf52_hex_and_bin_are_judged_by_their_code(fw, tmp_path, ext):
    p = with_sp(fw("cpu_exceptions", ext), tmp_path / f"low_sp.{ext}", LOW_SP)
    assert old_rule(p) == "microbit"
    d = detect(str(p))
    assert (d.chip, d.board) == (NRF52, "pinetime"), [str(e) for e in d.evidence]
    assert any(e.what.startswith("code:") and e.strength == 3 for e in d.chip_evidence)


def test_low_sp_nrf51_elf_is_a_microbit(firmware_dir, tmp_path):
    p = with_sp(firmware_dir / "nrf51" / "cpu_m0.elf", tmp_path / "m0_low.elf", 0x20002000)
    d = detect(str(p))
    assert (d.chip, d.board) == (NRF51, "microbit")
    m = Machine(str(p))
    assert m.board_name == "microbit"


def test_nrf51_elf_with_a_high_sp_is_still_a_microbit(firmware_dir, tmp_path):
    """The SP is weak evidence either way: the build attributes decide."""
    p = with_sp(firmware_dir / "nrf51" / "cpu_m0.elf", tmp_path / "m0_high.elf", 0x20010000)
    assert detect(str(p)).board == "microbit"


# ------------------------------------------------------------ raw .bin, Intel HEX
def test_raw_bin_and_hex_of_each_chip(firmware_dir, tmp_path):
    """No attributes or symbols: the vector table's length (48 entries on the
    nRF51, a handler at IRQ 38 on the nRF52) and the code decide."""
    m0 = raw_bin(firmware_dir / "nrf51" / "cpu_m0.elf", tmp_path / "cpu_m0.bin")
    for path, chip in ((m0, NRF51), (firmware_dir / "nrf51" / "cpu_m0.hex", NRF51),
                       (firmware_dir / "cpu_exceptions.bin", NRF52),
                       (firmware_dir / "cpu_exceptions.hex", NRF52)):
        d = detect(str(path))
        assert d.chip == chip, (path, [str(e) for e in d.evidence])
        assert any(e.what.startswith("vector table") and e.points_to == chip
                   for e in d.chip_evidence), path
        assert any(e.what.startswith("code:") and e.points_to == chip
                   for e in d.chip_evidence), path
    r = run_cli("run", m0, "--headless", "--seconds", "0.05")
    assert r.returncode == 0, r.stderr             # ran on the micro:bit: the M0 tests pass
    assert "PASS" in r.stdout and "FAIL" not in r.stdout


def test_raw_bin_with_nothing_to_judge_by(tmp_path):
    """A vector table and no code: only the SP, which is not enough."""
    img = bytearray(b"\xff" * 1024)
    struct.pack_into("<II", img, 0, 0x20004000, 0x101)
    p = tmp_path / "stub.bin"
    p.write_bytes(bytes(img))
    with pytest.raises(BoardDetectionError) as e:
        Machine(str(p))
    assert "no evidence of its chip" in str(e.value) and "--board microbit" in str(e.value)
    assert isinstance(e.value, FirmwareError)
    assert_one_line_exit_2(run_cli("run", p, "--headless", "--seconds", "0.01"),
                           str(p), "--board pinetime, nrf52dk or nrf52832", "--board microbit")
    assert Machine(str(p), board="nrf52832").board_name == "nrf52832"   # --board decides


# ------------------------------------------------------------ conflicts
def _arch_patched(src, dst: Path, arch: int) -> Path:
    """A copy whose .ARM.attributes say Tag_CPU_arch ``arch`` (tag 6)."""
    from elftools.elf.elffile import ELFFile
    data = bytearray(Path(src).read_bytes())
    with open(src, "rb") as f:
        sec = ELFFile(f).get_section_by_name(".ARM.attributes")
        off, size = sec["sh_offset"], sec["sh_size"]
    body = bytes(data[off:off + size])
    name_end = body.index(b"\0", body.index(b"7E-M"))         # after Tag_CPU_name
    assert body[name_end + 1:name_end + 3] == b"\x06\x0d"     # Tag_CPU_arch = v7E-M
    data[off + name_end + 2] = arch
    dst.write_bytes(bytes(data))
    return dst


def test_conflicting_chip_evidence_is_one_line_and_exit_2(fw, tmp_path):
    """Build attributes that say ARMv6S-M in an image with an FPU, a hard-float
    ABI and 64 KiB of RAM."""
    p = _arch_patched(fw("cpu_exceptions"), tmp_path / "conflict.elf", 12)
    d = detect(str(p))
    assert d.board is None and "conflicts" in d.problem
    assert "nRF51822" in d.problem and "nRF52832" in d.problem
    r = run_cli("run", p, "--headless", "--seconds", "0.01")
    assert_one_line_exit_2(r, str(p), "--board pinetime, nrf52dk or nrf52832",
                           "--board microbit", "Tag_CPU_arch ARMv6S-M")
    with pytest.raises(BoardDetectionError):
        Machine(str(p))
    # the test runner refuses it the same way
    scen = tmp_path / "s.yaml"
    scen.write_text("steps:\n  - run: {ms: 1}\n")
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "test", str(scen), "--firmware",
                        str(p)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--board microbit" in r.stderr and "Traceback" not in r.stderr
    # --board settles it
    r = run_cli("run", p, "--headless", "--seconds", "0.01", "--board", "nrf52832")
    assert r.returncode == 0 and "PASS ICER clears" in r.stdout, r.stderr


def test_unknown_core_is_refused(fw, tmp_path):
    p = _arch_patched(fw("cpu_exceptions"), tmp_path / "m33.elf", 17)   # ARMv8-M.mainline
    d = detect(str(p))
    assert d.board is None and "ARMv8-M.mainline" in d.problem


def test_image_naming_two_boards_is_refused(fw, tmp_path):
    data = Path(fw("cpu_exceptions", "bin")).read_bytes()
    p = tmp_path / "two.bin"
    p.write_bytes(data + b"built for pinetime\0and for nrf52dk_nrf52832\0")
    d = detect(str(p))
    assert d.chip == NRF52 and d.board is None and "more than one board" in d.problem
    assert_one_line_exit_2(run_cli("run", p, "--headless", "--seconds", "0.01"), str(p),
                           "--board")


def test_board_named_for_the_other_chip_is_ignored(fw, tmp_path):
    """An nRF52 program that mentions the micro:bit is not run on one."""
    data = Path(fw("cpu_exceptions", "bin")).read_bytes()
    p = tmp_path / "mentions.bin"
    p.write_bytes(data + b"talks to a micro:bit\0")
    d = detect(str(p))
    assert (d.chip, d.board) == (NRF52, "pinetime")
    assert any(e.points_to == "microbit" for e in d.board_evidence)


# ------------------------------------------------------------ board evidence
@pytest.mark.parametrize("board,words", [
    ("nrf52dk", ((0, 6), (1, 8), (2, 5), (3, 7))),       # console UART TX, RX, RTS, CTS
    ("pinetime", ((0, 11), (1, 30)))])
def test_zephyr_pin_control_tables_name_the_board(fw, tmp_path, board, words):
    """Zephyr's pinctrl array (NRF_PSEL(fun, 0, pin) words) for the board's
    console UART, appended word-aligned to a generic image."""
    data = Path(fw("cpu_exceptions", "bin")).read_bytes()
    data += b"\0" * (-len(data) % 4)
    table = b"".join(struct.pack("<I", f << 16 | p) for f, p in words)
    p = tmp_path / "pins.bin"
    p.write_bytes(data + table)
    d = detect(str(p))
    assert (d.board, d.guessed) == (board, False), [str(e) for e in d.evidence]
    p.write_bytes(data + b"\0\0" + table)        # not at a word boundary: not a table
    assert detect(str(p)).guessed
    other = b"".join(struct.pack("<I", f << 16 | p + 1) for f, p in words)
    p.write_bytes(data + other)                    # another board's pins
    assert detect(str(p)).guessed


def test_sdk_board_header_for_the_dk_is_not_evidence(firmware_dir, tmp_path):
    """PineTime firmware built on the nRF5 SDK (InfiniTime) compiles the SDK's
    board support for the DK (pca10040.h): that header name says nothing of
    the board the image runs on.  A pinetime-named header does."""
    fwdir = TESTS.parent
    for header, board, guessed in (("pca10040.h", "pinetime", True),
                                   ("pinetime_board.h", "pinetime", False)):
        (tmp_path / header).write_text("#define LED_1 17\n")
        out = tmp_path / f"{header}.elf"
        r = subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb",
                            "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O1", "-g3",
                            "-ffunction-sections", "-fdata-sections", "-Icommon",
                            "-std=gnu11", "-ffreestanding", "-include", str(tmp_path / header),
                            "-nostartfiles", "-Wl,--gc-sections", "-Lcommon",
                            "-Tcommon/nrf52832.ld", "--specs=nano.specs", "--specs=nosys.specs",
                            "-o", str(out), "tests/cpu_exceptions.c", "common/startup.c",
                            "common/harness.c", "-lm"], cwd=fwdir, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        d = detect(str(out))
        assert (d.board, d.guessed) == (board, guessed), [str(e) for e in d.evidence]
        assert not any(e.points_to == "nrf52dk" for e in d.board_evidence)


def test_info_shows_board_and_evidence(fw, tmp_path):
    r = run_cli("info", fw("pinetime_demo"))
    assert r.returncode == 0, r.stderr
    assert "board:         pinetime" in r.stdout
    assert "Tag_CPU_arch ARMv7E-M" in r.stdout and "pinetime demo running" in r.stdout
    p = _arch_patched(fw("cpu_exceptions"), tmp_path / "conflict.elf", 12)
    r = run_cli("info", p)
    assert r.returncode == 0 and "board:         undecided: its evidence conflicts" in r.stdout


# ------------------------------------------------------------ real images
def test_debian_microbit_micropython_is_a_microbit():
    if not os.path.exists(MICROBIT_HEX):
        pytest.skip(f"{MICROBIT_HEX} not installed (Debian firmware-microbit-micropython)")
    d = detect(MICROBIT_HEX)
    assert (d.chip, d.board) == (NRF51, "microbit"), [str(e) for e in d.evidence]
    assert any(e.points_to == "microbit" for e in d.board_evidence)


def _zephyr_images():
    """(path, board) for every zephyr.{elf,hex,bin} under <board>/ (a copied
    image, <sample>/zephyr.elf, or a whole build dir, .../zephyr/zephyr.elf)."""
    found = []
    for sub, board in ZEPHYR_BOARDS.items():
        for ext in ("elf", "hex", "bin"):
            found += [(p, board) for p in sorted((ZEPHYR_DIR / sub).rglob(f"zephyr.{ext}"))]
    return found


@pytest.mark.parametrize("path,board", _zephyr_images() or [pytest.param(
    None, None, marks=pytest.mark.skip(
        reason=f"no Zephyr builds in {ZEPHYR_DIR} (<board>/<sample>/zephyr.elf for "
               f"{', '.join(ZEPHYR_BOARDS)}; set PINETIME_EMU_ZEPHYR_DIR; see the shared "
               "ZEPHYR-BUILD.md)"))],
    ids=lambda v: str(v.relative_to(ZEPHYR_DIR)) if isinstance(v, Path) else None)
def test_zephyr_build_is_its_chip_and_board(path, board):
    chip = BOARD_CHIP[board]
    d = detect(str(path))
    assert (d.chip, d.board, d.guessed) == (chip, board, False), \
        [str(e) for e in d.evidence]
    # not the initial SP (low in RAM for every Zephyr image, which sent the
    # nRF52 ones to the micro:bit), which is weak
    assert any(e.points_to == chip and e.strength >= 2 for e in d.chip_evidence)
