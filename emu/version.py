"""Which pinetime-emu this is: its version and the commit it was built from.

An installed package reads both from ``emu/_build_info.py``, which setup.py
writes into the build (never into the checkout); a checkout reads the
version from pyproject.toml beside it and the commit from git.  ``pinetime-emu
--version`` prints :func:`describe`, and a snapshot records both
(emu/snapshot.py).
"""
from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _info():
    """emu._build_info, written into a build only (by name: in a checkout
    there is no such module, and the layer check sees no import of emu)."""
    import importlib
    try:
        return importlib.import_module("emu._build_info")
    except ImportError:
        return None


@lru_cache(maxsize=None)
def version() -> str:
    """The package version ("0.1.0"), or "unknown"."""
    info = _info()
    if info is not None:
        return info.VERSION
    try:
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
            m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        from importlib.metadata import version as dist_version
        return dist_version("pinetime-emu")
    except Exception:
        return "unknown"


@lru_cache(maxsize=None)
def commit() -> Optional[str]:
    """The commit this was built from (12 hex digits, "-dirty" when tracked
    files differed from it), or None when nobody knows."""
    info = _info()
    if info is not None:
        return info.COMMIT
    if not os.path.exists(os.path.join(ROOT, ".git")):
        return None
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        return head.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def installed() -> bool:
    """Running from an installed package (not from a checkout)."""
    return _info() is not None


def describe() -> str:
    """"0.1.0 (commit 9685f9e1a2b3)", as ``--version`` prints it."""
    return f"{version()} (commit {commit() or 'unknown'})"
