"""``pinetime-emu powercut``: cut the power at every flash operation of a run.

    pinetime-emu powercut FIRMWARE --scenario CAMPAIGN.yaml [--board B]
        [--modes before,during,after] [--flash nvmc,nor] [--sample N]
        [--seed S] [--jobs N] [--junit out.xml] [--flash-image NOR.bin]

A campaign file is a scenario (frontends/scenario.py's steps) in three parts::

    name: the journal survives a power cut
    board: pinetime
    steps:               # the work: the power goes somewhere in it
      - wait_text: {text: DONE, timeout_ms: 3000}
    after_cut:           # on every case, once the power is back
      - wait_text: {text: DONE, timeout_ms: 3000}
    checks:              # built-in checks (emu/powercut.py), any of:
      journal: {}        # RECOVERED <key> <v> is the last COMMITTED <key> or the next
      image: {start: 0x8000, end: 0x7c000}   # this flash range holds the old or the new image
      files: {layout: infinitime}            # each file of the NOR's littlefs: old or new

A run without a cut first counts the flash operations (and notes the old
and new image and files); then every operation (or a seeded ``--sample``)
is cut in each mode, the power comes back, the ``after_cut`` steps run
(the console starts empty at the new boot) and the checks are made.  One
line per case, a table at the end, a JUnit report; the same seed gives the
same cases and the same results.  ``--jobs N`` runs the cases in N
processes (the standard library's pool); for a cluster, the pytest plugin
gives each case as a test (frontends/pytest_plugin.py).

Exit status: 0 every case held, 1 a case did not, 2 bad input (one line).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from frontends.common import EXIT_GUEST, EXIT_OK, EXIT_USAGE, ArgumentParser, path_arg

PROG = "pinetime-emu powercut"


class Spec:
    """Everything a case needs, picklable (a worker process rebuilds the
    machine and the steps from it)."""

    def __init__(self, firmware: str, board: Optional[str], scenario: str, seed: int,
                 flashes: tuple, base: Optional[int] = None, nor: Optional[str] = None):
        self.firmware, self.board, self.scenario = firmware, board, scenario
        self.seed, self.flashes, self.base, self.nor = seed, flashes, base, nor
        self.old: dict = {}         # what the checks compare with, from the run without a cut
        self.new: dict = {}


def load_campaign(path: str) -> dict:
    """{name, board, steps, after_cut, checks}; ScenarioError on bad input."""
    import yaml
    from frontends.scenario import (ScenarioError, _check_size, _parse_step, _read_text,
                                    _show)
    text = _read_text(path)
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        raise ScenarioError(f"{path}: invalid YAML") from None
    _check_size(doc, path)
    if not isinstance(doc, dict):
        raise ScenarioError(f"{path}: a campaign is a mapping with steps and after_cut")
    bad = [k for k in doc if k not in ("name", "board", "steps", "after_cut", "checks")]
    if bad:
        raise ScenarioError(f"{path}: unknown key(s) {', '.join(map(_show, bad))}")
    base = os.path.dirname(os.path.abspath(path))
    out = {"name": str(doc.get("name", os.path.splitext(os.path.basename(path))[0])),
           "board": doc.get("board")}
    for part in ("steps", "after_cut"):
        raw = doc.get(part)
        if not isinstance(raw, list) or not raw:
            raise ScenarioError(f"{path}: '{part}' must be a non-empty list of steps")
        try:
            out[part] = [_parse_step(s, i + 1, base) for i, s in enumerate(raw)]
        except ScenarioError as e:
            raise ScenarioError(f"{path}: {part}: {e}") from None
        for st in out[part]:
            if st.kind in ("save_snapshot", "load_snapshot"):
                raise ScenarioError(f"{path}: {part}: {st.kind} has no place in a campaign")
    checks = doc.get("checks") or {}
    if not isinstance(checks, dict) or any(k not in ("journal", "image", "files")
                                           for k in checks):
        raise ScenarioError(f"{path}: checks takes journal, image and files")
    for k, v in checks.items():
        if v is not None and not isinstance(v, dict):
            raise ScenarioError(f"{path}: checks: {k} takes a mapping")
    img = checks.get("image")
    if img is not None:
        for key in ("start", "end"):
            if not isinstance(img.get(key), int) or img[key] < 0:
                raise ScenarioError(f"{path}: checks: image needs integer start and end")
        if img["end"] <= img["start"] or img["end"] - img["start"] > 1 << 20:
            raise ScenarioError(f"{path}: checks: image: end after start, 1 MiB at most")
    files = checks.get("files")
    if files is not None and files.get("layout") not in (None, "infinitime", "wasp", "wasp-os"):
        raise ScenarioError(f"{path}: checks: files layout is infinitime or wasp")
    if files is not None and files.get("layout") == "wasp":
        files["layout"] = "wasp-os"              # emu.norfs's name for it
    out["checks"] = {k: dict(v or {}) for k, v in checks.items()}
    return out


def _machine(spec: Spec):
    from emu import Machine
    opts = {}
    board = spec.board
    if board in (None, "pinetime"):
        opts["flash_file"] = None
    m = Machine(spec.firmware, board=board, base=spec.base, **opts)
    if spec.nor is not None and getattr(m.board, "flash", None) is not None:
        with open(spec.nor, "rb") as f:
            data = f.read(len(m.board.flash.data))
        m.board.flash.data[:len(data)] = data
    return m


def _steps(steps: list):
    from frontends.scenario import STEPS, _Context

    def run(m) -> None:
        ctx = _Context(m)
        for st in steps:
            STEPS[st.kind](m, st.args, ctx)
    return run


def _image(m, c: dict) -> bytes:
    import hashlib
    return hashlib.sha256(m.cpu.read_mem(c["start"], c["end"] - c["start"])).digest()


def _files(m, c: dict) -> dict:
    from emu.norfs import NorFs
    fs = NorFs(bytes(m.board.flash.data), c.get("layout"))
    return {p: fs.read(p) for p, e in fs.walk("/") if not e.is_dir}


def _checks(spec: Spec, campaign: dict) -> list:
    from emu.powercut import journal_check
    out = []
    c = campaign["checks"]
    if "journal" in c:
        out.append(journal_check(**{k: v for k, v in c["journal"].items()
                                    if k in ("committed", "recovered")}))
    if "image" in c:
        def image(m, before, cut, c=c["image"]):
            got = _image(m, c)
            if got not in (spec.old["image"], spec.new["image"]):
                return (f"flash {c['start']:#x}-{c['end']:#x} holds neither the old image "
                        "nor the new one")
        out.append(image)
    if "files" in c:
        def files(m, before, cut, c=c["files"]):
            from emu.norfs import NorFsError
            try:
                got = _files(m, c)
            except NorFsError as e:
                return f"the NOR's littlefs does not mount: {e}"
            old, new = spec.old["files"], spec.new["files"]
            for p in sorted(set(old) | set(new) | set(got)):
                if got.get(p) not in (old.get(p), new.get(p)):
                    return f"{p} holds neither its old content nor its new one"
        out.append(files)
    return out


def _case(spec: Spec, cut):
    """One case (a worker process's entry point)."""
    from emu.powercut import run_case
    campaign = load_campaign(spec.scenario)
    return run_case(lambda: _machine(spec), _steps(campaign["steps"]),
                    _steps(campaign["after_cut"]), cut, seed=spec.seed,
                    flashes=spec.flashes, checks=_checks(spec, campaign))


def plan(spec: Spec, modes, sample: Optional[int]) -> list:
    """The run without a cut: the cases, and what the checks compare with."""
    from emu.powercut import choose, dry_run
    campaign = load_campaign(spec.scenario)
    c = campaign["checks"]
    m0 = _machine(spec)
    if "image" in c:
        spec.old["image"] = _image(m0, c["image"])
    if "files" in c:
        spec.old["files"] = _files(m0, c["files"])
    m0.close()
    ops, m = dry_run(lambda: _machine(spec), _steps(campaign["steps"]), spec.flashes)
    if "image" in c:
        spec.new["image"] = _image(m, c["image"])
    if "files" in c:
        spec.new["files"] = _files(m, c["files"])
    m.close()
    return ops, choose(ops, modes, spec.flashes, sample, spec.seed)


def run_cases(spec: Spec, cuts: list, jobs: int = 1, out=sys.stdout) -> list:
    """Every case, one line each as it ends (in the cases' order)."""
    results = []
    if jobs > 1 and len(cuts) > 1:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as ex:
            for r in ex.map(_case, [spec] * len(cuts), cuts):
                _line(r, out)
                results.append(r)
        return results
    for cut in cuts:
        r = _case(spec, cut)
        _line(r, out)
        results.append(r)
    return results


def _line(r, out) -> None:
    c = r.cut
    what = f"{c.flash} {c.kind} at {c.address:#08x}"
    print(f"  {'PASS' if r.ok else 'FAIL'} {c.name:16s} {what:32s} {r.message}", file=out,
          flush=True)


def table(results: list) -> str:
    """Cut points by flash, kind and mode: cases and failures."""
    rows: dict = {}
    for r in results:
        key = (r.cut.flash, r.cut.kind, r.cut.mode)
        n, bad = rows.get(key, (0, 0))
        rows[key] = (n + 1, bad + (not r.ok))
    lines = ["| flash | operation | cut | cases | failed |", "|---|---|---|---|---|"]
    for (flash, kind, mode), (n, bad) in sorted(rows.items()):
        lines.append(f"| {flash} | {kind} | {mode} | {n} | {bad} |")
    return "\n".join(lines)


def write_junit(path: str, name: str, results: list) -> None:
    from xml.sax.saxutils import escape, quoteattr
    from emu.outputs import atomic_write
    fails = sum(not r.ok for r in results)
    parts = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuite name={quoteattr(name)} tests="{len(results)}" failures="{fails}">']
    for r in results:
        parts.append(f'  <testcase classname={quoteattr(name)} name={quoteattr(r.cut.name)}>')
        if not r.ok:
            parts.append(f'    <failure message={quoteattr(r.message)}>'
                         f'{escape(r.message)}</failure>')
        parts.append("  </testcase>")
    parts.append("</testsuite>\n")
    atomic_write(path, "\n".join(parts).encode())


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Cut the power at every flash operation of a "
                       "run (or a seeded sample), boot again and check an invariant.")
    p.add_argument("firmware", type=path_arg, metavar="FIRMWARE")
    p.add_argument("--scenario", type=path_arg, required=True, metavar="CAMPAIGN.yaml")
    p.add_argument("--board", default=None)
    p.add_argument("--base", type=lambda s: int(s, 0), default=None)
    p.add_argument("--modes", default="before,during,after")
    p.add_argument("--flash", default="nvmc,nor", help="which flashes' operations: nvmc,nor")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="a seeded sample of N cases instead of all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, metavar="N")
    p.add_argument("--junit", type=path_arg, default=None, metavar="FILE")
    p.add_argument("--flash-image", type=path_arg, default=None, metavar="NOR.bin",
                   help="the PineTime's NOR content to start from (default erased)")
    return p


