"""Machine snapshots: the whole emulated state in one file, restored exactly.

    m = Machine("firmware/build/pinetime_demo.elf", flash_file=None)
    m.run(ms=500)
    m.save_snapshot("booted.snap")
    m2 = Machine.from_snapshot("booted.snap")     # same firmware, same board
    m2.run(ms=100)                                 # same cycles, frames, console
                                                   # as m.run(ms=100)

What is saved
-------------
* the CPU: every core register Unicorn holds (r0-r12, LR, PC, xPSR with the
  IT/GE bits, MSP, PSP, PRIMASK, BASEPRI, FAULTMASK, CONTROL, S0-S31,
  FPSCR), the exception model's Python state (NVIC enable/pending/active/
  levels and priorities, IPSR, VTOR, SCB and fault registers, sleep and
  event register, DWT CYCCNT base), SysTick and the cycle counter;
* every mapped memory: flash, FICR, UICR, RAM, the ROM table page;
* the clock: ``now`` and every pending event as (name, due tick, sequence
  number), so events due at the same tick fire in the same order;
* every object of the machine's graph defined in an ``emu`` module:
  peripherals (and the variants of shared-ID slots), pins, SPI/I2C buses,
  the board's devices (display, touch, accelerometer, heart rate, NOR flash
  contents, motor, button, battery), input timelines, the SoftDevice's
  GATT table, event queues and connection, the phone and its central;
  the console transcript.  Not saved: the phone's side of the air for
  firmware with its own Bluetooth stack (emu/phone/gattphone.py, a host device
  like a real phone, whose clock events are named ``host.*``): a watch
  restored mid-connection sees the phone vanish, times the link out and
  advertises again, and ``phone.connect()`` reconnects.

How state is declared
---------------------
Every class of the machine's parts declares, once, what a snapshot holds:

    class Rtc(NrfPeripheral):
        SNAPSHOT = ("_ev", "num_cc", "suppress_k")    # saved and restored
        STRUCTURE = ("_core",)                        # rebuilt by the wiring

``SNAPSHOT`` names state: saved with ``getattr`` (a class-level default such
as ``tail_chains = 0`` is saved whether or not the instance has assigned it)
and set back on restore; a name declared as state must have a value (give a
lazily set attribute a class default).  ``STRUCTURE`` names what the board
builds (references to other parts, listeners, hooks, caches, host objects):
walked to find the parts and their paths, never saved.  Both are merged
along the MRO, the nearest class that names an attribute deciding
(:func:`declaration`); nothing else of an object is looked at.  A part whose
class declares neither makes save and restore fail with its path.
:func:`audit` lists every attribute found on a part that its class does not
declare (tests/machine/test_snapshot_declared.py runs it on every board, and
checks every ``self.x = ...`` in the parts' classes), so a new attribute
fails a test instead of silently going into or missing from snapshots.
State kept in C (the peripherals' cells, the RTC/TIMER/WDT cores, the run
loop's shared struct, the clock in C) is saved through the existing
accessors: a model's ``save_state()``/``save_model_state()``, the CPU's
counter, the clock's events (their modules are in ``SKIP_MODULES``: never
parts themselves); the clock, in Python or C, is ``CLOCK_DECLARATION``.

How objects are captured
------------------------
An object's ``save_state()`` is called first when it has one (so a model
can flush lazy state, e.g. the ST7789's pending pixels) and its
``load_state()`` runs on restore before the declared attributes are set.
Attribute values are encoded by type: plain data (numbers, strings, bytes, lists,
tuples, dicts with any keys, sets, deques, Counters, numpy arrays) by
value; a reference to another object of the machine (the I2C bus's current
device, the active variant of a serial slot, a bound method such as a
listener) by its path in the graph, re-resolved in the restored machine;
a clock Event by its name; a few pure data classes (``VALUE_CLASSES``) by
value.  Any other value in declared state (a closure queued in a
timeline, a lambda) makes the save fail with the attribute's path, never a
silently wrong snapshot.

Parts are named by their attribute path from the machine (breadth first:
``machine.soc.peripherals['rtc1']``), saved with their class and every
other path that reaches them.  Restoring walks those paths in the new
machine; a part must be found, with the same class, and every part of the
new machine must be named by the snapshot, and each part's saved attributes
must be exactly its class's declared state, else a one-line error says which.

File format (version 2)
-----------------------
A zip archive:

* ``snapshot.json``: ``{"format": "pinetime-emu-snapshot", "version": 2,
  "emulator": "0.1.0", "emulator_commit": "9685f9e1a2b3" (the version and
  the build that wrote it, emu/version.py), "board": ..., "board_options": {...}, "firmware":
  {"path", "sha256"}, "time_ticks", "cycles", "state": {...}}``; ``state`` is tagged JSON
  (``{"$b": n}`` is blob n, ``{"$t": [...]}`` a tuple, ``{"$d": [[k, v],
  ...]}`` a dict with non-string keys, ``{"$ref": path}`` an object of the
  machine, ``{"$ev": name}`` a clock event, ...);
* ``blob/N``: raw bytes (memories, frame buffers, the NOR flash), deflated.

Nothing is unpickled: a snapshot is data.  A corrupt file, a snapshot from
another firmware image (its SHA-256 over the loaded segments), another
board or another format version raises :class:`SnapshotError` with a
one-line message.

Snapshots are taken between runs (``Machine.run`` returns at a slice
boundary), which may be inside an interrupt handler, asleep in WFI, or with
a DMA transfer or SPI byte in flight: all of that is state.

Not modelled: the exclusive monitor of LDREX/STREX (a snapshot taken between
the two makes the STREX succeed or fail as the restored Unicorn decides);
host-side objects outside the machine (a GDB stub, a window, a bridge
socket) are not saved; callbacks registered by the user (console listeners,
``breakpoint_handler``) are kept from the machine being restored into.
"""
from __future__ import annotations

