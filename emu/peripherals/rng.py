"""RNG: random number generator.

nRF52832 Product Specification v1.4, section 26 "RNG - Random number
generator".  Slot 0x4000D000, IRQ 13.

TASKS_START begins generating bytes; each new byte is written to VALUE and
sets EVENTS_VALRDY after t_RNG (30 us without bias correction, 120 us with
CONFIG.DERCEN; the PS typical figures), and generation continues until
TASKS_STOP (or SHORTS VALRDY_STOP).  The bytes come from a deterministic
PRNG seeded by :attr:`seed` (``set_seed``) -- never from the host, so runs
are reproducible.

Not modelled: the real entropy source and its statistics (the value stream
is a seeded PRNG); the run time variance of silicon (every byte takes
exactly the typical time).
"""
from __future__ import annotations

import random

from emu.clock import us
from emu.peripherals.base import NrfPeripheral, Reg, RO, RW

T_BYTE = us(30)
T_BYTE_DERCEN = us(120)


class Rng(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev", "_prng", "running", "seed")
    NAME = "RNG"
    HAS_INTEN = False
    TASKS = {0x000: "START", 0x004: "STOP"}
    EVENTS = {0x100: "VALRDY"}
    SHORTS = {0: (0x100, 0x004)}           # VALRDY_STOP
    REGISTERS = [
        Reg(0x504, "CONFIG", 0, RW, mask=0x1),
        Reg(0x508, "VALUE", 0, RO),
    ]

    def __init__(self, soc, base: int, name=None, irq=None, seed: int = 0x52832):
        self.seed = seed
        self._ev = soc.clock.event(f"{name or 'rng'}.valrdy", self._on_value)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self.running = False
        self._prng = random.Random(self.seed)
        self._ev.cancel()

    def set_seed(self, seed: int) -> None:
        """Re-seed the value stream (takes effect now)."""
        self.seed = seed
        self._prng = random.Random(seed)

    def task_START(self) -> None:
        if not self.running:
            self.running = True
            self._schedule()

    def task_STOP(self) -> None:
        self.running = False
        self._ev.cancel()

    def _schedule(self) -> None:
        self._ev.schedule_in(T_BYTE_DERCEN if self.values[0x504] & 1 else T_BYTE)

    def _on_value(self) -> None:
        if not self.running:
            return
        self.values[0x508] = self._prng.getrandbits(8)
        self._schedule()          # before fire: SHORTS VALRDY_STOP cancels it
        self.fire(0x100)

    def save_model_state(self) -> dict:
        return {"running": self.running, "seed": self.seed, "prng": self._prng.getstate(),
                "when": self._ev.when}

    def load_model_state(self, s: dict) -> None:
        self.running, self.seed = s["running"], s["seed"]
        st = s["prng"]
        self._prng.setstate((st[0], tuple(st[1]), st[2]))
        if s.get("when") is not None:
            self._ev.schedule_at(s["when"])
