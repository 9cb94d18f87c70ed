#!/usr/bin/env bash
# device-leads.sh - the open leads of the last 16-core run, in one short call
# (about 4 minutes on 16 cores, the first three leads about 2): what a
# session lent the device runs with the minutes left after
# tools/device-matrix.sh (CONTRIBUTING.md, "When the 16-core device is
# lent").  Each lead compares alternatives inside one run or in alternating
# rounds; docs/results.md, "The 16-core device, first run" and "Wakes off
# the serial path", says why each is open.
#
#   tools/device-leads.sh [--out DIR] [--bundle DIR] [--only LEADS]
#   tools/device-leads.sh --small [--out DIR]     2 threads, short runs: the
#                                                 script itself, tested here
#
# Leads (P = nproc), in the order they run (a call cut short by its time
# limit keeps what ran):
#   delegation  the combiners' and helpers' wakes off the serial path: qd,
#            ccsynch and fc under spinpark against :yield (never parks, as
#            the QD authors' library), pq at 8 and P threads, L in {0, 128};
#            the JSON's vcsw (voluntary context switches: parks) per
#            operation says who parked
#   hier     the hierarchical lock server with its local server off the
#            global server's CPU: basic, hier, hier+chain at 1, 2, 4, 8 and
#            P-1 clients; and basic under :spin (clients never park): does
#            the collapse at P-1 clients come from parked clients?
#   fifo     FIFO locks at 8, P-1 and P threads (S=10, L=0): mcs and ticket
#            under spinpark (collapsed on 16 cores at 15-16 threads) against
#            :spin, and the default: a parking collapse, or a spinning one?
#   barrier  the barriers' spin budget: the calibrated one against
#            BATON_SPIN_BUDGET_NS=200000, N = 8 and P, W in {0, 1000 ns},
#            against libgomp's and ck's, 3 alternating rounds
#   locks64  the default at P threads over 64 locks (S=10, L=0; no hog and
#            one hog) against tbb_mutex, absl and ttas:backoff, 5 runs
#   rw       reader preference over the default: rw(default) with and
#            without prefer_readers, rw(relay),prefer_readers, absl's and
#            glibc's rwlocks, 2, 8 and P threads, 80% and 95% reads
#
# Binaries: --bundle DIR (bin/baton inside), else build-device/bin/baton,
# else build-release/src/cli/baton, else build/src/cli/baton.
# Output (--out, default docs/data/device16/<UTC date>/leads, with --small
# results/device-small/<UTC date>/leads): leads.txt (every bench's tables,
# each preceded by a '### lead round variant' line), <lead>_*.json, and
# run.txt (what ran, when).  Exit 0 when every bench ran and verified, 1
# when one failed or was killed, 2 on a usage error.
set -euo pipefail
export LC_ALL=C
PROG=device-leads.sh
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "$PROG: error: $*" >&2; exit 2; }
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }

ALL="delegation hier fifo barrier locks64 rw"
small=0 out="" bundle="" only=""
while [ $# -gt 0 ]; do
    case $1 in
        --small) small=1; shift ;;
        --out) out=${2:?--out wants a folder}; shift 2 ;;
        --bundle) bundle=${2:?--bundle wants a folder}; shift 2 ;;
        --only) only=${2//,/ }; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
for l in $only; do
    [[ " $ALL " == *" $l "* ]] || die "unknown lead '$l'; the leads: $ALL"
done
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }

BATON=""
for c in ${bundle:+"$bundle/bin/baton"} "$REPO/build-device/bin/baton" "$REPO/build-release/src/cli/baton" \
    "$REPO/build/src/cli/baton"; do
    if [ -x "$c" ] && "$c" version >/dev/null 2>&1; then BATON=$c; break; fi
done
[ -n "$BATON" ] || die "no baton that runs here (build one, or prepare a bundle: tools/device-matrix.sh --prepare)"

P=$(nproc)
if [ $small -eq 1 ]; then
    P=2 D=0.03 R=1 ROUNDS=1 NBAR="2" TSRV="1,2" TRW="2" TPQ="2" TFIFO="2" BOX=0.05
