"""How the live front ends (the desktop window, frontends/window.py, and the
web view, frontends/web/view.py) run the machine: in slices of 1/60
emulated second, as many as fit in ``FAST_FRAME_S`` of wall time in fast
mode, through the GDB stub when one serves the machine.  Kept free of
pygame and of the web server so both use the same steps."""
from __future__ import annotations

from typing import Optional

from emu.clock import TICKS_PER_SECOND

SLICE_TICKS = TICKS_PER_SECOND // 60
FAST_FRAME_S = 1 / 30


def run_slice(machine, gdb, now: int, end_tick: Optional[int]) -> tuple:
    """Run ``machine`` one slice from the tick ``now`` (not past
    ``end_tick``), through ``gdb`` (a GdbStub) when given.  Returns
    ``(result, stopped, killed)``: the machine's RunResult (None through
    GDB), a one-line reason when the machine stopped for good (an exit, a
    fault) or None, and whether the debugger killed it."""
    until = now + SLICE_TICKS
    if end_tick is not None:
        until = min(until, end_tick)
    if gdb is not None:
        why = gdb.run_machine(until)
        if why == "killed":
            return None, None, True
        if why == "exit":
            return None, f"exit (status {machine.exit_code})", False
        return None, None, False
    r = machine.run(until_tick=until)
    if not getattr(r, "ok", True) or str(getattr(r, "reason", "")) == "exit":
        return r, f"{r.reason} (exit {getattr(r, 'exit_code', None)})", False
    return r, None, False
