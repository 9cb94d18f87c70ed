#!/usr/bin/env bash
# memcached under load from memcaslap: ops/s stock, under each candidate lock
# kind of the interposer (BATON_LOCK), and under the best candidate.
#
#   memcached.sh [--threads 2,8] [--mixes 90/10,70/30] [--locks SPECS]
#                [--repeat R] [--seconds S] [--memory MB] [--out DIR]
#
# Each cell (server threads x get/set mix) runs every configuration once per
# round; rounds interleave the configurations (rotating their order) so that
# the machine's drift hits all alike.  After the rounds, the candidate with
# the best geometric mean of ratios over all cells is measured again, R more
# rounds alternating with stock ("best" rows: ratio against that phase's
# stock, which removes the bias of picking the maximum of noisy medians).
# A run fails when memcaslap reports any error or failure, the server dies,
# the set/get check after the load fails, or the interposer was not loaded;
# a failing configuration is skipped in that cell from then on, cannot be the
# best, and the script exits 1.
#
# --memory MB: memcached's -m (default: memcached's own, 64 MB; memcaslap's
# keys do not fit, so the servers evict and a share of the gets miss, which
# is reported: a miss costs the server less than a hit).
#
# Elided candidates (elide(<kind>)): the interposer's exit line (BATON_VERBOSE)
# says what speculation did in each run: transactions started, the share
# that committed, aborts by cause (where the CPU has no usable RTM,
# elide(<kind>) is <kind> and starts none); summed per cell.
#
# Files in --out DIR: memcached_runs.csv (every run), memcached.csv (medians
# and ratios), memcached_elision.csv (the elided candidates' transactions),
# logs/ (server and client output of each run).
# shellcheck disable=SC2154  # arrays filled by split_list/split_specs (namerefs)
set -euo pipefail
PROG=memcached.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

threads_list=2,8
mixes_list=90/10,70/30
locks_list="default,mcs:spinpark,ttas,ticket:spinpark,qd,elide(relay)"
repeat=3
seconds=10
out=$REPO_ROOT/results/apps
client_threads=2
client_conc=64
memory=""

usage() { print_header; }
while [ $# -gt 0 ]; do
    case $1 in
        --threads) threads_list=$2; shift 2 ;;
        --mixes) mixes_list=$2; shift 2 ;;
        --locks) locks_list=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive integer, not '$repeat'"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds wants a positive integer, not '$seconds'"
[ -z "$memory" ] || [[ $memory =~ ^[1-9][0-9]*$ ]] || die "--memory wants megabytes, not '$memory'"
[ -n "$memory" ] && MC_ARGS=(-m "$memory")

