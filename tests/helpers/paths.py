"""Where things are, for tests at any depth under tests/ (a test's own
``Path(__file__).parent.parent`` is the repository only for a file directly
in tests/)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]      # the repository
FIRMWARE = ROOT / "firmware"                    # our test firmware's sources and Makefile
BUILD = FIRMWARE / "build"                      # what `make -C firmware` builds
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
