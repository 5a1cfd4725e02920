#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds firmware/, runs pytest.
# Extra arguments go to pytest (e.g. scripts/test.sh -k gdb).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
make -C firmware -s -j2
exec ${PYTHON:-python3} -m pytest -q "$@"
