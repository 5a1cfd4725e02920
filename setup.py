"""Builds pinetime-emu: its native helpers, its demo firmware, its names.

* The installed layout (docs/setup.md, "Installed names"): one top-level
  package, ``pinetime_emu``, with the source folders ``emu/`` and
  ``frontends/`` mapped into it, and ``pinetime_emu.pth``, which imports it
  at start-up so that ``emu`` and ``frontends`` resolve (pinetime_emu/_names.py).
* The native helpers (emu/native_build.py lists them) need only a host C
  compiler and the Python headers: nothing links against libunicorn.  If
  they cannot be built the package still installs and runs on the
  pure-Python reference (same cycles, frames and bytes, many times
  slower), and every run says so in its first line (emu/native.py);
  ``PINETIME_EMU_REQUIRE_NATIVE=1`` makes that a build failure instead
  (scripts/check_wheel.sh builds the wheel so).
* The demo firmware (firmware/tests/pinetime_demo.c) is built with
  ``make`` when arm-none-eabi-gcc is here and shipped as package data
  (frontends/data/pinetime_demo.elf in the installed tree); the sdist
  carries the sources and the built image, so that a machine without the
  cross compiler builds the same wheel.
* ``emu/_build_info.py`` (written into the build, never into the checkout)
  records the version and the commit (emu/version.py reads it).
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
_spec: dict = {}
with open(os.path.join(HERE, "emu", "native_build.py")) as f:
    exec(f.read(), _spec)
HEADERS = sorted(glob.glob("emu/*.h") + glob.glob("emu/*/*.h"))
TOP = "pinetime_emu"
FOLDERS = ("emu", "frontends")           # source folders, mapped to pinetime_emu.<folder>
DEMO = "firmware/build/pinetime_demo.elf"
DATA = "frontends/data"                   # where run-time data sits in the installed tree


def _say(msg: str) -> None:
    print(f"pinetime-emu build: {msg}", file=sys.stderr, flush=True)


class OptionalBuildExt(build_ext):
    """A helper that does not build is a warning (the pure-Python reference
    runs, and says so at run time), unless PINETIME_EMU_REQUIRE_NATIVE."""

    def _failed(self, what: str, exc: Exception) -> None:
        if os.environ.get("PINETIME_EMU_REQUIRE_NATIVE"):
            raise SystemExit(f"error: {what} not built ({exc}) and PINETIME_EMU_REQUIRE_NATIVE "
                             "is set")
        _say(f"WARNING: {what} not built ({exc}): this install runs on the pure-Python "
             "reference, many times slower (`pinetime-emu doctor` says how to fix it)")

    def run(self):
        try:
            super().run()
        except Exception as exc:  # pragma: no cover
            self._failed("the native helpers", exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # pragma: no cover
            self._failed(f"native helper {ext.name}", exc)


def _git_commit():
    """The checkout's commit (12 digits, '-dirty' when tracked files
    changed), or None outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", HERE, "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=20)
        if head.returncode != 0 or not os.path.exists(os.path.join(HERE, ".git")):
            return None
        dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=60).stdout.strip()
        return head.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _build_info(version: str, commit) -> str:
    return ('"""Written by setup.py when this package was built (emu/version.py reads it)."""\n'
            f"VERSION = {version!r}\nCOMMIT = {commit!r}\n")


