"""Builds the native block hook (emu/cpu/_blockhook.c) at install time.

It needs only a host C compiler and the Python headers: the hook gets the
addresses of uc_emu_stop/uc_reg_read from the unicorn wheel at run time, so
nothing links against libunicorn.  If the build fails the package still
installs and falls back to the pure-Python cycle counter (same counts,
slower).
"""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as exc:  # pragma: no cover
            print(f"warning: native block hook not built ({exc}); using the Python fallback")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # pragma: no cover
            print(f"warning: native block hook not built ({exc}); using the Python fallback")


setup(
    ext_modules=[Extension("emu.cpu._blockhook", ["emu/cpu/_blockhook.c"],
                           extra_compile_args=["-O2"]),
                 Extension("emu.soc._mmio", ["emu/soc/_mmio.c"],       # MMIO fast path
                           depends=["emu/soc/_clock.h"],               # (the clock in C)
                           extra_compile_args=["-O2"])],
    cmdclass={"build_ext": OptionalBuildExt},
)
