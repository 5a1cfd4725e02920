"""Where an idle emulated second goes: counts and Python time by category.

Used by ``bench_wasp.py --profile`` and ``bench_infinitime.py --profile``:
:func:`profile_idle` runs a machine that is already idle for some emulated
seconds twice, once counting and once under ``cProfile``, and prints per
emulated second

* the clock events fired, by event (``rtc1.next``, ``timer0.cc``, ...), and
  the nRF events they and the CPU set, by peripheral and event;
* exceptions entered and returned in Python (by exception), those done in C
  (emu.soc._mmio.ExcHook), and how many of all the hooks did inside a
  slice; ``emu_start`` slices; the RTC events carried out in C
  (emu.soc._mmio.RtcCore: not in the nRF events listed, which are the
  models' ``fire`` calls);
* guest register accesses that went through a model's Python, by register
  (those the bus's ops carried out in C are only totalled);
* the profiled time by category: native (Unicorn, its generated code and
  our C, inside ``emu_start``), clock events (``Clock.run_due``), model
  register accesses, exception entry, exception return, block costing, and
  the rest of the run loop's Python.

cProfile slows Python and not the native code, so the categories' shares
are of the profiled run; the unprofiled CPU time of the same span is
printed with them.
"""
from __future__ import annotations

import collections
import cProfile
import pstats
import time

# (category, [(file suffix, function name), ...]): cumulative time of these
# functions (they do not call each other)
CATEGORIES = [
    ("clock events (Clock.run_due / their callbacks)", [("emu/clock.py", "run_due")]),
    ("model register accesses (bus read/write)", [("emu/soc/bus.py", "read"),
                                                  ("emu/soc/bus.py", "write"),
                                                  ("emu/soc/ops.py", "call")]),
    ("exception entry", [("emu/cpu/cortexm.py", "exception_entry")]),
    ("exception return", [("emu/cpu/cortexm.py", "exception_return")]),
    ("block costing", [("emu/cpu/cortexm.py", "_cost_in_hook"),
                       ("emu/cpu/cortexm.py", "_cost_block")]),
]


class Counts:
    """Counts what one machine does while it runs (wrappers on instances)."""

    def __init__(self, m):
        self.m = m
        cpu = m.cpu
        self.clock_events = collections.Counter()
        self.fired = collections.Counter()
        self.entries = collections.Counter()
        self.returns = collections.Counter()
        self._undo = []
        for ev in list(m.soc.clock.events.values()):
            fn = ev.fn

            def counted(fn=fn, name=ev.name):
                self.clock_events[name] += 1
                return fn()
            self._patch(ev, "fn", counted)
        for per in {id(p): p for p in m.soc.bus.slots.values()}.values():
            for p in getattr(per, "choices", None) or [per]:
                fire = getattr(p, "fire", None)
                evnames = getattr(p, "EVENTS", None)
                if fire is None or not isinstance(evnames, dict):
                    continue

                def fired(offset, *a, _fire=fire, _p=p, _names=evnames):
                    self.fired[f"{_p.name} {_names.get(offset, hex(offset))}"] += 1
                    return _fire(offset, *a)
                self._patch(p, "fire", fired)
        entry, ret = cpu.exception_entry, cpu.exception_return

        def exception_entry(exc, addr):
            self.entries[cpu.exc_name(exc)] += 1
            return entry(exc, addr)

        def exception_return(exc_return):
            self.returns[cpu.exc_name(cpu._ipsr)] += 1
            return ret(exc_return)
        self._patch(cpu, "exception_entry", exception_entry)
        self._patch(cpu, "exception_return", exception_return)
        self._slices0 = cpu.slices

    def _patch(self, obj, name, fn) -> None:
        # an attribute of the instance (or a slot) is put back, a method
        # from the class is uncovered again
        had = not hasattr(obj, "__dict__") or name in obj.__dict__
        self._undo.append((obj, name, getattr(obj, name) if had else None, had))
        setattr(obj, name, fn)

    @property
    def slices(self) -> int:
        return self.m.cpu.slices - self._slices0

    def remove(self) -> None:
        for obj, name, old, had in reversed(self._undo):
            if had:
                setattr(obj, name, old)
            else:
                delattr(obj, name)
        self._undo = []


def _shortcuts(cpu) -> dict:
    return {"returns in the INTR hook": cpu.returns_in_hook,
            "entries in the block hook": cpu.entries_in_hook,
            "sleeps in the WFE hook": cpu.sleeps_in_hook, "WFEs in the hook": cpu.wfe_in_hook}


def _in_c(m) -> dict:
    """Work the native helpers did without Python: exception entries and
    returns (ExcHook), RTC clock events (RtcCore); zeros where absent."""
    h = getattr(m.cpu, "_exc_hook", None)
    rtc = sum(getattr(getattr(p, "_core", None), "fired", 0)
              for p in {id(p): p for p in m.soc.bus.slots.values()}.values())
    return {"entries": getattr(h, "entries", 0), "returns": getattr(h, "returns", 0),
            "rtc": rtc}


