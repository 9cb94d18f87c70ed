#!/usr/bin/env bash
# plot-deps.sh - install what `baton plot` needs (matplotlib, pinned in
# tools/plot/requirements.txt) into a Python virtual environment.  The C
# library and the baton command need none of it.
#
#   tools/plot-deps.sh [VENV]     default VENV: build/plot-venv
#
# Nothing happens when VENV already holds exactly these requirements (a
# stamp inside it records them), so no network is needed after the first
# run.  When the environment cannot be made (no python3, no venv module, no
# network), it exits 1 and leaves the reason in VENV.why, which `baton plot
# --report` quotes in the report; success removes that file.  On Debian and
# Ubuntu the missing python3 and python3-venv are installed with apt.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Installed, this script sits beside requirements.txt; in the source tree,
# one level up from it.
req="$here/plot/requirements.txt"
[[ -f "$req" ]] || req="$here/requirements.txt"
venv="${1:-build/plot-venv}"
why="$venv.why"
python="${BATON_PLOT_BASE_PYTHON:-python3}"

fail() {
  mkdir -p "$(dirname "$venv")"
  printf '%s\n' "$*" >"$why"
  echo "plot-deps.sh: $*" >&2
  exit 1
}

[[ -f "$req" ]] || fail "cannot find requirements.txt beside $0"
stamp="$venv/.baton-requirements"
if [[ -x "$venv/bin/python3" && -f "$stamp" ]] && cmp -s "$req" "$stamp" &&
   "$venv/bin/python3" -c 'import matplotlib' 2>/dev/null; then
  rm -f "$why"
  exit 0
fi

# python3 and its venv module: from apt where they are missing (as
# tools/deps.sh installs the build tools).
if ! command -v "$python" >/dev/null || ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  if [[ "$python" == python3 ]] && command -v apt-get >/dev/null; then
    sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
    echo "plot-deps.sh: installing python3 and python3-venv" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        python3 python3-venv >/dev/null; } 2>&1 | tail -5 >&2
  fi
  command -v "$python" >/dev/null ||
    fail "no $python to make the virtual environment with (install python3)"
  "$python" -c 'import venv, ensurepip' 2>/dev/null ||
    fail "$python has no venv module with ensurepip (install python3-venv)"
fi

mkdir -p "$(dirname "$venv")"
# One installer at a time per environment (ctest runs tests in parallel).
exec 9>"$venv.lock"
flock 9

# Another run may have finished it while this one waited.
if [[ -x "$venv/bin/python3" && -f "$stamp" ]] && cmp -s "$req" "$stamp" &&
   "$venv/bin/python3" -c 'import matplotlib' 2>/dev/null; then
  rm -f "$why"
  exit 0
fi

echo "plot-deps.sh: making $venv (matplotlib, pinned in $req)" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
rm -rf "$venv"
if ! "$python" -m venv "$venv" >"$log" 2>&1; then
  fail "$python -m venv $venv failed: $(tail -3 "$log" | tr '\n' ' ')"
fi
if ! "$venv/bin/python3" -m pip install --disable-pip-version-check --no-input -q \
     --only-binary :all: -r "$req" >"$log" 2>&1; then
  rm -rf "$venv"
  fail "pip could not install the plotting requirements (is PyPI reachable?):" \
    "$(tail -3 "$log" | tr '\n' ' ')"
fi
if ! "$venv/bin/python3" -c 'import matplotlib; matplotlib.use("Agg"); import matplotlib.pyplot' \
     >"$log" 2>&1; then
  rm -rf "$venv"
  fail "matplotlib does not import after installing: $(tail -3 "$log" | tr '\n' ' ')"
fi
cp "$req" "$stamp"
rm -f "$why"
echo "plot-deps.sh: $venv ready" >&2
