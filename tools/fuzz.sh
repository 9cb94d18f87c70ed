#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer targets (tests/fuzz/) with clang and run each
# for SECONDS (default 60).
#
#   tools/fuzz.sh [SECONDS]
#
# Each target is built with -fsanitize=fuzzer,address,undefined and
# -fno-sanitize-recover=undefined (every UBSan report is fatal), and runs
# from a copy of its seed corpus (tests/fuzz/corpus/<target>/, which stays
# as it is) with -max_total_time=SECONDS, -timeout=1 (an input that takes
# more than a second is a hang) and leak detection on.  Any crash, leak,
# timeout or sanitizer report fails the script (exit 1), with the
# reproducer kept in $FUZZ_OUT (default build-fuzz/findings/).  A timeout is
# first run again on its own (three times): one that does not reproduce was
# the machine's load, not a hang, and the target goes on for the time left.  A summary
# line per target gives the executions run and the coverage reached (cov:
# and ft: from libFuzzer's last status line).
#
# Environment: CC (default clang), FUZZ_BUILD (default build-fuzz), FUZZ_OUT,
# FUZZ_TARGETS (default "spec env bench").
set -u
cd "$(dirname "$0")/.."
seconds=${1:-60}
case $seconds in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
build=${FUZZ_BUILD:-build-fuzz}
out=${FUZZ_OUT:-$build/findings}
targets=${FUZZ_TARGETS:-spec env bench}
cc=${CC:-clang}

if ! "$cc" --version 2>/dev/null | grep -q clang; then
    echo "fuzz.sh: CC=$cc is not clang (libFuzzer needs clang)" >&2
    exit 2
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$cc" \
    -DBATON_FUZZ=ON -DBATON_PEERS=OFF -DBATON_TESTS=OFF >/dev/null || exit 1
build_targets=()
for t in $targets; do build_targets+=("fuzz_$t"); done
cmake --build "$build" -j "$(nproc)" --target "${build_targets[@]}" || exit 1

mkdir -p "$out"
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Did libFuzzer stop on a timeout whose input runs in time when run again
# (three tries)?  Then the machine was busy, not the target: a real hang
# reproduces.
load_timeout() { # target log
    local t=$1 log=$2 artifact
    grep -q 'ERROR: libFuzzer: timeout' "$log" || return 1
    artifact=$(grep -oE "Test unit written to [^ ]+" "$log" | tail -n 1 | awk '{print $5}')
    [ -n "$artifact" ] && [ -f "$artifact" ] || return 1
    for _ in 1 2 3; do
        "$build/tests/fuzz/fuzz_$t" -timeout=1 "$artifact" >/dev/null 2>&1 || return 1
    done
    mv "$artifact" "$artifact.not-reproduced"
    return 0
}

status=0
summary=()
for t in $targets; do
    corpus=$build/corpus/$t
    rm -rf "$corpus"
    mkdir -p "$corpus"
    cp tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null
    echo "== fuzz_$t: ${seconds}s"
    start=$(date +%s)
    execs=0 segments=0 retried=0 rc=0
    log=$out/$t.log
    : >"$log"
    while :; do
        left=$((seconds - ($(date +%s) - start)))
        [ $left -ge 1 ] || break
        segments=$((segments + 1))
        seg=$out/$t.$segments.log
        # -close_fd_mask=3: the targets' own output (usage texts, messages)
        # is not wanted; libFuzzer and the sanitizers still report.
        "$build/tests/fuzz/fuzz_$t" -max_total_time="$left" -timeout=1 -detect_leaks=1 -rss_limit_mb=2048 \
            -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$out/$t-" "$corpus" >"$seg" 2>&1
        rc=$?
        cat "$seg" >>"$log"
        n=$(grep -E '^stat::number_of_executed_units' "$seg" | awk '{print $2}')
        execs=$((execs + ${n:-0}))
        last=$(grep -E '^#[0-9]+' "$seg" | tail -n 1)
        [ -n "$last" ] && lastline=$last
        [ $rc -eq 0 ] && break
        if load_timeout "$t" "$seg"; then
            retried=$((retried + 1))
            echo "   (a timeout that did not reproduce: the machine was busy; going on)"
            rc=0
            continue
        fi
        break
    done
    rm -f "$out/$t".[0-9]*.log
    elapsed=$(($(date +%s) - start))
    rate=$((execs / (elapsed > 0 ? elapsed : 1)))
    cov=$(echo "${lastline:-}" | grep -oE 'cov: [0-9]+' | awk '{print $2}')
    ft=$(echo "${lastline:-}" | grep -oE 'ft: [0-9]+' | awk '{print $2}')
    corp=$(echo "${lastline:-}" | grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' | awk '{print $2}')
    line=$(printf 'fuzz_%-6s %s  execs %s  exec/s %s  cov %s  ft %s  corpus %s%s' "$t" \
        "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "$execs" "$rate" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
        "$([ $retried -gt 0 ] && echo "  ($retried unreproduced timeouts)")")
    summary+=("$line")
    if [ $rc -ne 0 ]; then
        status=1
        echo "FAIL fuzz_$t (exit $rc): see $log; reproducers:" >&2
        ls "$out/$t-"* 2>/dev/null | grep -v not-reproduced >&2
        grep -E 'ERROR|SUMMARY|runtime error|Timeout|leak' "$log" | head -n 20 >&2
    fi
done
echo "== fuzz.sh: ${seconds}s per target, $(uname -m), $(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%s\n' "${summary[@]}"
exit $status
