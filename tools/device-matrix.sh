#!/usr/bin/env bash
# device-matrix.sh - the many-core matrix in one command (issue 18): what a
# session runs first when it is lent the 16-core device machine (see
# CONTRIBUTING.md, "When the 16-core device is lent").
#
#   tools/device-matrix.sh [--out DIR] [--budget SEC] [--only STEPS] [--skip STEPS]
#   tools/device-matrix.sh --small [--out DIR]   the same matrix at 2 threads, about a minute
#   tools/device-matrix.sh --prepare [BUNDLE]    build the carried bundle here (default
#                                                build-device; tools/device-bundle.sh)
#   tools/device-matrix.sh --dry-run [--small]   print the plan and its estimate, run nothing
#
# Steps, in order (P = nproc: 16 on the device; --small: every thread count 2,
# runs of 0.05 s, one round):
#   info     baton info (info.txt, info.json)
#   matrix   bench matrix --quick (its threads are 2 and 16 whatever P is),
#            --time-box set from what is left; --small: --smoke
#   rcl      the RCL figure: bench micro --via execute, P-1 clients, S in
#            {1,5,10,20}: rcl (one server thread), qd, mcs:spinpark, default,
#            pthread and the best peers of the earlier device run (absl,
#            ck_mcs, tbb_spin)
#   pq       bench pq, threads 1,2,4,8,P,2P, L in {0,128}: qd, hqd, fc,
#            ccsynch, default, peer:absl
#   rw       bench rw, threads 2,8,P, reads 50,80,95,99%, L=0: its default
#            locks and rw(default),prefer_readers
#   server   bench server --threads 1,2,4,8,P-1 --interval-cycles 200,
#            workloads counter and imbalanced: the five server designs under
#            :spinpark and under :park, default, mcs:spinpark, pthread
#   barrier  bench barrier, N = 2..P and 2P, W in {0, 1000 ns}, kinds and peers
#   omp      bench/apps/omp.sh at P threads (lock and critical; stock against
#            the interposer); skipped, with the reason, without omp_locks or
#            libgomp
#   wake     bench wake (every policy the CPU has, with and without every CPU
#            busy; --small: d = 10 us and 1 ms, 20 samples, not busy)
#
# Time.  --budget (default 540 s, 9 minutes; --small 150) covers everything
# from the start, a build included.  Each piece (one bench invocation: one
# thread count, one S, ...) has an estimate, scaled by the rate the pieces
# before it ran at (when slower).  While the budget holds the shortest form
# (one round; the matrix's shortest box) of every later piece, a piece may use
# the rest: all its rounds, or fewer.  Where it does not, pieces are thinned
# out in proportion across the steps (with half the time needed, every other
# piece runs, in its shortest form).  A piece is killed (timeout) at twice its
# estimate plus 10 s (--small, where the point is that everything runs: four
# times plus 30 s), or sooner where later pieces need the time.  What was
# shortened, killed ("cut") or skipped is printed as it happens and listed in
# the summary.  A killed piece loses its JSON (its text is kept up to the
# kill); a collapsing lock is not killed by this script: the benches cut it
# off themselves (2 x duration + 2 s).
#
# Binaries, first found: --bundle DIR; --build DIR (a build tree, used as it
# is when it holds src/cli/baton, else built); build-device/ when it holds
# bin/baton; else the Release tree build-release/, built with cmake here
# (peers only where their libraries are installed).  A bundle built from
# other sources than this tree is used, with a warning in the summary.
#
# Output (--out, default docs/data/device16/<UTC date>/, with --small
# results/device-small/<UTC date>/; it must not exist, or pass --replace):
#   info.txt, info.json       the machine
#   <step>.txt, <step>.json   each bench's printed tables, and its JSON (the
#                             pieces' results merged; matrix.json as the bench
#                             writes it); omp/ holds omp.sh's CSVs
#   steps.tsv                 every piece: status, rounds, estimate, limit,
#                             wall time, exit code, note, command
#   summary.md, summary.txt   tables per step (tools/device_summary.py; needs
#                             python3, else steps only and the pieces' JSON
#                             stay in parts/)
#   run.txt                   what this script printed; binaries.txt: which
#
# Exit: 0 when every piece ran and verified (shortened or skipped pieces
# included: they are listed), 1 when a bench failed verification, crashed or
# was killed, 2 on a usage error or when refusing: without --small it refuses
# fewer than 8 CPUs (DEVICE_MATRIX_NPROC overrides nproc, for tests).
# --inject-fault passes --inject-fault to every bench that takes it (the
# script must then exit 1).
set -euo pipefail
export LC_ALL=C
PROG=device-matrix.sh
TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TOOLS/.." && pwd)

