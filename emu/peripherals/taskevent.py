"""Register storage whose tasks produce the events firmware polls for.

For blocks not modelled behaviourally (QDEC, COMP/LPCOMP, I2S, PDM, RADIO):
every register is stored, and each task listed in ``TASK_EVENTS`` fires its
events after a fixed delay, so drivers that start/stop such a block and
wait for the acknowledgement do not hang.  The block logs once that it is
not modelled.

Not modelled: everything the block measures, receives or transmits.
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral


class TaskEventBlock(NrfPeripheral):
    # task offset -> [(event offset, delay in 512 MHz ticks)]
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ack", "_due")
    TASK_EVENTS: dict = {}

    def __init__(self, soc, base, name=None, irq=None):
        self._ack = soc.clock.event(f"{name or self.NAME.lower()}.ack", self._fire_due)
        super().__init__(soc, base, name, irq)
        self.log_once("nm", "%s at %#010x: register storage + task acknowledgements only "
                      "(not modelled)", self.NAME, base)

    def reset(self) -> None:
        super().reset()
        self._ack.cancel()
        self._due: list = []     # [(when, event offset)]

    def trigger(self, offset: int) -> None:
        acks = self.TASK_EVENTS.get(offset)
        if acks is None:
            super().trigger(offset)
            return
        self.on_task(offset)
        now = self.clock.now
        for ev, delay in acks:
            if delay == 0:
                self.fire(ev)
            else:
                self._due.append((now + delay, ev))
        if self._due:
            self._due.sort()
            self._ack.schedule_at(self._due[0][0])

    def on_task(self, offset: int) -> None:
        """Subclass hook: state changes a task makes (e.g. RADIO STATE)."""

    def _fire_due(self) -> None:
        now = self.clock.now
        while self._due and self._due[0][0] <= now:
            _, ev = self._due.pop(0)
            self.fire(ev)
        if self._due:
            self._ack.schedule_at(self._due[0][0])

    def save_model_state(self) -> dict:
        return {"due": list(self._due)}

    def load_model_state(self, st: dict) -> None:
        self._due = [tuple(d) for d in st.get("due", [])]
        self._ack.cancel()
        if self._due:
            self._ack.schedule_at(self._due[0][0])
