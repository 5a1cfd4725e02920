"""RADIO (0x40001000, IRQ 1), nRF52832 PS v1.4 section 23: register storage
with the state machine's acknowledgements (PS 23.12 timing, default ramp-up).

TXEN/RXEN -> READY after tRXEN/tTXEN (140 us, 40 us with MODECNF0.RU=Fast);
START -> ADDRESS, PAYLOAD, END (TX: after a nominal 1 Mbit packet time of
PCNF-independent 80 us; RX: never, nothing is on the air); DISABLE ->
DISABLED after 6 us.  STATE (+0x550) follows (Disabled 0, RxRu 1, RxIdle 2,
Rx 3, TxRu 9, TxIdle 10, Tx 11).

Not modelled: packets, addresses, CRC, RSSI, the air (the BLE stack is
emulated at the SoftDevice SVC layer instead); logged once.
"""
from __future__ import annotations

from emu.peripherals.taskevent import TaskEventBlock

US = 512
T_TXEN, T_RXEN, T_START, T_STOP, T_DISABLE = 0x000, 0x004, 0x008, 0x00C, 0x010
E_READY, E_ADDRESS, E_PAYLOAD, E_END, E_DISABLED = 0x100, 0x104, 0x108, 0x10C, 0x110
STATE, MODECNF0 = 0x550, 0x650


class Radio(TaskEventBlock):
    HAS_INTEN = False   # only INTENSET/INTENCLR (PS 23.14)
    NAME = "RADIO"
    TASKS = {T_TXEN: "TXEN", T_RXEN: "RXEN", T_START: "START", T_STOP: "STOP",
             T_DISABLE: "DISABLE", 0x014: "RSSISTART", 0x018: "RSSISTOP",
             0x01C: "BCSTART", 0x020: "BCSTOP"}
    EVENTS = {E_READY: "READY", E_ADDRESS: "ADDRESS", E_PAYLOAD: "PAYLOAD", E_END: "END",
              E_DISABLED: "DISABLED", 0x114: "DEVMATCH", 0x118: "DEVMISS",
              0x11C: "RSSIEND", 0x128: "BCMATCH", 0x130: "CRCOK", 0x134: "CRCERROR"}
    SHORTS = {0: (E_READY, T_START), 1: (E_END, T_DISABLE), 2: (E_DISABLED, T_TXEN),
              3: (E_DISABLED, T_RXEN), 4: (E_ADDRESS, 0x014), 5: (E_END, T_START),
              6: (E_ADDRESS, 0x01C), 8: (E_DISABLED, 0x018)}
    TASK_EVENTS = {T_TXEN: [], T_RXEN: [], T_START: [], T_STOP: [], T_DISABLE: [],
                   0x014: [(0x11C, 1 * US)]}

    def reset(self) -> None:
        super().reset()
        self.state = 0

    def read_other(self, offset: int) -> int:
        if offset == STATE:
            return self.state
        return super().read_other(offset)

    def on_task(self, offset: int) -> None:
        fast = self.extra.get(MODECNF0, 0) & 1
        ru = (40 if fast else 140) * US
        self._due = [d for d in self._due if offset not in (T_DISABLE,)]
        if offset == T_TXEN:
            self.state = 10
            self._due.append((self.clock.now + ru, E_READY))
        elif offset == T_RXEN:
            self.state = 2
            self._due.append((self.clock.now + ru, E_READY))
        elif offset == T_START:
            if self.state == 10:
                self.state = 11
                now = self.clock.now
                self._due += [(now + 40 * US, E_ADDRESS), (now + 48 * US, E_PAYLOAD),
                              (now + 80 * US, E_END)]
            elif self.state == 2:
                self.state = 3
        elif offset == T_STOP:
            self._due = []
            self.state = 10 if self.state in (9, 10, 11) else 2
        elif offset == T_DISABLE:
            self._due = [(self.clock.now + 6 * US, E_DISABLED)]
            self.state = 0

    def fire(self, offset: int) -> None:
        if offset == E_END and self.state == 11:
            self.state = 10
        super().fire(offset)

    def save_model_state(self) -> dict:
        return super().save_model_state() | {"state": self.state}

    def load_model_state(self, st: dict) -> None:
        super().load_model_state(st)
        self.state = st.get("state", 0)