die() { echo "$PROG: error: $*" >&2; exit 2; }
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }

ALL_STEPS="info matrix rcl pq rw server barrier omp wake"
MIN_CPUS=8
RUN_OVERHEAD_MS=60  # fork, set-up and thread start of one bench run (a guess; steps.tsv shows
                    # the estimates beside the wall times)

ARGS=("$@")
small=0 dry=0 fault=0 replace=0
out="" budget="" bundle="" build="" only="" skip=""
while [ $# -gt 0 ]; do
    case $1 in
        --small) small=1; shift ;;
        --out) out=${2:?--out wants a folder}; shift 2 ;;
        --budget) budget=${2:?--budget wants seconds}; shift 2 ;;
        --bundle) bundle=${2:?--bundle wants a folder}; shift 2 ;;
        --build) build=${2:?--build wants a folder}; shift 2 ;;
        --only) only=${2//,/ }; shift 2 ;;
        --skip) skip=${2//,/ }; shift 2 ;;
        --replace) replace=1; shift ;;
        --dry-run) dry=1; shift ;;
        --inject-fault) fault=1; shift ;;
        --prepare) shift; exec bash "$TOOLS/device-bundle.sh" "$@" ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
for s in $only $skip; do
    [[ " $ALL_STEPS " == *" $s "* ]] || die "unknown step '$s'; the steps: $ALL_STEPS"
done
if [ -z "$budget" ]; then
    budget=540; [ $small -eq 1 ] && budget=150
fi
[[ $budget =~ ^[1-9][0-9]*$ ]] || die "--budget wants whole seconds, not '$budget'"

NCPU=${DEVICE_MATRIX_NPROC:-$(nproc)}
if [ $small -eq 0 ] && [ "$NCPU" -lt $MIN_CPUS ] && [ $dry -eq 0 ]; then
    echo "$PROG: this machine has $NCPU CPUs; the many-core matrix wants at least $MIN_CPUS." >&2
    echo "$PROG: nothing was run.  On a small machine run 'tools/device-matrix.sh --small'" >&2
    echo "$PROG: (the same matrix at 2 threads, about a minute)." >&2
    exit 2
fi

# --- the plan ------------------------------------------------------------------------

# Thread counts and run lengths.  P is nproc; --small puts 2 everywhere.
P=$NCPU
if [ $small -eq 1 ]; then
    D=0.05 R=1 D_RW=0.05 D_SRV=0.05
    T_RCL=2 T_PQ=2 T_RW=2 T_SRV=2 T_OMP=2 N_BAR="2"
    OMP_ITERS=20000 WAKE_ARGS=(--delays "10us,1ms" --samples 20 --oversubscribed off)
    MATRIX_ARGS=(--smoke) MATRIX_EST=40 MATRIX_MIN=10 BOX_MARGIN_MS=5000
    KILL_FACTOR=4 KILL_SLACK_MS=30000
