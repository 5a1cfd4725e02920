"""README.md's commands still run as typed.

Every `pinetime-emu` command in README.md's shell blocks must parse with the
real command-line parsers (an option renamed or dropped fails here); those
that need only files from this repository (our firmware, the example
scenarios) and no display are run as typed, in a scratch folder, and must
exit 0; the Python tour is run too.  Every relative link must point at a
file that exists, and the front page stays short.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from conftest import free_port
from helpers.paths import ROOT

README = ROOT / "README.md"


def blocks(text: str, lang: str) -> list:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def commands(text: str) -> list:
    """The pinetime-emu command lines of the shell blocks, as argument lists
    (continuations joined, comments and a trailing & dropped)."""
    out = []
    for block in blocks(text, "sh"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if not line.startswith("pinetime-emu "):
                continue
            words = shlex.split(line, comments=True)
            if words and words[-1] == "&":
                words = words[:-1]
            out.append(words[1:])
    return out


def parse_problem(argv: list, capsys):
    """None if the real parsers take ``argv``, else what they said."""
    from frontends import cli, scenario
    from frontends.bridge import phone_client_main
    try:
        if argv[0] == "demo":
            from frontends import demo
            rc = demo.run_args(argv[1:], cli.build_parser)
            return f"rc {rc}: {capsys.readouterr().err}" if isinstance(rc, int) and rc else None
        if argv[0] == "doctor":
            return None if argv == ["doctor"] else f"doctor takes no arguments: {argv}"
        if argv[0] in ("run", "info"):
            args, extra = cli.build_parser().parse_known_args(argv)
            return f"unrecognized {extra}" if extra else None
        if argv[0] == "test":
            scenario.build_parser().parse_args(argv[1:])
            return None
        if argv[0] == "preview":
            from frontends import preview
            preview.build_parser().parse_args(argv[1:])
            return None
        if argv[0] == "world":
            from frontends import worldcli
            try:
                worldcli.parse(argv[1:])
            except worldcli.UsageError as e:
                return str(e)
            return None
        if argv[0] == "powercut":
            from frontends import powercut
            powercut.build_parser().parse_args(argv[1:])
            return None
        if argv[0] == "phone":
            # parsed, then no bridge at an unused port: that error means it
            # parsed; so does a file it sends that is not here (an example's
            # hello.py), checked before it connects
            rc = phone_client_main(argv[1:] + ["--port", str(free_port())])
            err = capsys.readouterr().err
            missing = [f"{o} {f}: cannot read (No such file or directory)"
                       for o, f in zip(argv, argv[1:]) if not os.path.exists(f)]
            parsed = "cannot connect" in err or any(m in err for m in missing)
            return None if rc == 2 and parsed else f"rc {rc}: {err}"
    except SystemExit:
        return capsys.readouterr().err.strip() or "exited"
    return f"unknown command {argv[0]}"


def runnable(argv: list) -> bool:
    """Needs only this repository's files, and no display, server or image."""
    if argv[0] == "demo":                 # the image is the package's own
        return "--headless" in argv
    if argv[0] not in ("run", "info", "test", "preview", "world", "powercut"):
        return False
    if argv[0] == "run" and ("--headless" not in argv or "--gdb" in argv
                             or "--bridge" in argv):
        return False
    inputs = [a for a in argv if a.endswith((".elf", ".yaml", ".hex", ".zip", ".out"))]
    return bool(inputs) and all((ROOT / a).exists() for a in inputs)


@pytest.fixture(scope="module")
def text(firmware_dir):            # firmware/build exists before commands are judged
    return README.read_text()


@pytest.fixture
def scratch(tmp_path):
    """A folder where the README's relative paths (firmware/, examples/) resolve."""
    for name in ("firmware", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def test_every_command_parses(text, capsys):
    cmds = commands(text)
    assert len(cmds) >= 10, cmds
    bad = [(" ".join(c), p) for c in cmds if (p := parse_problem(c, capsys)) is not None]
    assert not bad, bad


def test_the_parse_check_can_fail(capsys):
    """Companion: a dropped option and an unknown verb are caught."""
    assert parse_problem(["run", "fw.elf", "--no-such-option"], capsys)
    assert parse_problem(["phone", "--frobnicate"], capsys)
    assert parse_problem(["test", "a.yaml"], capsys)           # --firmware is required
    assert parse_problem(["preview", "fw.elf"], capsys)        # --script or --scenario
    assert parse_problem(["powercut", "fw.elf"], capsys)       # --scenario is required
    assert parse_problem(["demo", "--no-such-option"], capsys)
    assert not runnable(["run", "firmware/build/none.elf", "--headless"])


def test_commands_on_our_firmware_run_as_typed(text, scratch):
    ran = []
    for argv in commands(text):
        if not runnable(argv):
            continue
        r = subprocess.run([sys.executable, "-m", "frontends.cli", *argv], cwd=scratch,
                           capture_output=True, text=True, timeout=240,
                           env={**os.environ, "PYTHONPATH": str(ROOT),
                                "XDG_DATA_HOME": str(scratch / "data")})
        assert r.returncode == 0, (argv, r.stdout[-2000:], r.stderr[-2000:])
        ran.append(argv[0])
    assert {"run", "info", "test", "preview", "world", "powercut"} <= set(ran), ran
    from emu.png import read_png
    assert read_png(str(scratch / "face.png")).shape == (240, 240, 3)
    assert read_png(str(scratch / "face.png")).max() > 0       # something was drawn
    assert "<testsuite" in (scratch / "out.xml").read_text()
    assert read_png(str(scratch / "preview" / "preview.png")).shape == (256, 3 * 248 + 8, 3)
    assert (scratch / "air.pcap").read_bytes()[:4] == bytes.fromhex("4d3cb2a1")


def test_python_tour_runs(text, scratch, monkeypatch):
    tours = [b for b in blocks(text, "python") if "firmware/build/" in b]
    assert tours
    monkeypatch.chdir(scratch)
    for code in tours:
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert (scratch / "face.png").exists() and (scratch / "booted.snap").exists()


def test_links_point_at_files_and_the_front_page_is_short():
    for doc in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.name}: broken link {target}"
    assert len(README.read_text().splitlines()) < 300
