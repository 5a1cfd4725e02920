"""Machine snapshots (emu/snapshot.py): save at time T, restore into a fresh
machine, run both N ms, and everything observable must be identical: the
clock and cycle counter, the screen bytes, the console bytes, every pin,
and the whole saved state (every model's attributes, memories, pending
events) of the two machines.

The snapshot moments are chosen to be awkward: inside an interrupt handler
with an SPIM EasyDMA transfer in flight and events pending, and with
scripted touch/button input still queued.
"""
from __future__ import annotations

import json
import os
import zipfile

import pytest

from emu.machine import Machine
from emu.snapshot import SnapshotError, audit
from helpers.microbit import MICROBIT_HEX
from helpers.snapshot import assert_same, continue_and_compare, observable

WASP_HEX = os.path.expanduser("~/.cache/pinetime-emu/wasp-os/upstream/micropython.hex")


def run_into_handler(m: Machine, timeout_ms: float = 50) -> None:
    assert m.run_until(lambda: m.cpu.ipsr >= 16, timeout_ms=timeout_ms, poll_ms=0.01)


def test_busy_firmware_inside_interrupt_with_dma_in_flight(tmp_path, fw):
    m = Machine(fw("snapshot_busy"), flash_file=None)
    m.run(ms=37)
    # stop inside an IRQ handler while the SPIM's END event is still pending
    for _ in range(200):
        run_into_handler(m)
        if m.soc.peripherals["serial0"].active._end.pending:
            break
        m.run(us=13)
    cpu = m.cpu
    assert cpu.ipsr >= 16, "not in an interrupt handler"
    assert m.soc.peripherals["serial0"].active._end.pending, "no DMA transfer in flight"
    names = {n for _w, n in m.clock.pending_events()}
    assert {"rtc1.next", "timer0.compare", "systick"} <= names
    r = continue_and_compare(m, str(tmp_path / "busy.snap"), ms=60, steps=3)
    assert b"frames=" in r.console[len(r.console) - 200:]


def test_busy_firmware_many_moments(tmp_path, fw):
    """Snapshots at several odd times (in thread mode, asleep, mid-TWI)."""
    m = Machine(fw("snapshot_busy"), flash_file=None)
    for t in (3.1, 11.7, 0.013):
        m.run(ms=t)
        continue_and_compare(m, str(tmp_path / "t.snap"), ms=7)


def test_demo_firmware_with_input_queued(tmp_path, fw):
    m = Machine(fw("pinetime_demo"), flash_file=None)
    m.run(ms=120)
    m.board.touch.tap(100, 120, delay_ms=5)
    m.board.button.hold(30, delay_ms=2)
    assert m.board.touch.timeline.pending and m.board.button.timeline.pending
    r = continue_and_compare(m, str(tmp_path / "demo.snap"), ms=200, steps=2)
    assert r.board.touch.reports == m.board.touch.reports and r.board.touch.reports


def test_load_into_a_machine_that_already_ran(tmp_path, fw):
    """A test suite boots once and restores the booted state before each test."""
    path = str(tmp_path / "boot.snap")
    m = Machine(fw("snapshot_busy"), flash_file=None)
    m.run(ms=20)
    m.save_snapshot(path)
    m.run(ms=15)
    first = observable(m)
    handler = lambda imm, pc: False                      # noqa: E731 (user wiring)
    m.breakpoint_handler = handler
    m.load_snapshot(path)
    assert m.breakpoint_handler is handler              # callbacks are not state
    m.run(ms=15)
    assert observable(m) == first


def test_restored_machine_differs_if_state_is_lost(tmp_path, fw):
    """The comparison can fail: drop one model's state and the runs diverge."""
    path = str(tmp_path / "x.snap")
    m = Machine(fw("snapshot_busy"), flash_file=None)
    m.run(ms=21)
    m.save_snapshot(path)
    r = Machine.from_snapshot(path)
    r.soc.peripherals["rtc1"].load_model_state({})      # harmless
    r.cpu.systick.rvr = 1000                              # lose SysTick's reload value
    m.run(ms=10)
    r.run(ms=10)
    assert observable(m) != observable(r)


def test_every_attribute_is_saved_or_wiring(fw):
    """audit() lists what a snapshot leaves out: only loggers and wiring callbacks."""
    m = Machine(fw("snapshot_busy"), flash_file=None)
    m.run(ms=5)
    m.board.touch.tap(10, 10, delay_ms=1)
    left_out = audit(m)
    bad = [x for x in left_out if x[2] not in ("Logger", "callable")]
    assert not bad, bad


def test_event_names_are_unique():
    from emu.clock import Clock
    c = Clock()
    c.event("a.x", lambda: None)
    with pytest.raises(ValueError, match="a.x"):
        c.event("a.x", lambda: None)
    for board in ("pinetime", "nrf52832", "microbit"):
        opts = {"flash_file": None} if board == "pinetime" else {}
        Machine(None, board=board, **opts)       # building would raise on a duplicate