import ast
import base64
import collections
import hashlib
import io
import json
import logging
import random
import re
import types
import zipfile
from typing import Optional

from emu.outputs import atomic_write

log = logging.getLogger("emu.snapshot")

FORMAT = "pinetime-emu-snapshot"
VERSION = 2       # 2: every part's declared state (1: its attributes found by reflection)
BLOB_MIN = 256             # bytes objects at least this long go to their own zip member
# What a snapshot file may hold when read (a machine's whole state is a few
# MiB: the 4 MiB NOR flash is the largest part); more is a damaged or hostile file.
MAX_FILE = 64 * 1024 * 1024          # the snapshot file
MAX_JSON = 64 * 1024 * 1024          # snapshot.json inflated
MAX_BLOB = 16 * 1024 * 1024          # one blob inflated
MAX_BLOBS = 128 * 1024 * 1024        # all blobs read, together
U64 = 1 << 64
# Bytes and arrays of a fixed size: restored only over one of the same length.
FIXED_SIZE_ATTRS = {
    "emu.devices.xt25f32.Xt25f32": {"data"},
    "emu.buses.I2cRegisterDevice": {"regs"},
    "emu.devices.bma421.Bma421": {"config"},
    "emu.soc.nrf52832.Nrf52832": {"ficr", "uicr_default"},
}

# Modules whose objects are never part of the saved graph (host-side or rebuilt).
SKIP_MODULES = ("emu.loader", "emu.cpu.cycles", "emu.rtt", "emu.rtos", "frontends.gdbstub", "frontends.bridge", "frontends.testbench",
                "frontends.scenario", "emu.png", "emu.snapshot", "emu.outputs",
                # the phone's side of the air (a host device, like a real phone)
                "emu.phone.gattphone", "emu.phone.link", "emu.phone.gatt", "emu.phone.smp",
                "emu.phone.scanner", "emu.air",
                # instruments: the energy model and the heap/task readers
                "emu.power", "emu.inspect",
                # native carriers (C structs): their state is saved through their
                # owners' declared state and save_state (the peripherals' cells and
                # cores, the CPU's counter), never walked as parts
                "emu.soc._mmio", "emu.cpu._core", "emu.cpu._blockhook",
                "emu.peripherals._cores",
                "emu.soc.ops",    # the cells' Python twin (PyCells): as the C cells
                "emu.native",     # the run loop's shared struct (cycles, blocks: saved apart)
                "emu.detect")     # how the board was told from the image (host side)
HOST_EVENTS = "host."      # clock events of host devices: neither saved nor restored
# Objects encoded by value (pure data, created at run time).
VALUE_CLASSES = {"emu.softdevice.Attribute"}
# Classes that moved after snapshots were first written (the phone's modules
# went into emu/phone/): a snapshot names each part's class, and a snapshot
# written before the move names the old one.
MOVED_CLASSES = {
    "emu.phone.Phone": "emu.phone.phone.Phone",
    "emu.airnus.AirCentral": "emu.phone.airnus.AirCentral",
    "emu.airnus.AirNus": "emu.phone.airnus.AirNus",
    "emu.wasptool.WaspTool": "emu.phone.wasptool.WaspTool",
    "emu.wasptool.MachineTransport": "emu.phone.wasptool.MachineTransport",
}


class SnapshotError(Exception):
    """A snapshot cannot be written or does not fit the machine (one-line message)."""


# classes that stand for one another on the native and pure-Python paths
# (a snapshot crosses between them): the clock in C is emu.clock.Clock
SAME_CLASSES = {"emu._clock.Clock": "emu.clock.Clock"}


# The clock (and its C twin, which has the Python clock's API and nothing
# more) is saved apart by build_state: now, the sequence number and every
# pending event by name.  None of its attributes is saved as such.
CLOCK_DECLARATION = ((), ("now", "_heap", "_seq", "next_deadline", "on_earlier_deadline",
                          "events", "firing", "_compact_at"))


def _qualname(obj) -> str:
    cls = type(obj)
    q = f"{cls.__module__}.{cls.__qualname__}"
    return SAME_CLASSES.get(q, q)


_DECLARED: dict = {}


def declaration(cls) -> Optional[tuple]:
    """(state, structure) of ``cls``: the names its classes declare in
    ``SNAPSHOT`` (saved and restored) and ``STRUCTURE`` (rebuilt by the wiring,
    never saved), merged along the MRO, the nearest class that names an
    attribute deciding; None when no class of it declares.  The clock, in
    Python or C, is ``CLOCK_DECLARATION``."""
    try:
        return _DECLARED[cls]
    except KeyError:
        pass
    q = f"{cls.__module__}.{cls.__qualname__}"
    if SAME_CLASSES.get(q, q) == "emu.clock.Clock":
        out = CLOCK_DECLARATION
    else:
        state: list = []
        structure: list = []
        seen: set = set()
        found = False
        for k in cls.__mro__:
            own = vars(k)
            if "SNAPSHOT" not in own and "STRUCTURE" not in own:
                continue
            found = True
            for names, into in ((own.get("SNAPSHOT", ()), state),
                                (own.get("STRUCTURE", ()), structure)):
                for n in names:
                    if n not in seen:
                        seen.add(n)
                        into.append(n)
        out = (tuple(state), tuple(structure)) if found else None
    _DECLARED[cls] = out
    return out


def _declared(obj, path: str) -> tuple:
    d = declaration(type(obj))
    if d is None:
        raise SnapshotError(f"{path} ({_qualname(obj)}) declares no snapshot state: give its "
                            "class SNAPSHOT and STRUCTURE (emu/snapshot.py)")
    return d


def _is_machine_object(v) -> bool:
    mod = type(v).__module__
    return (mod == "emu" or mod.startswith("emu.")) and not isinstance(v, type) \
        and type(v).__name__ != "Reg" \
        and not callable(v) and not mod.startswith(SKIP_MODULES) \
        and _qualname(v) not in VALUE_CLASSES and type(v).__name__ != "Event"


