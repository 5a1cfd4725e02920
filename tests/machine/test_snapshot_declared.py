"""Snapshots from declared state (emu/snapshot.py): every class of a machine
names the attributes a snapshot saves (``SNAPSHOT``) and those the wiring
rebuilds (``STRUCTURE``), and nothing else is looked at.

The defect this replaced: state found by reflection (the instance's
``__dict__``) missed a counter declared on the class (``tail_chains = 0``)
until the first tail-chain assigned it on the instance, so a snapshot taken
before the first tail-chain could not be restored into the same machine once
it had tail-chained ("the snapshot lacks machine.cpu.tail_chains") -- the
pytest plugin's pattern (boot once, restore before each test).
"""
from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import zipfile

import pytest

from emu.machine import BOARDS, Machine
from emu.snapshot import SnapshotError, audit, object_graph
from helpers.microbit import MICROBIT_HEX
from helpers.snapshot import assert_same, observable

LINE = re.compile(rb"n=(\d+) tc=(\d+) late=(\d+) wrong=(\d+) fpx=(\d+) nfp=(\d+) ")


def _counts(m: Machine) -> dict:
    """The last counts firmware/tests/snapshot_exceptions.c printed."""
    found = LINE.findall(bytes(m.console))
    assert found, "the firmware printed no counts"
    return dict(zip(("ticks", "chained", "late", "wrong", "fp_frames", "nested_fp"),
                    map(int, found[-1])))


def _seen(m: Machine) -> tuple:
    return observable(m), m.cpu.tail_chains, m.cpu.svc_calls, m.cpu.stalls


def test_restore_after_tail_chains_into_the_same_and_a_fresh_machine(tmp_path, fw):
    """Save before the first tail-chain and again in the middle of the
    exceptions; restore each into the machine that went on (it has
    tail-chained since) and into a fresh one: the runs continue exactly as
    from the save (cycles, console bytes, clock, pins, PC, every saved
    attribute).  The runs go through every exception path: tail-chains,
    late arrival of a higher priority, nesting, extended (lazy FP) frames."""
    m = Machine(fw("snapshot_exceptions"), board="nrf52832")
    m.run(ms=0.01)
    assert m.cpu.tail_chains == 0 and "tail_chains" not in vars(m.cpu), \
        "the first save must come before the first tail-chain"
    early = str(tmp_path / "early.snap")
    m.save_snapshot(early)
    m.run(ms=3)
    mid = str(tmp_path / "mid.snap")
    m.save_snapshot(mid)
    tc_mid = m.cpu.tail_chains
    assert tc_mid > 0
    first = _counts(m)
    m.run(ms=4)
    after_mid = _seen(m)
    last = _counts(m)
    # every exception path ran after the second save point too
    assert m.cpu.tail_chains > tc_mid
    assert last["chained"] > first["chained"] and last["late"] > first["late"]
    assert last["wrong"] == 0, "the late, higher-priority IRQ did not run first"
    assert last["nested_fp"] > first["nested_fp"]
    assert last["fp_frames"] == 5 * last["ticks"], "not every frame was an FP frame"

    # the early snapshot, continued to the same moment (3 + 4 ms after it)
    m.load_snapshot(early)                       # the machine has tail-chained since
    assert_same(m, Machine.from_snapshot(early))
    m.run(ms=3)
    assert m.cpu.tail_chains == tc_mid
    m.run(ms=4)
    assert _seen(m) == after_mid
    fresh = Machine.from_snapshot(early)
    fresh.run(ms=3)
    fresh.run(ms=4)
    assert _seen(fresh) == after_mid
    assert_same(m, fresh)

    # the middle one, into this machine (which ran past it) and a fresh one
    m.run(ms=2)
    m.load_snapshot(mid)
    assert m.cpu.tail_chains == tc_mid
    fresh = Machine.from_snapshot(mid)
    assert_same(m, fresh)
    for machine in (m, fresh):
        machine.run(ms=4)
        assert _seen(machine) == after_mid
    assert_same(m, fresh)


def test_a_class_default_is_saved_before_it_is_assigned(tmp_path, fw):
    """Counters declared on the class are in the snapshot whether or not the
    instance has assigned them, and a restore sets them back."""
    m = Machine(fw("snapshot_exceptions"), board="nrf52832")
    path = str(tmp_path / "s.snap")
    m.save_snapshot(path)
    with zipfile.ZipFile(path) as z:
        attrs = json.loads(z.read("snapshot.json"))["state"]["objects"]["machine.cpu"]["attrs"]
    assert "tail_chains" not in vars(m.cpu) and "stalls" not in vars(m.cpu)
    for name in ("tail_chains", "svc_calls", "stalls", "stalled_ticks"):
        assert attrs[name] == 0, name
    m.cpu.stalls = 5                                  # as an NVMC stall would
    m.run(ms=1)
    assert m.cpu.tail_chains > 0
    m.load_snapshot(path)
    assert m.cpu.tail_chains == 0 and m.cpu.stalls == 0