def test_scripted_closure_in_a_timeline_is_refused(tmp_path, fw):
    m = Machine(fw("pinetime_demo"), flash_file=None)
    m.board.touch.timeline.after(1000, lambda: None)
    with pytest.raises(SnapshotError, match="timeline"):
        m.save_snapshot(str(tmp_path / "y.snap"))


# -- mismatches and corruption: one-line errors ------------------------------
def _snap(tmp_path, fw, name="pinetime_demo") -> str:
    path = str(tmp_path / f"{name}.snap")
    m = Machine(fw(name), flash_file=None)
    m.run(ms=2)
    m.save_snapshot(path)
    return path


def test_other_firmware_is_refused(tmp_path, fw):
    path = _snap(tmp_path, fw)
    other = Machine(fw("snapshot_busy"), flash_file=None)
    with pytest.raises(SnapshotError, match="another firmware image") as e:
        other.load_snapshot(path)
    assert "\n" not in str(e.value)


def test_other_board_is_refused(tmp_path, fw):
    path = _snap(tmp_path, fw)
    bare = Machine(fw("pinetime_demo"), board="nrf52832")
    with pytest.raises(SnapshotError, match="board 'pinetime'"):
        bare.load_snapshot(path)


def test_other_version_and_corrupt_files_are_refused(tmp_path, fw):
    path = _snap(tmp_path, fw)
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("snapshot.json"))
        blobs = {n: z.read(n) for n in z.namelist() if n != "snapshot.json"}
    meta["version"] = 99
    bad = str(tmp_path / "v99.snap")
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("snapshot.json", json.dumps(meta))
        for n, b in blobs.items():
            z.writestr(n, b)
    with pytest.raises(SnapshotError, match="version 99"):
        Machine.from_snapshot(bad)
    junk = tmp_path / "junk.snap"
    junk.write_bytes(open(path, "rb").read()[:500])
    with pytest.raises(SnapshotError, match="corrupt"):
        Machine.from_snapshot(str(junk))
    with pytest.raises(SnapshotError, match="no such file"):
        Machine.from_snapshot(str(tmp_path / "missing.snap"))


@pytest.mark.skipif(not os.environ.get("PINETIME_EMU_SLOW_TESTS"),
                    reason="slow (~1 min): set PINETIME_EMU_SLOW_TESTS=1")
@pytest.mark.skipif(not os.path.exists(WASP_HEX),
                    reason=f"no {WASP_HEX} (the wasp-os build's firmware.hex, renamed)")
def test_real_wasp_os(tmp_path):
    m = Machine(WASP_HEX, flash_file=None)
    m.run(seconds=3)
    continue_and_compare(m, str(tmp_path / "wasp.snap"), ms=500, steps=2)


def test_softdevice_and_phone_mid_stream(tmp_path, fw):
    """GATT table, queued central writes, pending notifications and the
    connection event survive; the phone's transcript continues identically."""
    import emu.softdevice as sdm

    def build():
        m = Machine(fw("sd_nus"), board="nrf52832")
        sdm.attach(m)                   # the bare board has no S132 unless attached
        return m

    m = build()
    m.phone.connect(timeout_ms=100)
    m.phone.notify("Alice", "a message long enough to need several 20-byte writes")
    m.run(ms=47)
    sd = m.softdevice
    assert sd.connected and sd.rx_writes and sd._conn_event.pending
    path = str(tmp_path / "sd.snap")
    m.save_snapshot(path)
    r = build()
    r.load_snapshot(path)
    assert_same(m, r)
    assert r.softdevice.attrs.keys() == sd.attrs.keys()
    for _ in range(4):
        m.run(ms=150)
        r.run(ms=150)
        assert bytes(r.phone.output) == bytes(m.phone.output)
        assert r.phone.messages == m.phone.messages
        assert_same(m, r)
    assert b'"title":"Alice"' in m.phone.output and m.phone.output.endswith(b")\n")
    # a machine without the SoftDevice attached cannot take this snapshot
    bare = Machine(fw("sd_nus"), board="nrf52832")
    with pytest.raises(SnapshotError, match="machine.softdevice"):
        bare.load_snapshot(path)