def profile_idle(m, seconds: float, label: str, top: int = 10) -> dict:
    """Run ``m`` (idle) ``seconds`` emulated seconds counting, then as long
    under cProfile, and print the breakdown per emulated second; returns it."""
    cpu, bus = m.cpu, m.soc.bus
    stats0, acc0, sc0, c0_ = bus.access_stats(), bus.accesses, _shortcuts(cpu), _in_c(m)
    c = Counts(m)
    c0 = time.process_time()
    m.run(seconds=seconds)
    cpu_s = time.process_time() - c0
    c.remove()
    stats1, acc1, sc1, c1_ = bus.access_stats(), bus.accesses, _shortcuts(cpu), _in_c(m)
    in_c = {k: c1_[k] - c0_[k] for k in c1_}
    per = 1.0 / seconds
    print(f"\nprofile of {label}, per emulated second ({seconds:g} s counted, "
          f"{seconds / cpu_s:.1f}x real time in CPU time, then {seconds:g} s under cProfile):")
    print(f"  emu_start slices: {c.slices * per:.0f}; done in hooks inside slices: "
          + ", ".join(f"{(sc1[k] - sc0[k]) * per:.0f} {k}" for k in sc1))
    print("  clock events: " + ", ".join(f"{n} {v * per:.0f}"
                                         for n, v in c.clock_events.most_common(top))
          + f" (RTC events carried out in C: {in_c['rtc'] * per:.0f})")
    print("  nRF events fired: " + ", ".join(f"{n} {v * per:.0f}"
                                             for n, v in c.fired.most_common(top)))
    print(f"  exceptions entered in Python: {sum(c.entries.values()) * per:.0f} ("
          + ", ".join(f"{n} {v * per:.0f}" for n, v in c.entries.most_common(5))
          + f"); returned: {sum(c.returns.values()) * per:.0f}; in C: entered "
          f"{in_c['entries'] * per:.0f}, returned {in_c['returns'] * per:.0f}")
    model = {}
    ops_n = 0
    for key, s in stats1.items():
        s0 = stats0.get(key, (0, 0, 0, 0))
        d = [a - b for a, b in zip(s, s0)]
        ops_n += d[0] + d[2]
        if d[1] or d[3]:
            model[key] = (d[1], d[3])
    total_model = sum(r + w for r, w in model.values())
    print(f"  guest register accesses: {(acc1 - acc0) * per:.0f}, by the bus's ops "
          f"{ops_n * per:.0f}, through a model's Python {total_model * per:.0f}:")
    from emu.soc.bus import reg_name
    for (base, off), (r, w) in sorted(model.items(), key=lambda kv: -sum(kv[1]))[:top]:
        p = bus.slots[base]
        print(f"    {p.name + ' ' + reg_name(p, off):28s} reads {r * per:6.0f}  "
              f"writes {w * per:6.0f}")
    prof = cProfile.Profile()
    prof.enable()
    m.run(seconds=seconds)
    prof.disable()
    st = pstats.Stats(prof).stats
    total = sum(v[2] for v in st.values())           # tottime of everything
    # the engine's time: the Python loop's emu_start calls, or the C run
    # loop (ExcHook.run: its own steps are a small part, see perf)
    native = sum(v[2] for (f, _l, fn), v in st.items()
                 if fn == "emu_start" or "of 'emu.soc._mmio.ExcHook' objects" in fn
                 and "run" in fn)
    cats = []
    for name, funcs in CATEGORIES:
        cats.append((name, sum(v[3] for (f, _l, fn), v in st.items()
                               if any(f.endswith(s) and fn == n for s, n in funcs))))
    if not cats[0][1]:
        # the C run loop calls the events' callbacks itself: their own time
        keys = set()
        for ev in m.clock.events.values():
            f = getattr(ev.fn, "__func__", ev.fn)
            code = getattr(f, "__code__", None)
            if code is not None:
                keys.add((code.co_filename, code.co_firstlineno, code.co_name))
        cats[0] = (cats[0][0], sum(v[3] for k, v in st.items() if k in keys))
    rest = total - native - sum(t for _n, t in cats)
    print(f"  profiled time ({total * per * 1e3:.1f} ms per emulated second under cProfile, "
          f"{cpu_s * per * 1e3:.1f} ms without):")
    for name, t in [("native (Unicorn, generated code, our C and run loop)", native)] + cats + [
            ("the run loop's own Python and the rest", rest)]:
        print(f"    {name:54s} {100 * t / total:5.1f} %")
    return dict(slices=c.slices * per, clock_events=dict(c.clock_events), in_c=in_c,
                entries=sum(c.entries.values()) * per, model=total_model * per,
                cpu_s=cpu_s, categories=dict(cats), native=native, total=total)
