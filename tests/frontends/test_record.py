"""run --record (frontends/record.py): the screen as the firmware sent it, timed in
emulated time, as APNG or GIF."""
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from emu import Machine
from frontends.record import Recorder


def _frames(path):
    im = Image.open(path)
    out = []
    for i in range(im.n_frames):
        im.seek(i)
        out.append((np.array(im.convert("RGB")), im.info.get("duration")))
    return out


def test_apng_has_the_frames_sent_with_emulated_durations(fw, tmp_path):
    m = Machine(fw("pinetime_demo"), flash_file=None)
    rec = Recorder(m, str(tmp_path / "demo.png"))
    m.run(seconds=3)
    rec.close()
    frames = _frames(tmp_path / "demo.png")
    assert len(frames) >= 5
    assert (frames[0][0] != frames[-1][0]).any()
    assert (frames[-1][0] == m.board.screen()).all()           # exact pixels at the end
    total = sum(d for _img, d in frames)
    assert abs(total - 3000) <= len(frames), total              # durations are emulated ms
    # each frame differs from the one before (identical ones are merged)
    assert all((a != b).any() for (a, _), (b, _) in zip(frames, frames[1:]))


def test_merging_frames_can_be_seen(fw, tmp_path):
    """Companion: with no merging interval every chip-select release that
    changed the panel is a frame: many more of them."""
    a = Machine(fw("pinetime_demo"), flash_file=None)
    ra = Recorder(a, str(tmp_path / "a.png"))
    b = Machine(fw("pinetime_demo"), flash_file=None)
    rb = Recorder(b, str(tmp_path / "b.png"), min_interval_ms=0)
    a.run(seconds=2)
    b.run(seconds=2)
    ra.close()
    rb.close()
    assert len(_frames(tmp_path / "b.png")) > len(_frames(tmp_path / "a.png"))


def test_gif_from_the_command_line(fw, tmp_path):
    out = tmp_path / "demo.gif"
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_demo"),
                        "--headless", "--seconds", "2", "--flash-file", "none",
                        "--record", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    im = Image.open(out)
    assert im.format == "GIF" and im.n_frames >= 3 and im.size == (240, 240)


@pytest.mark.parametrize("args, message", [
    (["--record", "out.bmp"], "written as .gif or .png"),
    (["--board", "nrf52832", "--record", "out.gif"], "has no screen to record"),
    (["--record", "/no/such/dir/out.gif"], "--record /no/such/dir/out.gif"),
])
def test_record_errors(fw, tmp_path, args, message):
    r = subprocess.run([sys.executable, "-m", "frontends.cli", "run", fw("pinetime_demo"),
                        "--headless", "--seconds", "0.1", *args], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_backlight_alone_makes_frames(fw, tmp_path):
    """A firmware that never draws, only the backlight changing (Zephyr's
    blinky on the PineTime): each change is a frame of the backlight's glow;
    a change undone within the merge interval leaves no frame."""
    from emu import Machine
    from emu.devices.st7789 import BACKLIGHT_GLOW
    from frontends.record import Recorder
    m = Machine(fw("cpu_wfi"), board="pinetime", flash_file=None)
    rec = Recorder(m, str(tmp_path / "bl.gif"))
    m.run(ms=100)
    m.soc.pins[14].drive("test", False)            # backlight low on
    m.run(ms=100)
    m.soc.pins[14].drive("test", True)             # off
    m.run(ms=5)
    m.soc.pins[14].drive("test", False)            # on again within 20 ms ...
    m.soc.pins[14].drive("test", True)             # ... and off: nothing shown
    m.run(ms=100)
    rec.close()
    assert [int(img[0, 0, 0]) for _t, img in rec.frames] == [0, BACKLIGHT_GLOW, 0]
