"""An image that carries Nordic's MBR and SoftDevice itself (wasp-os's ``make
bootloader`` hex: MBR, S132, bootloader, UICR) boots from the MBR and runs
that SoftDevice's code, as ``--softdevice-hex`` does, instead of the emulated
S132 API (issue 48).  Synthetic images here: an MBR-like vector table at 0
and the SoftDevice info structure's magic at 0x3004; the real image is
tests/firmware/test_wasp_ota.py's."""
import struct

import pytest

from emu import Machine
from emu.loader import FirmwareError, boots_own_softdevice, load_firmware

SD_MAGIC = 0x51B1E5DB


def _hex(segments) -> str:
    """Intel HEX text for [(address, bytes)]."""
    out = []

    def rec(kind, addr, data=b""):
        body = bytes([len(data), addr >> 8 & 0xFF, addr & 0xFF, kind]) + data
        out.append(":" + (body + bytes([-sum(body) & 0xFF])).hex().upper())
    for base, data in segments:
        for off in range(0, len(data), 16):
            a = base + off
            rec(4, 0, struct.pack(">H", a >> 16))
            rec(0, a & 0xFFFF, data[off:off + 16])
    rec(1, 0)
    return "\n".join(out) + "\n"


def _chip(tmp_path, magic=SD_MAGIC, app=False, name="chip.hex"):
    mbr = struct.pack("<II", 0x20000800, 0xA1) + b"\0" * 0x98 + b"\xfe\xe7" * 8  # b . at 0xA0
    info = struct.pack("<IIII", 0xFFFFFF2C, magic, 0x26000, 0xFFFF00B7)
    segs = [(0, mbr), (0x3000, info)]
    if app:
        segs.append((0x26000, struct.pack("<II", 0x20010000, 0x26101) + b"\0" * 0xF8
                     + b"\xfe\xe7" * 8))
    p = tmp_path / name
    p.write_text(_hex(segs))
    return str(p)


def test_image_with_mbr_and_softdevice_runs_them(tmp_path):
    p = _chip(tmp_path)
    assert boots_own_softdevice(load_firmware(p))
    m = Machine(p, board="pinetime", flash_file=None)
    assert m.own_softdevice and m.real_softdevice and m.vector_table == 0
    assert not hasattr(m, "softdevice") and m.phone.sd is None      # no emulated API
    assert any("running that SoftDevice" in n for n in m.image.notes)
    m.run(ms=1)
    assert m.cpu.pc == 0xA0


def test_without_the_softdevice_the_api_is_emulated(tmp_path):
    """Companion: no info magic at 0x3004, or an application at 0x26000
    beside the SoftDevice: the emulated S132 API as before."""
    for p in (_chip(tmp_path, magic=0xFFFFFFFF, name="a.hex"), _chip(tmp_path, app=True,
                                                                    name="b.hex")):
        assert not boots_own_softdevice(load_firmware(p))
        m = Machine(p, board="pinetime", flash_file=None)
        assert not m.own_softdevice and not m.real_softdevice
        assert hasattr(m, "softdevice") and m.phone.sd is not None


def test_softdevice_hex_over_an_image_that_has_one_says_so(tmp_path):
    p = _chip(tmp_path)
    with pytest.raises(FirmwareError, match="holds a SoftDevice already.*without "
                                            "--softdevice-hex"):
        Machine(p, board="pinetime", flash_file=None, softdevice_hex=_chip(tmp_path,
                                                                            name="sd.hex"))