def _attr_items(obj):
    d = getattr(obj, "__dict__", None)
    if d is not None:
        yield from list(d.items())
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                yield name, getattr(obj, name)
            except AttributeError:
                pass


# ---------------------------------------------------------------------------
# the object graph
# ---------------------------------------------------------------------------
def object_graph(machine, aliases: Optional[dict] = None) -> dict:
    """path -> object for every machine object reachable from ``machine``.

    Paths are attribute paths from the machine, breadth first, so two machines
    built the same way give the same paths to the same parts.  ``aliases``
    (if given) collects every other path reaching each object: a path that
    runs through state (the I2C bus's current device) may not exist in the
    machine being restored into, an alias through the wiring does.
    """
    paths: dict = {}
    seen: dict = {}
    queue = collections.deque([("machine", machine)])
    seen[id(machine)] = "machine"
    paths["machine"] = machine

    def visit(path: str, v) -> None:
        if _is_machine_object(v):
            if id(v) not in seen:
                seen[id(v)] = path
                paths[path] = v
                queue.append((path, v))
            elif aliases is not None:
                aliases.setdefault(seen[id(v)], []).append(path)
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(k, (str, int)):
                    visit(f"{path}[{k!r}]", x)
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                visit(f"{path}[{i}]", x)

    while queue:
        path, obj = queue.popleft()
        state, structure = _declared(obj, path)
        for name in structure + state:      # the wiring's paths first: stable ones
            visit(f"{path}.{name}", getattr(obj, name, None))
    return paths


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|-?\d+)\]")


def resolve_path(machine, path: str):
    """The object at ``path`` ("machine.soc.peripherals['rtc1']") or None."""
    if not path.startswith("machine"):
        return None
    obj, pos = machine, len("machine")
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if m is None:
            return None
        try:
            if m.group(1) is not None:
                obj = getattr(obj, m.group(1))
            else:
                obj = obj[ast.literal_eval(m.group(2))]
        except (AttributeError, KeyError, IndexError, TypeError, ValueError, SyntaxError):
            return None
        pos = m.end()
    return obj


def map_objects(machine, saved: dict) -> dict:
    """Saved path -> this machine's object, for every part the snapshot names.

    ``saved`` maps each saved path to {"class": qualname, "aliases": [...]}.
    Each part is found by its path, else by an alias, and must be of the same
    class; every part of this machine must be named by the snapshot."""
    out: dict = {}
    taken: set = set()
    for path, info in saved.items():
        found = None
        cls = MOVED_CLASSES.get(info.get("class"), info.get("class"))
        cls = SAME_CLASSES.get(cls, cls)
        for p in [path] + list(info.get("aliases", ())):
            obj = resolve_path(machine, p)
            if obj is not None and _qualname(obj) == cls and id(obj) not in taken:
                found = obj
                break
        if found is None:
            raise SnapshotError(f"the snapshot has parts this machine lacks: {path} "
                                f"({info.get('class')})")
        out[path] = found
        taken.add(id(found))
    extra = [p for p, o in object_graph(machine).items() if id(o) not in taken]
    if extra:
        raise SnapshotError(f"this machine has parts the snapshot lacks: "
                            f"{', '.join(extra[:5])}")
    return out


# ---------------------------------------------------------------------------
# tagged JSON codec
# ---------------------------------------------------------------------------
class _Unencodable(Exception):
    pass


