"""Power lost at any instant: power cuts as events, and campaigns of them.

A :class:`PowerCut` watches a machine's flash operations (the NVMC's
programs and erases of the internal flash and UICR, and each SPI NOR's page
programs and erases on the PineTime) and cuts the power at a given tick, or
at the N-th operation, in one of three ways:

* ``before``: the operation never starts; its cells are as they were;
* ``during``: the power goes while the cells change.  What they hold then is
  what the parts' datasheets allow after an interrupted operation: each
  bit that the operation was to change has changed or not (the nRF52832 PS
  v1.4, 11.8, and the XT25F32B datasheet give no more than "the content is
  undefined"): here each such bit independently, with probability one half,
  from a hash of the seed, the flash and the operation's index, so the same
  seed gives the same bits.  Bits the operation would not change stay (a
  program only clears bits, an erase only sets them);
* ``after``: the operation completes, and the power goes at its end.

Then the power comes back (:meth:`emu.machine.Machine.power_cycle`): RAM and
every peripheral's state are lost (RAM holds a seeded pattern, not zeros:
what a firmware finds there after a power loss is whatever the cells
settled to), the external parts restart, the flash keeps what it physically
holds, and the chip starts from its reset vector, through its bootloader.

A :class:`Campaign` cuts the power at every flash operation of a run (or a
seeded sample of them), each cut in each mode asked for, boots again and
checks an invariant: the scenario's own steps after the cut, and built-in
checks (the run after the power comes back ends as a run without a cut
does; the internal flash's image is the old one or the new one; each file
of the NOR's littlefs holds its old or its new content).  Each case is a
pure function of the firmware, the scenario, the seed and the cut point:
the cases run in parallel on any engine (the pytest plugin exposes them as
tests for pytest-xdist: frontends/pytest_plugin.py; ``Campaign.run(jobs=N)``
uses the standard library's process pool).  docs/powerloss.md.

Not modelled: a cut while the CPU writes RAM (RAM is lost anyway), the
supply's decay (the power is there or it is not; POWER's POFWARN fires as a
board's supply falls, emu/peripherals/clock_power.py), flash cells that
read differently on each read after an interrupted operation.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Optional

UICR_BASE = 0x10001000                # the same on the nRF51 and the nRF52

MODES = ("before", "during", "after")


@dataclass(frozen=True)
class FlashOp:
    """One program or erase, as it began."""
    index: int          # 0, 1, ... in the order they began (every flash together)
    flash: str          # "nvmc" or the NOR's name ("nor")
    kind: str           # "program" or "erase"
    address: int
    length: int
    tick: int           # when it began
    ticks: int          # how long it takes

    def describe(self) -> str:
        return f"#{self.index} {self.flash} {self.kind} {self.length} B at {self.address:#08x}"


class PowerLost(Exception):
    """Raised by :meth:`PowerCut.check` when asked about a machine that lost
    power and was not powered again."""


def partial_bits(before: bytes, after: bytes, seed: int, flash: str, index: int) -> bytes:
    """What an interrupted operation leaves: each bit that differs between
    ``before`` and ``after`` taken from one or the other, by a seeded hash."""
    n = len(before)
    stream = bytearray()
    counter = 0
    key = f"{seed}:{flash}:{index}".encode()
    while len(stream) < n:
        stream += hashlib.sha256(key + counter.to_bytes(4, "little")).digest()
        counter += 1
    b = int.from_bytes(before, "little")
    a = int.from_bytes(after, "little")
    r = int.from_bytes(bytes(stream[:n]), "little")
    diff = a ^ b
    return ((b & ~diff) | (a & diff & r) | (b & diff & ~r)).to_bytes(n, "little")


class PowerCut:
    """Count ``machine``'s flash operations and cut its power at one (see the
    module docstring).  ``at_op``: the index of the operation (its
    ``flashes`` only); ``at_tick``: a tick instead; ``mode``: one of MODES.
    ``ops`` lists every operation seen; ``cut`` is set (a dict) once the
    power is gone; ``machine.power_cycle()`` brings it back."""

    def __init__(self, machine, at_op: Optional[int] = None, mode: str = "during",
                 at_tick: Optional[int] = None, seed: int = 0,
                 flashes: tuple = ("nvmc", "nor"), first_op: int = 0,
                 log: Optional["FlashLog"] = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if at_op is not None and at_op < 0:
            raise ValueError("at_op is 0 or more")
        self.machine = machine
        self.at_op, self.at_tick, self.mode, self.seed = at_op, at_tick, mode, int(seed)
        self.flashes = tuple(flashes)
        # a run resumed from a snapshot taken after ``first_op`` operations:
        # indexes (and at_op, and the seeded bits of a cut during one) go on
        # from there, as in the whole run
        self.first_op = int(first_op)
        self.log = log                        # a FlashLog: what each operation wrote
        self.ops: list = []
        self._counted = 0                     # operations of ``flashes`` seen
        self.cut: Optional[dict] = None
        self.listeners: list = []             # fn(op) as each operation begins
        clock = machine.clock
        name = "powercut.cut"
        while name in clock.events:
            name += "'"
        self._ev = clock.event(name, self._cut_now)
        self._due: Optional[tuple] = None     # (why, what to do at the cut)
        self._nvmc_inflight: Optional[tuple] = None   # (op, start, before, after, end)
        self._nvmc = machine.soc.peripherals.get("nvmc")
        if self._nvmc is not None:
            self._nvmc.op_hook = self._nvmc_op
        self._nors = {}
        flash = getattr(machine.board, "flash", None)
        if flash is not None and hasattr(flash, "op_hook"):
            self._nors["nor"] = flash
            flash.op_hook = lambda kind, addr, n, ticks: self._nor_op(flash, kind, addr, n, ticks)
        if at_tick is not None:
            self._due = ("tick", None)
            self._ev.schedule_at(max(at_tick, clock.now))

    # -- bookkeeping ---------------------------------------------------------
    @property
    def dead(self) -> bool:
        return self.cut is not None

    def remove(self) -> None:
        """Stop watching (the hooks and the pending cut go)."""
        if self._nvmc is not None and self._nvmc.op_hook == self._nvmc_op:
            self._nvmc.op_hook = None
        for nor in self._nors.values():
            nor.op_hook = None
        self._ev.cancel()

    def _record(self, flash: str, kind: str, addr: int, n: int, ticks: int) -> FlashOp:
        op = FlashOp(self.first_op + len(self.ops), flash, kind, addr, n,
                     self.machine.clock.now, ticks)
        self.ops.append(op)
        if flash in self.flashes:
            self._counted += 1
        for fn in self.listeners:
            fn(op)
        return op

    def _is_cut(self, op: FlashOp) -> bool:
        return (self.cut is None and self._due is None and self.at_op is not None
                and op.flash in self.flashes
                and self.first_op + self._counted - 1 == self.at_op)

    # -- the NVMC ----------------------------------------------------------------
    def _nvmc_op(self, kind: str, start: int, before: bytes, after: bytes, ticks: int) -> bytes:
        if self.cut is not None:
            return before                      # no power: nothing changes any more
        op = self._record("nvmc", kind, start, len(before), ticks)
        if self.log is not None:
            self.log._add(op, start, after, len(self.machine.console))
        # in flight until its end: a cut at a tick inside it interrupts it
        self._nvmc_inflight = (op, start, before, after, self.machine.clock.now + ticks)
        if not self._is_cut(op):
            return after
        if self.mode == "before":
            self._lose(op, "before")
            return before
        if self.mode == "during":
            self._lose(op, "during")
            return partial_bits(before, after, self.seed, "nvmc", op.index)
        self._due = ("after", op)
        self._ev.schedule_at(self.machine.clock.now + ticks)
        return after

    # -- the NOR ---------------------------------------------------------------
    def _nor_op(self, dev, kind: str, addr: int, n: int, ticks: int) -> None:
        if self.cut is not None:
            dev.lose_power()
            return
        op = self._record("nor", kind, addr, n, ticks)
        if self.log is not None:
            change = dev.pending_change()
            self.log._add(op, change[0], None if kind == "erase" else change[2],
                          len(self.machine.console))
        if not self._is_cut(op):
            return
        if self.mode == "before":
            dev.lose_power()
            self._lose(op, "before")
        elif self.mode == "during":
            frac = int.from_bytes(hashlib.sha256(
                f"{self.seed}:frac:{op.index}".encode()).digest()[:4], "little") / 2 ** 32
            self._due = ("during", (op, dev))
            self._ev.schedule_at(self.machine.clock.now + max(1, int(ticks * frac)))
        else:
            self._due = ("after", op)
            self._ev.schedule_at(self.machine.clock.now + ticks)   # after its own end event

    # -- the cut -------------------------------------------------------------------
    def _cut_now(self) -> None:
        why, what = self._due or ("tick", None)
        self._due = None
        if why == "during":
            op, dev = what
            change = dev.pending_change()
            if change is not None:
                _start, before, after = change
                dev.lose_power(partial_bits(before, after, self.seed, op.flash, op.index))
            self._lose(op, "during")
        elif why == "after":
            self._lose(what, "after")
        else:
            self._lose(None, "tick")

    def _lose(self, op: Optional[FlashOp], how: str) -> None:
        m = self.machine
        inflight = self._nvmc_inflight
        if how == "tick" and inflight is not None and inflight[4] > m.clock.now:
            # an NVMC operation the tick falls inside: its cells as a cut
            # during it leaves them
            iop, start, before, after, _end = inflight
            m.cpu.write_mem(start, partial_bits(before, after, self.seed, "nvmc", iop.index))
            m.cpu.invalidate_code(start, start + len(before))
            if self._nvmc is not None:
                self._nvmc._changed(start, start + len(before))
            op, how = iop, "tick-during"
        for dev in self._nors.values():
            if dev.wip:                    # a NOR operation in flight stops where it is
                change = dev.pending_change()
                dev.lose_power(partial_bits(change[1], change[2], self.seed, "nor",
                                            self.first_op + len(self.ops))
                               if change else None)
        self.cut = {"tick": m.clock.now, "op": op, "mode": how,
                    "console": len(m.console)}
        m.power_lost = True
        m.cpu.stall_cut = True                 # a stall for a flash operation ends here
        m.halt_requested = True
        m.cpu.request_stop()


# ----------------------------------------------------------------------------
# what the flash holds at any cut, from one run
# ----------------------------------------------------------------------------
def flash_state(machine) -> dict:
    """What the machine's flashes hold now: the internal flash, the UICR and
    the NOR (the only state a power cut leaves)."""
    soc = machine.soc
    out = {"flash": bytearray(machine.cpu.read_mem(0, soc.FLASH_SIZE)),
           "uicr": bytearray(machine.cpu.read_mem(UICR_BASE, 0x1000))}
    flash = getattr(machine.board, "flash", None)
    if flash is not None and hasattr(flash, "op_hook"):
        out["nor"] = bytearray(flash.data)
    return out


def load_flash_state(machine, state: dict) -> None:
    """Put ``state`` (from :func:`flash_state` or :meth:`FlashLog.state`) in
    ``machine``'s flashes: a machine built from the same firmware then holds
    what the one the state came from held."""
    soc, cpu = machine.soc, machine.cpu
    cpu.write_mem(0, bytes(state["flash"]))
    cpu.write_mem(UICR_BASE, bytes(state["uicr"]))
    cpu.invalidate_code(0, soc.FLASH_SIZE)
    nvmc = soc.peripherals.get("nvmc")
    if nvmc is not None:
        nvmc._changed(0, soc.FLASH_SIZE)
    if "nor" in state:
        nor = machine.board.flash
        nor.data[:] = state["nor"]
        nor.dirty = True


class FlashLog:
    """Every flash operation of a run and what it wrote, from what the
    flashes held when it began: :meth:`state` gives what they hold after a
    cut at any operation in any mode, the same bytes a :class:`PowerCut`
    there leaves (tests/machine/test_powercut.py compares them at every cut
    of our journaling writer), without running to it again.

    A cut leaves nothing but the flash (RAM, the peripherals and the
    external parts start from power-on, :meth:`Machine.power_cycle`), so a
    case can start from a fresh machine holding that state
    (:func:`run_logged_case`): a campaign over a run that costs minutes
    (an update over the air, with a phone that a snapshot does not hold)
    then runs once, and each case costs only the boot after its cut.

    Exact when operations on two flashes do not overlap in time (each ends
    before the next begins): :meth:`state` refuses a cut where they do."""

    def __init__(self, machine):
        self.initial = flash_state(machine)
        self.flash_size = machine.soc.FLASH_SIZE
        self.uicr_base = UICR_BASE
        self.ops: list = []
        self._changes: list = []         # (start, bytes written or None for an erase)
        self._console: list = []         # the console's length as each began
        self.console = b""               # the run's console, for checks (set by the caller)

    def _add(self, op: FlashOp, start: int, after: Optional[bytes], console: int) -> None:
        self.ops.append(op)
        self._changes.append((start, after))
        self._console.append(console)

    def _region(self, state: dict, op: FlashOp, start: int):
        if op.flash != "nvmc":
            return state[op.flash], start
        if start >= self.uicr_base:
            return state["uicr"], start - self.uicr_base
        return state["flash"], start

    def _apply(self, state: dict, i: int) -> None:
        op = self.ops[i]
        start, after = self._changes[i]
        buf, off = self._region(state, op, start)
        n = op.length if after is None else len(after)
        buf[off:off + n] = b"\xff" * n if after is None else after

    def position(self, index: int) -> int:
        """Where operation ``index`` (FlashOp.index) is in :attr:`ops`."""
        first = self.ops[0].index if self.ops else 0
        return index - first

    def state(self, index: int, mode: str, seed: int = 0) -> dict:
        """The flashes after a cut at operation ``index`` (FlashOp.index) in
        ``mode``, the bits of one cut during it seeded by ``seed`` as
        :class:`PowerCut` seeds them."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        i = self.position(index)
        if not 0 <= i < len(self.ops):
            raise CampaignError(f"operation {index} is not in the log")
        op = self.ops[i]
        cut_tick = op.tick + (op.ticks if mode == "after" else 0)
        for j, o in enumerate(self.ops):
            if j < i and o.flash == "nor" and o.tick + o.ticks > op.tick:
                raise CampaignError(f"{o.describe()} is still in flight when {op.describe()} "
                                    "begins: cut there with PowerCut")
            if j > i and o.tick < cut_tick or (j > i and o.tick == op.tick and mode != "before"):
                raise CampaignError(f"{o.describe()} begins before the cut at {op.describe()} "
                                    f"{mode}: cut there with PowerCut")
            if j > i and o.tick >= cut_tick:
                break
        state = {k: bytearray(v) for k, v in self.initial.items()}
        for j in range(i):
            self._apply(state, j)
        if mode == "after":
            self._apply(state, i)
        elif mode == "during":
            start, after = self._changes[i]
            buf, off = self._region(state, op, start)
            n = op.length if after is None else len(after)
            buf[off:off + n] = partial_bits(bytes(buf[off:off + n]),
                                            b"\xff" * n if after is None else after,
                                            seed, op.flash, op.index)
        return state

    def save(self, path: str) -> None:
        """A zip of data (JSON and raw bytes; nothing pickled)."""
        import json
        import zipfile
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
            for k, v in self.initial.items():
                z.writestr(f"initial/{k}", bytes(v))
            z.writestr("console", bytes(self.console))
            blob = bytearray()
            rows = []
            for op, (start, after), con in zip(self.ops, self._changes, self._console):
                rows.append([op.index, op.flash, op.kind, op.address, op.length, op.tick,
                             op.ticks, start, -1 if after is None else len(blob),
                             0 if after is None else len(after), con])
                if after is not None:
                    blob += after
            z.writestr("written", bytes(blob))
            z.writestr("log.json", json.dumps({"format": "pinetime-emu-flashlog",
                                               "version": 1, "flash_size": self.flash_size,
                                               "uicr_base": self.uicr_base, "ops": rows}))

    @classmethod
    def load(cls, path: str) -> "FlashLog":
        import json
        import zipfile
        log = cls.__new__(cls)
        with zipfile.ZipFile(path) as z:
            meta = json.loads(z.read("log.json"))
            if meta.get("format") != "pinetime-emu-flashlog" or meta.get("version") != 1:
                raise CampaignError(f"{path}: not a flash log of this version")
            log.initial = {n.split("/", 1)[1]: bytearray(z.read(n)) for n in z.namelist()
                           if n.startswith("initial/")}
            log.console = z.read("console")
            blob = z.read("written")
        log.flash_size, log.uicr_base = meta["flash_size"], meta["uicr_base"]
        log.ops, log._changes, log._console = [], [], []
        for (index, flash, kind, addr, n, tick, ticks, start, at, size,
             con) in meta["ops"]:
            log.ops.append(FlashOp(index, flash, kind, addr, n, tick, ticks))
            log._changes.append((start, None if at < 0 else blob[at:at + size]))
            log._console.append(con)
        return log

    def console_at(self, index: int) -> bytes:
        """The run's console as operation ``index`` began."""
        return bytes(self.console[:self._console[self.position(index)]])


