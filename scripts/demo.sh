#!/usr/bin/env bash
# Runs the emulator on our demo firmware: `pinetime-emu demo`, the command
# an installed package has (a window if there is a display, else 3 emulated
# seconds headless with a screenshot in demo.png).  Extra arguments go to
# `pinetime-emu demo` (--headless, --web [PORT], or any `run` option).
# scripts/setup.sh installs pinetime-emu into the project's venv: .venv/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/pinetime-emu demo "$@"