def main(argv=None) -> int:
    from emu.loader import FirmwareError
    from emu.powercut import MODES, CampaignError
    from frontends.scenario import ScenarioError
    args = build_parser().parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m)
    flashes = tuple(f for f in args.flash.split(",") if f)
    err = None
    if not modes or any(m not in MODES for m in modes):
        err = f"--modes: a comma list of {', '.join(MODES)}"
    elif not flashes or any(f not in ("nvmc", "nor") for f in flashes):
        err = "--flash: a comma list of nvmc and nor"
    elif args.sample is not None and args.sample < 1:
        err = "--sample: at least 1"
    elif not 1 <= args.jobs <= 256:
        err = "--jobs: 1 to 256"
    elif not 0 <= args.seed < 1 << 63:
        err = "--seed: 0 to 2**63-1"
    for path, what in ((args.firmware, "FIRMWARE"), (args.scenario, "--scenario"),
                       (args.flash_image, "--flash-image")):
        if err is None and path is not None and not os.path.isfile(path):
            err = f"{what} {path}: no such file"
    if err is not None:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    try:
        campaign = load_campaign(args.scenario)
        board = args.board or campaign["board"]
        spec = Spec(os.path.abspath(args.firmware), board, os.path.abspath(args.scenario),
                    args.seed, flashes, args.base, args.flash_image)
        print(f"{campaign['name']} ({args.scenario})")
        ops, cuts = plan(spec, modes, args.sample)
    except (ScenarioError, FirmwareError, CampaignError, OSError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:                       # noqa: BLE001 - the run without a cut failed
        print(f"{PROG}: error: the run without a cut failed: {type(e).__name__}: {e}",
              file=sys.stderr)
        return EXIT_GUEST
    print(f"  {len(ops)} flash operations in the run without a cut; {len(cuts)} cases")
    results = run_cases(spec, cuts, args.jobs)
    print(table(results))
    bad = sum(not r.ok for r in results)
    print(f"{'PASS' if not bad else 'FAIL'} {campaign['name']}: {len(results) - bad} of "
          f"{len(results)} cases held")
    if args.junit:
        try:
            write_junit(args.junit, campaign["name"], results)
        except OSError as e:
            print(f"{PROG}: error: --junit {args.junit}: cannot write ({e.strerror or e})",
                  file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK if not bad else EXIT_GUEST