def logged_run(make_machine: Callable, work: Callable, first_op: int = 0,
               flashes=("nvmc", "nor")):
    """Run ``work(machine)`` once without a cut, logging every flash
    operation: (the :class:`FlashLog`, the machine at the end)."""
    m = make_machine()
    log = FlashLog(m)
    pc = PowerCut(m, flashes=flashes, first_op=first_op, log=log)
    work(m)
    pc.remove()
    log.console = bytes(m.console)
    return log, m


# ----------------------------------------------------------------------------
# campaigns
# ----------------------------------------------------------------------------
@dataclass
class Cut:
    """One case of a campaign: cut at operation ``op`` in ``mode``."""
    op: int
    mode: str
    flash: str = ""
    kind: str = ""
    address: int = 0

    @property
    def name(self) -> str:
        return f"op{self.op:04d}-{self.mode}"


@dataclass
class CaseResult:
    cut: Cut
    ok: bool
    message: str = ""
    cut_tick: Optional[int] = None
    details: dict = field(default_factory=dict)


class CampaignError(ValueError):
    """A campaign that cannot run (one line)."""


def choose(ops: list, modes=MODES, flashes=("nvmc", "nor"), sample: Optional[int] = None,
           seed: int = 0) -> list:
    """The cases of a campaign over the operations ``ops`` of a run without a
    cut: every operation of ``flashes`` in every mode, or a seeded sample of
    ``sample`` of them (the same seed, the same sample)."""
    for m in modes:
        if m not in MODES:
            raise CampaignError(f"mode must be one of {', '.join(MODES)}, not {m!r}")
    mine = [op for op in ops if op.flash in flashes]
    cuts = [Cut(i, m, op.flash, op.kind, op.address) for i, op in enumerate(mine)
            for m in modes]
    if sample is not None and sample < len(cuts):
        import random
        rnd = random.Random(f"powercut:{seed}")
        cuts = sorted(rnd.sample(cuts, sample), key=lambda c: (c.op, MODES.index(c.mode)))
    return cuts