else
    D=0.2 R=3 D_RW=0.1 D_SRV=0.1
    T_RCL=$((P - 1))
    T_PQ=$(printf '%s\n' 1 2 4 8 "$P" $((2 * P)) | sort -nu | paste -sd,)
    T_RW=$(printf '%s\n' 2 8 "$P" | sort -nu | paste -sd,)
    T_SRV=$(printf '%s\n' 1 2 4 8 $((P - 1)) | sort -nu | paste -sd,)
    T_OMP=$P
    N_BAR="$(seq -s ' ' 2 "$P") $((2 * P))"
    OMP_ITERS=100000 WAKE_ARGS=()
    # --quick with its duels: 28 cells, each a first pass (one round of 14
    # locks) and a duel (5 rounds of 3 locks), 0.3 s runs
    MATRIX_ARGS=(--quick) MATRIX_EST=290 MATRIX_MIN=60 BOX_MARGIN_MS=30000
    KILL_FACTOR=2 KILL_SLACK_MS=10000
fi
RCL_LOCKS="rcl,qd,mcs:spinpark,default,pthread,peer:absl,peer:ck_mcs,peer:tbb_spin"
PQ_LOCKS="qd,hqd,fc,ccsynch,default,peer:absl"
RW_LOCKS="mrqd,rw(mcs),rw(relay),rw(default),prefer_readers,pthread,peer:pthread_rwlock,peer:absl_mutex_rw,peer:tbb_spin_rw,peer:ck_rwlock"
SRV_LOCKS=""
for pol in spinpark park; do
    SRV_LOCKS+="server:$pol,server:$pol,chain,server:$pol,hier,server:$pol,hier,chain,server:$pol,keep_us=100,"
done
SRV_LOCKS+="default,mcs:spinpark,pthread"
OMP_LOCKS="default,mcs:spinpark,ttas,ticket:spinpark,qd"

