#!/bin/sh
# plot_paths.sh - `baton plot` outside the happy path:
#   nompl BATON FIXTURE WORK   a Python without matplotlib: exit 3, the
#                              command that installs it, and a report that
#                              says the figures are missing and why
#   installed BUILD VENV FIXTURE WORK
#                              installed into a scratch prefix, baton plot
#                              runs the installed script (skip, 77, when
#                              the plotting environment is missing)
set -u
fail() { echo "plot_paths: FAIL: $*" >&2; exit 1; }

case "$1" in
nompl)
  baton=$2 fixture=$3 work=$4
  rm -rf "$work"; mkdir -p "$work/fake/matplotlib"
  # A matplotlib that cannot be imported, whatever this machine has.
  echo 'raise ImportError("hidden by the test")' >"$work/fake/matplotlib/__init__.py"
  PYTHONPATH="$work/fake" BATON_PYTHON=python3 "$baton" plot "$fixture" -o "$work/out" \
    --report "$work/report.html" 2>"$work/err"
  rc=$?
  cat "$work/err" >&2
  [ "$rc" -eq 3 ] || fail "exit $rc, not 3"
  grep -q "matplotlib cannot be imported" "$work/err" || fail "no reason on stderr"
  grep -q "Install it with: .*plot-deps.sh" "$work/err" || fail "no install command on stderr"
  grep -q "Figures are missing" "$work/report.html" || fail "the report does not say so"
  grep -q "hidden by the test" "$work/report.html" || fail "the report does not say why"
  # And with no Python at all: exit 127 and what to install.
  BATON_PYTHON="$work/no-such-python" "$baton" plot "$fixture" -o "$work/out" 2>"$work/err"
  rc=$?
  [ "$rc" -eq 127 ] || fail "no Python: exit $rc, not 127"
  grep -q "install python3" "$work/err" || fail "no Python: no advice"
  echo "plot_paths nompl: ok"
  ;;
installed)
  build=$2 venv=$3 fixture=$4 work=$5
  [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c 'import matplotlib' 2>/dev/null ||
    { echo "plot_paths: skipped: no plotting environment in $venv" >&2; exit 77; }
  rm -rf "$work"
  cmake --install "$build" --prefix "$work/prefix" >/dev/null || fail "install failed"
  BATON_PYTHON="$venv/bin/python3" "$work/prefix/bin/baton" plot "$fixture" -o "$work/out" \
    --report-json "$work/drawn.json" || fail "installed baton plot failed"
  grep -q "\"plotter\": \"$work/prefix/share/baton/plot/baton_plot.py\"" "$work/drawn.json" ||
    fail "not the installed script: $(grep plotter "$work/drawn.json")"
  [ -x "$work/prefix/share/baton/plot/plot-deps.sh" ] || fail "plot-deps.sh not installed"
  [ -f "$work/prefix/share/baton/plot/requirements.txt" ] || fail "requirements.txt not installed"
  # Without BATON_PYTHON the installed baton names the per-user environment.
  HOME="$work/home" XDG_DATA_HOME= PATH=/nonexistent "$work/prefix/bin/baton" plot "$fixture" \
    -o "$work/out2" 2>"$work/err"
  grep -q "$work/prefix/share/baton/plot/plot-deps.sh $work/home/.local/share/baton/plot-venv" \
    "$work/err" || { cat "$work/err" >&2; fail "no install command for the installed baton"; }
  echo "plot_paths installed: ok"
  ;;
*) fail "usage: plot_paths.sh nompl|installed ..." ;;
esac
