"""World scenarios: several images on one air, described and checked in YAML.

    pinetime-emu world --scenario SCENARIO.yaml [--junit out.xml] [--processes]

A world scenario is a mapping with ``world`` (the air and its nodes) and
``steps``, and an optional ``name``::

    name: a central meets a heart-rate sensor
    world:
      seed: 1
      air: {path_loss_exponent: 2.0, loss: 0.0, capture_db: 10}   # or ideal: true
      pcap: out/air.pcap                  # optional, relative to this file
      nodes:
        - {name: central, firmware: central_hr.elf, board: nrf52dk, at: [0, 0]}
        - {name: sensor, firmware: peripheral_hr.elf, board: nrf52dk, at: [2, 0],
           ppm: 20, poke: {0x10001080: 10000}}
    steps:
      - run: {s: 1}
      - node: central                     # the steps below act on this node
      - wait_text: {text: "[NOTIFICATION]", timeout_ms: 5000}
      - node: sensor
      - expect_text: "HRS notifications enabled"

Every step of ``pinetime-emu test`` (frontends/scenario.py) works on the
node chosen last by a ``node:`` step (the first node to begin with):
waiting, running and the phone's steps run the whole world, so no node
gets ahead of another; screen, touch and button steps act on that node's
board.  Node keys: ``name`` and ``firmware`` (required), ``board``,
``at`` ([x, y] or [x, y, z] metres), ``ppm``, ``flash_file`` (default:
in memory), ``softdevice_hex``, ``bootloader``, ``poke`` (address: word).
Snapshot steps are refused (a world has no snapshot).  Paths are relative
to the scenario file.  Output, exit statuses and the JUnit report are
those of ``pinetime-emu test``.
"""
from __future__ import annotations

import os
import sys

from frontends.common import EXIT_GUEST, EXIT_OK, EXIT_USAGE

NODE_KEYS = ("name", "firmware", "board", "at", "ppm", "flash_file", "softdevice_hex",
             "bootloader", "poke")
AIR_KEYS = ("path_loss_exponent", "loss", "capture_db", "collisions", "ideal")


def load(path: str):
    """(name, world spec, [(node or None, Step)]); ScenarioError on bad input."""
    import yaml
    from frontends.scenario import (ScenarioError, _check_size, _parse_step, _read_text,
                                    _show)
    text = _read_text(path)
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        raise ScenarioError(f"{path}: invalid YAML") from None
    _check_size(doc, path)
    if not isinstance(doc, dict) or "world" not in doc:
        raise ScenarioError(f"{path}: a world scenario is a mapping with 'world' and 'steps'")
    unknown = [k for k in doc if k not in ("name", "world", "steps")]
    if unknown:
        raise ScenarioError(f"{path}: unknown top-level key(s) {', '.join(map(_show, unknown))}")
    base = os.path.dirname(os.path.abspath(path))
    world = doc["world"]
    if not isinstance(world, dict):
        raise ScenarioError(f"{path}: 'world' must be a mapping")
    bad = [k for k in world if k not in ("seed", "air", "pcap", "sniffer", "nodes")]
    if bad:
        raise ScenarioError(f"{path}: world: unknown key(s) {', '.join(map(_show, bad))}")
    nodes = world.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise ScenarioError(f"{path}: world: 'nodes' must be a non-empty list")
    names = []
    for i, n in enumerate(nodes, 1):
        if not isinstance(n, dict) or "name" not in n or "firmware" not in n:
            raise ScenarioError(f"{path}: node {i}: a mapping with name and firmware")
        bad = [k for k in n if k not in NODE_KEYS]
        if bad:
            raise ScenarioError(f"{path}: node {i}: unknown key(s) {', '.join(map(_show, bad))}")
        if not isinstance(n["firmware"], str):
            raise ScenarioError(f"{path}: node {i}: firmware must be a path")
        names.append(n["name"])
    air = world.get("air") or {}
    if not isinstance(air, dict) or any(k not in AIR_KEYS for k in air):
        raise ScenarioError(f"{path}: world: air takes {', '.join(AIR_KEYS)}")
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ScenarioError(f"{path}: expected a non-empty list of steps")
    parsed = []
    target = names[0]
    for i, raw in enumerate(steps, 1):
        if isinstance(raw, dict) and list(raw) == ["node"]:
            if raw["node"] not in names:
                raise ScenarioError(f"{path}: step {i}: no node {_show(raw['node'])} "
                                    f"(nodes: {', '.join(map(str, names))})")
            target = raw["node"]
            continue
        try:
            step = _parse_step(raw, i, base)
        except ScenarioError as e:
            raise ScenarioError(f"{path}: {e}") from None
        if step.kind in ("save_snapshot", "load_snapshot"):
            raise ScenarioError(f"{path}: step {i}: {step.kind}: a world has no snapshot")
        parsed.append((target, step))
    return str(doc.get("name", os.path.splitext(os.path.basename(path))[0])), world, parsed, base