class _Encoder:
    def __init__(self, by_id: dict):
        self.by_id = by_id           # id(obj) -> path
        self.blobs: list = []
        self._blob_index: dict = {}  # sha256 -> index (equal contents stored once)

    def blob(self, data: bytes) -> int:
        data = bytes(data)
        key = hashlib.sha256(data).digest()
        i = self._blob_index.get(key)
        if i is None:
            i = self._blob_index[key] = len(self.blobs)
            self.blobs.append(data)
        return i

    def enc(self, v, where: str):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            return {"$f": repr(v)} if v != v or v in (float("inf"), float("-inf")) else v
        if isinstance(v, (bytes, bytearray, memoryview)):
            tag = "$ba" if isinstance(v, bytearray) else "$by"
            b = bytes(v)
            if len(b) >= BLOB_MIN:
                return {tag: {"$b": self.blob(b)}}
            return {tag: base64.b64encode(b).decode("ascii")}
        if isinstance(v, tuple):
            return {"$t": [self.enc(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        if isinstance(v, list):
            return [self.enc(x, f"{where}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, collections.Counter):
            return {"$ctr": [[self.enc(k, where), self.enc(x, where)] for k, x in v.items()]}
        if isinstance(v, collections.deque):
            return {"$dq": [self.enc(x, f"{where}[{i}]") for i, x in enumerate(v)],
                    "maxlen": v.maxlen}
        if isinstance(v, dict):
            if all(isinstance(k, str) and not k.startswith("$") for k in v):
                return {k: self.enc(x, f"{where}[{k!r}]") for k, x in v.items()}
            return {"$d": [[self.enc(k, where), self.enc(x, f"{where}[{k!r}]")]
                           for k, x in v.items()]}
        if isinstance(v, (set, frozenset)):
            items = [self.enc(x, where) for x in v]
            items.sort(key=lambda e: json.dumps(e, sort_keys=True))
            return {"$fs" if isinstance(v, frozenset) else "$s": items}
        mod = type(v).__module__
        if mod == "numpy":
            import numpy as np
            if isinstance(v, np.ndarray):
                return {"$nd": {"$b": self.blob(np.ascontiguousarray(v).tobytes())},
                        "dtype": v.dtype.str, "shape": list(v.shape)}
            if isinstance(v, np.generic):
                return self.enc(v.item(), where)
        if isinstance(v, random.Random):
            return {"$rnd": self.enc(v.getstate(), where)}
        if type(v).__name__ == "Event" and mod in ("emu.clock", "emu._clock"):
            return {"$ev": v.name}
        if isinstance(v, types.MethodType):
            path = self.by_id.get(id(v.__self__))
            if path is None:
                raise _Unencodable(f"{where}: method {v.__func__.__qualname__} of an object "
                                   "outside the machine")
            return {"$m": [path, v.__func__.__name__]}
        path = self.by_id.get(id(v))
        if path is not None:
            return {"$ref": path}
        if _qualname(v) in VALUE_CLASSES:
            return {"$obj": _qualname(v),
                    "attrs": {k: self.enc(getattr(v, k), f"{where}.{k}")
                              for k in _declared(v, where)[0]}}
        raise _Unencodable(f"{where}: {type(v).__module__}.{type(v).__qualname__} value "
                           f"{_short(v)} cannot be saved")


def _short(v) -> str:
    r = repr(v)
    return r if len(r) < 60 else r[:57] + "..."


class _Decoder:
    def __init__(self, graph: dict, clock, blobs):
        self.graph = graph
        self.clock = clock
        self.blobs = blobs

    def dec(self, v):
        if isinstance(v, list):
            return [self.dec(x) for x in v]
        if not isinstance(v, dict):
            if type(v) is int and not -U64 < v < U64:
                raise SnapshotError(f"number {str(v)[:20]}... out of range in snapshot data")
            return v
        if len(v) >= 1:
            k = next(iter(v))
            if k.startswith("$"):
                return self._tagged(k, v)
        return {k: self.dec(x) for k, x in v.items()}

    def _bytes(self, x) -> bytes:
        if isinstance(x, dict):
            return self.blobs(x["$b"])
        return base64.b64decode(x)

    def _tagged(self, tag: str, v: dict):
        x = v[tag]
        if tag == "$f":
            return float(x)
        if tag == "$by":
            return self._bytes(x)
        if tag == "$ba":
            return bytearray(self._bytes(x))
        if tag == "$t":
            return tuple(self.dec(e) for e in x)
        if tag == "$d":
            return {_hashable(self.dec(k)): self.dec(e) for k, e in x}
        if tag == "$ctr":
            return collections.Counter({_hashable(self.dec(k)): self.dec(e) for k, e in x})
        if tag == "$dq":
            return collections.deque((self.dec(e) for e in x), v.get("maxlen"))
        if tag == "$s":
            return {_hashable(self.dec(e)) for e in x}
        if tag == "$fs":
            return frozenset(_hashable(self.dec(e)) for e in x)
        if tag == "$nd":
            import numpy as np
            arr = np.frombuffer(self._bytes(x), dtype=np.dtype(v["dtype"]))
            return arr.reshape(v["shape"]).copy()
        if tag == "$rnd":
            r = random.Random()
            r.setstate(self.dec(x))
            return r
        if tag == "$ev":
            ev = self.clock.events.get(x)
            if ev is None:
                raise SnapshotError(f"the snapshot refers to clock event {x!r}, which this "
                                    "machine does not have")
            return ev
        if tag == "$m":
            obj = self._ref(x[0])
            if not isinstance(x[1], str) or x[1].startswith("__"):
                raise SnapshotError(f"bad method reference {x[1]!r} in snapshot data")
            return getattr(obj, x[1])
        if tag == "$ref":
            return self._ref(x)
        if tag == "$obj":
            return self._value_object(x, v["attrs"])
        raise SnapshotError(f"unknown tag {tag!r} in snapshot data")

    def _ref(self, path: str):
        obj = self.graph.get(path)
        if obj is None:
            raise SnapshotError(f"the snapshot refers to {path}, which this machine does not have")
        return obj

    def _value_object(self, qualname: str, attrs: dict):
        if qualname not in VALUE_CLASSES:
            raise SnapshotError(f"class {qualname} may not be created from a snapshot")
        import importlib
        mod, _, name = qualname.rpartition(".")
        cls = getattr(importlib.import_module(mod), name)
        obj = cls.__new__(cls)
        state = _declared(obj, qualname)[0]
        if set(attrs) != set(state):
            raise SnapshotError(f"a saved {qualname} has fields {sorted(attrs)[:5]}, not "
                                f"{list(state)[:5]}")
        for k, x in attrs.items():
            setattr(obj, k, self.dec(x))
        return obj


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, bytearray):
        return bytes(v)
    return v


# ---------------------------------------------------------------------------
# capture and restore of one object
# ---------------------------------------------------------------------------
def _capture(obj, enc: _Encoder, path: str) -> dict:
    """Every declared state attribute of ``obj``, encoded (a class-level
    default whether or not the instance has assigned it)."""
    state, _structure = _declared(obj, path)
    attrs = {}
    for name in state:
        try:
            v = getattr(obj, name)
        except AttributeError:
            raise SnapshotError(f"cannot snapshot: {path}.{name} is declared state of "
                                f"{_qualname(obj)} but has no value (give it a class "
                                "default)") from None
        try:
            attrs[name] = enc.enc(v, f"{path}.{name}")
        except _Unencodable as e:
            raise SnapshotError(f"cannot snapshot: {e}") from None
    return attrs


def _kind(v) -> Optional[str]:
    """What sort of value ``v`` is, for checking a restored attribute against
    the one it replaces (None: no value, fits anything)."""
    if v is None:
        return None
    if isinstance(v, (bool, int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "bytes"
    if isinstance(v, (list, tuple, collections.deque)):
        return "a sequence"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, (set, frozenset)):
        return "a set"
    if isinstance(v, random.Random):
        return "a random generator"
    if type(v).__module__ == "numpy":
        import numpy as np
        if isinstance(v, np.ndarray):
            return "an array"
        if isinstance(v, np.generic):
            return "a number"
    return f"a {type(v).__name__}"


def _fixed_size(obj, name: str) -> bool:
    return any(name in FIXED_SIZE_ATTRS.get(f"{c.__module__}.{c.__qualname__}", ())
               for c in type(obj).__mro__)


def _check_value(where: str, old, new, fixed: bool = False) -> None:
    """SnapshotError unless ``new`` may replace ``old``: the same sort of value
    (None fits any), an array of the same shape and type, bytes of the same
    length when the attribute has a fixed size."""
    k_old, k_new = _kind(old), _kind(new)
    if k_old is None or k_new is None:
        return
    if k_old != k_new:
        raise SnapshotError(f"{where} is {k_new} in the snapshot, {k_old} in this machine")
    if k_old == "an array" and (old.shape != new.shape or old.dtype != new.dtype):
        raise SnapshotError(f"{where} is a {new.dtype} array of shape {tuple(new.shape)} in "
                            f"the snapshot, {old.dtype} {tuple(old.shape)} in this machine")
    if fixed and k_old == "bytes" and len(old) != len(new):
        raise SnapshotError(f"{where} is {len(new)} bytes in the snapshot, {len(old)} in "
                            "this machine")


def _decode_attrs(obj, path: str, attrs: dict, dec: "_Decoder") -> dict:
    """The attributes ``attrs`` decoded and checked against ``obj``'s own."""
    out = {}
    for name, x in attrs.items():
        if not isinstance(name, str) or name.startswith("__") or not name.isidentifier():
            raise SnapshotError(f"bad attribute name {name!r} in snapshot data")
        v = dec.dec(x)
        old = getattr(obj, name, None)
        _check_value(f"{path}.{name}", old, v, _fixed_size(obj, name))
        out[name] = v
    return out


def _restore(obj, values: dict) -> None:
    for name, v in values.items():
        try:
            setattr(obj, name, v)
        except AttributeError:
            # a read-only property shadowing nothing: state lives elsewhere
            log.debug("attribute %s of %s not settable", name, type(obj).__name__)


# ---------------------------------------------------------------------------
# CPU registers
# ---------------------------------------------------------------------------
def _cpu_reg_ids(cpu) -> list:
    from unicorn import arm_const as A
    ids = [("r%d" % i, A.UC_ARM_REG_R0 + i) for i in range(13)]
    ids += [("lr", A.UC_ARM_REG_LR), ("pc", A.UC_ARM_REG_PC), ("xpsr", A.UC_ARM_REG_XPSR),
            ("msp", A.UC_ARM_REG_MSP), ("psp", A.UC_ARM_REG_PSP),
            ("primask", A.UC_ARM_REG_PRIMASK), ("control", A.UC_ARM_REG_CONTROL)]
    if cpu.profile == "m4":
        ids += [("basepri", A.UC_ARM_REG_BASEPRI), ("faultmask", A.UC_ARM_REG_FAULTMASK),
                ("fpscr", A.UC_ARM_REG_FPSCR)]
        ids += [("s%d" % i, A.UC_ARM_REG_S0 + i) for i in range(32)]
    return ids


def save_cpu_registers(cpu) -> dict:
    names, rids = zip(*_cpu_reg_ids(cpu))
    return dict(zip(names, cpu.read_special(rids)))   # MSP/PSP whatever the privilege


def load_cpu_registers(cpu, regs: dict) -> None:
    from unicorn import arm_const as A
    uc = cpu.uc
    ids = dict(_cpu_reg_ids(cpu))
    ipsr = cpu._ipsr
    # the rest first (privileged: PRIMASK, BASEPRI, FAULTMASK need it), then
    # the mode (IPSR, CONTROL select the banked SP) with both stack pointers
    uc.reg_write(A.UC_ARM_REG_IPSR, 1)
    for name, value in regs.items():
        if name in ("xpsr", "control", "msp", "psp", "pc"):
            continue
        uc.reg_write(ids[name], value)
    cpu._set_mode(ipsr, regs["control"], regs["msp"], regs["psp"], refresh=False)
    uc.reg_write(A.UC_ARM_REG_XPSR, (regs["xpsr"] & ~0x1FF) | ipsr)
    cpu._refresh_flags()
    # PC bit 0 sets Unicorn's Thumb state (xPSR.T) as emu_start would
    uc.reg_write(A.UC_ARM_REG_PC, (regs["pc"] & ~1) | ((regs["xpsr"] >> 24) & 1))


# ---------------------------------------------------------------------------
# save / load
# ---------------------------------------------------------------------------
def firmware_hash(machine) -> Optional[str]:
    img = machine.image
    if img is None:
        return None
    h = hashlib.sha256()
    for addr, data in sorted(img.segments, key=lambda s: s[0]):
        h.update(addr.to_bytes(4, "little"))
        h.update(len(data).to_bytes(4, "little"))
        h.update(bytes(data))
    return h.hexdigest()


def _board_options(machine) -> dict:
    opts = {}
    for k, v in (getattr(machine.board, "options", None) or {}).items():
        if isinstance(v, (int, float, str, bool)) or v is None:
            opts[k] = v
    return opts


def _memory_regions(cpu):
    return [(s, e, name) for (s, e, kind, name) in cpu.regions if kind in ("ram", "flash")]


def build_state(machine) -> tuple:
    """(metadata dict, blobs) for ``machine``: everything a snapshot holds."""
    if getattr(machine.cpu, "_running", False):
        raise SnapshotError("cannot snapshot while the CPU is running (call between runs)")
    aliases: dict = {}
    graph = object_graph(machine, aliases)
    by_id = {id(o): p for p, o in graph.items()}
    enc = _Encoder(by_id)
    cpu = machine.cpu
    clock = machine.clock
    objects = {}
    for path, obj in graph.items():
        entry = {}
        if path != "machine" and hasattr(obj, "save_state") and callable(obj.save_state):
            try:
                entry["saved"] = enc.enc(obj.save_state(), f"{path}.save_state()")
            except _Unencodable as e:
                raise SnapshotError(f"cannot snapshot: {e}") from None
            except ValueError as e:         # a model that knows its state cannot be saved
                raise SnapshotError(f"cannot snapshot {path}: {e}") from None
        entry["attrs"] = _capture(obj, enc, path)
        entry["class"] = _qualname(obj)
        if aliases.get(path):
            entry["aliases"] = aliases[path]
        objects[path] = entry
    spi = {}
    for path, obj in graph.items():
        if _qualname(obj) == "emu.buses.SpiBus":
            spi[path] = [bool(obj._selected.get(id(d), False)) for d, _pin in obj.devices]
    live = [(w, s, e.name) for (w, s, e) in clock._heap if e._seq == s and e.when == w
            and not e.name.startswith(HOST_EVENTS)]
    live.sort()
    memories = []
    for s, e, name in _memory_regions(cpu):
        memories.append({"name": name, "start": s, "size": e - s,
                         "data": {"$b": enc.blob(cpu.read_mem(s, e - s))}})
    state = {
        "clock": {"now": clock.now, "seq": clock._seq,
                  "events": [[w, s, n] for (w, s, n) in live]},
        "cpu": {"registers": save_cpu_registers(cpu),
                "counter": {"cycles": cpu.cs.cycles, "blocks": int(cpu.cs.blocks)}},
        "memories": memories,
        "objects": objects,
        "spi_selected": spi,
    }
    meta = {
        "format": FORMAT, "version": VERSION,
        "board": machine.board_name,
        "board_options": _board_options(machine),
        "firmware": {"path": machine.image.path if machine.image else None,
                     "sha256": firmware_hash(machine)},
        "time_ticks": clock.now, "cycles": cpu.cs.cycles,
        "state": state,
    }
    return meta, enc.blobs


_NOT_SAVED_LOGGED = False


def _emulator_version() -> str:
    from emu.version import version
    return version()


def save(machine, path: str) -> None:
    """Write ``machine``'s whole state to ``path``, atomically: a failure
    (a full disk, Ctrl-C, kill -9) leaves the previous file as it was."""
    global _NOT_SAVED_LOGGED
    meta, blobs = build_state(machine)
    meta["emulator"] = _emulator_version()      # informative; "version" is what is checked
    from emu.version import commit
    meta["emulator_commit"] = commit()          # informative too: the build that wrote it
    if not _NOT_SAVED_LOGGED:
        _NOT_SAVED_LOGGED = True
        log.info("snapshot: the LDREX/STREX exclusive monitor and host-side objects (GDB "
                 "stub, window, bridge) are not saved")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        z.writestr("snapshot.json", json.dumps(meta, separators=(",", ":")))
        for i, b in enumerate(blobs):
            z.writestr(f"blob/{i}", b)
    atomic_write(path, buf.getbuffer())      # the previous snapshot stays whole until then


def read_snapshot(path: str) -> tuple:
    """(metadata, blob reader) from a snapshot file; SnapshotError if it is not one.

    The file must be a regular file of at most MAX_FILE bytes (a device such
    as /dev/zero is refused before it is read); its zip members are read
    with caps (emu/safezip.py: snapshot.json MAX_JSON, each blob MAX_BLOB,
    all blobs MAX_BLOBS), and the metadata's fields must have their types
    and ranges (:func:`meta_problem`)."""
    from emu.safezip import MissingMember, ZipError, open_zip, read_member, read_regular_file
    try:
        data = read_regular_file(path, MAX_FILE)
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such file") from None
    except ZipError as e:
        raise SnapshotError(f"{path}: {e}, not a pinetime-emu snapshot") from None
    except OSError as e:
        raise SnapshotError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        z = open_zip(data)
        text = read_member(z, "snapshot.json", MAX_JSON)
    except MissingMember:
        raise SnapshotError(f"{path}: not a pinetime-emu snapshot (no snapshot.json in "
                            "it)") from None
    except ZipError as e:
        raise SnapshotError(f"{path}: not a pinetime-emu snapshot or corrupt ({e})") from None
    try:
        meta = json.loads(text.decode("utf-8"))
    except RecursionError:
        raise SnapshotError(f"{path}: corrupt snapshot (snapshot.json is nested too "
                            "deeply)") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{path}: not a pinetime-emu snapshot or corrupt (snapshot.json: "
                            f"{' '.join(str(e).split())[:200]})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SnapshotError(f"{path}: not a pinetime-emu snapshot")
    if meta.get("version") == 1:
        raise SnapshotError(f"{path}: snapshot format version 1, from before snapshots held "
                            f"declared state (this emulator reads version {VERSION}): take it "
                            "again")
    if meta.get("version") != VERSION:
        raise SnapshotError(f"{path}: snapshot format version {_short(meta.get('version'))} "
                            f"(this emulator reads version {VERSION})")
    problem = meta_problem(meta)
    if problem is not None:
        raise SnapshotError(f"{path}: corrupt snapshot ({problem})")
    cache: dict = {}
    total = [0]

    def blob(i: int) -> bytes:
        if type(i) is not int or i < 0:
            raise SnapshotError(f"{path}: corrupt snapshot (blob reference {_short(i)})")
        if i in cache:
            return cache[i]
        try:
            b = read_member(z, f"blob/{i}", MAX_BLOB)
        except ZipError as e:
            raise SnapshotError(f"{path}: corrupt snapshot (blob {i}: {e})") from None
        total[0] += len(b)
        if total[0] > MAX_BLOBS:
            raise SnapshotError(f"{path}: corrupt snapshot (its blobs hold more than "
                                f"{MAX_BLOBS} bytes)")
        cache[i] = b
        return b
    return meta, blob


def _int(v, lo: int = 0, hi: int = U64) -> bool:
    return type(v) is int and lo <= v < hi


def meta_problem(meta: dict) -> Optional[str]:
    """What is wrong with the fields of a snapshot's metadata (types, ranges),
    or None.  What must match the machine is checked when it is restored."""
    from emu.clock import NEVER
    if not isinstance(meta.get("board"), str):
        return "board is not a name"
    opts = meta.get("board_options", {})
    if not isinstance(opts, dict) or not all(
            isinstance(v, (int, float, str, bool)) or v is None for v in opts.values()):
        return "board_options is not a mapping of plain values"
    fw = meta.get("firmware")
    if fw is not None and (not isinstance(fw, dict) or not all(
            isinstance(fw.get(k), str) or fw.get(k) is None for k in ("path", "sha256"))):
        return "firmware is not {path, sha256}"
    if "emulator" in meta and not isinstance(meta["emulator"], str):
        return "emulator is not a version string"
    if not isinstance(meta.get("emulator_commit"), (str, type(None))):
        return "emulator_commit is not a commit"
    st = meta.get("state")
    if not isinstance(st, dict):
        return "no state"
    clock, cpu = st.get("clock"), st.get("cpu")
    if not isinstance(clock, dict) or not _int(clock.get("now"), 0, NEVER) \
            or not _int(clock.get("seq"), 0, NEVER) or not isinstance(clock.get("events"), list):
        return "clock is not {now, seq, events} within the clock's range"
    for ev in clock["events"]:
        if not (isinstance(ev, list) and len(ev) == 3 and _int(ev[0], 0, NEVER + 1)
                and _int(ev[1], -1, NEVER) and isinstance(ev[2], str)):
            return f"clock event {_short(ev)} is not [due tick, sequence, name]"
    if not isinstance(cpu, dict) or not isinstance(cpu.get("registers"), dict) \
            or not isinstance(cpu.get("counter"), dict):
        return "cpu is not {registers, counter}"
    for name, v in cpu["registers"].items():
        if not _int(v, 0, 1 << 32):
            return f"CPU register {_short(name)} is {_short(v)}, not a 32-bit value"
    counter = cpu["counter"]
    if not _int(counter.get("cycles"), 0, 1 << 63) or not _int(counter.get("blocks"), 0, 1 << 63):
        return "cpu counter is not {cycles, blocks} counts"
    mems = st.get("memories")
    if not isinstance(mems, list):
        return "memories is not a list"
    for m in mems:
        if not (isinstance(m, dict) and isinstance(m.get("name"), str)
                and _int(m.get("start"), 0, 1 << 32) and _int(m.get("size"), 0, 1 << 32)
                and isinstance(m.get("data"), dict) and _int(m["data"].get("$b"))):
            return f"memory {_short(m)} is not {{name, start, size, data blob}}"
    objects = st.get("objects")
    if not isinstance(objects, dict) or "machine" not in objects:
        return "objects is not a mapping of the machine's parts"
    for path, entry in objects.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("class"), str)
                and isinstance(entry.get("attrs"), dict)
                and isinstance(entry.get("aliases", []), list)
                and all(isinstance(a, str) for a in entry.get("aliases", []))):
            return f"part {_short(path)} is not {{class, attrs, aliases}}"
    spi = st.get("spi_selected", {})
    if not isinstance(spi, dict) or not all(
            isinstance(v, list) and all(isinstance(x, bool) for x in v) for v in spi.values()):
        return "spi_selected is not a mapping of lists of flags"
    return None


def check_compatible(machine, meta: dict, path: str = "snapshot") -> None:
    if meta.get("board") != machine.board_name:
        raise SnapshotError(f"{path} was taken on board {meta.get('board')!r}, "
                            f"this machine is {machine.board_name!r}")
    want = (meta.get("firmware") or {}).get("sha256")
    have = firmware_hash(machine)
    if want != have:
        raise SnapshotError(f"{path} was taken with another firmware image "
                            f"({(meta.get('firmware') or {}).get('path')}, sha256 "
                            f"{str(want)[:12]}...); this machine runs "
                            f"{machine.image.path if machine.image else 'no firmware'} "
                            f"(sha256 {str(have)[:12]}...)")


def load(machine, path: str) -> dict:
    """Restore the state saved in ``path`` into ``machine`` (built for the same
    firmware and board).  Returns the snapshot's metadata.  The file is
    checked (format, version, board, firmware hash) before anything changes;
    a file that passes those checks but is damaged inside raises
    SnapshotError and leaves the machine partly restored."""
    meta, blob = read_snapshot(path)
    check_compatible(machine, meta, path)
    made_by = meta.get("emulator")
    if made_by not in (None, _emulator_version()):
        log.warning("%s was saved by pinetime-emu %s (this is %s): models that changed "
                    "between versions may not restore exactly", path, made_by,
                    _emulator_version())
    try:
        apply_state(machine, meta["state"], blob)
    except SnapshotError as e:
        text = str(e)
        raise SnapshotError(text if text.startswith(f"{path}:") else f"{path}: {text}") from None
    except Exception as e:      # a damaged file must not crash the caller with a traceback
        raise SnapshotError(f"{path}: corrupt or incompatible snapshot "
                            f"({type(e).__name__}: {e}); the machine is left partly "
                            "restored") from None
    return meta


def apply_state(machine, state: dict, blob) -> None:
    """Restore ``state`` (checked by :func:`meta_problem`) into ``machine``.
    Everything that must fit the machine is checked and decoded before
    anything changes: the memory regions (names, addresses, sizes, data),
    the CPU's register names, the parts (:func:`map_objects`), every
    attribute against the one it replaces (:func:`_check_value`), the SPI
    buses' selections and the clock's events."""
    cpu = machine.cpu
    clock = machine.clock
    graph = map_objects(machine, state["objects"])
    dec = _Decoder(graph, clock, blob)
    # memories (and forget translated code and block costs)
    regions = {name: (s, e) for s, e, name in _memory_regions(cpu)}
    memories = []
    seen: set = set()
    for m in state["memories"]:
        name = m["name"]
        if name in seen:
            raise SnapshotError(f"the snapshot has memory region {name} twice")
        if name not in regions:
            raise SnapshotError(f"the snapshot has memory region {_short(name)}, which this "
                                "machine does not have")
        seen.add(name)
        s, e = regions.pop(name)
        if s != m["start"] or e - s != m["size"]:
            raise SnapshotError(f"memory region {name} is {m['size']} bytes at "
                                f"{m['start']:#x} in the snapshot, {e - s} bytes at {s:#x} "
                                "in this machine")
        data = dec._bytes(m["data"])
        if len(data) != e - s:
            raise SnapshotError(f"memory region {name}: {len(data)} bytes of data for "
                                f"{e - s} bytes")
        memories.append((s, e, data))
    if regions:
        raise SnapshotError(f"the snapshot lacks memory region {', '.join(sorted(regions))}")
    regs = state["cpu"]["registers"]
    names = dict(_cpu_reg_ids(cpu))
    if set(regs) != set(names):
        odd = sorted(set(regs) ^ set(names))
        raise SnapshotError(f"the snapshot's CPU registers do not match this core's "
                            f"({', '.join(map(_short, odd[:5]))})")
    for path, sel in state.get("spi_selected", {}).items():
        bus = graph.get(path)
        if _qualname(bus) != "emu.buses.SpiBus" or len(sel) != len(bus.devices):
            raise SnapshotError(f"the snapshot selects devices on {_short(path)}, which is "
                                "not an SPI bus of as many devices in this machine")
    for when, seq, name in state["clock"]["events"]:
        if name not in clock.events or name.startswith(HOST_EVENTS):
            raise SnapshotError(f"the snapshot has a pending event {name!r} this machine "
                                "does not have")
    # the parts: decoded and checked before anything changes
    saved: dict = {}
    values: dict = {}
    for path, entry in state["objects"].items():
        obj = graph[path]
        if "saved" in entry and hasattr(obj, "load_state"):
            saved[path] = dec.dec(entry["saved"])
            if path != "machine" and callable(getattr(obj, "save_state", None)):
                _check_saved(path, obj, saved[path])
        values[path] = _decode_attrs(obj, path, entry["attrs"], dec)
        declared = _declared(obj, path)[0]
        for name in declared:
            if name not in values[path]:
                raise SnapshotError(f"the snapshot lacks {path}.{name}, which this machine "
                                    "has")
        if len(values[path]) != len(declared):
            name = next(n for n in values[path] if n not in declared)
            raise SnapshotError(f"the snapshot has {path}.{name}, which is not state of "
                                f"this machine's {_qualname(obj)}")

    def write_memories() -> None:
        for s, e, data in memories:
            cpu.write_mem(s, data)
            cpu.invalidate_code(s, e)     # translations, block costs, WFE decisions
        cpu.counter.clear()
    write_memories()
    # objects: their own load_state first, then every attribute
    for path, st in saved.items():
        graph[path].load_state(st)
    for path, vals in values.items():
        _restore(graph[path], vals)
    # again: a model's load_state may have touched memory (pins wiggled, devices
    # reacted); the saved bytes win
    write_memories()
    for path, sel in state.get("spi_selected", {}).items():
        bus = graph[path]
        for (d, _pin), s in zip(bus.devices, sel):
            bus._selected[id(d)] = bool(s)
    # CPU registers after the exception model's attributes (IPSR lives there)
    load_cpu_registers(cpu, regs)
    cpu.cs.cycles = state["cpu"]["counter"]["cycles"]
    cpu.cs.blocks = state["cpu"]["counter"]["blocks"]
    cpu.cs.stop_flag = 0
    cpu.cs.mask_watch = 0
    # the clock last: exactly the saved events, in their saved order
    c = state["clock"]
    heap = []
    for ev in clock.events.values():
        if ev.name.startswith(HOST_EVENTS) and ev.when is not None:
            heap.append((ev.when, ev._seq, ev))      # the restoring machine's own phone
            continue
        ev.when = None
        ev._seq = -1
    for when, seq, name in c["events"]:
        ev = clock.events[name]
        ev.when = when
        ev._seq = seq
        heap.append((when, seq, ev))
    import heapq
    heapq.heapify(heap)
    clock._heap = heap
    clock.now = c["now"]
    clock._seq = c["seq"]
    clock._clean()
    # ops that carry state in their arguments (the DWT's CYCCNT base) are
    # resolved again from the restored models
    for model in machine.soc.bus.slots.values():
        model.ops_changed()


def _check_saved(path: str, obj, new) -> None:
    """A model's saved state (for its load_state) against what it would save
    now: the same sort of value, key by key for a mapping."""
    try:
        old = obj.save_state()
    except Exception:           # a model that cannot say (a callable queued by the user)
        return
    _check_value(f"{path}.save_state()", old, new)
    if isinstance(old, dict) and isinstance(new, dict):
        for k in old.keys() & new.keys():
            _check_value(f"{path}.save_state()[{k!r}]", old[k], new[k])


def audit(machine) -> list:
    """(path, attribute, why) for every attribute of the machine's parts that
    its class does not declare, a declared state attribute without a value or
    one that cannot be saved, and a part whose class declares nothing: what
    would go into or miss from a snapshot unseen.  Empty when every part is
    declared."""
    out: list = []
    try:
        graph = object_graph(machine)
    except SnapshotError as e:
        return [("machine", None, f"UNDECLARED CLASS: {e}")]
    enc = _Encoder({id(o): p for p, o in graph.items()})
    for path, obj in graph.items():
        state, structure = _declared(obj, path)
        known = set(state) | set(structure)
        for name, _v in _attr_items(obj):
            if name not in known:
                out.append((path, name, f"UNDECLARED: neither SNAPSHOT nor STRUCTURE of "
                                        f"{_qualname(obj)}"))
        for name in state:
            try:
                v = getattr(obj, name)
            except AttributeError:
                out.append((path, name, "NO VALUE: declared state without a value"))
                continue
            try:
                enc.enc(v, f"{path}.{name}")
            except _Unencodable as e:
                out.append((path, name, f"UNENCODABLE: {e}"))
    return out
