"""Builds the native helpers (emu/native_build.py lists them) at install time.

They need only a host C compiler and the Python headers: nothing links
against libunicorn (Python hands the native code the addresses of the
engine's functions at run time).  If the build fails the package still
installs and runs on the pure-Python reference (same cycles, frames and
bytes, many times slower); emu/native.py then says so at every run.
"""
import glob
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
_spec: dict = {}
with open(os.path.join(HERE, "emu", "native_build.py")) as f:
    exec(f.read(), _spec)
HEADERS = sorted(glob.glob("emu/*.h") + glob.glob("emu/*/*.h"))


class OptionalBuildExt(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as exc:  # pragma: no cover
            print(f"warning: native helpers not built ({exc}); using the pure-Python reference")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # pragma: no cover
            print(f"warning: native helper {ext.name} not built ({exc}); "
                  "using the pure-Python reference")


# EMU_NATIVE_CFLAGS: flags after ours (the coverage test build's -O0: gcov's
# line counts are exact only without optimisation)
EXTRA = os.environ.get("EMU_NATIVE_CFLAGS", "").split()

setup(
    ext_modules=[Extension(name, sources, depends=HEADERS,
                           extra_compile_args=list(_spec["CFLAGS"]) + EXTRA,
                           extra_link_args=list(_spec.get("LDFLAGS", [])))
                 for name, sources in _spec["NATIVE_MODULES"].items()],
    cmdclass={"build_ext": OptionalBuildExt},
)