def build_world(spec: dict, base: str, processes: bool = False):
    """The World a scenario's ``world`` describes; ValueError/FirmwareError."""
    from emu.airspace import AirModel
    from emu.world import World
    air = dict(spec.get("air") or {})
    if air.pop("ideal", False):
        model = AirModel.ideal()
    else:
        model = AirModel(path_loss_exponent=float(air.get("path_loss_exponent", 2.0)),
                         loss=float(air.get("loss", 0.0)),
                         capture_db=air.get("capture_db", 10.0),
                         collisions=bool(air.get("collisions", True)))
    seed = spec.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError("world: seed must be an integer")
    w = World(seed=seed, air=model, processes=processes)
    try:
        for n in spec["nodes"]:
            opts = {}
            for key in ("board", "softdevice_hex", "bootloader"):
                if n.get(key) is not None:
                    v = n[key]
                    opts[key] = os.path.join(base, v) if key != "board" else v
            ff = n.get("flash_file")
            if ff is not None and str(ff).lower() != "none":
                opts["flash_file"] = os.path.join(base, ff)
            elif n.get("board", "pinetime") == "pinetime":
                opts["flash_file"] = None
            poke = n.get("poke") or {}
            if not isinstance(poke, dict):
                raise ValueError(f"node {n['name']}: poke is a mapping address: word")
            pre = []
            for a, v in poke.items():
                if not (isinstance(a, int) and isinstance(v, int) and 0 <= v < 1 << 32):
                    raise ValueError(f"node {n['name']}: poke {a}: {v}: 32-bit words")
                pre.append((a, v.to_bytes(4, "little")))
            try:
                w.add(os.path.join(base, n["firmware"]), name=n["name"],
                      position=n.get("at", (0, 0)), ppm=n.get("ppm", 0.0), preload=pre, **opts)
            except TypeError as e:
                if "flash_file" not in str(e):
                    raise ValueError(f"node {n['name']}: {e}") from None
                opts.pop("flash_file", None)
                w.add(os.path.join(base, n["firmware"]), name=n["name"],
                      position=n.get("at", (0, 0)), ppm=n.get("ppm", 0.0), preload=pre, **opts)
        if spec.get("pcap"):
            w.pcap(os.path.join(base, spec["pcap"]), position=spec.get("sniffer"))
    except Exception:
        w.close()
        raise
    return w


def run(path: str, processes: bool = False, out=sys.stdout):
    """Run one world scenario: (Scenario with results, exit status)."""
    from emu.loader import FirmwareError
    from emu.worldproc import WorldError
    from frontends.scenario import Scenario, run_scenario
    name, spec, steps, base = load(path)
    if processes:
        raise ValueError("a world scenario's steps reach into the machines: run it without "
                         "--processes")
    try:
        w = build_world(spec, base)
    except (FirmwareError, WorldError, ValueError, TypeError) as e:
        raise ValueError(str(e)) from None
    node_of = {id(step): node for node, step in steps}
    sc = Scenario(path, name, None, [s for _n, s in steps])
    print(f"{name} ({path})", file=out)
    try:
        run_scenario(sc, None, out, machine_of=lambda st: w.node(node_of[id(st)]).machine,
                     label_of=lambda st: f"[{node_of[id(st)]}] {st.label}")
    finally:
        w.close()
    return sc


def main(world_args) -> int:
    from frontends.scenario import ScenarioError, write_junit
    try:
        sc = run(world_args.scenario, processes=world_args.processes)
    except (ScenarioError, ValueError) as e:
        print(f"pinetime-emu world: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if world_args.junit:
        try:
            write_junit(world_args.junit, [sc], "world")
        except OSError as e:
            print(f"pinetime-emu world: error: --junit {world_args.junit}: cannot write "
                  f"({e.strerror or e})", file=sys.stderr)
            return EXIT_USAGE
    print(("PASS" if sc.passed else "FAIL") + f" {sc.name}", file=sys.stdout)
    return EXIT_OK if sc.passed else EXIT_GUEST
