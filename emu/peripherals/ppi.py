"""PPI: programmable peripheral interconnect.

nRF52832 Product Specification v1.4, section 21 "PPI - Programmable
peripheral interconnect".  Slot 0x4001F000, no interrupt.

20 programmable channels CH[n].EEP/CH[n].TEP (n = 0..19) and 12 fixed
channels 20-31 whose endpoints are set by the silicon (PS table
"Pre-programmed channels"; they are in ``FIXED`` and readable through
:meth:`endpoints`, they have no registers).  CHEN/CHENSET/CHENCLR enable
channels, CHG[n] (6 groups) hold channel masks enabled/disabled by
TASKS_CHG[n].EN/DIS, FORK[n].TEP adds a second task to every channel.

The PPI subscribes to every peripheral's ``event_listeners``; when an event
at address EEP fires on an enabled channel it triggers the task at TEP (and
FORK.TEP) through ``soc.peripheral_at(addr).trigger(addr & 0xFFF)``, the
same path as a CPU write of 1 to the task register.  Only enabled channels
are in the event map, so an idle PPI costs one dict lookup per event.  A
shared-ID slot (UART0/UARTE0, the serial slots, CCM/AAR) is one peripheral
here: its enabled block's events arrive at the slot's address and a task at
the slot goes to its enabled block (emu/peripherals/serial.py).
:meth:`Ppi.routes_from` tells a block whether an enabled channel starts at
its slot (the legacy SPI completes polled bytes lazily when none does).

Not modelled: the one-cycle PCLK16M propagation delay (tasks trigger in the
same instant as the event); event-to-task loops are cut at depth 16 (logged).
"""
from __future__ import annotations

from emu.peripherals.base import NrfPeripheral, Reg, RW
from emu.soc.ops import MODE_W1C, MODE_W1S, Op, W_VALUE

NUM_PROG = 20
NUM_GROUPS = 6

# fixed channels 20-31: (EEP, TEP)
FIXED = {
    20: (0x40008140, 0x40001000),  # TIMER0 COMPARE[0] -> RADIO TXEN
    21: (0x40008140, 0x40001004),  # TIMER0 COMPARE[0] -> RADIO RXEN
    22: (0x40008144, 0x40001010),  # TIMER0 COMPARE[1] -> RADIO DISABLE
    23: (0x40001128, 0x4000F000),  # RADIO BCMATCH -> AAR START
    24: (0x40001100, 0x4000F000),  # RADIO READY -> CCM KSGEN
    25: (0x40001104, 0x4000F004),  # RADIO ADDRESS -> CCM CRYPT
    26: (0x40001104, 0x40008044),  # RADIO ADDRESS -> TIMER0 CAPTURE[1]
    27: (0x4000110C, 0x40008048),  # RADIO END -> TIMER0 CAPTURE[2]
    28: (0x4000B140, 0x40001000),  # RTC0 COMPARE[0] -> RADIO TXEN
    29: (0x4000B140, 0x40001004),  # RTC0 COMPARE[0] -> RADIO RXEN
    30: (0x4000B140, 0x4000800C),  # RTC0 COMPARE[0] -> TIMER0 CLEAR
    31: (0x4000B140, 0x40008000),  # RTC0 COMPARE[0] -> TIMER0 START
}


