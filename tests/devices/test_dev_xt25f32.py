"""XT25F32B NOR flash through a SpiBus: IDs, WEL, program/erase timing, persistence."""
import os

import pytest

from emu.clock import TICKS_PER_MS, Clock
from emu.devices import xt25f32
from emu.devices.xt25f32 import T_PP, T_SE, Xt25f32
from helpers.devices import SpiRig


def rig(path=None):
    clock = Clock()
    r = SpiRig(lambda s: Xt25f32(clock, path))
    r.cs.drive("host", True)
    return clock, r


def a24(a):
    return bytes([(a >> 16) & 255, (a >> 8) & 255, a & 255])


def program(r, clock, addr, data, wren=True):
    if wren:
        r.xfer(b"\x06")
    r.xfer(b"\x02" + a24(addr) + data)
    clock.advance_to(clock.now + T_PP)


def read(r, addr, n):
    return r.xfer(b"\x03" + a24(addr) + bytes(n))[4:]


def test_ids():
    clock, r = rig()
    assert r.xfer(b"\x9f\0\0\0")[1:] == bytes([0x0B, 0x40, 0x16])
    assert r.xfer(b"\xab\0\0\0\0")[4] == 0x15
    assert r.xfer(b"\x90\0\0\0\0\0")[4:] == bytes([0x0B, 0x15])


def test_clean_flash_reads_ff_and_fast_read():
    clock, r = rig()
    assert read(r, 0x123456, 8) == b"\xff" * 8
    program(r, clock, 0x1000, b"\x12\x34")
    assert r.xfer(b"\x0b" + a24(0x1000) + b"\0" + bytes(2))[5:] == b"\x12\x34"


def test_program_without_wren_ignored():
    clock, r = rig()
    program(r, clock, 0, b"\x00\x00", wren=False)
    assert read(r, 0, 2) == b"\xff\xff"
    r.xfer(b"\x06"); r.xfer(b"\x04")              # WREN then WRDI
    program(r, clock, 0, b"\x00", wren=False)
    assert read(r, 0, 1) == b"\xff"


def test_program_busy_then_wel_clears():
    clock, r = rig()
    r.xfer(b"\x06")
    assert r.xfer(b"\x05\0")[1] == 0x02           # WEL
    r.xfer(b"\x02" + a24(0x10) + b"\xA5")
    assert r.xfer(b"\x05\0\0")[1:] == b"\x03\x03"  # WIP|WEL while programming
    assert read(r, 0x10, 1) == b"\xff"             # read ignored while busy
    clock.advance_to(clock.now + T_PP - 1)         # one tick short
    assert r.xfer(b"\x05\0")[1] & 1
    clock.advance_to(clock.now + 1)
    assert r.xfer(b"\x05\0")[1] == 0
    assert read(r, 0x10, 1) == b"\xA5"


def test_program_only_clears_bits_and_page_wraps():
    clock, r = rig()
    program(r, clock, 0x2FE, b"\xF0\x0F\x33\x44")   # wraps to 0x200, 0x201
    assert read(r, 0x2FE, 2) == b"\xF0\x0F"
    assert read(r, 0x200, 2) == b"\x33\x44"
    assert read(r, 0x300, 1) == b"\xff"             # next page untouched
    program(r, clock, 0x2FE, b"\xFF\xF0")
    assert read(r, 0x2FE, 2) == b"\xF0\x00"         # 0x0F & 0xF0


def test_sector_erase_timing():
    clock, r = rig()
    program(r, clock, 0x1FFF, b"\x00")
    program(r, clock, 0x2000, b"\x00")
    r.xfer(b"\x06")
    r.xfer(b"\x20" + a24(0x1234))                   # erases 0x1000-0x1FFF
    t0 = clock.now
    clock.advance_to(t0 + T_SE - 1)
    assert r.xfer(b"\x05\0")[1] & 1
    clock.advance_to(t0 + T_SE)
    assert r.xfer(b"\x05\0")[1] == 0
    assert read(r, 0x1FFF, 2) == b"\xff\x00"


def test_chip_erase_and_erase_without_wren():
    clock, r = rig()
    program(r, clock, 0x3FFFFF, b"\x00")
    r.xfer(b"\xc7")                                 # no WREN: ignored
    assert r.xfer(b"\x05\0")[1] == 0
    r.xfer(b"\x06"); r.xfer(b"\x60")
    clock.advance_to(clock.now + xt25f32.T_CE)
    assert read(r, 0x3FFFFF, 1) == b"\xff"


def test_deep_power_down():
    clock, r = rig()
    r.xfer(b"\xb9")
    assert r.xfer(b"\x9f\0\0\0")[1:] == b"\xff\xff\xff"
    r.xfer(b"\xab")
    assert r.xfer(b"\x9f\0\0\0")[1:] == bytes([0x0B, 0x40, 0x16])


def test_command_executes_on_cs_rising_edge_only():
    clock, r = rig()
    r.cs.drive("host", False)
    r.bus.transfer(0x06)
    assert not r.dev.wel                            # not yet: CS still low
    r.cs.drive("host", True)
    assert r.dev.wel