def dry_run(make_machine: Callable, work: Callable, flashes=("nvmc", "nor")):
    """Run ``work(machine)`` once without a cut: (its flash operations, the
    machine at the end)."""
    m = make_machine()
    pc = PowerCut(m, flashes=flashes)
    work(m)
    pc.remove()
    return pc.ops, m


def run_case(make_machine: Callable, work: Callable, after: Callable, cut: Cut,
             seed: int = 0, flashes=("nvmc", "nor"), checks=()) -> CaseResult:
    """One case: ``work(machine)`` with the power cut at ``cut``, the power
    back, ``after(machine)``, then each of ``checks``: fn(machine, before, cut)
    -> None or what went wrong (``before``: the console up to the cut).
    ``work``/``after`` raise (AssertionError, an expectation failure) to say
    the invariant does not hold."""
    m = make_machine()
    pc = PowerCut(m, at_op=cut.op, mode=cut.mode, seed=seed, flashes=flashes)
    try:
        work(m)
    except Exception:                          # noqa: BLE001 - the power went: expected
        if pc.cut is None:
            raise
    if pc.cut is None:
        return CaseResult(cut, False, f"operation {cut.op} never came (the run without a "
                          "cut had it): the firmware or the scenario is not deterministic")
    before = bytes(m.console[:pc.cut["console"]])
    pc.remove()
    m.power_cycle(seed=seed)
    m.console.clear()                          # what the chip says after the power is back
    pc.cut["boot"] = 0
    try:
        after(m)
        for fn in checks:
            problem = fn(m, before, pc.cut)
            if problem:
                return CaseResult(cut, False, problem, pc.cut["tick"])
    except Exception as e:                     # noqa: BLE001 - the invariant failed
        return CaseResult(cut, False, f"{type(e).__name__}: {e}".strip(), pc.cut["tick"])
    finally:
        m.close()
    return CaseResult(cut, True, "", pc.cut["tick"])