else
    D=0.2 R=3 ROUNDS=3 NBAR="8,$P" BOX=0.1
    TSRV=$(printf '%s\n' 1 2 4 8 $((P - 1)) | sort -nu | paste -sd,)
    TRW=$(printf '%s\n' 2 8 "$P" | sort -nu | paste -sd,)
    TPQ=$(printf '%s\n' 8 "$P" | sort -nu | paste -sd,)
    TFIFO=$(printf '%s\n' 8 $((P - 1)) "$P" | sort -nu | paste -sd,)
fi
if [ -z "$out" ]; then
    if [ $small -eq 1 ]; then out=$REPO/results/device-small/$(date -u +%F)/leads
    else out=$REPO/docs/data/device16/$(date -u +%F)/leads; fi
fi
mkdir -p "$out"
OUT=$(cd "$out" && pwd)
: >"$OUT/leads.txt"
: >"$OUT/run.txt"
T0=${EPOCHREALTIME/./}
log() {
    local t=${EPOCHREALTIME/./}
    printf '[%6.1f s] %s\n' "$(awk -v d=$((t - T0)) 'BEGIN { print d / 1e6 }')" "$*" | tee -a "$OUT/run.txt" >&2
}
FAILED=0
# run LEAD ROUND VARIANT JSON -- [ENV=V...] ARGS...: one bench, its tables appended to leads.txt
run() {
    local lead=$1 round=$2 variant=$3 json=$4; shift 5
    local envs=()
    while [ $# -gt 0 ] && [[ $1 == *=* ]] && [[ $1 != -* ]]; do envs+=("$1"); shift; done
    echo "### $lead r=$round $variant: ${envs[*]} baton $*" >>"$OUT/leads.txt"
    local rc=0
    env "${envs[@]}" timeout -k 5 120 "$BATON" "$@" --json "$OUT/${json}.json" >>"$OUT/leads.txt" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        FAILED=$((FAILED + 1))
        log "$lead r=$round $variant: FAILED (exit $rc)"
    else
        log "$lead r=$round $variant: ok"
    fi
}

log "$PROG: $P CPUs; baton $BATON; out $OUT"
{
    echo "baton: $BATON ($("$BATON" version 2>&1 | head -n 1))"
    echo "commit: $(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo '(no git: a copy of the tree)')"
    echo "cpus: $P; small: $small"
} >>"$OUT/run.txt"

# The leads run in this order, the newest questions first: a call cut
# short by its time limit keeps what ran.
if want delegation; then
    run delegation 1 all delegation -- bench pq \
        --locks qd,qd:yield,ccsynch,ccsynch:yield,fc,fc:yield \
        --threads "$TPQ" --local-work 0,128 --duration $D --repeat $R
fi
if want hier; then
    run hier 1 all hier -- bench server \
        --locks server:spinpark,server:spin,server:spinpark,hier,server:spinpark,hier,chain,default \
        --threads "$TSRV" --interval-cycles 200 --workloads counter --duration $D --repeat $R
fi
if want fifo; then
    run fifo 1 all fifo -- bench micro \
        --locks mcs:spinpark,mcs:spin,ticket:spinpark,ticket:spin,default \
        --threads "$TFIFO" --shared-lines 10 --local-work 0 --duration $D --repeat $R
fi
if want barrier; then
    for r in $(seq 1 $ROUNDS); do
        for v in calibrated 200us; do
            e=(); [ $v = 200us ] && e=(BATON_SPIN_BUDGET_NS=200000)
            run barrier "$r" "$v" "barrier_${v}_r$r" -- "${e[@]}" bench barrier \
                --barriers central,twolevel,peer:gomp_barrier,peer:ck_barrier_dissemination \
                --threads "$NBAR" --work-ns 0,1000 --episodes 20000 --time-box $BOX
        done
    done
fi
if want locks64; then
    for h in 0 1; do
        run locks64 1 "hog$h" "locks64_hog$h" -- bench micro \
            --locks default,peer:tbb_mutex,peer:absl,ttas:backoff --threads "$P" --shared-lines 10 \
            --lock-count 64 --local-work 0 --hog $h --duration $D --repeat $((R + 2))
    done
fi
if want rw; then
    run rw 1 all rw -- bench rw \
        --locks "rw(default),prefer_readers,rw(default),rw(relay),prefer_readers,peer:absl_mutex_rw,peer:pthread_rwlock_rp" \
        --threads "$TRW" --reads 80,95 --local-work 0 --duration $D --repeat $R
fi
log "done: $FAILED failed; $OUT"
[ $FAILED -eq 0 ]