class Ppi(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_chen", "_depth", "_map", "_slots")
    STRUCTURE = ("_attached", "_maps", "_seen")
    NAME = "PPI"
    TASKS = {}
    for _n in range(NUM_GROUPS):
        TASKS[8 * _n] = f"CHG[{_n}].EN"
        TASKS[8 * _n + 4] = f"CHG[{_n}].DIS"
    EVENTS: dict = {}
    REGISTERS = [
        Reg(0x500, "CHEN", 0, RW, write="_wr_chen"),
        Reg(0x504, "CHENSET", 0, RW, read="_rd_chen", write="_wr_chenset"),
        Reg(0x508, "CHENCLR", 0, RW, read="_rd_chen", write="_wr_chenclr"),
        Reg(0x510, "CH_EEP", 0, RW, write="_wr_map", count=NUM_PROG, stride=8),
        Reg(0x514, "CH_TEP", 0, RW, write="_wr_map", count=NUM_PROG, stride=8),
        Reg(0x800, "CHG", 0, RW, count=NUM_GROUPS),
        Reg(0x910, "FORK_TEP", 0, RW, write="_wr_map", count=32),
    ]

    def __init__(self, soc, base: int, name=None, irq=None):
        super().__init__(soc, base, name, irq=None)
        for n in range(NUM_GROUPS):
            self._task_handlers[8 * n] = (lambda n=n: self._group(n, True))
            self._task_handlers[8 * n + 4] = (lambda n=n: self._group(n, False))
        self._attached: set = set()
        self._seen = 0            # peripherals looked at by _attach (it runs per rebuild)
        self._depth = 0

    def reset(self) -> None:
        super().reset()
        self._map: dict = {}      # event address -> [task addresses]
        self._slots: set = set()  # the slots of the events in _map
        self._chen = 0            # the CHEN value _map was built for
        self._maps: dict = {}     # CHEN -> its _map, while the endpoints stay as they are

    # CHENSET/CHENCLR as bus ops: they set and clear bits of CHEN without
    # calling the model (NimBLE writes them ~800 times an emulated second);
    # the routing follows CHEN when an event fires (_on_event).
    lazy_chen = True   # False: CHENSET/CHENCLR through the model (the slow path, for tests)

    def write_op(self, offset: int):
        if self.lazy_chen and offset in (0x504, 0x508) and self._own("write", NrfPeripheral):
            self._attach()          # the event listeners, before any channel works
            return Op(W_VALUE, self, (MODE_W1S if offset == 0x504 else MODE_W1C, 0x500))
        return super().write_op(offset)

    # -- public --------------------------------------------------------
    def routes_from(self, base: int) -> bool:
        """An enabled channel starts at an event of the slot at ``base``: the
        peripheral there must fire its events when they happen (the legacy
        SPI completes bytes lazily otherwise)."""
        if self.values[0x500] != self._chen:
            self._rebuild()
        return base in self._slots

    def endpoints(self, ch: int):
        """(EEP, TEP) of channel ``ch`` (0-31)."""
        if ch in FIXED:
            return FIXED[ch]
        return self.values[0x510 + 8 * ch], self.values[0x514 + 8 * ch]

    # -- tasks / registers ---------------------------------------------
    def _group(self, n: int, enable: bool) -> None:
        g = self.values[0x800 + 4 * n]
        chen = self.values[0x500]
        self.values[0x500] = (chen | g) if enable else (chen & ~g)
        self._rebuild()

    def _rd_chen(self, _off) -> int:
        return self.values[0x500]

    def _wr_chen(self, new, old) -> None:
        self._rebuild()

    def _wr_chenset(self, new, old) -> None:
        self.values[0x500] |= new
        self._rebuild()

    def _wr_chenclr(self, new, old) -> None:
        self.values[0x500] &= ~new
        self._rebuild()

    def _wr_map(self, new, old) -> None:
        # an endpoint changed: the maps are stale; the next event (or
        # routes_from) builds the one it needs (Zephyr's controller writes
        # EEP and TEP of several channels per radio event: one build, not one
        # per write)
        self._maps.clear()
        self._attach()
        self._chen = -1

    # -- routing -------------------------------------------------------
    # NimBLE enables and disables the same few channel sets ~800 times an
    # emulated second: the map of each CHEN value is built once and kept
    # until an endpoint (EEP, TEP, FORK.TEP) changes.
    memo = True       # False: build the map on every change (the slow path, for tests)

    def _rebuild(self, attach: bool = True) -> None:
        if attach:
            self._attach()
        chen = self.values[0x500]
        self._chen = chen
        m = self._maps.get(chen)
        if m is None:
            m = self._build(chen)
            if self.memo:
                if len(self._maps) >= 64:
                    self._maps.clear()
                self._maps[chen] = m
        self._map = m
        self._slots = {eep & ~0xFFF for eep in m}

    def _build(self, chen: int) -> dict:
        m: dict = {}
        for ch in range(32):
            if not (chen >> ch) & 1:
                continue
            eep, tep = self.endpoints(ch)
            if not eep:
                continue
            tasks = m.setdefault(eep, [])
            if tep:
                tasks.append(tep)
            fork = self.values[0x910 + 4 * ch]
            if fork:
                tasks.append(fork)
        return m

    def _attach(self) -> None:
        peripherals = self.soc.peripherals
        if len(peripherals) == self._seen:
            return              # nothing new since the last rebuild (NimBLE rebuilds ~800/s)
        self._seen = len(peripherals)
        for p in list(peripherals.values()):
            listeners = getattr(p, "event_listeners", None)
            if listeners is not None and id(p) not in self._attached:
                self._attached.add(id(p))
                listeners.append(self._on_event)

    def _on_event(self, periph, offset: int) -> None:
        if self.values[0x500] != self._chen:
            self._rebuild()
        tasks = self._map.get(periph.base + offset)
        if not tasks:
            return
        if self._depth >= 16:
            self.log_once("loop", "PPI event/task loop cut at depth 16 (event %#x)",
                          periph.base + offset)
            return
        self._depth += 1
        try:
            for addr in tasks:
                target = self.soc.peripheral_at(addr)
                trig = getattr(target, "trigger", None)
                if trig is None:
                    self.log_once(("tep", addr), "PPI task %#010x: no peripheral task there", addr)
                    continue
                trig(addr & 0xFFF)
        finally:
            self._depth -= 1

    def save_model_state(self) -> dict:
        return {"attached": bool(self._attached)}

    def load_model_state(self, state: dict) -> None:
        # listen to the events only if the saved machine did: the shared-ID
        # slots' variants share their slot's listener list, and a listener
        # there changes how the legacy SPI streams (see Spi)
        self._maps = {}
        self._rebuild(attach=state.get("attached", True))