def run_logged_case(make_machine: Callable, log: FlashLog, after: Callable, cut: "Cut",
                    seed: int = 0, checks=()) -> CaseResult:
    """One case from a :class:`FlashLog` instead of a run to the cut: a
    machine from ``make_machine()`` given what the flashes hold after
    ``cut`` (``cut.op`` is the operation's FlashOp.index), the power
    cycled with ``seed``, then ``after(machine)`` and ``checks`` as in
    :func:`run_case`."""
    state = log.state(cut.op, cut.mode, seed)
    op = log.ops[log.position(cut.op)]
    info = {"tick": op.tick + (op.ticks if cut.mode == "after" else 0), "op": op,
            "mode": cut.mode, "console": 0, "boot": 0}
    m = make_machine()
    try:
        load_flash_state(m, state)
        m.power_cycle(seed=seed)
        m.console.clear()
        after(m)
        for fn in checks:
            problem = fn(m, log.console_at(cut.op), info)
            if problem:
                return CaseResult(cut, False, problem, info["tick"])
    except Exception as e:                     # noqa: BLE001 - the invariant failed
        return CaseResult(cut, False, f"{type(e).__name__}: {e}".strip(), info["tick"])
    finally:
        m.close()
    return CaseResult(cut, True, "", info["tick"])


def journal_check(committed: str = r"COMMITTED (\S+) (\d+)",
                  recovered: str = r"RECOVERED (\S+) (\S+)") -> Callable:
    """A built-in check for firmware that says what it made durable: after
    the cut, each key's RECOVERED value is the last one COMMITTED before the
    cut, or the one after it (the update the cut interrupted); "none" only
    when nothing was committed."""
    import re
    com, rec = re.compile(committed), re.compile(recovered)

    def check(m, before: bytes, cut) -> Optional[str]:
        last: dict = {}
        for key, v in com.findall(before.decode("utf-8", "replace")):
            last[key] = int(v)
        after = bytes(m.console[cut.get("boot", cut["console"]):]).decode("utf-8", "replace")
        # the boot after the cut: the first RECOVERED of each key in it
        seen: dict = {}
        for key, v in rec.findall(after):
            seen.setdefault(key, v)
        for key, v in seen.items():
            k = last.get(key, 0)
            got = 0 if v == "none" else int(v) if v.isdigit() else None
            if got is None or got not in (k, k + 1) or (v == "none" and k):
                return (f"{key}: recovered {v} after committing {k or 'nothing'} "
                        f"(expected {k}{' or none' if not k else ''} or {k + 1})")
        return None
    return check