# shellcheck disable=SC2086  # split on the commas
count() { local IFS=,; set -- $1; echo $#; }        # items of a comma list
nspecs() { # specs in a --locks list (the commas inside a spec are options)
    local x=${1//,prefer_readers/+}
    x=${x//,chain/+}; x=${x//,hier/+}; x=${x//,keep_us=/+}
    count "$x"
}
ms_of() { awk -v s="$1" 'BEGIN { printf "%d", s * 1000 + 0.5 }'; }
secs() { awk -v m="$1" 'BEGIN { printf "%.1f", m / 1000 }'; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
# run_ms RUNS DURATION: the estimate of RUNS bench runs of DURATION s
run_ms() { echo $(($1 * ($(ms_of "$2") + RUN_OVERHEAD_MS))); }

want() { # want STEP: selected by --only/--skip
    { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; } && [[ " $skip " != *" $1 "* ]]
}

# --- pieces: plan, then run ------------------------------------------------------------
#
# piece STEP NAME EST_MS ROUNDS -- CMD...
#   ROUNDS > 0: EST_MS is one round's; CMD gets --repeat R, R <= ROUNDS
#   ROUNDS = 0: EST_MS is the whole piece's, it runs whole or not at all
#   ROUNDS = box: CMD holds @BOX_MIN@, replaced by a time box in minutes
#                 between the step's minimum and EST_MS
# MODE=plan adds up each step's full and minimal estimates; MODE=run runs.

declare -A EST_FULL EST_MIN
MODE=plan
STEP_ORDER=()
FAILED=0
CUT=0

piece() {
    local step=$1 name=$2 est=$3 rounds=$4; shift 5
    local full=$est min=$est
    if [ "$rounds" = box ]; then
        min=$((MIN_BOX_S * 1000))
    elif [ "$rounds" -gt 0 ]; then
        full=$((est * rounds))
    fi
    if [ $MODE = plan ]; then
        EST_FULL[$step]=$((${EST_FULL[$step]:-0} + full))
        EST_MIN[$step]=$((${EST_MIN[$step]:-0} + min))
        [ $dry -eq 1 ] && printf '  %-8s %-14s %6s s  %s\n' "$step" "$name" "$(secs "$full")" "$*"
        return 0
    fi
    run_piece "$step" "$name" "$est" "$rounds" "$full" "$min" "$@"
}

log() { echo "[$(printf '%5s' "$(secs $(($(now_ms) - T0)))") s] $*" | tee -a "$OUT/run.txt" >&2; }

# The time box of one piece.  Where what is left of the budget holds the
# shortest form of every later piece (LATER_MIN, STEP_MIN_LEFT), the piece may
# use the rest: its full form, or fewer rounds, or a shorter matrix box.
# Where it does not, the pieces are thinned out in proportion, across every
# step alike: each earns left / (what the rest needs) of its shortest form,
# and runs, in that form, when its earnings reach it (so with half the time
# needed, every other piece runs).  Once pieces have run, every estimate but
# the matrix's own box is scaled by the rate they ran at (wall time over
# estimate, when above 1), so that a slow machine costs rounds early rather
# than whole steps late.
RATE_PM=1000 SUM_EST=0 SUM_WALL=0 CREDIT=-1
scaled() { echo $(($1 * RATE_PM / 1000)); }

run_piece() {
    local step=$1 name=$2 est=$3 rounds=$4 full=$5 min=$6; shift 6
    local cmd=("$@") left later avail cap lowest use=$rounds limit note="" status rc=0 t1 wall
    local planned=$est
    STEP_MIN_LEFT=$((STEP_MIN_LEFT - min))
    if [ "$rounds" != box ]; then
        est=$(scaled "$est") full=$(scaled "$full") min=$(scaled "$min")
    fi
    lowest=$min
    [ "$rounds" = box ] && lowest=$((min + BOX_MARGIN_MS))
    left=$((DEADLINE - $(now_ms)))
    later=$(scaled $((STEP_MIN_LEFT + LATER_MIN)))
    avail=$((left - later)) cap=$((left - later))
    if ((avail < lowest)); then
        local share=$((left * 1000 / (lowest + later)))
        if ((CREDIT < 0)); then
            CREDIT=$((lowest / 2))
            log "the budget no longer holds the shortest form of every piece ($(secs "$left") s left, $(secs $((lowest + later))) s needed): from $step $name on, pieces are thinned out in proportion"
        fi
        CREDIT=$((CREDIT + lowest * share / 1000))
        if ((CREDIT < lowest || left < lowest)); then
            record "$step" "$name" skipped 0 "$full" 0 0 - \
                "time box: thinned out ($(secs "$left") s left of the budget for $(secs $((lowest + later))) s of shortest forms)" "${cmd[*]}"
            return 0
        fi
        CREDIT=$((CREDIT - lowest))
        avail=$lowest cap=$left
    fi
    if [ "$rounds" = box ]; then
        local box=$full i boxmin
        ((avail - BOX_MARGIN_MS < box)) && box=$((avail - BOX_MARGIN_MS))
        ((box < full)) && note="time box $(secs "$box") s instead of $(secs "$full") s"
        boxmin=$(awk -v m="$box" 'BEGIN { printf "%.2f", m / 60000 }')
        for i in "${!cmd[@]}"; do [ "${cmd[$i]}" = @BOX_MIN@ ] && cmd[i]=$boxmin; done
        full=$box
        limit=$((box + 2 * BOX_MARGIN_MS))  # the matrix checks its box between cells
    elif [ "$rounds" -gt 0 ]; then
        while ((use * est > avail)); do use=$((use - 1)); done
        ((use < rounds)) && note="$use of $rounds rounds"
        full=$((use * est))
        cmd+=(--repeat "$use")
        limit=$((KILL_FACTOR * full + KILL_SLACK_MS))
    else
        limit=$((KILL_FACTOR * full + KILL_SLACK_MS))
    fi
    ((limit > cap)) && limit=$cap
    [ -n "$note" ] && log "$step $name: shortened: $note"
    local txt=$OUT/$step.txt
    printf '### %s %s: %s\n' "$step" "$name" "${cmd[*]}" >>"$txt"
    t1=$(now_ms)
    timeout -k 5 "$(secs "$limit")" "${cmd[@]}" >>"$txt" 2>&1 || rc=$?
    wall=$(($(now_ms) - t1))
    case $rc in
        0) status=ok ;;
        124|137) status="cut"; CUT=$((CUT + 1)); note="${note:+$note; }killed at its limit of $(secs "$limit") s" ;;
        *) status=FAIL; FAILED=$((FAILED + 1))
           note="${note:+$note; }exit $rc: $(why_failed "$txt")" ;;
    esac
    [ -n "$note" ] && [ "$status" = ok ] && status=shortened
    record "$step" "$name" "$status" "$use" "$full" "$limit" "$wall" "$rc" "$note" "${cmd[*]}"
    # the rate: bench runs only (info's measurements and the fixed pieces are not runs)
    if [[ $rounds =~ ^[1-9] ]] && [ "$status" != FAIL ]; then
        SUM_EST=$((SUM_EST + planned * use)) SUM_WALL=$((SUM_WALL + wall))
        local rate=$((SUM_WALL * 1000 / SUM_EST))
        ((rate < 1000)) && rate=1000
        if ((SUM_EST >= 5000 && (rate > RATE_PM * 11 / 10 || rate < RATE_PM * 9 / 10))); then
            RATE_PM=$rate
            log "pieces have run at $(awk -v r="$rate" 'BEGIN { printf "%.2f", r / 1000 }') x their estimates so far: the rest is planned at that rate"
        fi
    fi
}

# why_failed TXT: how many runs of the piece last appended to TXT failed, and the first
# (the second field of a bench's table line is the lock; wake's lines start with d)
why_failed() {
    awk '/^### / { n = 0; first = ""; other = "" }
         /VERIFY-FAILED|CRASHED/ { who = $2 ~ /^(ns|us|ms|s)$/ ? $1 " " $2 " " $3 : $2   # wake: d, policy
                                   if (!n++) first = who ": " substr($0, match($0, /VERIFY-FAILED|CRASHED/)) }
         /[Ee]rror|FAIL/ && !/VERIFY-FAILED|CRASHED/ && other == "" { other = $0 }
         END { if (n) printf "%d run(s) failed; first: %s", n, substr(first, 1, 160)
               else printf "%s", substr(other, 1, 200) }' "$1"
}

record() { # record STEP NAME STATUS ROUNDS EST_MS LIMIT_MS WALL_MS RC NOTE CMD
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$(secs "$5")" \
        "$(secs "$6")" "$(secs "$7")" "$8" "$9" "${10//$'\t'/ }" >>"$OUT/steps.tsv"
    local msg="$1 $2: $3"
    [ "$3" = skipped ] || msg+=" ($(secs "$7") s, estimate $(secs "$5") s)"
    [ -n "$9" ] && msg+=": $9"
    log "$msg"
}

# --- the steps ----------------------------------------------------------------------------

FAULT=()
json() { echo "$OUT/parts/$1.json"; }

step_info() {
    piece info info 10000 0 -- "$BATON" info --json "$OUT/info.json"
}

step_matrix() {
    MIN_BOX_S=$MATRIX_MIN
    piece matrix "${MATRIX_ARGS[0]#--}" $((MATRIX_EST * 1000)) box -- "$BATON" bench matrix \
        "${MATRIX_ARGS[@]}" --time-box @BOX_MIN@ --json "$(json matrix)" "${FAULT[@]}"
}

step_rcl() {
    local s n
    n=$(nspecs "$RCL_LOCKS")
    for s in 1 5 10 20; do
        piece rcl "S=$s" "$(run_ms "$n" $D)" $R -- "$BATON" bench micro --via execute \
            --locks "$RCL_LOCKS" --threads "$T_RCL" --shared-lines $s --private-lines 0 \
            --duration $D --json "$(json "rcl_S$s")" "${FAULT[@]}"
    done
}

step_pq() {
    local t n
    n=$(($(nspecs "$PQ_LOCKS") * 2))
    for t in ${T_PQ//,/ }; do
        piece pq "t=$t" "$(run_ms "$n" $D)" $R -- "$BATON" bench pq --locks "$PQ_LOCKS" \
            --threads "$t" --local-work 0,128 --duration $D --json "$(json "pq_t$t")" "${FAULT[@]}"
    done
}

step_rw() {
    local t n
    n=$(($(nspecs "$RW_LOCKS") * 4))
    for t in ${T_RW//,/ }; do
        piece rw "t=$t" "$(run_ms "$n" $D_RW)" $R -- "$BATON" bench rw --locks "$RW_LOCKS" \
            --threads "$t" --reads 50,80,95,99 --local-work 0 --duration $D_RW \
            --json "$(json "rw_t$t")" "${FAULT[@]}"
    done
}

step_server() {
    local t n
    n=$(($(nspecs "$SRV_LOCKS") * 2))
    for t in ${T_SRV//,/ }; do
        piece server "t=$t" "$(run_ms "$n" $D_SRV)" $R -- "$BATON" bench server \
            --locks "$SRV_LOCKS" --threads "$t" --interval-cycles 200 \
            --workloads counter,imbalanced --duration $D_SRV --json "$(json "server_t$t")" "${FAULT[@]}"
    done
}

step_barrier() {
    local n box=0.1 episodes=20000
    [ $small -eq 1 ] && box=0.05
    [ $fault -eq 1 ] && episodes=1000  # --inject-fault turns the bench's time box off
    for n in $N_BAR; do
        # about 10 barriers x 2 values of W, each cell cut at the box
        piece barrier "N=$n" $((20 * ($(ms_of $box) + 50))) 0 -- "$BATON" bench barrier \
            --barriers kinds,peers --threads "$n" --work-ns 0,1000 --episodes $episodes \
            --time-box $box --json "$(json "barrier_N$n")" "${FAULT[@]}"
    done
}

step_omp() {
    local why=""
    if [ -z "$OMP_PROG" ]; then
        why="no omp_locks in $BIN_FROM (built only where the compiler has OpenMP)"
    elif ! env -u LD_LIBRARY_PATH ldd "$OMP_PROG" >/dev/null 2>&1 ||
        env -u LD_LIBRARY_PATH ldd "$OMP_PROG" | grep -q 'not found'; then
        why="omp_locks cannot load its OpenMP runtime here: $(ldd "$OMP_PROG" 2>&1 | grep 'not found' | head -n 1 | tr -s ' \t' ' ')"
    fi
    if [ -n "$why" ]; then
        [ $MODE = run ] && record omp omp skipped 0 0 0 0 - "$why" "bench/apps/omp.sh"
        return 0
    fi
    # stock + 5 specs, 2 modes; about 1.3 s a run at P threads on the device, where
    # mcs:spinpark's runs take the longest (0.05 s small).  0.5 s, the first
    # estimate, had the piece cut at its limit on 2026-11-27.
    local per=1300
    [ $small -eq 1 ] && per=100
    piece omp "t=$T_OMP" $((12 * per)) $R -- env BATON_PRELOAD_LIB="$PRELOAD" \
        BATON_OMP_LOCKS="$OMP_PROG" bash "$REPO/bench/apps/omp.sh" --threads "$T_OMP" \
        --locks "$OMP_LOCKS" --iters "$OMP_ITERS" --out "$OUT/omp"
}

step_wake() {
    local est=25000
    [ $small -eq 1 ] && est=4000
    piece wake wake $est 0 -- "$BATON" bench wake "${WAKE_ARGS[@]}" --json "$(json wake)"
}

# --- binaries -----------------------------------------------------------------------------

BIN_NOTE=""
find_binaries() {
    local b=$bundle
    if [ -z "$b" ] && [ -z "$build" ] && [ -f "$REPO/build-device/bin/baton" ]; then
        b=$REPO/build-device
    fi
    if [ -n "$b" ]; then
        # (a copy that lost the execute bits: the device's carry is not known to keep them)
        if [ -f "$b/bin/baton" ] && [ ! -x "$b/bin/baton" ]; then chmod +x "$b"/bin/*; fi
        [ -x "$b/bin/baton" ] || die "no bundle at $b ($b/bin/baton missing): build one with '$PROG --prepare $b'"
        b=$(cd "$b" && pwd)
        local err
        if err=$("$b/bin/baton" version 2>&1 >/dev/null); then
            BATON=$b/bin/baton PRELOAD=$b/lib/libbaton-preload.so OMP_PROG=""
            [ -x "$b/bin/omp_locks" ] && OMP_PROG=$b/bin/omp_locks
            BIN_FROM="bundle $b"
            local built here
            built=$(sed -n 's/^sources: //p' "$b/BUNDLE.txt" 2>/dev/null || true)
            here=$(bash "$TOOLS/device-bundle.sh" --sources-hash)
            if [ "$built" != "$here" ]; then
                BIN_NOTE="WARNING: the bundle was built from other sources (${built:-unknown}) than this tree's ($here)"
            fi
            return 0
        fi
        echo "$PROG: the bundle's baton does not run here: $err" >&2
        [ -n "$bundle" ] && exit 1
        command -v cmake >/dev/null || { echo "$PROG: and cmake is missing, so nothing can be built" >&2; exit 1; }
        echo "$PROG: building a Release tree instead" >&2
        BIN_NOTE="the bundle did not run ($err); built here instead"
    fi
    [ -z "$b" ] && [ -z "$build" ] && BIN_NOTE="no bundle at $REPO/build-device (not carried?)"
    local t=${build:-build-release}
    [[ $t = /* ]] || t=$PWD/$t
    if [ ! -x "$t/src/cli/baton" ]; then
        if ! command -v cmake >/dev/null; then
            echo "$PROG: no bundle (build-device/bin/baton) and no cmake to build a tree at $t." >&2
            echo "$PROG: prepare a bundle where cmake and the peers are, with 'tools/device-matrix.sh --prepare'," >&2
            echo "$PROG: and carry build-device (CONTRIBUTING.md, 'When the 16-core device is lent')." >&2
            exit 1
        fi
        [ $dry -eq 1 ] && { BATON=$t/src/cli/baton PRELOAD="" OMP_PROG=""; BIN_FROM="tree $t (to be built)"; return 0; }
        bash "$TOOLS/device-bundle.sh" --tree-only "$t" || exit 1
        BIN_NOTE="${BIN_NOTE:+$BIN_NOTE; }built the Release tree $t here ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$t/CMakeCache.txt"))"
    fi
    BATON=$t/src/cli/baton PRELOAD=$t/src/preload/libbaton-preload.so OMP_PROG=""
    [ -x "$t/bench/apps/omp_locks" ] && OMP_PROG=$t/bench/apps/omp_locks
    BIN_FROM="build tree $t ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$t/CMakeCache.txt" 2>/dev/null))"
}

# --- main ---------------------------------------------------------------------------------

T0=$(now_ms)
DEADLINE=$((T0 + budget * 1000))
OUT=OUT
if [ $dry -eq 0 ]; then
    if [ -z "$out" ]; then
        if [ $small -eq 1 ]; then out=$REPO/results/device-small/$(date -u +%F)
        else out=$REPO/docs/data/device16/$(date -u +%F); fi
    fi
    if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
        if [ $replace -eq 1 ] && [ -f "$out/steps.tsv" ]; then
            rm -rf "$out"
        else
            die "$out exists and is not empty: pass another --out, or --replace (for an earlier output of this script)"
        fi
    fi
    mkdir -p "$out/parts"
    OUT=$(cd "$out" && pwd)
    : >"$OUT/run.txt"
    printf 'step\tpiece\tstatus\trounds\testimate_s\tlimit_s\twall_s\texit\tnote\tcommand\n' >"$OUT/steps.tsv"
fi
[ $fault -eq 1 ] && FAULT=(--inject-fault)
find_binaries

for s in $ALL_STEPS; do want "$s" && STEP_ORDER+=("$s"); done
[ $dry -eq 1 ] && echo "plan: ${STEP_ORDER[*]}; $NCPU CPUs; budget $budget s; binaries: $BIN_FROM"
for s in "${STEP_ORDER[@]}"; do "step_$s"; done
total_full=0 total_min=0
for s in "${STEP_ORDER[@]}"; do
    total_full=$((total_full + ${EST_FULL[$s]:-0}))
    total_min=$((total_min + ${EST_MIN[$s]:-0}))
done
if [ $dry -eq 1 ]; then
    echo "estimate: $(secs $total_full) s in full, $(secs $total_min) s at the least, of a budget of $budget s"
    exit 0
fi

{
    echo "binaries: $BIN_FROM"
    [ -n "$BIN_NOTE" ] && echo "note: $BIN_NOTE"
    [ -f "${BATON%/bin/baton}/BUNDLE.txt" ] && sed 's/^/  /' "${BATON%/bin/baton}/BUNDLE.txt"
    echo "tree sources: $(bash "$TOOLS/device-bundle.sh" --sources-hash)"
    echo "commit: $(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo '(no git: a copy of the tree)')"
    echo "command: $0 ${ARGS[*]}"
    echo "cpus: $NCPU; budget: $budget s; small: $small; glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
} >"$OUT/binaries.txt"
log "$PROG: ${STEP_ORDER[*]} on $NCPU CPUs; estimate $(secs $total_full) s (at the least $(secs $total_min) s), budget $budget s; out $OUT"
log "binaries: $BIN_FROM${BIN_NOTE:+; $BIN_NOTE}"
# finish: the summary, also after an interruption (what ran is kept)
finish() {
    # omp.sh's per-run logs only matter when something failed
    if [ -d "$OUT/omp/logs" ] && ! grep -q '^omp.*FAIL' "$OUT/steps.tsv"; then rm -rf "$OUT/omp/logs"; fi
    if command -v python3 >/dev/null; then
        python3 "$TOOLS/device_summary.py" "$OUT" || { log "device_summary.py failed"; FAILED=$((FAILED + 1)); }
    else
        log "no python3 here: no tables; the pieces' JSON stay in $OUT/parts"
        column -t -s $'\t' "$OUT/steps.tsv" >"$OUT/summary.txt" 2>/dev/null || cp "$OUT/steps.tsv" "$OUT/summary.txt"
    fi
    rmdir "$OUT/parts" 2>/dev/null || true
    log "done in $(secs $(($(now_ms) - T0))) s of $budget: $FAILED failed, $CUT killed at their limit; $OUT"
    if [ -f "$OUT/summary.txt" ]; then cat "$OUT/summary.txt"; fi
}
interrupted() {
    trap - INT TERM
    FAILED=$((FAILED + 1))
    record run interrupted FAIL 0 0 0 $(($(now_ms) - T0)) 130 "interrupted (SIGINT or SIGTERM): the summary holds what ran" "-"
    finish
    exit 130
}
trap interrupted INT TERM

MODE=run
LATER_MIN=$total_min
for s in "${STEP_ORDER[@]}"; do
    LATER_MIN=$((LATER_MIN - ${EST_MIN[$s]:-0}))
    STEP_MIN_LEFT=${EST_MIN[$s]:-0}
    "step_$s"
done
trap - INT TERM
finish
[ $FAILED -eq 0 ] && [ $CUT -eq 0 ] || exit 1
