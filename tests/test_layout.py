"""The layering of docs/architecture.md holds in the code.

The layer table in docs/architecture.md (its ```layers block) is the one
declaration.  Every module of emu/ and frontends/ must be in a layer, and
so must every native source and header (emu/cpu/_fastregs.c is
``emu.cpu._regs``); every import (at module level or inside a function, and
a native module asked for by name through ``emu.native.load``) and every
``#include`` must go to the same layer or a lower one; and no modules import
each other round a loop.  The checker is also run on made-up graphs to show
it can fail.  The house's sizes hold too: no native source over 1 500
lines, no Python module of emu/ over 1 200.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from helpers.paths import ROOT

PACKAGES = ("emu", "frontends")


def read_layers(text: str) -> list:
    """[(layer name, [patterns])], top layer first."""
    m = re.search(r"```layers\n(.*?)```", text, re.S)
    assert m, "docs/architecture.md has no ```layers block"
    out = []
    for line in m.group(1).splitlines():
        if line.strip():
            name, *patterns = line.split()
            out.append((name, patterns))
    return out


def find_modules(root: Path) -> dict:
    """module name -> source file, for the .py, .c and .h files of PACKAGES."""
    mods = {}
    for pkg in PACKAGES:
        for p in sorted((root / pkg).rglob("*")):
            if p.suffix not in (".py", ".c", ".h") or "build" in p.relative_to(root).parts:
                continue
            name = ".".join(p.relative_to(root).with_suffix("").parts)
            if name.endswith(".__init__"):
                name = name[: -len(".__init__")]
            mods[name] = p
    return mods


def import_graph(mods: dict) -> dict:
    """module -> {(imported module, line)} for every import of our modules."""
    def resolve(name: str):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict = {m: set() for m in mods}
    by_path = {p.resolve(): m for m, p in mods.items() if p.is_absolute()}
    for m, path in mods.items():
        if path.suffix in (".c", ".h"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                inc = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if inc:
                    target = by_path.get((path.parent / inc.group(1)).resolve())
                    if target is not None and target != m:
                        graph[m].add((target, n))
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            targets = []
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "load" and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and node.args[0].value in mods):       # native.load("emu.cpu._core")
                targets = [node.args[0].value]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = m if path.name == "__init__.py" else m.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    base = pkg + ("." + base if base else "")
                targets = [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                r = resolve(t)
                if r is not None and r != m:
                    graph[m].add((r, node.lineno))
    return graph


def layer_of(module: str, layers: list):
    """Index of the module's layer (0 = top), by its most specific pattern."""
    best = None
    for i, (_name, patterns) in enumerate(layers):
        for pat in patterns:
            if pat.endswith(".*"):
                stem = pat[:-2]
                if module == stem or module.startswith(stem + "."):
                    score = len(stem)
                else:
                    continue
            elif module == pat:
                score = len(pat) + 1000          # an exact name wins over a package
            else:
                continue
            if best is None or score > best[0]:
                best = (score, i)
    return None if best is None else best[1]


