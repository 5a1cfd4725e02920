#!/usr/bin/env bash
# Installs everything pinetime-emu needs on a Debian-like machine:
# the ARM cross toolchain (to build firmware/), gdb-multiarch (debugger tests),
# tshark (the air's captures decoded as Wireshark decodes them),
# Debian's micro:bit MicroPython firmware (second-board tests), Xvfb, Chromium
# and its WebDriver (the web view's browser tests; optional: where they cannot
# be installed those tests skip, saying so), what a
# Python virtual environment with native extensions needs (python3-venv,
# python3-dev, gcc), and then the Python package itself with its test extras,
# installed editable into the project's own virtual environment .venv/ (never
# into the system interpreter, which Debian and Ubuntu refuse: PEP 668).
#
# The venv is made with $PYTHON if set, else with the python3 found on PATH.
# Safe to run repeatedly: it installs nothing when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi make
  gdb-multiarch tshark firmware-microbit-micropython xvfb
  python3 python3-venv python3-dev gcc libc6-dev ca-certificates git"
# wanted but not needed: a failure to install these is a warning (the web
# view's browser tests skip without them)
APT_OPTIONAL="chromium chromium-driver"
APT_LOCK_WAIT=600          # seconds to wait for another apt/dpkg (e.g. right after boot)
VENV=.venv

installed() {              # fully installed, not half-installed or config-files only
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]
}

apt_update() {             # apt-get update takes the lists lock, which
  local i err              # DPkg::Lock::Timeout does not cover: retry it
  for ((i = 0; i < APT_LOCK_WAIT / 10; i++)); do
    if err=$($SUDO apt-get -qq -o DPkg::Lock::Timeout=$APT_LOCK_WAIT update 2>&1 >/dev/null); then
      return 0
    fi
    case "$err" in
      *"Could not get lock"*|*"Unable to lock"*)
        [ "$i" = 0 ] && echo "setup: waiting for another apt to finish"
        sleep 10 ;;
      *) echo "$err" >&2; return 1 ;;
    esac
  done
  echo "$err" >&2
  return 1
}

if command -v dpkg-query >/dev/null 2>&1; then
  missing=""
  for p in $APT_PACKAGES; do
    installed "$p" || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    echo "setup: installing Debian packages:$missing"
    apt_update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      -o DPkg::Lock::Timeout=$APT_LOCK_WAIT $missing >/dev/null
  fi
  optional=""
  for p in $APT_OPTIONAL; do
    installed "$p" || optional="$optional $p"
  done
  # tried once: a machine that cannot have them is not asked again on every
  # run (remove .venv/.apt-optional-failed to try again)
  if [ -n "$optional" ] && [ ! -e "$VENV/.apt-optional-failed" ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    echo "setup: installing Debian packages (optional):$optional"
    if ! { { [ -n "${missing:-}" ] || apt_update; } &&
           DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
             -o DPkg::Lock::Timeout=$APT_LOCK_WAIT $optional >/dev/null; }; then
      echo "setup: warning: could not install$optional; the browser tests will skip" >&2
      mkdir -p "$VENV" && touch "$VENV/.apt-optional-failed"
    fi
  fi
else
  echo "setup: no dpkg here (not Debian-like); make sure these are installed:" \
       $APT_PACKAGES >&2
fi

# The interpreter the venv is made from: $PYTHON, else python3 on PATH.
PY=$(command -v "${PYTHON:-python3}" || true)
if [ -z "$PY" ]; then
  echo "setup: error: no ${PYTHON:-python3} on PATH (set PYTHON to a Python >= 3.10)" >&2
  exit 1
fi
want="$("$PY" -c 'import sys; print(sys.base_prefix, sys.version.split()[0])')"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.base-python" 2>/dev/null)" != "$want" ] \
   || ! "$VENV/bin/python" -c "" >/dev/null 2>&1; then
  echo "setup: creating the virtual environment $VENV ($want)"
  "$PY" -m venv --clear "$VENV"
  echo "$want" >"$VENV/.base-python"
  rm -f "$VENV/.setup-stamp"
fi

stale=""                   # the package's metadata or a C extension changed
for f in pyproject.toml setup.py MANIFEST.in emu/native_build.py emu/*.[ch] emu/*/*.[ch]; do
  if [ "$f" -nt "$VENV/.setup-stamp" ]; then stale=1; fi
done
if [ -n "$stale" ] || ! "$VENV/bin/python" -c "import emu._clock, emu.soc._mmio, emu.cpu._blockhook, \
emu.cpu._core, emu.peripherals._cores, unicorn, \
capstone, elftools, intelhex, pygame, cryptography, numpy, yaml, pytest, pytest_timeout, pyocd, bumble, \
matplotlib, websockets, selenium, build, pinetime_emu" \
   >/dev/null 2>&1; then
  echo "setup: installing the Python package into $VENV (pip install -e .[test])"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[test]"
  touch "$VENV/.setup-stamp"
fi
