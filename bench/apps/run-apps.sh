#!/usr/bin/env bash
# The real-application benchmarks (what `baton bench apps` runs): memcached
# under memcaslap, Kyoto Cabinet's kccachetest wicked, and the OpenMP lock
# program, each stock vs the interposer.
#
#   run-apps.sh [--quick] [--only memcached|kccache|omp[,...]] [--repeat R]
#               [--out DIR] [-- ARGS for the script(s)]
#
# --quick: short runs for smoke testing (memcached 2 s at -t 2 and 8,
#   kccachetest 10000 records, omp_locks 20000 iterations; one round unless
#   --repeat is given).  Full run: about 25 min on 2 CPUs (memcached 20 min).
# --out DIR (default results/apps): tables' CSVs and every run's logs.
# The interposer: $BATON_PRELOAD_LIB, else ${BUILD:-build}/src/preload/.
# Exits non-zero when any benchmark failed (each one still runs).
# shellcheck disable=SC2154  # arrays filled by split_list/split_specs (namerefs)
set -euo pipefail
PROG=run-apps.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

quick=0
only=memcached,kccache,omp
repeat=""
out=$REPO_ROOT/results/apps
extra=()
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1; shift ;;
        --only) only=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) print_header; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
split_list which "$only"
for w in "${which[@]}"; do
    case $w in memcached|kccache|omp) ;; *) die "--only: unknown benchmark '$w' (memcached, kccache, omp)" ;; esac
done
[ -z "$repeat" ] || [[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive integer, not '$repeat'"
[ -z "$repeat" ] && [ $quick -eq 1 ] && repeat=1
rep=()
[ -n "$repeat" ] && rep=(--repeat "$repeat")

find_preload   # fail early, with the message, when there is no interposer
export BATON_PRELOAD_LIB=$PRELOAD BUILD=$BUILD_DIR
mkdir -p "$out"
note "interposer $PRELOAD; results in $out; $(load_note)"
if [ -n "${BATON_BIN:-}" ] && [ -x "$BATON_BIN" ]; then
    note "$("$BATON_BIN" version 2>/dev/null || true)"
fi

failed=()
for w in "${which[@]}"; do
    args=(--out "$out" "${rep[@]}")
    if [ $quick -eq 1 ]; then
        case $w in
            memcached) args+=(--seconds 2) ;;
            kccache) args+=(--rnum 10000) ;;
            omp) args+=(--iters 20000) ;;
        esac
    fi
    echo "=== $w"
    "$APPS_DIR/$w.sh" "${args[@]}" "${extra[@]}" || failed+=("$w")
done
if [ ${#failed[@]} -gt 0 ]; then
    die "failed: ${failed[*]} (see the messages above and the logs in $out/logs)"
fi
note "all done"
