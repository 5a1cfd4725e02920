"""A machine and its restored snapshot, compared (tests/machine/test_snapshot.py
and the peripherals' snapshot checks): what can be seen of each (time,
cycles, screen, console, pins, PC, IPSR) and everything a snapshot holds."""
from __future__ import annotations

import hashlib
import json

from emu.machine import Machine
from emu.snapshot import build_state


def observable(m: Machine) -> dict:
    screen = getattr(m.board, "screen", None)
    return {"now": m.clock.now, "cycles": m.cpu.cycles,
            "screen": hashlib.sha256(screen().tobytes()).hexdigest() if screen else None,
            "console": bytes(m.console), "pins": [p.level for p in m.soc.pins],
            "pc": m.cpu.pc, "ipsr": m.cpu.ipsr}


def full_state(m: Machine) -> str:
    """Everything a snapshot would hold, as one comparable string."""
    meta, blobs = build_state(m)
    meta["firmware"]["path"] = None
    return json.dumps(meta, sort_keys=True) + "".join(
        hashlib.sha256(b).hexdigest() for b in blobs)


def assert_same(a: Machine, b: Machine) -> None:
    oa, ob = observable(a), observable(b)
    for k in oa:
        assert oa[k] == ob[k], f"{k} differs after restore: {oa[k]!r:.200} vs {ob[k]!r:.200}"
    assert full_state(a) == full_state(b)


def continue_and_compare(m: Machine, path: str, ms: float, steps: int = 1) -> Machine:
    """Save m to path, restore into a fresh machine, run both, compare."""
    m.save_snapshot(path)
    r = Machine.from_snapshot(path)
    assert_same(m, r)                               # identical right after restore
    for _ in range(steps):
        ra = m.run(ms=ms / steps)
        rb = r.run(ms=ms / steps)
        assert ra.reason == rb.reason
        assert_same(m, r)
    return r
