"""The public face: a whole emulated device built from a firmware file.

    from emu import Machine
    m = Machine("firmware/build/hello.elf")          # the board the image was built for
    m.run(ms=100)
    print(m.console_text())

A :class:`Machine` owns the clock, the board (SoC plus devices) and the
firmware image, runs the CPU for emulated time, resets the system when the
firmware asks (AIRCR.SYSRESETREQ) or the watchdog fires, and collects the
firmware's debug output: ITM stimulus port 0 and ARM semihosting (BKPT
0xAB: SYS_WRITEC, SYS_WRITE0, SYS_WRITE to the console, SYS_EXIT).
Frontends (the window, the headless runner, the test bench, the GDB stub)
all work through this class.
"""
from __future__ import annotations

import logging
import struct
from typing import Callable, Optional, Union

from emu import checks
from emu.clock import NEVER, TICKS_PER_MS, TICKS_PER_SECOND, TICKS_PER_US
from emu.cpu.cortexm import StopReason
from emu.soc.ops import new_clock
from emu.loader import (FirmwareError, FirmwareImage, MemoryLayout, SymbolTable,
                        load_firmware)
from emu.phone import Phone

log = logging.getLogger("emu.machine")

SEMIHOSTING_BKPT = 0xAB
MAX_RUN_TICKS = NEVER               # the furthest a run may go: no deadline (~285 years)
POWER_LOST = "power-lost"           # a run's reason after a power cut (emu/powercut.py)


class PowerLostError(RuntimeError):
    """run() on a machine whose power was cut and not brought back."""

SYS_WRITEC, SYS_WRITE0, SYS_WRITE, SYS_EXIT, SYS_EXIT_EXTENDED = 0x03, 0x04, 0x05, 0x18, 0x20
ADP_STOPPED_APPLICATION_EXIT = 0x20026

BOARDS = {
    "pinetime": ("emu.board.pinetime", "PineTime"),
    "nrf52832": ("emu.board.bare", "BareNrf52832"),
    "nrf52dk": ("emu.board.nrf52dk", "Nrf52dk"),
    "microbit": ("emu.board.microbit", "Microbit"),
}


def detect_board(firmware, base: Optional[int] = None) -> str:
    """The board an image was built for, from what the image says about
    itself (emu.detect: build attributes, symbols, vector table, code,
    strings; the initial SP is weak evidence).  Raises
    emu.detect.BoardDetectionError (a FirmwareError) when the image does not
    tell, FirmwareError when it cannot be loaded."""
    from emu.detect import detect_board as detect
    return detect(firmware, base=base)


class RunResult:
    """What a run ended with: reason, emulated time, and any exit code/fault."""

    def __init__(self, reason: str, machine: "Machine"):
        self.reason = reason
        self.time_ticks = machine.clock.now
        self.cycles = machine.cpu.cycles
        self.exit_code = machine.exit_code
        self.system_off = machine.system_off     # ended in nRF System OFF
        self.info = dict(machine.cpu.stop_info) if reason in (StopReason.LOCKUP,
                                                                StopReason.FAULT) else {}

    @property
    def ok(self) -> bool:
        return self.reason in (StopReason.DEADLINE, StopReason.SLEEP, StopReason.OFF) or (
            self.reason == StopReason.EXIT and self.exit_code == 0)

    def __repr__(self) -> str:
        return (f"RunResult({self.reason}, t={self.time_ticks / TICKS_PER_SECOND:.6f}s, "
                f"exit={self.exit_code})")


