"""The one-pass Intel HEX reader (emu/loader.py ``_parse_hex``) against the
intelhex package it stands in for: every file it accepts must come out the
same (segments and start address), and every file it declines goes to
intelhex, which reads it or names the fault."""
import os
import random

import pytest

from emu import loader
from emu.loader import FirmwareError, _load_hex_intelhex, _parse_hex, load_firmware
from helpers.microbit import MICROBIT_HEX


def _record(kind, addr, payload):
    rec = bytes([len(payload), addr >> 8, addr & 0xFF, kind]) + payload
    return ":" + (rec + bytes([-sum(rec) & 0xFF])).hex().upper()


def _both(tmp_path, text, name="x.hex"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    fast = _parse_hex(p.read_bytes())
    try:
        ref = _load_hex_intelhex(str(p))
    except FirmwareError as e:
        ref = e
    return fast, ref


def test_every_firmware_hex_reads_the_same(fw, tmp_path):
    paths = [fw(n, "hex") for n in ("cpu_exceptions", "periph_rtc_core")]
    if os.path.exists(MICROBIT_HEX):
        paths.append(MICROBIT_HEX)     # 15 000 records, four regions, a start address
    for path in paths:
        data = open(path, "rb").read()
        fast = _parse_hex(data)
        assert fast is not None, path
        assert fast == _load_hex_intelhex(path), path


def test_random_files_read_the_same_or_go_to_intelhex(tmp_path):
    rng = random.Random(29)
    accepted = declined = 0
    for trial in range(300):
        lines = []
        cursor = rng.randrange(0x10000)
        for _ in range(rng.randrange(1, 30)):
            r = rng.random()
            if r < 0.1:
                lines.append(_record(4, 0, rng.randrange(0, 4).to_bytes(2, "big")))
            elif r < 0.13:
                lines.append(_record(5, 0, rng.randrange(1 << 32).to_bytes(4, "big")))
            elif r < 0.15:
                lines.append(_record(2, 0, rng.randrange(0, 16).to_bytes(2, "big")))
            elif r < 0.17:
                lines.append(_record(3, 0, rng.randrange(1 << 32).to_bytes(4, "big")))
            elif r < 0.19:
                lines.append(_record(1, 0, b""))
            elif r < 0.21:
                lines.append("")
            else:   # data, mostly following on, sometimes a gap or written twice
                size = rng.choice([0, 1, 8, 16])
                r = rng.random()
                if r < 0.1:
                    cursor = rng.randrange(0x10000)
                elif r < 0.13:
                    cursor = max(0, cursor - 4)
                lines.append(_record(0, cursor & 0xFFFF,
                                     bytes(rng.randrange(256) for _ in range(size))))
                cursor += size
        if rng.random() < 0.2:      # a fault: checksum, a digit, a colon, the length
            i = rng.randrange(len(lines))
            if lines[i]:
                k = rng.randrange(1, len(lines[i]))
                lines[i] = lines[i][:k] + rng.choice("0F:Gx ") + lines[i][k + 1:]
        eol = rng.choice(["\n", "\r\n", "\r"])
        fast, ref = _both(tmp_path, eol.join(lines) + eol)
        if fast is None:
            declined += 1
            continue
        accepted += 1
        assert not isinstance(ref, Exception), (lines, ref)
        assert fast == ref, lines
    assert accepted > 100 and declined > 30, (accepted, declined)


@pytest.mark.parametrize("text,why", [
    (_record(0, 0, b"\1\2") + "\n" + _record(0, 1, b"\3") + "\n", "overlap"),
    (_record(0, 0, b"\1\2")[:-2] + "00\n", "checksum"),
    (_record(2, 0, b"\0\1") + "\n" + _record(0, 0, b"\1") + "\n", "segment record"),
    (_record(1, 0, b"\0") + "\n", "end of file with a byte"),
    (_record(4, 4, b"\0\1") + "\n", "address on an extended address record"),
    (_record(5, 0, b"\0\0\0\1") + "\n" + _record(5, 0, b"\0\0\0\2") + "\n", "two starts"),
    (_record(0, 0, b"\1") + " \n", "a space"),
])
def test_declined_files_go_to_intelhex(tmp_path, text, why):
    fast, ref = _both(tmp_path, text)
    assert fast is None, why


def test_load_firmware_uses_intelhex_for_a_declined_file(tmp_path, monkeypatch):
    p = tmp_path / "seg.hex"
    table = (0x20001000).to_bytes(4, "little") + (0x101).to_bytes(4, "little")
    p.write_text(_record(2, 0, b"\0\0") + "\n" + _record(0, 0, table) + "\n"
                 + _record(1, 0, b"") + "\n")
    calls = []
    real = loader._load_hex_intelhex
    monkeypatch.setattr(loader, "_load_hex_intelhex", lambda n: calls.append(n) or real(n))
    img = load_firmware(str(p))
    assert calls == [str(p)] and img.segments == [(0, table)]


def test_end_of_file_stops_reading(tmp_path):
    text = "\n".join([_record(0, 0, b"\1\2"), _record(1, 0, b""), _record(0, 0, b"\\9")]) + "\n"
    fast, ref = _both(tmp_path, text)
    assert fast == ref == ([(0, b"\1\2")], None)
