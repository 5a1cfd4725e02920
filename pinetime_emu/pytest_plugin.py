"""The pytest plugin's entry point (``pytest11``: ``pinetime_emu``; or
``pytest -p pinetime_emu``): the hooks and the ``watch`` fixture of
frontends/pytest_plugin.py.

pytest loads every installed plugin in every session of the environment,
so this one steps aside, with one warning, when the project under test
has a package of its own named ``emu`` or ``frontends``: pinetime-emu
never shadows it (docs/setup.md, "Installed names").
"""
from pinetime_emu._names import NAMES, foreign

_TAKEN = {n: foreign(n) for n in NAMES}
_TAKEN = {n: where for n, where in _TAKEN.items() if where is not None}

if not _TAKEN:
    from frontends.pytest_plugin import *            # noqa: F401,F403  (hooks, fixtures)
else:
    def pytest_configure(config) -> None:
        import warnings
        names = ", ".join(f"{n!r} ({where})" for n, where in sorted(_TAKEN.items()))
        warnings.warn(f"pinetime-emu's pytest plugin is off: another package named {names} "
                      "is on sys.path, and the emulator's modules carry that name")