def _machines(fw):
    """A machine of every board (emu.machine.BOARDS), run a little, with the
    optional parts attached (SoftDevice and phone, queued input), and two on
    the pure-Python path."""
    import emu.softdevice as sdm
    out = []
    for board in BOARDS:
        if board == "pinetime":
            m = Machine(fw("snapshot_busy"), flash_file=None)
            m.board.touch.tap(10, 10, delay_ms=1)
            out.append(m)
            m = Machine(fw("pinetime_demo"), flash_file=None)
            m.board.button.hold(3, delay_ms=1)
            out.append(m)
        elif board == "nrf52832":
            out.append(Machine(fw("snapshot_exceptions"), board=board))
            m = Machine(fw("sd_nus"), board=board)
            sdm.attach(m)
            m.phone.connect(timeout_ms=100)
            m.phone.notify("A", "b")
            out.append(m)
        elif board == "microbit":
            import os
            out.append(Machine(MICROBIT_HEX if os.path.exists(MICROBIT_HEX) else None,
                               board=board))
        else:
            out.append(Machine(None, board=board))
    # the pure-Python path (the native cells' Python twins) too
    out.append(Machine(fw("snapshot_busy"), flash_file=None, pure_python=True))
    out.append(Machine(fw("snapshot_exceptions"), board="nrf52832", pure_python=True))
    for m in out:
        m.run(ms=20)
    return out


def _assigned_on_self(cls) -> dict:
    """name -> line for every ``self.<name> = / += / :`` in ``cls``'s own body."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    out: dict = {}
    for fn in tree.body[0].body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
            continue
        me = fn.args.args[0].arg
        for node in ast.walk(fn):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                       else [])
            while targets:
                t = targets.pop()
                if isinstance(t, (ast.Tuple, ast.List)):
                    targets += t.elts
                elif isinstance(t, ast.Starred):
                    targets.append(t.value)
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                        and t.value.id == me:
                    out.setdefault(t.attr, f"{cls.__qualname__}.{fn.name}")
    return out


def _is_descriptor(cls, name: str) -> bool:
    for k in cls.__mro__:
        if name in vars(k):
            v = vars(k)[name]
            return isinstance(v, property) or (hasattr(type(v), "__set__")
                                               and type(v).__name__ != "member_descriptor")
    return False


def test_every_part_of_every_board_declares_its_state(fw):
    """Each attribute found on a part at run time, and each one its class's
    code assigns (even if this run never got there: a counter on the class
    set by its first ``+= 1``), is declared state or declared structure; each
    declared state attribute has a value (a class default at least); no class
    names one attribute as both."""
    from emu.snapshot import declaration
    problems = []
    classes = {}
    for m in _machines(fw):
        problems += [f"{p}.{a}: {why}" for p, a, why in audit(m)]
        for path, obj in object_graph(m).items():
            classes.setdefault(type(obj), path)
    for cls, path in classes.items():
        state, structure = declaration(cls)
        known = set(state) | set(structure)
        for k in cls.__mro__:
            if not k.__module__.startswith("emu"):
                continue
            own_s, own_w = vars(k).get("SNAPSHOT", ()), vars(k).get("STRUCTURE", ())
            both = set(own_s) & set(own_w)
            if both or len(set(own_s)) != len(own_s) or len(set(own_w)) != len(own_w):
                problems.append(f"{k.__qualname__}: {sorted(both)} declared twice")
            for name, where in _assigned_on_self(k).items():
                if name not in known and not _is_descriptor(cls, name):
                    problems.append(f"{path} ({cls.__qualname__}): {where} assigns "
                                    f"self.{name}, neither SNAPSHOT nor STRUCTURE")
    assert not problems, "\n".join(sorted(set(problems)))


def test_an_undeclared_attribute_is_found(fw):
    """The check above can fail: a new attribute set at run time, a declared
    one without a value, a part of a class that declares nothing."""
    m = Machine(fw("snapshot_exceptions"), board="nrf52832")
    assert audit(m) == []
    m.cpu.new_counter = 1
    assert [(p, a) for p, a, _why in audit(m)] == [("machine.cpu", "new_counter")]
    del m.cpu.new_counter

    class Extra:
        pass
    Extra.__module__ = "emu.extra"
    m.soc.peripherals["extra"] = Extra()          # reached through declared structure
    assert "UNDECLARED CLASS" in audit(m)[0][2]
    with pytest.raises(SnapshotError, match="declares no snapshot state"):
        m.save_snapshot("/dev/null")


def test_a_version_1_snapshot_is_refused_in_one_line(tmp_path, fw):
    m = Machine(fw("snapshot_exceptions"), board="nrf52832")
    path = str(tmp_path / "v.snap")
    m.save_snapshot(path)
    old = str(tmp_path / "v1.snap")
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(old, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "snapshot.json":
                meta = json.loads(data)
                meta["version"] = 1
                data = json.dumps(meta).encode()
            zout.writestr(item, data)
    with pytest.raises(SnapshotError, match="version 1, from before snapshots held declared "
                                            "state") as e:
        m.load_snapshot(old)
    assert "\n" not in str(e.value)


def test_a_snapshot_missing_or_adding_state_is_refused(tmp_path, fw):
    m = Machine(fw("snapshot_exceptions"), board="nrf52832")
    path = str(tmp_path / "s.snap")
    m.save_snapshot(path)

    def rewrite(name, mutate):
        out = str(tmp_path / name)
        with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w") as zout:
            for item in zin.infolist():
                data = zin.read(item.filename)
                if item.filename == "snapshot.json":
                    meta = json.loads(data)
                    mutate(meta["state"]["objects"]["machine.cpu"]["attrs"])
                    data = json.dumps(meta).encode()
                zout.writestr(item, data)
        return out
    with pytest.raises(SnapshotError, match="lacks machine.cpu.tail_chains"):
        m.load_snapshot(rewrite("lack.snap", lambda a: a.pop("tail_chains")))
    with pytest.raises(SnapshotError, match="machine.cpu.new_counter, which is not state"):
        m.load_snapshot(rewrite("more.snap", lambda a: a.__setitem__("new_counter", 0)))
