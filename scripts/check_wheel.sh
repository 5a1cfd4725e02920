#!/usr/bin/env bash
# The package as a user installs it, checked outside the checkout:
#  1. `python -m build` makes the sdist and, from it, the wheel (the native
#     helpers must build: PINETIME_EMU_REQUIRE_NATIVE=1);
#  2. tests/test_wheel.py reads that wheel: its top level is pinetime_emu/
#     and pinetime_emu.pth only, and every file the program reads at run
#     time is in it;
#  3. the wheel goes into a fresh venv in a temporary folder, and from there
#     `pinetime-emu --version`, `doctor`, `demo --headless` (a screenshot,
#     no warning), the native helpers imported from the installed package,
#     the scenario runner, the web view's page and the pytest plugin work;
#  4. the sdist goes into another fresh venv with no C compiler (nor the
#     cross compiler) on PATH: it installs, the demo runs on the pure-Python
#     reference, and the first line of the run says so.
# Runs after the suite in scripts/test.sh (no arguments); alone after
# scripts/setup.sh.  PINETIME_EMU_WHEEL_KEEP=1 keeps the temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=$REPO/.venv/bin/python
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinetime-emu-wheel.XXXXXX")
[ -n "${PINETIME_EMU_WHEEL_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
say() { echo "check_wheel: $*"; }
fail() { echo "check_wheel: FAIL: $*" >&2; exit 1; }
unset PINETIME_EMU_PURE_PYTHON PINETIME_EMU_SAID_SLOW PYTHONPATH VIRTUAL_ENV

t0=$SECONDS
say "python -m build (sdist, then the wheel from it)"
PINETIME_EMU_REQUIRE_NATIVE=1 "$PY" -m build --outdir "$WORK/dist" >"$WORK/build.log" 2>&1 \
  || { tail -30 "$WORK/build.log"; fail "python -m build failed"; }
WHEEL=$(ls "$WORK"/dist/*.whl)
SDIST=$(ls "$WORK"/dist/*.tar.gz)
say "built $(basename "$WHEEL") and $(basename "$SDIST") in $((SECONDS - t0)) s"

PINETIME_EMU_WHEEL="$WHEEL" PINETIME_EMU_SDIST="$SDIST" "$PY" -m pytest -q \
  -p no:cacheprovider tests/test_wheel.py

# --- the wheel in a fresh venv, used from a folder outside the checkout ---
cd "$WORK"
"$PY" -c 'import sys; print(sys.base_prefix)' >/dev/null
BASE=$("$PY" -c 'import sys, os; print(os.path.join(sys.base_prefix, "bin", "python3"))')
"$BASE" -m venv venv
venv/bin/pip install -q "$WHEEL" pytest >pip.log 2>&1 \
  || { tail -20 pip.log; fail "pip install of the wheel failed"; }
export PATH="$WORK/venv/bin:$PATH"
[ "$(command -v pinetime-emu)" = "$WORK/venv/bin/pinetime-emu" ] || fail "no console script"
pinetime-emu --version
pinetime-emu --version | grep -Eq '^pinetime-emu [0-9][^ ]* \(commit [0-9a-f]{12}' \
  || fail "--version names no commit"
pinetime-emu doctor >doctor.txt || { cat doctor.txt; fail "doctor: the core does not work"; }
cat doctor.txt
grep -q '^ok    native helpers: loaded' doctor.txt || fail "doctor: native helpers not loaded"
pinetime-emu demo --headless --seconds 2 --screenshot demo.png 2>demo.err \
  || { cat demo.err; fail "demo --headless"; }
[ "$(head -c 8 demo.png | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] || fail "no demo.png"
! grep -q "pure-Python" demo.err || { cat demo.err; fail "the installed wheel runs slow"; }
venv/bin/python - <<'PY' || fail "the native helpers or the names of the installed package"
import os, sys
import pinetime_emu, emu, frontends
from emu.native_build import NATIVE_MODULES
from emu import native
here = os.path.dirname(pinetime_emu.__file__)
assert emu.__file__.startswith(here) and frontends.__file__.startswith(here), emu.__file__
import pinetime_emu.emu.machine, emu.machine
assert pinetime_emu.emu.machine is emu.machine       # one copy under both names
for name in NATIVE_MODULES:
    mod = native.load(name)
    assert mod is not None, (name, native.missing())
    assert mod.__file__.startswith(here), mod.__file__
from emu import Machine
print("check_wheel: native helpers from", here, ":", ", ".join(NATIVE_MODULES))
PY
FW=$(pinetime-emu demo --where)
case "$FW" in "$WORK"/venv/*) ;; *) fail "the demo image is not the package's: $FW" ;; esac
pinetime-emu test "$REPO/examples/scenarios/pinetime_demo.yaml" --firmware "$FW" \
  --junit junit.xml >scenario.txt || { cat scenario.txt; fail "the scenario runner"; }
# the web view: its page and static files, served from the package
PORT=$("$BASE" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pinetime-emu demo --web "$PORT" >web.log 2>&1 &
WEBPID=$!
venv/bin/python - "$PORT" <<'PY' || { kill "$WEBPID"; cat web.log; fail "the web view"; }
import sys, time, urllib.request
port = sys.argv[1]
for _ in range(100):
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
        break
    except OSError:
        time.sleep(0.1)
else:
    raise SystemExit("check_wheel: the web view never answered")
assert b"<html" in page.lower(), page[:200]
for name in ("app.js", "style.css"):
    assert urllib.request.urlopen(f"http://127.0.0.1:{port}/{name}", timeout=2).status == 200
print("check_wheel: the web view served its page, app.js and style.css")
PY
kill "$WEBPID"; wait "$WEBPID" 2>/dev/null || true
# the pytest plugin, by its entry point and by -p
mkdir plug && cat >plug/test_plugin.py <<'PY'
def test_watch_boots(watch):
    m = watch()
    m.run(ms=800)
    assert "pinetime demo running" in m.console_text()
PY
(cd plug && python -m pytest -q -p no:cacheprovider --pinetime-firmware "$FW" test_plugin.py) \
  || fail "the pytest plugin (entry point)"
(cd plug && PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider \
  -p pinetime_emu --pinetime-firmware "$FW" test_plugin.py) || fail "pytest -p pinetime_emu"

# --- the sdist with no C compiler: a pure-Python install that says so ---
cd "$WORK"
mkdir nocc
for f in /usr/bin/* /bin/*; do            # PATH without any C compiler
  n=$(basename "$f")
  case "$n" in cc|c89|c99|gcc|gcc-*|*-gcc|*-gcc-*|clang*|tcc|x86_64-linux-gnu-*|arm-none-eabi-*) continue ;; esac
  [ -e "nocc/$n" ] || ln -s "$f" "nocc/$n"
done
"$BASE" -m venv pure
env PATH="$WORK/pure/bin:$WORK/nocc" CC=/bin/false \
  pure/bin/pip install -q --no-cache-dir "$SDIST" >sdist.log 2>&1 \
  || { tail -30 sdist.log; fail "the sdist did not install without a C compiler"; }
env PATH="$WORK/pure/bin:$WORK/nocc" pure/bin/pinetime-emu demo --headless --seconds 1 \
  --screenshot pure.png 2>pure.err || { cat pure.err; fail "the pure-Python install's demo"; }
head -1 pure.err
head -1 pure.err | grep -q "native helpers missing.*pure-Python reference.*fix:" \
  || { cat pure.err; fail "the pure-Python install did not say so in its first line"; }
[ "$(grep -c 'native helpers missing' pure.err)" = 1 ] || fail "said more than once"
env PATH="$WORK/pure/bin:$WORK/nocc" pure/bin/pinetime-emu doctor >pure-doctor.txt \
  || { cat pure-doctor.txt; fail "doctor on the pure-Python install"; }
grep '^slow  native helpers' pure-doctor.txt || fail "doctor did not say the helpers are missing"
say "all checks passed in $((SECONDS - t0)) s"
