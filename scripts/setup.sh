#!/usr/bin/env bash
# Installs everything pinetime-emu needs on a Debian-like machine:
# the ARM cross toolchain (to build firmware/), gdb-multiarch (debugger tests),
# Debian's micro:bit MicroPython firmware (second-board tests), Xvfb, and the
# Python package itself with its test extras.  Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi make gdb-multiarch firmware-microbit-micropython xvfb"

missing=""
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "setup: installing Debian packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

PY=${PYTHON:-python3}
if ! $PY -c "import emu.cpu._blockhook, unicorn, capstone, elftools, intelhex, pygame, pytest, pyocd" >/dev/null 2>&1 \
   || [ pyproject.toml -nt .setup-stamp ] || [ emu/cpu/_blockhook.c -nt .setup-stamp ]; then
  echo "setup: installing the Python package (pip install -e .[test])"
  $PY -m pip install -q --disable-pip-version-check -e ".[test]"
  touch .setup-stamp
fi