"$APPS_DIR/deps.sh" memcached
find_preload
split_list threads "$threads_list"
split_list mixes "$mixes_list"
split_specs cands "$locks_list"
[ ${#cands[@]} -gt 0 ] || die "--locks is empty"
for m in "${mixes[@]}"; do
    if ! [[ $m =~ ^([0-9]+)/([0-9]+)$ ]] || [ $((BASH_REMATCH[1] + BASH_REMATCH[2])) -ne 100 ]; then
        die "mix '$m': want GET/SET percentages adding up to 100, e.g. 90/10"
    fi
done

mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-memcached.XXXXXX")
trap 'mc_stop || true; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

for m in "${mixes[@]}"; do
    memcaslap_cfg "$work/mix_${m/\//_}.cfg" "$(awk -v s="${m#*/}" 'BEGIN { printf "%.2f", s / 100 }')"
done

runs_csv=$out/memcached_runs.csv
csv_row phase round server_threads get_set config spec ops_per_s get_miss_pct status detail >"$runs_csv"
declare -A results   # "t|mix|config" -> space-separated ops/s
declare -A misses    # "t|mix|config" -> space-separated get-miss percentages
declare -A failed    # "-t T MIX config" -> reason (that cell skips the configuration from then on)
declare -A badcfg    # config -> 1 when any of its runs failed
nfail=0

# one_run PHASE ROUND THREADS MIX CONFIG SPEC: one server, one load, one row.
one_run() {
    local phase=$1 round=$2 t=$3 mix=$4 config=$5 spec=$6
    local tag="${phase}_r${round}_t${t}_${mix/\//_}_${config//[^A-Za-z0-9_.-]/_}"
    local slog=$out/logs/$tag.server.log clog=$out/logs/$tag.client.log
    local tps="" status=ok detail="" rc=0 miss=""
    conf_env mutex "$spec"
    if ! mc_start "$t" "$slog" "${CONF_ENV[@]}"; then
        csv_row "$phase" "$round" "$t" "$mix" "$config" "$spec" "" "" fail "$MC_ERR" >>"$runs_csv"
        failed["-t $t $mix $config"]=$MC_ERR
        badcfg[$config]=1
        nfail=$((nfail + 1))
        note "FAIL: -t $t $mix $config ($spec): $MC_ERR (log: $slog)"
        return 0
    fi
    timeout $((seconds + 60)) memcaslap -s "127.0.0.1:$MC_PORT" -T "$client_threads" -c "$client_conc" \
        -t "${seconds}s" -F "$work/mix_${mix/\//_}.cfg" >"$clog" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        status=fail; detail="memcaslap $(exit_words $rc)"
    elif ! tps=$(memcaslap_check "$clog"); then
        status=fail; detail=$tps; tps=""
    elif ! kill -0 "$MC_PID" 2>/dev/null; then
        status=fail; detail="memcached died under load"
    elif ! detail=$(mc_setget "$MC_PORT"); then
        status=fail; detail="set/get check after the load: $detail"
    fi
    mc_stop || { [ $status = ok ] && status=fail && detail="memcached died before it was stopped"; }
    if [ $status = ok ] && ! detail=$(check_loaded "$spec" "$slog"); then
        status=fail
    fi
    [ $status = ok ] && detail=""
    # The share of gets that missed: evictions from memcached's 64 MB make
    # it move from run to run, and a miss is cheaper to answer than a hit.
    miss=$(awk '/^cmd_get:/ { g = $2 } /^get_misses:/ { m = $2 } END { if (g > 0) printf "%.1f", 100 * m / g }' "$clog")
    csv_row "$phase" "$round" "$t" "$mix" "$config" "$spec" "$tps" "$miss" "$status" "$detail" >>"$runs_csv"
    if [ $status = ok ]; then
        results["$t|$mix|$config"]+="$tps "
        misses["$t|$mix|$config"]+="$miss "
        printf '  %-6s r%d  -t %-2s %-5s  %-18s %9s ops/s  %5s%% misses\n' "$phase" "$round" "$t" "$mix" "$config" "$tps" "$miss" >&2
    else
        failed["-t $t $mix $config"]=$detail
        badcfg[$config]=1
        nfail=$((nfail + 1))
        note "FAIL: -t $t $mix $config ($spec): $detail (logs: $slog, $clog)"
    fi
}

configs=(stock "${cands[@]}")
note "memcached: server threads ${threads[*]}, mixes ${mixes[*]}, configurations ${configs[*]}; ${seconds} s x $repeat rounds; memcaslap -T $client_threads -c $client_conc; memcached -m ${memory:-64 (default)}; $(load_note)"
note "interposer: $PRELOAD"
for ((r = 1; r <= repeat; r++)); do
    for t in "${threads[@]}"; do
        for mix in "${mixes[@]}"; do
            for i in $(rotate ${#configs[@]} $((r - 1))); do
                c=${configs[i]}
                [ -n "${failed["-t $t $mix $c"]:-}" ] && continue
                one_run main "$r" "$t" "$mix" "$c" "$c"
            done
        done
    done
done

# The best candidate: highest geometric mean over the cells of median/stock.
best="" best_score=0
for c in "${cands[@]}"; do
    [ -n "${badcfg[$c]:-}" ] && continue   # a configuration that made errors is no "best"
    score=$(for t in "${threads[@]}"; do for mix in "${mixes[@]}"; do
                # shellcheck disable=SC2086
                echo "$(median ${results["$t|$mix|stock"]:-}) $(median ${results["$t|$mix|$c"]:-})"
            done; done | awk '$1 > 0 && $2 > 0 { s += log($2 / $1); n++ } END { if (n) printf "%.6f", exp(s / n); else print 0 }')
    if awk -v a="$score" -v b="$best_score" 'BEGIN { exit !(a > b) }'; then
        best=$c best_score=$score
    fi
done

if [ -n "$best" ]; then
    note "best candidate: $best (geometric mean $(printf '%.3f' "$best_score") x stock); confirming with $repeat more rounds"
    for ((r = 1; r <= repeat; r++)); do
        for t in "${threads[@]}"; do
            for mix in "${mixes[@]}"; do
                pair=(stock_b "best")
                [ $((r % 2)) -eq 0 ] && pair=(best stock_b)
                for c in "${pair[@]}"; do
                    if [ "$c" = best ]; then spec=$best; else spec=stock; fi
                    [ -n "${failed["-t $t $mix $c"]:-}" ] && continue
                    one_run best "$r" "$t" "$mix" "$c" "$spec"
                done
            done
        done
    done
fi

# --- table and CSV ---
sum_csv=$out/memcached.csv
csv_row server_threads get_set config spec median_ops_per_s min max spread_pct runs ratio_vs_stock median_get_miss_pct >"$sum_csv"
echo
echo "memcached (memcaslap -T $client_threads -c $client_conc, ${seconds} s; median of $repeat; ratio = ops/s / stock ops/s of the same phase, >1 is better; miss = get misses / gets)"
printf '%-7s %-6s %-24s %10s %7s %7s %6s\n' threads get/set config "ops/s" spread "x stock" "miss"
for t in "${threads[@]}"; do
    for mix in "${mixes[@]}"; do
        # shellcheck disable=SC2086
        base=$(median ${results["$t|$mix|stock"]:-})
        # shellcheck disable=SC2086
        base_b=$(median ${results["$t|$mix|stock_b"]:-})
        rows=(stock "${cands[@]}")
        [ -n "$best" ] && rows+=(best stock_b)
        for c in "${rows[@]}"; do
            spec=$c; ref=$base; label=$c
            case $c in
                best) spec=$best; ref=$base_b; label="best=$best" ;;
                stock_b) spec=stock; ref=$base_b; label="stock (best phase)" ;;
            esac
            read -r -a vals <<<"${results["$t|$mix|$c"]:-}"
            if [ ${#vals[@]} -eq 0 ]; then
                printf '%-7s %-6s %-24s %10s %7s %7s %6s\n' "-t $t" "$mix" "$label" FAIL - - -
                csv_row "$t" "$mix" "$c" "$spec" "" "" "" "" 0 "" "" >>"$sum_csv"
                continue
            fi
            med=$(median "${vals[@]}")
            mn=$(printf '%s\n' "${vals[@]}" | sort -g | head -n 1)
            mx=$(printf '%s\n' "${vals[@]}" | sort -g | tail -n 1)
            sp=$(spread "${vals[@]}")
            rt=$(ratio "$med" "$ref")
            # shellcheck disable=SC2086
            miss=$(median ${misses["$t|$mix|$c"]:-})
            printf '%-7s %-6s %-24s %10.0f %6s%% %7s %5s%%\n' "-t $t" "$mix" "$label" "$med" "$sp" "$rt" "$miss"
            csv_row "$t" "$mix" "$c" "$spec" "$med" "$mn" "$mx" "$sp" "${#vals[@]}" "$rt" "$miss" >>"$sum_csv"
        done
    done
done
# --- elision: what speculation did, from the interposer's exit line ---
# (BATON_VERBOSE=1: "elision (RTM: STATE): A attempts, C commits, aborts:
# CAUSE N..., F fallbacks, S skipped"), summed over a cell's main runs.
el_csv=$out/memcached_elision.csv
csv_row server_threads get_set spec rtm attempts commits commit_pct aborts_conflict aborts_capacity \
    aborts_busy aborts_explicit aborts_retry aborts_nested aborts_debug aborts_other fallbacks skipped >"$el_csv"
el_header=0
for c in "${cands[@]}"; do
    [[ $c == elide\(* ]] || continue
    for t in "${threads[@]}"; do
        for mix in "${mixes[@]}"; do
            logs=("$out/logs/main_r"*"_t${t}_${mix/\//_}_${c//[^A-Za-z0-9_.-]/_}.server.log")
            row=$(awk '/^baton-preload\[[0-9]+\]: elision \(RTM: / {
                           rtm = $4; sub(/\):$/, "", rtm)
                           for (i = 1; i <= NF; i++) {
                               w = $(i + 1); sub(/,$/, "", w)
                               if (w == "attempts") a += $i; else if (w == "commits") k += $i
                               else if (w == "fallbacks") f += $i; else if (w == "skipped") sk += $i
                               else if ($i ~ /^(conflict|capacity|busy|explicit|retry|nested|debug|other)$/) ab[$i] += w
                           }
                           n++
                       }
                       END { if (!n) exit 1
                             printf "%s %d %d %d %d %d %d %d %d %d %d %d %d", rtm, a, k, ab["conflict"], ab["capacity"],
                                 ab["busy"], ab["explicit"], ab["retry"], ab["nested"], ab["debug"], ab["other"], f, sk }' \
                      "${logs[@]}" 2>/dev/null) || { note "elision: no exit line in the logs of -t $t $mix $c"; continue; }
            read -r -a v <<<"$row"
            pct=$(awk -v a="${v[1]}" -v k="${v[2]}" 'BEGIN { if (a > 0) printf "%.1f", 100 * k / a; else print "-" }')
            csv_row "$t" "$mix" "$c" "${v[0]}" "${v[1]}" "${v[2]}" "$pct" "${v[@]:3}" >>"$el_csv"
            if [ $el_header -eq 0 ]; then
                echo
                echo "elision (summed over the main runs; RTM state as elide(<kind>) found it: without usable RTM no transaction starts)"
                printf '%-7s %-6s %-22s %-10s %11s %8s %11s %11s %11s %11s\n' threads get/set spec rtm attempts commit% \
                    conflict capacity busy fallbacks
                el_header=1
            fi
            printf '%-7s %-6s %-22s %-10s %11s %7s%% %11s %11s %11s %11s\n' "-t $t" "$mix" "$c" "${v[0]}" "${v[1]}" \
                "$pct" "${v[3]}" "${v[4]}" "${v[5]}" "${v[11]}"
        done
    done
done

echo "files: $sum_csv, $runs_csv, $el_csv, $out/logs/"

if [ $nfail -gt 0 ]; then
    for c in "${!failed[@]}"; do note "failed: $c: ${failed[$c]}"; done
    die "$nfail run(s) failed"
fi
