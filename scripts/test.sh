#!/usr/bin/env bash
# The whole test suite: installs what it needs (scripts/setup.sh: Debian
# packages and the project's venv .venv/), builds firmware/, runs pytest in
# the venv.  Extra arguments go to pytest (e.g. scripts/test.sh -k gdb).
# The tests run on every core (pytest-xdist, -n auto: 154 s against 271 s
# on a 2-core machine); PYTEST_WORKERS=0 runs them in this one process.
# Tests marked wallclock (a real wasptool session against an emulator paced
# to the host's clock) run alone afterwards: next to other tests on every
# core, the emulator falls behind the wall clock and the tool's timeouts.
# The whole suite (no arguments) ends with scripts/check_wheel.sh: the
# wheel and the sdist built, installed outside the checkout, and used.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
make -C firmware -s -j2
export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"   # as `. .venv/bin/activate`
.venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-auto}" -m "not wallclock" "$@"
status=0
.venv/bin/python -m pytest -q -m wallclock "$@" || status=$?
[ "$status" -eq 5 ] && status=0          # none selected (e.g. scripts/test.sh -k gdb)
if [ "$#" -eq 0 ] && [ "$status" -eq 0 ]; then
  bash scripts/check_wheel.sh || status=$?
fi
exit "$status"
