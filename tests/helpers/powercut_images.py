"""Power cuts on real firmware (tests/firmware/test_powercut_images.py and
bench/bench_powercut_images.py): InfiniTime's update over the air through
MCUBoot, and wasp-os writing a file to its littlefs.

InfiniTime: one run without a cut of the whole update (the phone's
transfer into the NOR's secondary slot, the reset, MCUBoot's swap, 1.16.2
starting) logs every flash operation (emu.powercut.FlashLog).  A cut leaves
nothing but the flash, so each case starts a fresh machine from what the
flash holds after its cut (``FlashLog.state``), powers it on and runs until
InfiniTime runs again: the transfer of minutes runs once, whatever the
number of cases, and the phone (whose side of the air no snapshot holds) is
needed only in that run.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from emu import Machine
from emu.loader import MCUBOOT_SLOT, MCUBOOT_VECTOR_COPY
from emu.powercut import MODES, Cut, FlashLog, PowerCut, run_logged_case

CACHE = Path.home() / ".cache" / "pinetime-emu" / "infinitime"
WORK = Path(os.environ.get("PINETIME_EMU_POWERCUT_CACHE")
            or Path.home() / ".cache" / "pinetime-emu" / "powercut")


def ota_files():
    """(bootloader, 1.16.1 MCUBoot image, 1.16.2 DFU package) or None."""
    bl = os.environ.get("PINETIME_EMU_BOOTLOADER") or str(CACHE / "bootloader-5.0.4.bin")
    img = os.environ.get("PINETIME_EMU_INFINITIME_MCUBOOT_IMAGE") or \
        str(CACHE / "pinetime-mcuboot-app-image-1.16.1.bin")
    upd = os.environ.get("PINETIME_EMU_INFINITIME_DFU_UPDATE") or \
        str(CACHE / "pinetime-mcuboot-app-dfu-1.16.2.zip")
    missing = [p for p in (bl, img, upd) if not Path(p).exists()]
    return (bl, img, upd), missing


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def primary(m, n: int) -> bytes:
    return m.cpu.read_mem(MCUBOOT_SLOT, n)


def _key(*paths) -> str:
    """The cache's name for what these files give: their bytes, and the
    snapshot format (a cached snapshot of another format cannot be read)."""
    from emu.snapshot import VERSION
    h = hashlib.sha256(f"snapshot format {VERSION}".encode())
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:16]


def ota_ready():
    """InfiniTime 1.16.1 booted through the bootloader (the NOR holding a
    boot logo of ours), over the air enabled in Settings, the phone
    connected: where the update begins (the same steps each time, so the
    same flash operations follow)."""
    from helpers.images import nor_with_logo
    from helpers.infinitime import enable_ota
    (bl, img, _upd), missing = ota_files()
    assert not missing, missing
    WORK.mkdir(parents=True, exist_ok=True)
    old_img = Path(img).read_bytes()
    nor = nor_with_logo(WORK / "nor-logo.bin")
    m = Machine(img, bootloader=bl, flash_file=None)
    m.board.flash.data[:] = nor.read_bytes()
    m.run(seconds=11)
    enable_ota(m)
    m.phone.gatt.connect(timeout_ms=20_000)
    assert m.phone.gatt.firmware_version() == "1.16.1"
    meta = {"old_len": len(old_img), "old": sha(primary(m, len(old_img)))}
    assert meta["old"] == sha(old_img), "the primary slot does not hold the 1.16.1 image"
    return m, meta


def ota_record(out=print, refresh: bool = False):
    """The run without a cut, logged (cached in WORK by the inputs' hash):
    {log, meta}.  meta: the old and new images' lengths and hashes, the
    operations where the transfer ends, times."""
    import json
    from emu.phone.dfu import read_package
    from helpers.infinitime import settle
    (bl, img, upd), missing = ota_files()
    assert not missing, missing
    WORK.mkdir(parents=True, exist_ok=True)
    key = _key(bl, img, upd)
    logf, metaf = WORK / f"ota-{key}.flashlog", WORK / f"ota-{key}.json"
    if logf.exists() and metaf.exists() and not refresh:
        return FlashLog.load(str(logf)), json.loads(metaf.read_text())
    new = read_package(upd)
    w0 = time.monotonic()
    m, meta = ota_ready()
    meta["boot_wall"] = time.monotonic() - w0
    meta["new_len"] = len(new.image)
    log = FlashLog(m)
    pc = PowerCut(m, log=log)
    t0, w0 = m.time, time.monotonic()
    last = [0.0]

    def progress(a, t):
        if time.monotonic() - last[0] > 30:
            last[0] = time.monotonic()
            out(f"  transfer {a}/{t} at {m.time:.1f} s emulated, {len(pc.ops)} operations")
    resets = m.resets
    d = m.phone.gatt.dfu(new, on_progress=progress)
    assert d.step == "done"
    meta["transfer_ops"] = len(pc.ops)
    meta["transfer"] = [m.time - t0, time.monotonic() - w0]
    out(f"  transfer done: {len(pc.ops)} operations, {meta['transfer'][0]:.1f} s emulated, "
        f"{meta['transfer'][1]:.0f} s wall")
    t1, w1 = m.time, time.monotonic()
    ok = m.run_until(lambda: m.resets > resets and m.cpu.vtor == MCUBOOT_VECTOR_COPY,
                     timeout_ms=240_000, poll_ms=200)
    assert ok, "1.16.2 did not start after the update"
    meta["swap_ops"] = len(pc.ops) - meta["transfer_ops"]
    meta["swap"] = [m.time - t1, time.monotonic() - w1]
    settle(m, 3)
    pc.remove()
    log.console = bytes(m.console)
    meta["new"] = sha(primary(m, len(new.image)))
    assert meta["new"] == sha(new.image), "the primary slot does not hold the 1.16.2 image"
    m.phone.gatt.connect(timeout_ms=20_000)
    assert m.phone.gatt.firmware_version() == "1.16.2"
    out(f"  swap and boot: {meta['swap_ops']} operations, {meta['swap'][0]:.1f} s emulated, "
        f"{meta['swap'][1]:.0f} s wall")
    m.close()
    log.save(str(logf))
    metaf.write_text(json.dumps(meta))
    return log, meta


# -- wasp-os: a file written over the REPL ------------------------------------
WASP_WRITE = ("f=open('/flash/pc.txt','w'); _=[f.write('%s line %%03d ....\\n' %% i) "
              "for i in range(100)]; f.close()")


def wasp_soft_reset(m) -> None:
    """Ctrl-D over the phone's link, reconnect, a fresh prompt (clears the
    MicroPython heap's fragmentation, as tests/firmware/test_wasp.py says)."""
    p = m.phone
    p.connect()
    p.send(b"\x04")
    assert m.run_until(lambda: not p.central.connected, timeout_ms=3000), "no soft reset"
    p.connect(timeout_ms=8000)
    start = len(p.output)
    assert p.wait_for(b">>> ", start=start, timeout_ms=8000), bytes(p.output[start:])


def wasp_files(nor: bytes) -> dict:
    from emu.norfs import NorFs
    fs = NorFs(bytes(nor), "wasp-os")
    return {p: fs.read(p) for p, e in fs.walk("/") if not e.is_dir}


def wasp_face(m) -> bool:
    """wasp-os's clock: big digits and the date line."""
    from helpers.infinitime import lit
    return lit(m, 0, 60, 240, 150) > 2000 and lit(m, 0, 170, 240, 205) > 300


def wasp_prepare(image: str, out=print):
    """The watch booted (NOR formatted), pc.txt written with its old content,
    at a fresh prompt: a snapshot (cached by the image's hash), and the files
    before and after the write of the new content without a cut."""
    import json
    WORK.mkdir(parents=True, exist_ok=True)
    key = _key(image)
    snap, metaf = WORK / f"wasp-{key}.snap", WORK / f"wasp-{key}.json"
    if not (snap.exists() and metaf.exists()):
        w0 = time.monotonic()
        m = Machine(image, flash_file=None)
        m.run(seconds=5.0)
        assert wasp_face(m), "wasp-os did not show its clock"
        wasp_soft_reset(m)
        assert m.phone.repl(WASP_WRITE % "old", timeout_ms=5000) == ""
        wasp_soft_reset(m)
        m.save_snapshot(str(snap))
        metaf.write_text(json.dumps({"prepare_wall": time.monotonic() - w0}))
        m.close()
    meta = json.loads(metaf.read_text())
    m = Machine.from_snapshot(str(snap))
    old = wasp_files(m.board.flash.data)
    pc = PowerCut(m)
    t0, w0 = m.time, time.monotonic()
    assert m.phone.repl(WASP_WRITE % "new", timeout_ms=5000) == ""
    meta["write"] = [m.time - t0, time.monotonic() - w0]
    pc.remove()
    new = wasp_files(m.board.flash.data)
    m.close()
    assert old["/pc.txt"].startswith(b"old line 000") and new["/pc.txt"].startswith(b"new line")
    return str(snap), pc.ops, old, new, meta


def _wasp_after():
    def after(m):
        t0 = m.time
        assert m.run_until(lambda: wasp_face(m), timeout_ms=10_000, poll_ms=250), \
            "wasp-os did not show its clock again within 10 s"
        m.boot_s = m.time - t0
    return after


def _wasp_files(old: dict, new: dict):
    from emu.norfs import NorFsError

    def files(m, before, info):
        try:
            got = wasp_files(m.board.flash.data)
        except NorFsError as e:
            return f"the littlefs does not mount: {e}"
        for p in sorted(set(old) | set(new) | set(got)):
            if got.get(p) not in (old.get(p), new.get(p)):
                what = "missing" if p not in got else "neither old nor new"
                reformatted = " (the filesystem was formatted again)" \
                    if p not in got and got.get("/main.py") is not None else ""
                return f"{p}: {what}{reformatted}"
        info["which"] = ("new" if got.get("/pc.txt") == new["/pc.txt"] else "old")
        info["boot_s"] = getattr(m, "boot_s", None)
        return None
    return files


def wasp_case(snap: str, old: dict, new: dict, cut: Cut, seed: int = 0):
    """Cut at ``cut`` while pc.txt is written, power back, run until the face
    is drawn again (10 emulated s at most), then the NOR's littlefs must
    mount and each file hold its old or its new content."""
    from emu.powercut import run_case

    def work(m):
        m.phone.repl(WASP_WRITE % "new", timeout_ms=5000)

    seen = {}
    r = run_case(lambda: Machine.from_snapshot(snap), work, _wasp_after(), cut, seed=seed,
                 flashes=("nor",), checks=[_wasp_files(old, new),
                                           lambda m, b, info: seen.update(info)])
    r.details.update({k: v for k, v in seen.items() if k == "which"})
    return r


# -- InfiniTime: the cases ------------------------------------------------------
def ota_after(boot_timeout_s: float = 240, run_s: float = 2):
    """After the power is back: the bootloader (MCUBoot, finishing a swap it
    had begun) starts InfiniTime (VTOR at the vectors' copy, as
    tests/firmware/test_ota.py's booted() waits for), which then runs
    ``run_s`` seconds without a reset."""
    from helpers.infinitime import settle

    def after(m):
        t0 = m.time
        ok = m.run_until(lambda: m.cpu.vtor == MCUBOOT_VECTOR_COPY,
                         timeout_ms=boot_timeout_s * 1000, poll_ms=200)
        assert ok, f"InfiniTime did not start within {boot_timeout_s} s"
        resets = m.resets
        settle(m, run_s)
        assert m.resets == resets and m.cpu.vtor == MCUBOOT_VECTOR_COPY, \
            f"InfiniTime did not keep running ({m.resets - resets} resets)"
        m.boot_s = m.time - t0
    return after


def ota_image_check(meta: dict):
    def check(m, before, info):
        if sha(primary(m, meta["old_len"])) == meta["old"]:
            info["which"] = "old"
        elif sha(primary(m, meta["new_len"])) == meta["new"]:
            info["which"] = "new"
        else:
            return "the primary slot holds neither 1.16.1 nor 1.16.2"
        info["boot_s"] = getattr(m, "boot_s", None)
    return check


def ota_case(log_path: str, meta: dict, cut: Cut, seed: int = 0):
    """One case from the logged update (a worker's entry point: the log is
    loaded once per process)."""
    global _LOG
    if _LOG is None or _LOG[0] != log_path:
        _LOG = (log_path, FlashLog.load(log_path))
    (bl, img, _upd), _ = ota_files()
    info = {}

    def keep(m, before, i):
        info.update(i, cycles=m.cpu.cycles, emulated_s=m.time)
    w0 = time.monotonic()
    r = run_logged_case(lambda: Machine(img, bootloader=bl, flash_file=None), _LOG[1],
                        ota_after(), cut, seed=seed, checks=[ota_image_check(meta), keep])
    r.details.update({"which": info.get("which"), "boot_s": info.get("boot_s"),
                      "wall_s": time.monotonic() - w0, "cycles": info.get("cycles"),
                      "emulated_s": info.get("emulated_s")})
    return r


_LOG = None


def _rank(seed: int, op) -> bytes:
    return hashlib.sha256(f"ota-powercut:{seed}:{op.index}".encode()).digest()


def ota_cuts(log, meta, n_transfer: int, n_swap: int, seed: int, tail: int = 4) -> list:
    """The OTA campaign's cases, (phase, Cut): the transfer's last ``tail``
    operations in every mode (InfiniTime writing the image's end and
    MCUBoot's trailer: the cut that decides whether a swap is asked for),
    then ``n_transfer`` operations of the rest of the transfer and
    ``n_swap`` of the swap, shared evenly among each phase's kinds of
    operation (flash and program or erase, so that the swap's few erases
    among its 196 000 word programs are cut too), each kind's operations
    taken in the order of a seeded hash of their index, each cut in a mode
    from that hash: a larger n extends the sample, the same seed gives the
    same cases."""
    from collections import defaultdict
    k = meta["transfer_ops"]
    transfer, swap = log.ops[:k], log.ops[k:]
    cuts = []

    def add(op, mode, phase):
        cuts.append((phase, Cut(op.index, mode, op.flash, op.kind, op.address)))
    for op in transfer[-tail:]:
        for mode in MODES:
            add(op, mode, "transfer end")
    for phase, ops, n in (("transfer", transfer[:-tail], n_transfer), ("swap", swap, n_swap)):
        groups = defaultdict(list)
        for op in ops:
            groups[(op.flash, op.kind)].append(op)
        keys = sorted(groups)
        picked = []
        for i, key in enumerate(keys):
            share = n // len(keys) + (i < n % len(keys))
            picked += sorted(groups[key], key=lambda o: _rank(seed, o))[:share]
        for op in sorted(picked, key=lambda o: o.index):
            add(op, MODES[_rank(seed, op)[-1] % 3], phase)
    return cuts


def wasp_log(image: str):
    """The write without a cut, logged (cached next to the snapshot): the
    FlashLog and the files before and after."""
    from emu.powercut import logged_run
    snap, _ops, old, new, meta = wasp_prepare(image)
    logf = Path(snap).with_suffix(".flashlog")
    if not logf.exists():
        log, m = logged_run(lambda: Machine.from_snapshot(snap),
                            lambda m: m.phone.repl(WASP_WRITE % "new", timeout_ms=5000),
                            flashes=("nor",))
        m.close()
        log.save(str(logf))
    return str(logf), old, new, meta


def wasp_logged_case(image: str, logf: str, old: dict, new: dict, cut: Cut, seed: int = 0):
    """:func:`wasp_case` from the log: a fresh machine given what the NOR
    holds after the cut (the case's cost is the boot alone)."""
    global _LOG
    if _LOG is None or _LOG[0] != logf:
        _LOG = (logf, FlashLog.load(logf))
    info = {}
    w0 = time.monotonic()
    r = run_logged_case(lambda: Machine(image, flash_file=None), _LOG[1], _wasp_after(),
                        cut, seed=seed, checks=[_wasp_files(old, new),
                                                lambda m, b, i: info.update(
                                                    i, cycles=m.cpu.cycles, emulated_s=m.time)])
    r.details.update({"which": info.get("which"), "boot_s": info.get("boot_s"),
                      "wall_s": time.monotonic() - w0, "cycles": info.get("cycles"),
                      "emulated_s": info.get("emulated_s")})
    return r
