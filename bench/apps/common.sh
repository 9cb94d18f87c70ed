# shellcheck shell=bash disable=SC2034  # globals (CONF_ENV, MC_ERR...) are read by the scripts
# Shared helpers of the application benchmarks (sourced, not run).
#
# Finds the interposer and the build, runs commands stock or under it,
# starts and stops memcached by PID, and computes medians and tables.
# Every script that sources this sets PROG first and uses `set -euo pipefail`.

APPS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$APPS_DIR/../.." && pwd)

# print_header: the calling script's header comment (its --help).
print_header() {
    awk 'NR == 1 { next } /^# shellcheck/ { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

die() { echo "$PROG: error: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }

# Nothing from the caller's environment may leak into a stock run or change
# the configuration under test: each run sets exactly what it needs.
unset LD_PRELOAD BATON_LOCK BATON_RWLOCK BATON_SPIN BATON_PROFILE BATON_VERBOSE

# --- locating the build -------------------------------------------------------------

# BUILD_DIR: $BUILD (default "build"), relative to the current directory when
# it exists there, else to the repository root.  When only BATON_PRELOAD_LIB
# is given (as `baton bench apps` does), the build is the one that holds it.
resolve_build() {
    local b
    if [ -n "${BUILD:-}" ]; then
        b=$BUILD
    elif [ -n "${BATON_PRELOAD_LIB:-}" ] && [ -f "$BATON_PRELOAD_LIB" ]; then
        b=$(cd "$(dirname "$BATON_PRELOAD_LIB")/../.." && pwd)
    else
        b=build
    fi
    if [[ $b != /* ]]; then
        if [ -d "$b" ]; then b=$(cd "$b" && pwd); else b=$REPO_ROOT/$b; fi
    fi
    BUILD_DIR=$b
}

# PRELOAD: absolute path of libbaton-preload.so (BATON_PRELOAD_LIB wins).
find_preload() {
    resolve_build
    local lib=${BATON_PRELOAD_LIB:-$BUILD_DIR/src/preload/libbaton-preload.so}
    [ -f "$lib" ] || die "interposer not found at $lib (build the baton_preload target, or set BUILD=<build dir> or BATON_PRELOAD_LIB=<path>)"
    PRELOAD=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
}

# --- running under the interposer ------------------------------------------------

# CONF_ENV: the environment words (for `env`) of a configuration.
#   class: mutex (BATON_LOCK) or rwlock (BATON_RWLOCK); spec "stock" = no
#   interposer at all; spec "default" = the interposer with its defaults.
# Every interposed run has BATON_VERBOSE=1 so that its stderr proves the
# library was loaded (see check_loaded); it only prints at start and exit.
conf_env() { # conf_env CLASS SPEC
    CONF_ENV=()
    case $2 in
        stock) return 0 ;;
        default) CONF_ENV=("LD_PRELOAD=$PRELOAD" BATON_VERBOSE=1) ;;
        *) case $1 in
               mutex) CONF_ENV=("LD_PRELOAD=$PRELOAD" BATON_VERBOSE=1 "BATON_LOCK=$2") ;;
               rwlock) CONF_ENV=("LD_PRELOAD=$PRELOAD" BATON_VERBOSE=1 "BATON_RWLOCK=$2") ;;
               *) die "internal: class $1" ;;
           esac ;;
    esac
}

# check_loaded SPEC LOG: an interposed run's stderr must carry the
# interposer's start-up lines and its exit report, and the report must count
# at least one lock it replaced; prints why not (and returns 1) otherwise.
check_loaded() {
    [ "$1" = stock ] && return 0
    if ! grep -q '^baton-preload\[' "$2"; then
        echo "no 'baton-preload[...]' line on stderr: the interposer was not loaded"
        return 1
    fi
    local created
    created=$(awk '/^baton-preload\[[0-9]+\]: [a-z]+ locks \(.*\): [0-9]+ created/ {
                       for (i = 1; i < NF; i++) if ($(i + 1) ~ /^created/) { s += $i; n++ } }
                   END { if (n) print s + 0 }' "$2")
    if [ -z "$created" ]; then
        echo "no exit report from the interposer on stderr (the program did not exit normally?)"
        return 1
    fi
    if [ "$created" -eq 0 ]; then
        echo "the interposer was loaded but replaced no lock (0 created)"
        return 1
    fi
    return 0
}

# --- memcached ----------------------------------------------------------------------

MC_PID=
MC_PORT=
MC_ERR=
MC_ARGS=()

# port_busy PORT: something listens on 127.0.0.1:PORT (or on any address).
port_busy() {
    if command -v ss >/dev/null 2>&1; then
        ss -Htln "sport = :$1" 2>/dev/null | grep -q . && return 0
        return 1
    fi
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# mc_start THREADS LOG ENVWORDS...: memcached on 127.0.0.1 with a free port,
# UDP off; sets MC_PID and MC_PORT.  Retries another port when the chosen one
# was taken between the check and the bind.  When the server does not come
# up, sets MC_ERR and returns 1.  MC_ARGS: more memcached options.
mc_start() {
    local threads=$1 log=$2; shift 2
    local user=() st=0
    [ "$(id -u)" -eq 0 ] && user=(-u root)
    MC_ERR=
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        MC_PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        port_busy "$MC_PORT" && continue
        env "$@" memcached -l 127.0.0.1 -p "$MC_PORT" -U 0 -t "$threads" "${MC_ARGS[@]}" "${user[@]}" >"$log" 2>&1 &
        MC_PID=$!
        for _ in $(seq 1 100); do   # up to 10 s for the server to listen
            if ! kill -0 "$MC_PID" 2>/dev/null; then
                st=0
                wait "$MC_PID" 2>/dev/null || st=$?
                MC_PID=
                break
            fi
            if (exec 3<>"/dev/tcp/127.0.0.1/$MC_PORT") 2>/dev/null; then
                return 0
            fi
            sleep 0.1
        done
        if [ -n "$MC_PID" ]; then
            mc_stop || true
            MC_ERR="memcached (-t $threads) did not listen on 127.0.0.1:$MC_PORT within 10 s"
            return 1
        fi
        if grep -qi 'bind\|address already in use' "$log"; then
            continue    # lost the race for the port: try another
        fi
        MC_ERR="memcached (-t $threads) $(exit_words $st) at start-up; last line: $(tail -n 1 "$log")"
        return 1
    done
    MC_ERR="no free port for memcached after 10 tries"
    return 1
}

# exit_words STATUS: "exited with status N" or "was killed by SIGNAME".
exit_words() {
    if [ "$1" -gt 128 ]; then
        echo "was killed by SIG$(kill -l $(($1 - 128)) 2>/dev/null || echo $(($1 - 128)))"
    else
        echo "exited with status $1"
    fi
}

# mc_stop: stop our memcached by PID (TERM, then KILL after 5 s).
# Returns 1 when the server had already died (a crash under test).
mc_stop() {
    local pid=$MC_PID rc=0
    [ -n "$pid" ] || return 0
    MC_PID=
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            note "memcached (pid $pid) ignored SIGTERM for 5 s: killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    else
        rc=1
    fi
    wait "$pid" 2>/dev/null || true
    return $rc
}

# mc_setget PORT: memcached's text protocol over bash's /dev/tcp: set a
# fresh key, get it back, compare.  Prints what went wrong and returns 1.
mc_setget() {
    (
        set +e
        port=$1
        key=baton_check_$$_$RANDOM
        val=value_$RANDOM$RANDOM$RANDOM
        if ! exec 3<>"/dev/tcp/127.0.0.1/$port"; then
            echo "cannot connect to 127.0.0.1:$port"
            exit 1
        fi 2>/dev/null
        printf 'set %s 0 0 %d\r\n%s\r\n' "$key" "${#val}" "$val" >&3
        IFS= read -r -t 5 line <&3 || { echo "no answer to set"; exit 1; }
        line=${line%$'\r'}
        [ "$line" = STORED ] || { echo "set answered '$line', not STORED"; exit 1; }
        printf 'get %s\r\n' "$key" >&3
        IFS= read -r -t 5 l1 <&3 || { echo "no answer to get"; exit 1; }
        l1=${l1%$'\r'}
        [ "$l1" = "VALUE $key 0 ${#val}" ] || { echo "get answered '$l1'"; exit 1; }
        IFS= read -r -t 5 l2 <&3 || { echo "get: no data line"; exit 1; }
        l2=${l2%$'\r'}
        [ "$l2" = "$val" ] || { echo "get returned '$l2', expected '$val'"; exit 1; }
        IFS= read -r -t 5 l3 <&3 || { echo "get: no END"; exit 1; }
        [ "${l3%$'\r'}" = END ] || { echo "get: '$l3' instead of END"; exit 1; }
        printf 'quit\r\n' >&3
        exec 3>&-
        exit 0
    )
}

# memcaslap_cfg FILE SETFRACTION: key 64 B, value 1024 B (memcaslap's own
# defaults), SETFRACTION of the commands are sets, the rest gets.
memcaslap_cfg() {
    local get
    get=$(awk -v s="$2" 'BEGIN { printf "%.3f", 1 - s }')
    cat >"$1" <<EOF
key
64 64 1
value
1024 1024 1
cmd
0 $2
1 $get
EOF
}

# memcaslap_check OUT: prints the ops/s of a memcaslap run, or a reason
# and returns 1: no TPS line, or any error, failure or lost packet reported.
memcaslap_check() {
    local out=$1 bad tps
    bad=$(grep -Ei 'error|fail|refused|reset|timed? ?out' "$out" | grep -Ev '^(verify_failed|udp_timeout): 0$' | head -n 3 || true)
    if [ -n "$bad" ]; then
        echo "memcaslap reported: $(echo "$bad" | tr '\n' ' ')"
        return 1
    fi
    bad=$(awk -F': ' '/^(verify_misses|verify_failed|expired_get|unexpired_unget|packet_disorder|packet_drop|udp_timeout): / && $2 != 0 { print }' "$out")
    if [ -n "$bad" ]; then
        echo "memcaslap counted failures: $(echo "$bad" | tr '\n' ' ')"
        return 1
    fi
    tps=$(awk '/^Run time:/ { for (i = 1; i < NF; i++) if ($i == "TPS:") print $(i + 1) }' "$out" | tail -n 1)
    if [ -z "$tps" ] || [ "$tps" -le 0 ] 2>/dev/null; then
        echo "memcaslap printed no throughput (no 'Run time: ... TPS:' line)"
        return 1
    fi
    echo "$tps"
}

# --- statistics ---------------------------------------------------------------------

# median of the numbers given as arguments (empty when none).
median() {
    [ $# -gt 0 ] || { echo ""; return 0; }
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# spread: (max - min) / median in percent, of the arguments.
spread() {
    [ $# -gt 1 ] || { echo 0; return 0; }
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; if (m > 0) printf "%.0f", 100 * (v[NR] - v[1]) / m; else print 0 }'
}

# ratio A B: A / B with 2 decimals ("-" when either is missing).
ratio() {
    if [ -z "$1" ] || [ -z "$2" ]; then echo "-"; return 0; fi
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
}

# rotate N K: the indices 0..N-1 starting at K mod N (interleaving order of a round).
rotate() {
    local n=$1 k=$2 i
    for ((i = 0; i < n; i++)); do echo $(((i + k) % n)); done
}

# split a comma-separated list into the array named by $1.
split_list() {
    local -n _arr=$1
    IFS=',' read -r -a _arr <<<"$2"
}

# Split a list of specs on the commas that are not inside parentheses
# (rw(mcs:spinpark),mrqd -> "rw(mcs:spinpark)" "mrqd"), and not before a
# key=value option (qd,help_limit=64 stays one spec).
split_specs() {
    local -n _out=$1
    local s=$2 cur="" depth=0 c i
    _out=()
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        case $c in
            '(') depth=$((depth + 1)); cur+=$c ;;
            ')') depth=$((depth - 1)); cur+=$c ;;
            ',') if [ $depth -eq 0 ] && [[ ! ${s:i+1} =~ ^[a-z_]+= ]]; then
                     [ -n "$cur" ] && _out+=("$cur")
                     cur=""
                 else
                     cur+=$c
                 fi ;;
            *) cur+=$c ;;
        esac
    done
    [ -n "$cur" ] && _out+=("$cur")
    return 0
}

# csv_field: quote a field that holds a comma or a quote.
csv_field() {
    if [[ $1 == *[,\"]* ]]; then
        local q=${1//\"/\"\"}
        printf '"%s"' "$q"
    else
        printf '%s' "$1"
    fi
}
csv_row() { # csv_row FIELD... -> one CSV line on stdout
    local first=1 f
    for f in "$@"; do
        [ $first -eq 1 ] || printf ','
        first=0
        csv_field "$f"
    done
    printf '\n'
}

# The load average, so that a result can be judged against what else ran.
load_note() {
    local l
    l=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
    echo "load average $l on $(nproc) CPUs"
}
