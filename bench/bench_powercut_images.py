"""Power cuts on real firmware, measured: InfiniTime's update over the air
through MCUBoot, and wasp-os writing a file to its littlefs.

    python3 bench/bench_powercut_images.py [--ota] [--wasp] [--jobs N]
        [--ota-transfer N] [--ota-swap N] [--wasp-sample N] [--wasp-ops A-B]
        [--seed S] [--resume]

Needs images built by hand (tests/helpers/powercut_images.py; the same as
tests/firmware/test_ota.py's and tests/firmware/test_wasp.py's).

InfiniTime: one run without a cut of the whole update (cached in
``~/.cache/pinetime-emu/powercut/``: minutes), logging every flash
operation; then cuts at a seeded sample of ``--ota-transfer`` operations of
the transfer (the phone writing the NOR's secondary slot) and
``--ota-swap`` of the swap (MCUBoot, after the reset), each operation in a
seeded mode, plus the last operations of the transfer (the image's end and
its trailer); each case starts from what the flash holds after its cut
(emu.powercut.FlashLog) and runs until InfiniTime runs again, then the
primary slot must hold 1.16.1 or 1.16.2.

wasp-os: from a snapshot of the watch at its prompt with /flash/pc.txt
holding its old content, the REPL writes new content (logged once); a cut
at every NOR operation of that write (or a seeded ``--wasp-sample``, or
``--wasp-ops A-B``), in each mode; the power back, the face must show
again, the littlefs mount, and each file hold its old or its new content.

Prints one line per case, the tables docs/powerloss.md ("With real
firmware") shows, and each phase's share of its execution limit
(bench/limit.py; a case's wall time includes building its machine).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from emu.powercut import MODES, FlashLog, choose  # noqa: E402
from helpers import powercut_images as pi  # noqa: E402


def _ota_one(args):
    log_path, meta, phase, cut, seed = args
    return phase, pi.ota_case(log_path, meta, cut, seed)


def _wasp_one(args):
    return "write", pi.wasp_logged_case(*args)


def _cache(name: str, logf: str, seed: int) -> str:
    return os.path.join(os.path.dirname(logf), f"{name}-results-"
                        f"{os.path.basename(logf).split('.')[0]}-{seed}.jsonl")


REPORT = False


def _pool(fn, items, jobs, out, cache=None):
    """Each case (fn(item) -> (phase, CaseResult)) in ``jobs`` processes, a
    line each as it ends; with ``cache``, results already in that file are
    taken from it and new ones added."""
    import json
    from emu.powercut import CaseResult, Cut
    done = {}
    if cache and os.path.exists(cache):
        with open(cache) as f:
            for line in f:
                d = json.loads(line)
                done[(d["op"], d["mode"])] = d
    res = {}
    todo = []
    for k, item in enumerate(items):
        cut = next(x for x in item if isinstance(x, Cut))
        d = done.get((cut.op, cut.mode))
        if d is not None:
            r = CaseResult(cut, d["ok"], d["message"], None, d["details"])
            res[k] = (d["phase"], r)
            _line(d["phase"], r, out)
        elif not REPORT:
            todo.append((k, item))

    def keep(k, phase, r):
        res[k] = (phase, r)
        _line(phase, r, out)
        if cache:
            with open(cache, "a") as f:
                f.write(json.dumps({"op": r.cut.op, "mode": r.cut.mode, "phase": phase,
                                    "ok": r.ok, "message": r.message,
                                    "details": r.details}) + "\n")
    if jobs > 1:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as ex:
            for (k, _item), (phase, r) in zip(todo, ex.map(fn, [it for _k, it in todo])):
                keep(k, phase, r)
    else:
        for k, item in todo:
            keep(k, *fn(item))
    return [res[k] for k in sorted(res)]


def _line(phase, r, out):
    c = r.cut
    d = r.details
    print(f"  {'PASS' if r.ok else 'FAIL'} {phase:12s} {c.name:14s} {c.flash} {c.kind:7s} "
          f"{c.address:#08x} -> {d.get('which') or '-':3s} {d.get('wall_s', 0):6.1f} s wall "
          f"{r.message}", file=out, flush=True)


def tables(results) -> str:
    rows = defaultdict(Counter)
    for phase, r in results:
        key = (phase, r.cut.flash, r.cut.kind, r.cut.mode)
        rows[key]["cases"] += 1
        rows[key][r.details.get("which") if r.ok else "failed"] += 1
        rows[key]["wall"] += r.details.get("wall_s", 0)
        if r.details.get("boot_s") is not None:
            rows[key]["emu"] += r.details["boot_s"]
            rows[key]["emu_n"] += 1
    lines = ["| phase | flash | operation | cut | cases | old | new | failed | "
             "emulated s/case | wall s/case |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (phase, flash, kind, mode), c in sorted(rows.items()):
        emu = f"{c['emu'] / c['emu_n']:.1f}" if c["emu_n"] else "-"
        lines.append(f"| {phase} | {flash} | {kind} | {mode} | {c['cases']} | {c['old']} | "
                     f"{c['new']} | {c['failed']} | {emu} | {c['wall'] / c['cases']:.1f} |")
    return "\n".join(lines) + shares(results)


def shares(results) -> str:
    """Each phase's share of its execution limit (bench/limit.py): its cases'
    cycles over their emulated seconds, their emulated over wall seconds
    (a case's wall time includes building its machine)."""
    from limit import share_line
    per = defaultdict(lambda: [0, 0.0, 0.0])
    for phase, r in results:
        d = r.details
        if d.get("cycles") and d.get("emulated_s") and d.get("wall_s"):
            p = per[phase]
            p[0] += d["cycles"]
            p[1] += d["emulated_s"]
            p[2] += d["wall_s"]
    return "".join(f"\n\n{share_line(phase, c / e, e / w)}"
                   for phase, (c, e, w) in sorted(per.items()))


def ops_table(ops, phases) -> str:
    """Operations of the run without a cut by phase, flash and kind."""
    c = Counter()
    for op in ops:
        c[(phases(op), op.flash, op.kind)] += 1
    lines = ["| phase | flash | operation | count |", "|---|---|---|---|"]
    for (phase, flash, kind), n in sorted(c.items()):
        lines.append(f"| {phase} | {flash} | {kind} | {n} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ota", action="store_true")
    p.add_argument("--wasp", action="store_true")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--ota-transfer", type=int, default=80)
    p.add_argument("--ota-swap", type=int, default=8)
    p.add_argument("--resume", action="store_true",
                   help="keep the cases' results in ~/.cache/pinetime-emu/powercut/ and "
                        "run only those not there yet")
    p.add_argument("--report", action="store_true",
                   help="with --resume: the tables of the results kept, running nothing")
    p.add_argument("--wasp-sample", type=int, default=None)
    p.add_argument("--wasp-ops", default=None, metavar="A-B",
                   help="cut only the write's operations A to B (each in every mode)")
    p.add_argument("--wasp-modes", default=",".join(MODES), metavar="M,M",
                   help="with --wasp-ops: these modes only")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    global REPORT
    REPORT = a.report and a.resume
    if not (a.ota or a.wasp):
        a.ota = a.wasp = True
    bad = 0
    if a.ota:
        _files, missing = pi.ota_files()
        if missing:
            print(f"skipped InfiniTime: missing {', '.join(missing)}")
        else:
            w0 = time.monotonic()
            log, meta = pi.ota_record(out=print)
            k = meta["transfer_ops"]
            print(f"InfiniTime 1.16.1 -> 1.16.2: {len(log.ops)} flash operations "
                  f"({k} in the transfer, {meta['swap_ops']} in the swap); transfer "
                  f"{meta['transfer'][0]:.1f} s emulated, {meta['transfer'][1]:.0f} s wall; "
                  f"swap and boot {meta['swap'][0]:.1f} s emulated, {meta['swap'][1]:.0f} s wall")
            print(ops_table(log.ops, lambda op: "transfer" if op.index < k else "swap"))
            cuts = pi.ota_cuts(log, meta, a.ota_transfer, a.ota_swap, a.seed)
            logf = str(next(pi.WORK.glob("ota-*.flashlog")))
            res = _pool(_ota_one, [(logf, meta, ph, c, a.seed) for ph, c in cuts], a.jobs,
                        sys.stdout, _cache("ota", logf, a.seed) if a.resume else None)
            print(tables(res))
            n_bad = sum(not r.ok for _, r in res)
            bad += n_bad
            print(f"{'PASS' if not n_bad else 'FAIL'} InfiniTime OTA: {len(res) - n_bad} of "
                  f"{len(res)} cuts left a watch that boots 1.16.1 or 1.16.2 "
                  f"({time.monotonic() - w0:.0f} s wall)")
    if a.wasp:
        from helpers.wasp import CACHE
        image = os.environ.get("PINETIME_EMU_WASP_IMAGE") or str(CACHE / "upstream" /
                                                                 "micropython.elf")
        if not os.path.exists(image):
            print(f"skipped wasp-os: missing {image}")
        else:
            w0 = time.monotonic()
            logf, old, new, meta = pi.wasp_log(image)
            ops = FlashLog.load(logf).ops
            print(f"wasp-os: the write is {len(ops)} NOR operations, {meta['write'][0]:.2f} s "
                  f"emulated, {meta['write'][1]:.1f} s wall")
            print(ops_table(ops, lambda op: "write"))
            cuts = choose(ops, MODES, ("nor",), a.wasp_sample, a.seed)
            if a.wasp_ops or REPORT:
                lo, hi = (int(x) for x in (a.wasp_ops or "0-999999").split("-"))
                modes = MODES if REPORT else tuple(a.wasp_modes.split(","))
                cuts = [c for c in choose(ops, modes, ("nor",)) if lo <= c.op <= hi]
            res = _pool(_wasp_one, [(image, logf, old, new, c, a.seed) for c in cuts], a.jobs,
                        sys.stdout, _cache("wasp", logf, a.seed) if a.resume else None)
            print(tables(res))
            n_bad = sum(not r.ok for _, r in res)
            bad += n_bad
            print(f"{'PASS' if not n_bad else 'FAIL'} wasp-os file write: {len(res) - n_bad} "
                  f"of {len(res)} cuts left pc.txt old or new "
                  f"({time.monotonic() - w0:.0f} s wall)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