class Machine:
    """A whole emulated device.

    ``Machine(firmware, board=None, base=None, pure_python=False,
    softdevice_hex=None, bootloader=None, **board_options)``; ``bootloader``:
    the PineTime bootloader's binary, run at 0 under an MCUBoot image.  Raises FirmwareError (one line
    naming the file) when the firmware cannot be loaded or its board cannot
    be told; TypeError for an argument of the wrong type or an option the
    board does not take (``Machine(fw, bogus_option=1)``); ValueError for an
    unknown board or a value out of range (``base`` beyond 32 bits, a
    PineTime ``bpm`` below 0, a ``flash_file`` that is a directory or a
    device)."""
    # what a snapshot saves (SNAPSHOT) and what the wiring rebuilds (emu/snapshot.py)
    SNAPSHOT = ("bootloader", "console", "exit_code", "halt_requested", "power_lost", "resets",
                "softdevice_hex")
    STRUCTURE = ("board", "board_name", "breakpoint_handler", "clock", "console_listeners",
                 "cpu", "detection", "image", "output_error_listeners", "power_meter",
                 "own_softdevice",          # the image's own S132 runs (from the image)
                 "reset_listeners", "rtt", "soc", "softdevice", "phone", "symbols",
                 "world_run")
    phone = None            # the SoftDevice's phone (attached with it)

    def __init__(self, firmware: Union[str, FirmwareImage, None] = None, *,
                 board: Optional[str] = None, base: Optional[int] = None,
                 pure_python: bool = False, softdevice_hex: Optional[str] = None,
                 bootloader: Optional[str] = None, **board_options):
        import os
        if firmware is not None and not isinstance(firmware, (str, os.PathLike, FirmwareImage)):
            raise TypeError(f"firmware must be a path or a FirmwareImage, not "
                            f"{type(firmware).__name__}")
        if softdevice_hex is not None and not isinstance(softdevice_hex, (str, os.PathLike)):
            raise TypeError(f"softdevice_hex must be a path, not {type(softdevice_hex).__name__}")
        if bootloader is not None and not isinstance(bootloader, (str, os.PathLike)):
            raise TypeError(f"bootloader must be a path, not {type(bootloader).__name__}")
        # the PineTime bootloader (MCUBoot on Mynewt) at 0 under an MCUBoot image
        self.bootloader = bootloader
        if board is not None and not isinstance(board, str):
            raise TypeError(f"board must be a name, not {type(board).__name__}")
        if base is not None:
            base = checks.integer("base", base, 0, 0xFFFFFFFF)
        from emu import native
        native.announce(pure_python)          # the pure-Python reference is never silent
        self.clock = new_clock(pure_python)
        # a real SoftDevice image (MBR + S132 hex) to run under the app instead
        # of the emulated S132 API: SVCs then reach the guest's own handler
        self.softdevice_hex = softdevice_hex
        self.image: Optional[FirmwareImage] = None
        self.symbols = SymbolTable()
        # board=None: the one the image was built for (emu.detect), the
        # PineTime without an image; BoardDetectionError if the image does not tell
        self.detection = None
        if board is None and firmware is not None:
            from emu.detect import detect
            self.detection = detect(firmware, base=base)
            board = self.detection.require_board()
            if self.detection.note:
                log.info("%s", self.detection.note)
        board = board or "pinetime"
        self.board_name = board
        if board not in BOARDS:
            raise ValueError(f"unknown board {board!r} (known: {', '.join(sorted(BOARDS))})")
        import importlib
        modname, clsname = BOARDS[board]
        cls = getattr(importlib.import_module(modname), clsname)
        self.board = cls(self, pure_python=pure_python, **board_options)
        self.soc = self.board.soc
        self.cpu = self.soc.cpu
        # an image that boots Nordic's MBR and SoftDevice itself (make
        # bootloader's hex) runs them, as with softdevice_hex
        self.own_softdevice = False
        preloaded = None
        if getattr(self.board, "softdevice", None) == "s132" and softdevice_hex is None \
                and firmware is not None:
            from emu.loader import boots_own_softdevice
            if isinstance(firmware, FirmwareImage):
                preloaded = firmware
            elif self.detection is not None and self.board.memory_layout() == MemoryLayout():
                preloaded = self.detection.image
            else:
                preloaded = load_firmware(firmware, base=base, layout=self.board.memory_layout())
            self.own_softdevice = boots_own_softdevice(preloaded)
            if self.own_softdevice:
                preloaded.notes.append("Nordic's MBR and SoftDevice are in the image: booting "
                                       "from the MBR and running that SoftDevice (not the "
                                       "emulated S132 API)")
        if getattr(self.board, "softdevice", None) == "s132" and softdevice_hex is None \
                and not self.own_softdevice:
            import emu.softdevice
            emu.softdevice.attach(self)        # the SVC layer; softdevice_attached below
        elif getattr(self.board, "softdevice", None) == "s132":
            from emu.phone.airnus import AirCentral, AirNus     # the real S132: over the air
            central = AirCentral(self)
            self.phone = Phone(self, None, central=central, nus=AirNus(central))
        self.soc.symbolize = self.describe_address
        self.cpu.bkpt_handler = self._bkpt
        self.cpu.itm_handler = self._itm
        self.console = bytearray()        # ITM port 0 + semihosting output
        self.console_listeners: list = []
        # told (one line) when a file the machine writes as it runs fails: a
        # trace or VCD stream, the NOR flash file (emu/outputs.py)
        self.output_error_listeners: list = []
        self.exit_code: Optional[int] = None
        self.resets = 0
        self.breakpoint_handler: Optional[Callable[[int, int], bool]] = None
        self.halt_requested = False
        # set by emu/timeline.py while this machine is on a timeline: run()
        # called from outside (a phone, a bridge, a scenario, GDB) runs every
        # machine of it; the timeline's own steps clear it for their run
        self.world_run: Optional[Callable] = None
        # set when the power is cut (emu/powercut.py): run() does nothing
        # until power_cycle() brings the power back
        self.power_lost = False
        self.rtt = None                   # emu.rtt.Rtt once start_rtt() is called
        # fn() after every power-on and system reset (emu/power.py re-reads its parts)
        self.reset_listeners: list = []
        self.power_meter = None           # the energy model, once power() started it
        if firmware is not None:
            if preloaded is not None:
                firmware = preloaded
            elif self.detection is not None and self.board.memory_layout() == MemoryLayout():
                firmware = self.detection.image      # loaded for this layout already
            self.load(firmware, base=base)

    # ------------------------------------------------------------------
    # firmware
    # ------------------------------------------------------------------
    def softdevice_attached(self, softdevice) -> None:
        """Called by emu.softdevice.attach: the phone (emu/phone) talks to the
        emulated S132 through its host central."""
        self.phone = Phone(self, softdevice)

    def load(self, firmware: Union[str, FirmwareImage], base: Optional[int] = None) -> None:
        layout = self.board.memory_layout()
        img = firmware if isinstance(firmware, FirmwareImage) else load_firmware(
            firmware, base=base, layout=layout)
        if self.softdevice_hex is not None:
            from emu.loader import with_softdevice
            img = with_softdevice(img, load_firmware(self.softdevice_hex, layout=layout))
        if self.bootloader is not None:
            from emu.loader import with_bootloader
            img = with_bootloader(img, load_firmware(self.bootloader, base=0, layout=layout))
        self.image = img
        self.symbols = img.symbols
        self._warn_missing_softdevice(img)
        for note in img.notes:
            log.info("%s: %s", img.path, note)
        self.soc.load_image(img.segments)
        self.board.firmware_loaded(img)
        self.power_on()

    def _warn_missing_softdevice(self, img) -> None:
        """An application linked above a SoftDevice, with nothing below it and no
        SoftDevice on this board: its first SVC goes nowhere (say so once)."""
        from emu.loader import softdevice_present
        vt = img.vector_table or 0
        if (vt < 0x1000 or getattr(self.board, "softdevice", None) == "s132"
                or softdevice_present(img) or any(a < vt for a, _d in img.segments)):
            return
        log.warning("%s is an application for a SoftDevice (vector table at %#x, nothing "
                    "below it): give Nordic's S132 with --softdevice-hex FILE, or run it on "
                    "--board pinetime, where S132 is emulated at its API",
                    img.path or "the image", vt)

    def describe_address(self, addr: int) -> str:
        return self.symbols.describe(addr) if self.symbols else ""

    def symbol(self, name: str) -> int:
        a = self.symbols.lookup(name)
        if a is None:
            raise KeyError(f"no symbol {name!r} in {self.image.path if self.image else 'firmware'}")
        return a

    @property
    def real_softdevice(self) -> bool:
        """Nordic's SoftDevice code runs (softdevice_hex, or an image that
        carries it with the MBR), not the emulated S132 API."""
        return self.softdevice_hex is not None or self.own_softdevice

    @property
    def vector_table(self) -> int:
        return self.image.vector_table if self.image and self.image.vector_table is not None else 0

    def power_on(self) -> None:
        self.board.power_on_reset()
        self.cpu.reset(self.vector_table)
        for fn in self.reset_listeners:
            fn()

    def power_cycle(self, seed: int = 0) -> None:
        """Power gone and back (emu/powercut.py): RAM lost (a seeded pattern,
        as cells settle after a power loss), every peripheral and external
        part restarted, the flash as it physically is, and the chip from its
        reset vector (through its bootloader)."""
        import hashlib
        soc = self.soc
        n = soc.RAM_SIZE
        block = hashlib.sha256(f"ram:{seed}".encode()).digest() * (4096 // 32)
        self.cpu.write_mem(soc.RAM_BASE, (block * (n // len(block) + 1))[:n])
        self.halt_requested = False
        self.power_lost = False
        self.cpu.stall_cut = False
        self.exit_code = None
        self.cpu.stop_reason = None
        self.resets += 1
        log.info("power cycle at t=%.6f s", self.time)
        self.power_on()

    def system_reset(self, reason: str = "sysresetreq") -> None:
        """Reset everything but RAM contents (and what the chip retains)."""
        self.resets += 1
        log.info("system reset (%s) at t=%.6f s", reason, self.time)
        self.board.system_reset(reason)
        self.cpu.reset(self.vector_table)
        for fn in self.reset_listeners:
            fn()

    # ------------------------------------------------------------------
    # time and running
    # ------------------------------------------------------------------
    def trace(self, out, range=None, limit: int = 64 << 20):
        """Start an instruction trace into ``out`` (a path or a text file):
        ``range`` a symbol or 'START-END'.  Returns the tracer; ``close()``
        it to stop (emu/trace.py)."""
        from emu.trace import InsnTrace, parse_range
        start, end = parse_range(self, range) if range else (0, 0xFFFFFFFF)
        return InsnTrace(self, out, limit=limit, start=start, end=end,
                         on_error=self.report_output_error)

    def vcd(self, path: str):
        """Start a value change dump into ``path`` (emu/vcd.py): pins, SPI
        and I2C bytes, interrupt lines.  Returns it; ``close()`` to finish."""
        from emu.vcd import VcdRecorder
        return VcdRecorder(self, path, on_error=self.report_output_error)

    def start_rtt(self, address=None, poll_ms: float = 10.0):
        """Read SEGGER RTT as a debug probe does (emu/rtt.py): ``address``
        None (the ``_SEGGER_RTT`` symbol, else a scan of RAM for the id), a
        symbol name or an address; polled every ``poll_ms`` of emulated time.
        Returns the :class:`emu.rtt.Rtt`, also ``machine.rtt``.  ValueError
        for an unknown symbol or an address outside RAM; a second call
        replaces the first."""
        from emu.rtt import Rtt
        if self.rtt is not None:
            self.rtt.stop()
        self.rtt = Rtt(self, address=address, poll_ms=poll_ms)
        return self.rtt

    def trace_mmio(self, out, limit: int = 64 << 20):
        """Start tracing every peripheral access into ``out`` (a path or a
        text file).  Returns the tracer; ``close()`` it to stop."""
        from emu.trace import MmioTrace
        return MmioTrace(self, out, limit=limit, on_error=self.report_output_error)

    def power(self, record: bool = True, **options):
        """The energy model (emu/power.py): a PowerMeter integrating the
        current of the chip and the board's parts from now on, over emulated
        time; ``report()`` gives the average, the share per part and the
        battery life.  The same meter on later calls (its settings are the
        first call's).  ``record``: keep the current over time (for
        ``rows()``, ``series()``, the CSV and the plot) as rows of
        ``interval`` emulated seconds (default 1; 0: one per change), each
        part's exact charge over it, at most ``max_rows`` (default 8192) in
        memory, pairs merged beyond (None: no bound)."""
        if self.power_meter is None:
            from emu.power import PowerMeter
            self.power_meter = PowerMeter(self, record=record, **options)
        return self.power_meter

    def heaps(self) -> list:
        """The firmware's heaps, read from guest RAM through the ELF's
        symbols (emu/inspect): FreeRTOS heap_4, MicroPython's GC heap.  A
        list of :class:`emu.inspect.HeapInfo` (empty when the image has none
        the reader knows); a structure that does not add up comes back with
        its ``problem`` set, never as an exception."""
        from emu.inspect import read_heaps
        return read_heaps(self)

    def tasks(self) -> list:
        """The RTOS's tasks (FreeRTOS), read from guest RAM: a list of
        :class:`emu.inspect.TaskInfo` (empty without FreeRTOS)."""
        from emu.inspect import read_tasks
        return read_tasks(self)

    @property
    def air(self):
        """The 2.4 GHz air the RADIO sends on and listens to (emu/air.py), or
        None on a chip without one.  Host-side BLE devices attach here
        (emu/phone/scanner.py's Scanner)."""
        radio = self.soc.peripherals.get("radio")
        return getattr(radio, "air", None)

    @property
    def time(self) -> float:
        """Emulated seconds since power-on."""
        return self.clock.now / TICKS_PER_SECOND

    @property
    def now(self) -> int:
        return self.clock.now

    @property
    def system_off(self) -> bool:
        """The chip is in System OFF (POWER.SYSTEMOFF): the CPU runs nothing
        until a wake-up (GPIO DETECT) or a reset; ``run`` lets time pass."""
        return self.cpu.powered_off

    def run(self, seconds: float = 0.0, *, ms: float = 0.0, us: float = 0.0,
            ticks: int = 0, until_tick: Optional[int] = None,
            stop: Optional[Callable[[], bool]] = None) -> RunResult:
        """Run for the given emulated time (or until ``until_tick``).

        Returns early on semihosting exit, lockup, an unhandled fault, a
        debugger stop, or when ``stop()`` returns true (checked at slice
        boundaries).  In System OFF the CPU runs nothing and time passes from
        event to event until a wake-up reset; the result's ``system_off``
        says so (reason ``"off"`` when nothing is scheduled before ``until``).

        ``until_tick=emu.clock.NEVER`` runs with no deadline.  TypeError if a
        time is not a number (``ticks`` and ``until_tick`` integers) or
        ``stop`` is not callable; ValueError if a time is negative or not
        finite, or the end lies beyond the clock's range (NEVER, about 285
        years of emulated time); an ``until_tick`` already passed returns at
        once.
        """
        if stop is not None and not callable(stop):
            raise TypeError(f"stop must be callable, not {type(stop).__name__}")
        world_run = self.world_run
        if until_tick is None:
            longest = MAX_RUN_TICKS - self.clock.now
            span = checks.integer("ticks", ticks, 0, longest)
            for name, value, unit in (("seconds", seconds, TICKS_PER_SECOND),
                                      ("ms", ms, TICKS_PER_MS), ("us", us, TICKS_PER_US)):
                span += int(round(checks.number(name, value, 0, longest / unit) * unit))
            if span > longest:
                raise ValueError(f"run of {span} ticks goes beyond the clock's range "
                                 f"(at most {longest} more)")
            until_tick = self.clock.now + span
        else:
            until_tick = checks.integer("until_tick", until_tick, 0, MAX_RUN_TICKS)
        if world_run is not None:
            # on a World's timeline (emu/world.py): the whole world runs, so
            # that no machine gets ahead of what could reach it
            return world_run(self, until_tick, stop)
        if self.power_lost:
            # nothing runs until power_cycle(): a loop that runs on would spin
            raise PowerLostError("the machine has lost its power (emu/powercut.py); "
                                 "power_cycle() brings it back")
        cpu = self.cpu
        scs = self.soc.scs
        while True:
            # a reset or halt asked for ends the run at the next boundary (the
            # loop reads these flags itself, in C too), then stop()
            flags = ((scs, "reset_requested"), (self.board, "reset_pending"),
                     (self, "halt_requested"))
            # a stop() predicate is checked at every slice boundary: then the
            # CPU keeps all of them (no exception return inside a slice)
            cpu._boundaries_watched = stop is not None
            try:
                reason = cpu.run(until_tick, stop, flags)
            finally:
                cpu._boundaries_watched = False
            if scs.reset_requested:
                scs.reset_requested = False
                self.system_reset("sysresetreq")
                continue
            if self.board.reset_pending:
                why = self.board.reset_pending
                self.board.reset_pending = None
                self.system_reset(why)
                continue
            if reason == StopReason.BREAK and self.halt_requested:
                self.halt_requested = False
            if self.power_lost:
                return RunResult(POWER_LOST, self)
            return RunResult(reason, self)

    def run_until(self, predicate: Callable[[], bool], timeout_ms: float,
                  poll_ms: float = 1.0) -> bool:
        """Run until ``predicate()`` is true (checked every slice and at least every
        ``poll_ms`` of emulated time); False on timeout.  TypeError if
        ``predicate`` is not callable or a time not a number, ValueError if a
        time is negative or not finite (``poll_ms`` must be above 0)."""
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, not {type(predicate).__name__}")
        longest = (MAX_RUN_TICKS - self.clock.now) / TICKS_PER_MS
        timeout_ms = checks.number("timeout_ms", timeout_ms, 0, longest)
        if checks.number("poll_ms", poll_ms, 0, longest) == 0:
            raise ValueError("poll_ms must be above 0")
        end = self.clock.now + int(timeout_ms * TICKS_PER_MS)
        step = max(1, int(poll_ms * TICKS_PER_MS))
        while self.clock.now < end:
            if predicate():
                return True
            r = self.run(until_tick=min(end, self.clock.now + step), stop=predicate)
            if r.reason not in (StopReason.DEADLINE, StopReason.BREAK, StopReason.SLEEP):
                return predicate()
        return predicate()

    # ------------------------------------------------------------------
    # debug output
    # ------------------------------------------------------------------
    def report_output_error(self, message: str) -> None:
        """A file the machine writes as it runs could not be written (a trace,
        a VCD, the NOR flash file): ``message`` is one line naming it.  Goes to
        each of ``output_error_listeners`` (the CLI stops the run and exits
        non-zero), or to the log when there are none."""
        if self.output_error_listeners:
            for fn in list(self.output_error_listeners):
                fn(message)
        else:
            log.error("%s", message)

    def close(self) -> None:
        """Release the board's resources (the PineTime saves its NOR flash file)."""
        close = getattr(self.board, "close", None)
        if close is not None:
            close()

    def console_text(self) -> str:
        return self.console.decode("utf-8", "replace")

    def _emit(self, data: bytes) -> None:
        self.console += data
        for fn in self.console_listeners:
            fn(data)

    def _itm(self, port: int, value: int, size: int) -> None:
        if port == 0:
            self._emit(int(value).to_bytes(size, "little")[:size] if size > 1 else bytes([value & 0xFF]))

    def _bkpt(self, imm: int, pc: int) -> bool:
        if self.breakpoint_handler is not None and self.breakpoint_handler(imm, pc):
            return True
        if imm != SEMIHOSTING_BKPT:
            return False
        cpu = self.cpu
        from unicorn import arm_const as A
        op = cpu.reg(A.UC_ARM_REG_R0)
        arg = cpu.reg(A.UC_ARM_REG_R1)
        result = 0
        if op == SYS_WRITEC:
            self._emit(cpu.read_mem(arg, 1))
        elif op == SYS_WRITE0:
            out = bytearray()
            a = arg
            while len(out) < 4096:
                b = cpu.read_mem(a, 1)
                if b == b"\0":
                    break
                out += b
                a += 1
            self._emit(bytes(out))
        elif op == SYS_WRITE:
            fh, buf, n = struct.unpack("<III", cpu.read_mem(arg, 12))
            self._emit(cpu.read_mem(buf, min(n, 65536)))
            result = 0
        elif op in (SYS_EXIT, SYS_EXIT_EXTENDED):
            if op == SYS_EXIT_EXTENDED:   # r1 -> {reason, subcode}
                reason, code = struct.unpack("<II", cpu.read_mem(arg, 8))
                if reason != ADP_STOPPED_APPLICATION_EXIT:
                    code = code or 1
            else:                         # r1 = reason
                code = 0 if arg == ADP_STOPPED_APPLICATION_EXIT else 1
            self.exit_code = code & 0xFF
            cpu.pc = pc + 2
            cpu.halt(StopReason.EXIT, f"semihosting exit {self.exit_code}")
        else:
            log.info("semihosting call %#x not supported (pc=%#010x)", op, pc)
            result = 0xFFFFFFFF
        cpu.set_reg(A.UC_ARM_REG_R0, result)
        cpu.pc = pc + 2
        return True

    # ------------------------------------------------------------------
    # snapshots (emu/snapshot.py)
    # ------------------------------------------------------------------
    def save_snapshot(self, path: str) -> None:
        """Save the whole machine state to ``path`` (call between runs)."""
        from emu import snapshot
        snapshot.save(self, path)

    def load_snapshot(self, path: str) -> dict:
        """Restore a snapshot taken on this firmware and board; returns its metadata.
        Raises emu.snapshot.SnapshotError (one-line message) if it does not fit."""
        from emu import snapshot
        return snapshot.load(self, path)

    @classmethod
    def from_snapshot(cls, path: str, firmware: Union[str, FirmwareImage, None] = None,
                      **board_options) -> "Machine":
        """A new machine in the state saved in ``path``.  ``firmware`` defaults to
        the path recorded in the snapshot; board options default to the recorded
        ones (``flash_file`` to None: the snapshot holds the NOR flash)."""
        from emu import snapshot
        meta, _blob = snapshot.read_snapshot(path)
        fw = firmware if firmware is not None else (meta.get("firmware") or {}).get("path")
        if fw is None:
            raise snapshot.SnapshotError(f"{path}: no firmware path recorded; pass firmware=")
        opts = dict(meta.get("board_options") or {})
        opts.update(board_options)
        if meta.get("board") == "pinetime":
            opts.setdefault("flash_file", None)
        try:
            m = cls(fw, board=meta.get("board", "pinetime"), **opts)
        except (FirmwareError, OSError) as e:
            raise snapshot.SnapshotError(f"{path}: cannot load its firmware {fw}: {e}") from None
        except (ValueError, TypeError) as e:          # a board or option it names
            raise snapshot.SnapshotError(f"{path}: cannot build its machine: {e}") from None
        m.load_snapshot(path)
        return m