def test_tampered_state_is_refused_without_running_anything(tmp_path, fw):
    """Snapshot data can only name data, parts of the machine and an allow-list
    of value classes: a file asking for anything else is refused."""
    path = _snap(tmp_path, fw)
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("snapshot.json"))
        blobs = {n: z.read(n) for n in z.namelist() if n != "snapshot.json"}

    def rewrite(mutate, name):
        m2 = json.loads(json.dumps(meta))
        mutate(m2["state"]["objects"]["machine.cpu"]["attrs"])
        out = str(tmp_path / name)
        with zipfile.ZipFile(out, "w") as z:
            z.writestr("snapshot.json", json.dumps(m2))
            for n, b in blobs.items():
                z.writestr(n, b)
        return out

    cases = {
        "obj.snap": lambda a: a.__setitem__("vtor", {"$obj": "os.system", "attrs": {}}),
        "dunder.snap": lambda a: a.__setitem__("__class__", 1),
        "method.snap": lambda a: a.__setitem__("vtor", {"$m": ["machine", "__init__"]}),
        "ref.snap": lambda a: a.__setitem__("vtor", {"$ref": "machine.nothing"}),
    }
    for name, mutate in cases.items():
        with pytest.raises(SnapshotError) as e:
            Machine.from_snapshot(rewrite(mutate, name))
        assert "\n" not in str(e.value)


@pytest.mark.skipif(not os.path.exists(MICROBIT_HEX), reason="Debian's micro:bit MicroPython "
                    "(firmware-microbit-micropython) not installed")
def test_microbit_cortex_m0(tmp_path):
    """The nRF51822 board (Cortex-M0 at 16 MHz) restores exactly too."""
    m = Machine(MICROBIT_HEX, board="microbit")
    m.run(ms=250)
    assert not [x for x in audit(m) if x[2] not in ("Logger", "callable")]
    continue_and_compare(m, str(tmp_path / "mb.snap"), ms=100, steps=2)
    assert b">>> " in m.console


def test_parts_found_by_alias_and_class(fw):
    """A part saved under a path that runs through state (the I2C bus's current
    device) is found in the new machine by another path of the same class."""
    from emu.snapshot import map_objects, object_graph, resolve_path
    m = Machine(fw("pinetime_demo"), flash_file=None)
    aliases: dict = {}
    graph = object_graph(m, aliases)
    assert resolve_path(m, "machine.soc.peripherals['rtc1']") is m.soc.peripherals["rtc1"]
    assert "machine.soc.rtc1" in aliases["machine.soc.peripherals['rtc1']"]
    saved = {p: {"class": f"{type(o).__module__}.{type(o).__qualname__}",
                 "aliases": aliases.get(p, [])} for p, o in graph.items()}
    info = saved.pop("machine.board.touch")
    saved["machine.board.i2c._current"] = {"class": info["class"],
                                           "aliases": ["machine.board.accel",   # wrong class
                                                       "machine.board.touch"]}
    mapping = map_objects(Machine(fw("pinetime_demo"), flash_file=None), saved)
    assert type(mapping["machine.board.i2c._current"]).__name__ == "Cst816s"
    saved.pop("machine.board.i2c._current")
    with pytest.raises(SnapshotError, match="parts the snapshot lacks: machine.board.touch"):
        map_objects(Machine(fw("pinetime_demo"), flash_file=None), saved)


def test_snapshot_written_before_the_phone_moved_still_loads(tmp_path, fw):
    """A snapshot names each part's class; the phone's classes moved into
    emu/phone/ (emu.phone.Phone became emu.phone.phone.Phone).  A snapshot
    written under the old names loads and continues identically; a class the
    table does not know is still refused."""
    import emu.softdevice as sdm
    from emu.snapshot import MOVED_CLASSES

    def build():
        m = Machine(fw("sd_nus"), board="nrf52832")
        sdm.attach(m)
        return m

    m = build()
    m.phone.connect(timeout_ms=100)
    m.phone.notify("Bob", "before the move")
    m.run(ms=30)
    path = str(tmp_path / "new.snap")
    m.save_snapshot(path)

    def rewrite(src, dst, names):
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
            for item in zin.infolist():
                data = zin.read(item.filename)
                if item.filename == "snapshot.json":
                    meta = json.loads(data)
                    for entry in meta["state"]["objects"].values():
                        entry["class"] = names.get(entry["class"], entry["class"])
                    data = json.dumps(meta).encode()
                zout.writestr(item, data)

    old_names = {new: old for old, new in MOVED_CLASSES.items()}
    with zipfile.ZipFile(path) as z:
        classes = {e["class"] for e in
                   json.loads(z.read("snapshot.json"))["state"]["objects"].values()}
    assert "emu.phone.phone.Phone" in classes          # the rewrite below changes something
    old = str(tmp_path / "old.snap")
    rewrite(path, old, old_names)
    r = build()
    r.load_snapshot(old)
    assert_same(m, r)
    m.run(ms=200)
    r.run(ms=200)
    assert bytes(r.phone.output) == bytes(m.phone.output)
    assert_same(m, r)
    # companion: an old name nobody declared is refused, as any unknown class
    bad = str(tmp_path / "bad.snap")
    rewrite(path, bad, {"emu.phone.phone.Phone": "emu.phone.Telephone"})
    with pytest.raises(SnapshotError, match="lacks|parts"):
        build().load_snapshot(bad)
