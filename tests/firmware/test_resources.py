"""InfiniTime's external resources over Bluetooth (emu/phone/fstransfer.py).

The companion apps' upload of an ``infinitime-resources-*.zip`` through
InfiniTime's file transfer service (the Adafruit BLE file transfer
protocol), and the watch faces that need those fonts: Infineat and Casio
G7710 can be chosen only once their files are there, and then draw with
them.  Package reading runs everywhere with packages made here; the real
test needs InfiniTime (``$PINETIME_EMU_INFINITIME_IMAGE`` or
``~/.cache/pinetime-emu/infinitime/pinetime-app-*.out``) and its resources
package (``$PINETIME_EMU_INFINITIME_RESOURCES`` or
``infinitime-resources-*.zip`` there, built with ``-DBUILD_RESOURCES=1``);
skipped with a message without them."""
from __future__ import annotations

import os
import time
import zipfile

import numpy as np
import pytest

from emu import Machine
from emu.norfs import NorFs
from emu.phone.fstransfer import read_resources, resources_from_bytes
from helpers.infinitime import (CASIO, INFINEAT, casio_drawn, choose_face, enable_ota,
                                image_and_resources, infineat_drawn, press, resources_zip,
                                settle)
from helpers.paths import DOCS


def test_read_resources_package():
    files, obsolete = resources_from_bytes("r.zip", resources_zip(
        {"/fonts/a.bin": b"A" * 100, "/images/b.bin": b"B"}, obsolete=["/old.bin"]))
    assert files == [("/fonts/a.bin", b"A" * 100), ("/images/b.bin", b"B")]
    assert obsolete == ["/old.bin"]


@pytest.mark.parametrize("data,text", [
    (b"not a zip", "not a zip"),
    (resources_zip({}, meta={"x": 1}), "no list of resources"),
    (resources_zip({}, meta={"resources": [{"filename": "gone.bin", "path": "/gone.bin"}]}),
     "not in the package"),
    (resources_zip({}, meta={"resources": [{"filename": "a", "path": "relative"}]}),
     "absolute path")])
def test_bad_resources_packages(data, text):
    with pytest.raises(ValueError, match=text) as e:
        resources_from_bytes("r.zip", data)
    assert "\n" not in str(e.value)


def test_no_resources_json(tmp_path):
    p = tmp_path / "x.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a.bin", b"1")
    with pytest.raises(ValueError, match="no resources.json"):
        read_resources(str(p))


@pytest.mark.timeout(1200)
def test_resources_upload_and_the_faces_that_need_them(tmp_path):
    fw, res = image_and_resources()
    files, _obsolete = read_resources(res)
    nor = tmp_path / "nor.bin"
    m = Machine(fw, flash_file=str(nor))
    try:
        m.run(seconds=3)
        # companion first: without the fonts Infineat cannot be chosen
        choose_face(m, INFINEAT)
        assert not infineat_drawn(m.board.screen())
        enable_ota(m)
        # let the screen close first: it saves the changed settings, and
        # InfiniTime 1.16's littlefs is not locked: a save from SystemTask
        # while FSService writes (the screen timing out mid-upload) fails
        # the write with LFS_ERR_CORRUPT (seen here at 39.8 s: docs/flash.md)
        press(m)
        press(m)
        settle(m, 2)
        seen = []
        t0, w0 = m.time, time.monotonic()
        sent = m.phone.gatt.upload_resources(res, on_progress=lambda a, t, p: seen.append(a))
        took = (m.time - t0, time.monotonic() - w0)
        assert sent == sum(len(d) for _p, d in files) and seen[-1] == sent
        listed = {e.name for e in m.phone.gatt.fs("listdir", "/fonts")}
        assert {os.path.basename(p) for p, _d in files if p.startswith("/fonts/")} <= listed
        assert m.phone.gatt.fs("read", "/fonts/teko.bin") == dict(files)["/fonts/teko.bin"]
        choose_face(m, INFINEAT)
        assert infineat_drawn(m.board.screen()), "Infineat did not draw"
        if os.environ.get("PINETIME_EMU_UPDATE_DOCS"):
            m.board.screenshot(str(DOCS / "resources-infineat.png"))
        choose_face(m, CASIO)
        assert casio_drawn(m.board.screen()), "Casio G7710 did not draw"
        assert not infineat_drawn(m.board.screen())
        if os.environ.get("PINETIME_EMU_UPDATE_DOCS"):
            m.board.screenshot(str(DOCS / "resources-casio.png"))
    finally:
        m.close()
    # what the watch wrote is in its littlefs, byte for byte (read here with fs)
    fs = NorFs(nor.read_bytes())
    for path, data in files:
        assert fs.read(path) == data, path
    print(f"resources: {sent} bytes in {took[0]:.1f} s emulated, {took[1]:.1f} s wall")
