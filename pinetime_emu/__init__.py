"""pinetime-emu as installed: the one top-level package of the distribution.

The emulator's source folders, ``emu/`` (the machine) and ``frontends/``
(the ways in), sit inside this package when installed
(``pinetime_emu/emu``, ``pinetime_emu/frontends``) and beside it in a
checkout.  Their modules keep the names they have in the checkout
(``emu.machine``, ``frontends.cli``): snapshots, loggers, the native
registry and every ``from emu.x import y`` read those names.  Importing
this package installs the finder of :mod:`pinetime_emu._names`, which
serves ``emu`` and ``frontends`` from those folders when no other package
of those names is on ``sys.path`` (it never shadows one) and makes
``pinetime_emu.emu`` and ``pinetime_emu.frontends`` the very same module
objects (never two copies).  The wheel's ``pinetime_emu.pth`` imports this
package at interpreter start, so ``from emu import Machine`` works in an
installed environment as in a checkout.  Why: docs/setup.md, "Installed
names".

``from pinetime_emu import Machine`` (and the other names of ``emu``) works
too, loaded when first used.

PYTEST_DONT_REWRITE: imported at start-up by the .pth, before pytest could
rewrite it (and it holds no assertions).
"""
from pinetime_emu._names import install as _install

_install()

__all__ = ["Machine", "RunResult", "FirmwareError", "load_firmware", "World", "AirModel"]


def __getattr__(name: str):
    if name == "__version__":
        from emu.version import version
        return version()
    if name in __all__:
        import emu
        return getattr(emu, name)
    raise AttributeError(f"module 'pinetime_emu' has no attribute {name!r}")