def test_persistence_and_autosave(tmp_path):
    path = str(tmp_path / "nor.bin")
    clock, r = rig(path)
    program(r, clock, 0x100, b"hello")
    assert not os.path.exists(path)
    clock.advance_to(clock.now + xt25f32.SAVE_PERIOD)   # periodic save when dirty
    assert os.path.getsize(path) == xt25f32.SIZE
    program(r, clock, 0x200, b"world")
    r.dev.close()
    clock2, r2 = rig(path)
    assert read(r2, 0x100, 5) == b"hello" and read(r2, 0x200, 5) == b"world"


def test_crash_during_save_keeps_previous_content(tmp_path, monkeypatch):
    path = str(tmp_path / "nor.bin")
    clock, r = rig(path)
    program(r, clock, 0, b"old!")
    r.dev.save()
    program(r, clock, 0, b"\x00\x00\x00\x00")

    def crash(*a):
        raise OSError("power cut")
    monkeypatch.setattr(xt25f32.os, "replace", crash)
    with pytest.raises(OSError):
        r.dev.save()
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["nor.bin"]       # no temp file left
    clock2, r2 = rig(path)
    assert read(r2, 0, 4) == b"old!"


def test_security_register_reports_no_failure():
    """RDSCUR (2B): E_FAIL (0x40) and P_FAIL (0x20) stay clear after an erase
    and a program (InfiniTime's littlefs fails its format when they read 1,
    as an unknown command's 0xFF would)."""
    clock, r = rig()
    r.xfer(b"\x06")
    r.xfer(b"\x20" + a24(0x3000))
    clock.advance_to(clock.now + T_SE)
    assert r.xfer(b"\x2b\0")[1] == 0x00
    program(r, clock, 0x3000, b"\x12")
    assert r.xfer(b"\x2b\0")[1] & 0x60 == 0
    assert read(r, 0x3000, 1) == b"\x12"


def _state(dev):
    import zlib
    return (zlib.crc32(dev.data), dev._cmd, bytes(dev._buf), dev._addr, dev.wip, dev.wel,
            dev.deep_power_down, dev._pending_op)


def _random_session(seed, streamed):
    """One seeded run of commands, bytes and clock steps; ``streamed``: the
    bytes go through stream_answers()/stream() wherever the NOR offers answers
    (as the native SPI master sends them), else through transfer() one by one.
    Returns the state after each session and every answer the master got."""
    import random
    rnd = random.Random(seed)
    chunks = random.Random(seed + 1000)     # only the streamed run draws chunk sizes
    clock = Clock()
    dev = Xt25f32(clock)
    dev.data[:] = bytes(rnd.randrange(256) for _ in range(1024)) + dev.data[1024:]
    cmds = [0x02, 0x02, 0x03, 0x0B, 0x05, 0x06, 0x06, 0x20, 0x52, 0x2B, 0x9F, 0xB9, 0xAB, 0x04]
    got, states = [], []
    for _ in range(200):
        dev.select(True)
        out = [rnd.choice(cmds)] + [rnd.randrange(256) for _ in range(rnd.choice((0, 2, 3, 5, 40, 300)))]
        if rnd.random() < 0.5 and len(out) > 1:
            out[1:4] = [0, rnd.randrange(4), rnd.randrange(256)]      # near the random data
        i = 0
        while i < len(out):
            answers = dev.stream_answers() if streamed else b""
            if answers:
                n = min(len(answers), len(out) - i, chunks.choice((1, 7, 4096)))
                dev.stream(bytes(out[i:i + n]))
                got.append(bytes(answers[:n]))
                i += n
            else:
                got.append(bytes((dev.transfer(out[i]),)))
                i += 1
        dev.select(False)
        clock.advance_to(clock.now + rnd.choice((0, 10, T_PP // 2, T_PP, T_SE)))
        states.append(_state(dev))
    return states, b"".join(got)


@pytest.mark.parametrize("seed", range(6))
def test_stream_is_transfer_of_each_byte(seed):
    """What the native SPI master streams (the answers given in advance, the
    bytes handed over in one call) leaves the NOR exactly as byte-by-byte
    transfers do, and the master reads the same answers: programs, erases,
    reads, status polls while busy, deep power-down."""
    a = _random_session(seed, False)
    b = _random_session(seed, True)
    assert a[1] == b[1]
    assert a[0] == b[0]


def test_stream_that_keeps_too_much_of_a_page_is_seen(monkeypatch):
    """Companion: a PAGE PROGRAM stream that keeps every byte instead of the
    last 256 leaves a different NOR."""
    orig = Xt25f32.stream

    def keep_all(self, data):
        if self._cmd == 0x02 and not self.wip and not self.deep_power_down:
            self._buf += data
            return
        orig(self, data)
    monkeypatch.setattr(Xt25f32, "stream", keep_all)
    assert any(_random_session(s, False)[0] != _random_session(s, True)[0] for s in range(6))
