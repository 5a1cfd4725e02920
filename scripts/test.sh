#!/usr/bin/env bash
# The whole test suite: installs what it needs (scripts/setup.sh: Debian
# packages and the project's venv .venv/), builds firmware/, runs pytest in
# the venv.  Extra arguments go to pytest (e.g. scripts/test.sh -k gdb).
# The tests run on every core (pytest-xdist, -n auto: 154 s against 271 s
# on a 2-core machine); PYTEST_WORKERS=0 runs them in this one process.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
make -C firmware -s -j2
export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"   # as `. .venv/bin/activate`
exec .venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-auto}" "$@"
