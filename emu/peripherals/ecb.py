"""ECB: AES-128 electronic codebook encryption.

nRF52832 Product Specification v1.4, section 19 "ECB - AES electronic
codebook mode encryption".  Slot 0x4000E000, IRQ 14.

ECBDATAPTR points at 48 bytes of RAM: KEY (16, big-endian as in the PS),
CLEARTEXT (16), CIPHERTEXT (16).  TASKS_STARTECB reads key and cleartext at
once (EasyDMA), and after T_ECB writes the AES-128 result (through the
``cryptography`` package) and sets EVENTS_ENDECB.  TASKS_STOPECB during an
operation aborts it with EVENTS_ERRORECB; so does a pointer outside RAM.

Not modelled: ECB being pre-empted by CCM/AAR (the AES core they share;
no ERRORECB on a conflict);
the exact encryption time (fixed at T_ECB = 7.2 us, about the PS figure for
a 16-byte block); RAM access contention.
"""
from __future__ import annotations

from emu.clock import us
from emu.peripherals.base import NrfPeripheral, Reg, RW

T_ECB = us(7.2)


class Ecb(NrfPeripheral):
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("_ev", "_result")
    NAME = "ECB"
    HAS_INTEN = False
    TASKS = {0x000: "STARTECB", 0x004: "STOPECB"}
    EVENTS = {0x100: "ENDECB", 0x104: "ERRORECB"}
    REGISTERS = [Reg(0x504, "ECBDATAPTR", 0, RW)]

    def __init__(self, soc, base: int, name=None, irq=None):
        self._ev = soc.clock.event(f"{name or 'ecb'}.end", self._on_end)
        super().__init__(soc, base, name, irq)

    def reset(self) -> None:
        super().reset()
        self._result = None
        self._ev.cancel()

    def task_STARTECB(self) -> None:
        ptr = self.values[0x504]
        soc = self.soc
        if not (soc.RAM_BASE <= ptr and ptr + 48 <= soc.RAM_BASE + soc.RAM_SIZE):
            self.log_once("ptr", "ECBDATAPTR %#x not in RAM: ERRORECB", ptr)
            self.fire(0x104)
            return
        data = soc.cpu.read_mem(ptr, 32)
        self._result = (ptr + 32, aes128_ecb(bytes(data[:16]), bytes(data[16:32])))
        self._ev.schedule_in(T_ECB)

    def task_STOPECB(self) -> None:
        if self._ev.pending:
            self._ev.cancel()
            self._result = None
            self.fire(0x104)

    def _on_end(self) -> None:
        addr, ct = self._result
        self._result = None
        self.soc.cpu.write_mem(addr, ct)
        self.fire(0x100)

    def save_model_state(self) -> dict:
        return {"when": self._ev.when, "result": self._result}

    def load_model_state(self, s: dict) -> None:
        self._result = tuple(s["result"]) if s.get("result") else None
        if s.get("when") is not None:
            self._ev.schedule_at(s["when"])


def aes128_ecb(key: bytes, block: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()
