"""Real InfiniTime in the tests (tests/firmware/test_infinitime*.py,
test_ota.py, test_resources.py, and the fast paths' checks on it): the
image (``$PINETIME_EMU_INFINITIME_IMAGE`` or the newest
``pinetime-app-*.out`` in ``~/.cache/pinetime-emu/infinitime/``; the test
is skipped without one), what its screen shows, its Settings by touch and
its external resources."""
from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

CACHE = Path.home() / ".cache" / "pinetime-emu" / "infinitime"


def infinitime_image() -> str:
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if not p:
        found = sorted(CACHE.glob("pinetime-app-*.out"))
        p = str(found[-1]) if found else ""
    if not p or not Path(p).exists():
        pytest.skip("no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or build "
                    f"pinetime-app into {CACHE} (shared INFINITIME-BUILD.md)")
    return p


def lit(m, x0, y0, x1, y1, level=64) -> int:
    return int((m.board.screen()[y0:y1, x0:x1].max(axis=2) > level).sum())


def colour(m, x0, y0, x1, y1) -> np.ndarray:
    return m.board.screen()[y0:y1, x0:x1].reshape(-1, 3).mean(axis=0)


def face_drawn(m) -> bool:
    """The digital face: big time digits (rows 85-155) and the date (170-195)."""
    return lit(m, 0, 85, 240, 155) > 2000 and lit(m, 30, 170, 210, 195) > 300


# -- Settings by touch (tests/firmware/test_infinitime.py's own press and
# settle also check that the run went well) ---------------------------------

def settle(m, s=0.7):
    m.run(seconds=s)


def press(m):
    m.board.button.press()
    m.run(ms=100)
    m.board.button.release()
    settle(m)


def settings_page(m, page: int):
    """Quick settings, the gear, then ``page`` (0-3) of InfiniTime's Settings
    list (each screen change waits for its slide to end: longer while the
    phone is connected)."""
    m.board.touch.swipe("right")
    settle(m, 2)
    m.board.touch.tap(183, 183)                      # the gear tile
    settle(m, 1.5)
    for _ in range(page):
        m.board.touch.swipe("up")
        settle(m, 1.5)


def enable_ota(m):
    """Settings > Over-the-air (page 3, first entry) > Enabled, then back."""
    settings_page(m, 3)
    m.board.touch.tap(120, 28)
    settle(m, 1.5)
    m.board.touch.tap(36, 87)                        # "Enabled"
    settle(m)
    press(m)
    press(m)


# -- the external resources (fonts and images for some watch faces) --------

def resources_zip(files: dict, obsolete=(), meta=None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        entries = []
        for path, data in files.items():
            name = os.path.basename(path)
            z.writestr(name, data)
            entries.append({"filename": name, "path": path})
        z.writestr("resources.json", json.dumps(meta if meta is not None else {
            "resources": entries, "obsolete_files": [{"path": p, "since": "1.0.0"}
                                                     for p in obsolete]}))
    return buf.getvalue()


def image_and_resources() -> tuple:
    fw = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if not fw:
        found = sorted(CACHE.glob("pinetime-app-*.out"))
        fw = str(found[-1]) if found else ""
    res = os.environ.get("PINETIME_EMU_INFINITIME_RESOURCES")
    if not res:
        found = sorted(CACHE.glob("infinitime-resources-*.zip"))
        res = str(found[-1]) if found else ""
    if not fw or not Path(fw).exists() or not res or not Path(res).exists():
        pytest.skip("no InfiniTime image or resources package: set "
                    "PINETIME_EMU_INFINITIME_IMAGE and PINETIME_EMU_INFINITIME_RESOURCES, or "
                    f"put pinetime-app-*.out and infinitime-resources-*.zip in {CACHE}")
    return fw, res


def choose_face(m, row_y: int):
    """Settings > Watch face, second page (Infineat, Casio G7710, Pride Flag)."""
    settle(m, 1)
    if not m.board.screen().any():                   # asleep: the button wakes it
        press(m)
        settle(m, 1)
    settings_page(m, 0)
    m.board.touch.tap(120, 212)
    settle(m)
    m.board.touch.swipe("up")
    settle(m)
    m.board.touch.tap(36, row_y)
    settle(m)
    for _ in range(3):
        press(m)
    settle(m, 2)


INFINEAT, CASIO = 87, 125


def infineat_drawn(screen) -> bool:
    """Infineat's coloured band on the left (orange and red)."""
    left = screen[:, :40].reshape(-1, 3).astype(int)
    return int(((left[:, 0] > 150) & (left[:, 2] < 80)).sum()) > 2000


def casio_drawn(screen) -> bool:
    """Casio G7710: grey-green seven-segment digits in the lower half, and
    its frame lines."""
    low = screen[110:210].reshape(-1, 3).astype(int)
    greenish = (low[:, 1] > 120) & (low[:, 1] > low[:, 2] + 10)
    return int(greenish.sum()) > 3000
