"""Heaps and tasks read from guest RAM (emu/inspect): our own firmware's
heap_4-compatible heap, FreeRTOS-like task lists and MicroPython-like GC
tables (firmware/tests/heap_tasks.c), by DWARF and without it; corrupted
structures reported in one line, never raised; and the real images when
they are present (InfiniTime's heap_4 and tasks, wasp-os's GC heap against
what its own REPL says)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from emu import Machine
import emu.inspect.dwarf as dwarf

# name -> (state, priority, stack bytes used) as heap_tasks.c makes them
TASKS = {"main": ("running", 1, 40), "IDLE": ("ready", 0, 24), "sensor": ("blocked", 2, 100),
         "waiter": ("blocked", 1, 64), "paused": ("suspended", 0, 200)}
STACK_BYTES = 256


@pytest.fixture
def fake(fw):
    m = Machine(fw("heap_tasks"), board="nrf52832")
    r = m.run(ms=50)
    assert r.reason == "exit" and r.exit_code == 0, m.console_text()
    expect = {k: int(v) for k, v in re.findall(r"EXPECT (\S+) (\d+)", m.console_text())}
    assert len(expect) == 9
    return m, expect


def _heap(m, kind):
    return next(h for h in m.heaps() if h.kind.startswith(kind))


def _check_heaps(m, expect):
    h = _heap(m, "FreeRTOS")
    assert h.problem is None, h.problem
    assert (h.total, h.free, h.min_ever_free, h.largest_free, h.free_blocks) == (
        4096, expect["heap.free"], expect["heap.min_ever_free"], expect["heap.largest_free"],
        expect["heap.free_blocks"])
    assert h.fragmentation == pytest.approx(1 - expect["heap.largest_free"] / expect["heap.free"])
    g = _heap(m, "MicroPython")
    assert g.problem is None, g.problem
    assert (g.total, g.used, g.free, g.largest_free, g.allocations) == (
        expect["gc.total"], expect["gc.used"], expect["gc.free"], expect["gc.largest_free"],
        expect["gc.allocations"])
    return h, g


def _check_tasks(m):
    tasks = {t.name: t for t in m.tasks()}
    assert set(tasks) == set(TASKS)
    for name, (state, prio, used) in TASKS.items():
        t = tasks[name]
        assert (t.state, t.priority) == (state, prio), name
        assert t.stack_high_water == (STACK_BYTES - used) // 4, name
        assert t.stack_top - t.stack_base == STACK_BYTES - used
        assert t.problem is None
    return tasks


def test_heaps_and_tasks_with_dwarf(fake):
    m, expect = fake
    h, g = _check_heaps(m, expect)
    assert g.layout.startswith("DWARF")
    tasks = _check_tasks(m)
    assert tasks["main"].stack_size == STACK_BYTES        # pxEndOfStack, from the DWARF


def test_heaps_and_tasks_without_dwarf(fake, monkeypatch):
    m, expect = fake
    monkeypatch.setattr(dwarf, "struct_layout", lambda *a, **k: None)
    monkeypatch.setattr("emu.inspect.freertos.struct_layout", lambda *a, **k: None)
    monkeypatch.setattr("emu.inspect.micropython.struct_layout", lambda *a, **k: None)
    h, g = _check_heaps(m, expect)
    assert "invariant" in g.layout
    tasks = _check_tasks(m)
    assert tasks["main"].stack_size is None              # the default layout has no end


def _write32(m, addr, value):
    m.cpu.write_mem(addr, value.to_bytes(4, "little"))


@pytest.mark.parametrize("what", ["loop", "outside", "count", "size"])
def test_a_corrupt_heap_is_reported_not_raised(fake, what):
    m, _expect = fake
    start = m.symbol("xStart")
    first = int.from_bytes(m.cpu.read_mem(start, 4), "little")
    if what == "loop":
        _write32(m, first, first)                        # next -> itself
    elif what == "outside":
        _write32(m, first, 0x30000000)
    elif what == "count":
        _write32(m, m.symbol("xFreeBytesRemaining"), 1234)
    else:
        _write32(m, first + 4, 0x80000010)               # the allocated bit on a free block
    h = _heap(m, "FreeRTOS")
    assert h.problem, what
    assert "\n" not in h.problem
    assert h.summary()                                   # still prints


def test_corrupt_task_lists_and_gc_tables_are_reported(fake):
    m, _expect = fake
    ready0 = m.symbol("pxReadyTasksLists")
    item = int.from_bytes(m.cpu.read_mem(ready0 + 12, 4), "little")
    _write32(m, item + 12, 0x3FFF0000)                   # pvOwner -> nowhere
    _write32(m, m.symbol("xDelayedTaskList1"), 100000)   # an absurd item count
    tasks = m.tasks()
    assert any(t.problem for t in tasks)
    ctx = m.symbol("mp_state_ctx")
    pool_start_off = 4 * (5 + 33) + 16                   # mem.gc_pool_start (heap_tasks.c)
    _write32(m, ctx + pool_start_off, 0xDEAD0000)
    g = _heap(m, "MicroPython")
    assert g.problem


def test_no_structures_no_heaps(fw):
    m = Machine(fw("cpu_wfi"), board="nrf52832")
    m.run(ms=5)
    assert m.heaps() == [] and m.tasks() == []


# --------------------------------------------------------------- real images
CACHE = Path.home() / ".cache" / "pinetime-emu"


def _infinitime() -> str:
    p = os.environ.get("PINETIME_EMU_INFINITIME_IMAGE")
    if not p:
        found = sorted((CACHE / "infinitime").glob("pinetime-app-*.out"))
        p = str(found[-1]) if found else ""
    if not p or not Path(p).exists():
        pytest.skip("no InfiniTime image: set PINETIME_EMU_INFINITIME_IMAGE or build "
                    "pinetime-app into ~/.cache/pinetime-emu/infinitime (INFINITIME-BUILD.md)")
    return p


def test_infinitime_heap4_and_tasks():
    m = Machine(_infinitime(), flash_file=None)
    m.run(seconds=3)
    (h,) = m.heaps()
    assert h.kind == "FreeRTOS heap_4" and h.problem is None
    assert h.total and 0 < h.free <= h.total and h.min_ever_free <= h.free
    assert 0 < h.largest_free <= h.free and h.used == h.total - h.free
    tasks = m.tasks()
    names = {t.name for t in tasks}
    # configMAX_TASK_NAME_LEN is 4 in InfiniTime: three letters of each name
    assert {"IDL", "Tmr", "dis", "ble"} <= names, names
    assert sum(t.state == "running" for t in tasks) == 1
    for t in tasks:
        assert t.problem is None and t.stack_high_water is not None and t.stack_high_water > 0


def test_wasp_gc_heap_matches_its_repl():
    p = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(CACHE / "wasp-os" / "upstream" /
                                                        "micropython.elf")
    if not Path(p).exists():
        pytest.skip("no wasp-os image: set PINETIME_EMU_WASP_IMAGE (docs/firmware.md)")
    m = Machine(p, flash_file=None)
    m.run(seconds=5)
    ph = m.phone
    ph.connect()
    start = len(ph.output)
    ph.send(b"\x04")                                     # soft reset: a clean heap (test_wasp)
    assert m.run_until(lambda: not ph.central.connected, timeout_ms=3000)
    ph.connect(timeout_ms=8000)
    assert ph.wait_for(b">>> ", start=start, timeout_ms=8000)
    out = ph.repl("import gc, micropython; gc.collect(); micropython.mem_info()",
                  timeout_ms=5000)
    mt = re.search(r"GC: total: (\d+), used: (\d+), free: (\d+)", out)
    assert mt, out
    total, used, free = map(int, mt.groups())
    g = _heap(m, "MicroPython")
    assert g.problem is None and g.layout.startswith("DWARF")
    assert g.total == total
    # the REPL allocates its next line's objects after mem_info() counted
    assert abs(g.free - free) <= 2048, (g.free, free)
    assert g.used + g.free == used + free