def problems(mods: dict, graph: dict, layers: list) -> list:
    out = []
    where = {m: layer_of(m, layers) for m in mods}
    for m in sorted(mods):
        if where[m] is None:
            out.append(f"{m} is in no layer of docs/architecture.md: add it to the table")
    for m in sorted(graph):
        for dep, line in sorted(graph[m]):
            a, b = where.get(m), where.get(dep)
            if a is not None and b is not None and b < a:
                out.append(f"{mods[m].relative_to(ROOT) if mods[m].is_absolute() else mods[m]}"
                           f":{line}: {m} ({layers[a][0]}) imports {dep} ({layers[b][0]}), "
                           f"a layer above it")
    # loops: Tarjan's strongly connected components
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _line in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append("import loop: " + " <-> ".join(sorted(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def layers():
    return read_layers((ROOT / "docs" / "architecture.md").read_text())


def test_the_code_follows_the_declared_layers(layers):
    mods = find_modules(ROOT)
    assert "emu.machine" in mods and "frontends.cli" in mods and "emu.soc._mmio" in mods
    found = problems(mods, import_graph(mods), layers)
    assert not found, "\n".join(found)


NATIVE_MAX_LINES = 1500
PYTHON_MAX_LINES = 1200


def oversized(root: Path) -> list:
    out = []
    for p in sorted((root / "emu").rglob("*")):
        if "build" in p.relative_to(root).parts:
            continue
        limit = {".c": NATIVE_MAX_LINES, ".h": NATIVE_MAX_LINES,
                 ".py": PYTHON_MAX_LINES}.get(p.suffix)
        if limit is not None:
            n = len(p.read_text().splitlines())
            if n > limit:
                out.append(f"{p.relative_to(root)}: {n} lines (the house allows {limit})")
    return out


def test_no_file_is_past_the_size_the_house_allows():
    found = oversized(ROOT)
    assert not found, "\n".join(found)


def test_the_size_check_sees_a_long_file(tmp_path):
    """Companion: a made-up tree with one long C file and one long module."""
    (tmp_path / "emu" / "cpu").mkdir(parents=True)
    (tmp_path / "emu" / "cpu" / "_big.c").write_text("x\n" * (NATIVE_MAX_LINES + 1))
    (tmp_path / "emu" / "small.py").write_text("x = 1\n")
    (tmp_path / "emu" / "big.py").write_text("x = 1\n" * (PYTHON_MAX_LINES + 1))
    found = oversized(tmp_path)
    assert len(found) == 2, found
    assert any(f.startswith("emu/cpu/_big.c: 1501 lines") for f in found), found
    assert any(f.startswith("emu/big.py: 1201 lines") for f in found), found


def test_every_native_source_is_built_and_named_in_the_tree():
    """Each .c file of emu/ is a source of one native module
    (emu/native_build.py), and docs/architecture.md's tree names every
    native file."""
    from emu.native_build import NATIVE_MODULES
    built = {s for srcs in NATIVE_MODULES.values() for s in srcs}
    text = (ROOT / "docs" / "architecture.md").read_text()
    for p in sorted((ROOT / "emu").rglob("*")):
        if p.suffix in (".c", ".h") and "build" not in p.relative_to(ROOT).parts:
            rel = str(p.relative_to(ROOT))
            if p.suffix == ".c":
                assert rel in built, f"{rel} is in no native module of emu/native_build.py"
            assert p.name in text, f"{rel} is not named in docs/architecture.md's tree"


def test_includes_are_checked(layers):
    """Companion: a made-up fabric file including a CPU header is refused."""
    mods = {"emu.soc._slot": ROOT / "emu" / "soc" / "_slot.c",
            "emu.cpu._core": ROOT / "emu" / "cpu" / "_core.h"}
    graph = {"emu.soc._slot": {("emu.cpu._core", 4)}, "emu.cpu._core": set()}
    found = problems(mods, graph, layers)
    assert any("emu.soc._slot (fabric) imports emu.cpu._core (cpu)" in p for p in found), found


def test_every_folder_of_the_tree_is_described():
    """The tree in docs/architecture.md names every package."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    for pkg in PACKAGES:
        for d in sorted((ROOT / pkg).iterdir()):
            if d.is_dir() and (d / "__init__.py").exists():
                assert f"  {d.name}/" in text, f"{pkg}/{d.name}/ is not in the tree"


def test_the_checker_sees_upward_imports_unplaced_modules_and_loops(layers):
    """Companion: made-up graphs break each rule once."""
    mods = {m: Path(m.replace(".", "/") + ".py") for m in
            ("emu.peripherals.rtc", "emu.board.pinetime", "emu.phone.gatt", "emu.phone.smp",
             "emu.phone.link", "emu.newthing")}
    graph = {
        "emu.peripherals.rtc": {("emu.board.pinetime", 3)},     # upward
        "emu.board.pinetime": set(),
        "emu.phone.smp": {("emu.phone.link", 1)},
        "emu.phone.link": {("emu.phone.smp", 2)},               # a loop in one layer
        "emu.phone.gatt": {("emu.phone.link", 1)},              # fine
        "emu.newthing": set(),                                  # in no layer
    }
    found = problems(mods, graph, layers)
    assert any("emu.peripherals.rtc (peripherals) imports emu.board.pinetime (board)" in p
               for p in found), found
    assert any(p.startswith("emu.newthing is in no layer") for p in found), found
    assert any(p == "import loop: emu.phone.link <-> emu.phone.smp" for p in found), found
    assert len(found) == 3, found