def _demo_firmware() -> str:
    """firmware/build/pinetime_demo.elf, built with make when the cross
    compiler is here, else the one already built (the sdist carries it)."""
    path = os.path.join(HERE, DEMO)
    if shutil.which("arm-none-eabi-gcc") and shutil.which("make") \
            and os.path.isfile(os.path.join(HERE, "firmware", "Makefile")):
        r = subprocess.run(["make", "-C", os.path.join(HERE, "firmware"), "-s",
                            DEMO.split("/", 1)[1]], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("error: building the demo firmware failed:\n" + r.stdout + r.stderr)
    elif not os.path.isfile(path):
        raise SystemExit(f"error: {DEMO} is not built and arm-none-eabi-gcc is missing "
                         "(Debian: apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi "
                         "make); the wheel ships the demo firmware")
    else:
        _say(f"no arm-none-eabi-gcc: shipping the {DEMO} already built")
    return path


class BuildPy(build_py):
    """The packages, plus what the installed program reads at run time and
    the start-up hook (not in an editable install: a checkout has them)."""

    def run(self):
        # a build folder from before the one top-level package holds emu/ and
        # frontends/ at its top: bdist_wheel would ship them beside TOP
        import shutil
        for stale in ("emu", "frontends"):
            shutil.rmtree(os.path.join(self.build_lib, stale), ignore_errors=True)
        super().run()
        if getattr(self, "editable_mode", False):
            return
        data = os.path.join(self.build_lib, TOP, DATA)
        os.makedirs(data, exist_ok=True)
        shutil.copyfile(_demo_firmware(), os.path.join(data, "pinetime_demo.elf"))
        info = os.path.join(self.build_lib, TOP, "emu", "_build_info.py")
        commit = _git_commit()
        if commit is not None or not os.path.exists(info):     # an sdist brings its own
            with open(info, "w") as f:
                f.write(_build_info(self.distribution.get_version(), commit))
        with open(os.path.join(self.build_lib, f"{TOP}.pth"), "w") as f:
            f.write(f"import {TOP}\n")

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [
            os.path.join(self.build_lib, f"{TOP}.pth"),
            os.path.join(self.build_lib, TOP, DATA, "pinetime_demo.elf"),
            os.path.join(self.build_lib, TOP, "emu", "_build_info.py")]


class Sdist(sdist):
    """The sdist carries the demo firmware built (so that a machine without
    the cross compiler builds the same wheel) and the commit it came from."""

    def run(self):
        _demo_firmware()
        super().run()

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        with open(os.path.join(base_dir, "emu", "_build_info.py"), "w") as f:
            f.write(_build_info(self.distribution.get_version(), _git_commit()))


class _WithHook:
    """An editable install's strategy, plus the start-up hook the wheel has
    (so that `emu` and `frontends` import from any folder there too, and
    `python -m emu.worldproc`, which `world --processes` runs, finds them)."""

    def __init__(self, strategy):
        self.strategy = strategy

    def __enter__(self):
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc):
        return self.strategy.__exit__(*exc)

    def __call__(self, wheel, files, mapping):
        self.strategy(wheel, files, mapping)
        wheel.writestr(f"{TOP}.pth", f"import {TOP}\n")


class EditableWheel(editable_wheel):
    def _select_strategy(self, *args, **kw):
        return _WithHook(super()._select_strategy(*args, **kw))


def _packages() -> list:
    out = [TOP]
    for folder in FOLDERS:
        out += [f"{TOP}.{p}" for p in [folder] + find_packages(where=HERE, include=[f"{folder}.*"])]
    return out


# EMU_NATIVE_CFLAGS: flags after ours (the coverage test build's -O0: gcov's
# line counts are exact only without optimisation)
EXTRA = os.environ.get("EMU_NATIVE_CFLAGS", "").split()

setup(
    packages=_packages(),
    package_dir={TOP: TOP, **{f"{TOP}.{f}": f for f in FOLDERS}},
    package_data={f"{TOP}.frontends.web": ["static/*.html", "static/*.js", "static/*.css"]},
    ext_modules=[Extension(f"{TOP}.{name}", sources, depends=HEADERS,
                           extra_compile_args=list(_spec["CFLAGS"]) + EXTRA,
                           extra_link_args=list(_spec.get("LDFLAGS", [])))
                 for name, sources in _spec["NATIVE_MODULES"].items()],
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPy, "sdist": Sdist,
              "editable_wheel": EditableWheel},
)
