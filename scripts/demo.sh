#!/usr/bin/env bash
# Runs the emulator on the default firmware (the PineTime demo built from
# firmware/): a window if there is a display, else 3 emulated seconds headless
# with a screenshot in demo.png.  Extra arguments go to `pinetime-emu run`.
# scripts/setup.sh installs pinetime-emu into the project's venv: .venv/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
make -C firmware -s -j2
FW=firmware/build/pinetime_demo.elf
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec .venv/bin/pinetime-emu run "$FW" "$@"
else
  echo "demo: no display; running headless (see demo.png)"
  exec .venv/bin/pinetime-emu run "$FW" --headless --seconds 3 --screenshot demo.png "$@"
fi
