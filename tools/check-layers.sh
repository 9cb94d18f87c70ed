#!/usr/bin/env bash
# check-layers.sh - every #include in src/, bench/ and include/baton/ goes
# down the layers of docs/architecture.md ("Layers"), never up or sideways.
#
#   tools/check-layers.sh [--root DIR] [--objects DIR]... [--no-allow]
#
# The layers are the data just below: one row per line, bottom first.  A
# file may include files of its own folder and of folders on lower rows.  An
# include of a folder on a higher row is "upward", of another folder on the
# same row "sideways"; both fail, named file:line.  So does a file in a
# folder the table does not name (a new folder takes a row first) and a
# <baton/...> header the tables below do not place.  tests/ and examples/
# may include anything and are not read.
#
# Quoted includes resolve as the compiler finds them: next to the including
# file, then in SEARCH (bench/ is on the include path of everything that
# links baton_bench: bench/, the CLI).  One that resolves to no file of the
# tree is another project's (a peer library's headers, on its own include
# path) and is counted, not checked; the compiler fails on one that is
# nowhere.  <baton/x.h> is include/baton/x.h,
# placed in a layer by PUBLIC: a public header is part of the layer that
# implements it, so base including <baton/mcs.h> is as upward as including
# src/locks/mcs.c's own header.  INTERFACE headers (the library's types and
# calls) may be included from anywhere and are not checked themselves.
#
# --objects DIR reads the global symbols of the object files under DIR (nm)
# and fails on a call or reference into a higher or sibling layer that no
# include shows (a function declared in a public header, say), except the
# references ALLOW_SYMBOLS lists with their reason; --no-allow ignores that
# list (the ctest layers_catches_symbols checks that the check can fail).
# Objects whose source file is not in the tree (left over in a build tree
# after a move) are skipped.
#
# Exit status: 0 all downward, 1 violations (listed), 2 usage.
set -euo pipefail

# --- the layers, bottom first ------------------------------------------------
LAYERS='
src/atomic                             # the chaos hook of baton/atomic.h
src/wait                               # wait policies, futex, clock, calibration
src/base                               # thread nodes, errors, syslock, slots, kind and spec types
src/locks src/barrier src/runtime src/cond  # mutex kinds | barriers | the server runtime | the condition variable
src/delegate src/server                # delegation kinds | lock servers
src/api                                # registry, lock specs, dynamic API: names every kind
src/rwlock src/elide                   # wrapper kinds (their inner lock through the API)
src/preload bench                      # the interposer | the workloads
src/cli                                # the baton command
'

# Public headers and the layer that implements each.
PUBLIC='
include/baton/visibility.h  src/atomic
include/baton/atomic.h      src/atomic
include/baton/wait.h        src/wait
include/baton/token.h       src/base
include/baton/tas.h         src/locks
include/baton/ttas.h        src/locks
include/baton/ticket.h      src/locks
include/baton/mcs.h         src/locks
include/baton/clh.h         src/locks
include/baton/onespinner.h  src/locks
include/baton/relay.h       src/locks
include/baton/runner.h      src/locks
include/baton/locks.h       src/locks
include/baton/barrier.h     src/barrier
include/baton/counter.h     src/api
include/baton/cond.h        src/api
include/baton/preload.h     src/preload
'

# The library's types and calls (baton.h; version.h is generated into the
# build tree): every layer may include them.
INTERFACE='include/baton/baton.h include/baton/version.h'

# Extra folders quoted includes are looked up in, after the file's own.
SEARCH='bench'

# --objects: references a layer may make upward, with the reason.
ALLOW_SYMBOLS='
src/api baton_kind_rw      # the registry names every kind: declared in base/kind.h, defined by the wrapper
src/api baton_kind_elide   # (as above)
'

# --- arguments ------------------------------------------------------------------
root=$(cd "$(dirname "$0")/.." && pwd)
objects=()
no_allow=0
while [[ $# -gt 0 ]]; do
    case $1 in
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    --objects) objects+=("$(realpath -m -- "${2:?--objects needs a directory}")"); shift 2 ;;
    --no-allow) no_allow=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-layers.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
cd "$root" || exit 2
[[ -d src && -d include/baton ]] || { echo "check-layers.sh: $root has no src/ and include/baton/" >&2; exit 2; }

# shellcheck disable=SC2001 # a table is several lines: sed drops each line's comment
strip() { sed 's/#.*//' <<<"$1"; }
tables=$(mktemp /tmp/check-layers.XXXXXX)
trap 'rm -f "$tables"' EXIT
{
    strip "$LAYERS" | awk 'NF { r++; for (i = 1; i <= NF; i++) print "L", $i, r }'
    strip "$PUBLIC" | awk 'NF == 2 { print "P", $1, $2 }'
    for f in $INTERFACE; do echo "I $f"; done
    for d in $SEARCH; do echo "S $d"; done
    if [[ $no_allow -eq 0 ]]; then strip "$ALLOW_SYMBOLS" | awk 'NF == 2 { print "A", $1, $2 }'; fi
    find src bench include/baton -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' \) | sort |
        sed 's/^/F /'
} >"$tables"

# The awk functions both checks share: the tables, path arithmetic, layers.
# shellcheck disable=SC2016 # awk, not shell
common='
function norm(p,    n, a, s, i, k, out) {
    n = split(p, a, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (a[i] == "" || a[i] == ".") continue
        if (a[i] == "..") { if (k == 0) return ""; k--; continue }
        s[++k] = a[i]
    }
    out = s[1]
    for (i = 2; i <= k; i++) out = out "/" s[i]
    return out
}
function dirname(p) { if (p !~ /\//) return "."; sub(/\/[^\/]*$/, "", p); return p }
# The layer (a folder of LAYERS) a path belongs to, "" if none.
function layer_of(p,    d) {
    if (p in pub) return pub[p]
    for (d = dirname(p); d != "."; d = dirname(d))
        if (d in rank) return d
    return ""
}
function where(l) { return l " (row " rank[l] ")" }
FNR == NR {
    if ($1 == "L") { rank[$2] = $3; nrows = $3 }
    else if ($1 == "P") pub[$2] = $3
    else if ($1 == "I") iface[$2] = 1
    else if ($1 == "S") search[++nsearch] = $2
    else if ($1 == "A") allow[$2 " " $3] = 1
    else if ($1 == "F") exists[$2] = 1
    next
}
'

mapfile -t files < <(awk '$1 == "F" { print $2 }' "$tables")
status=0
awk "$common"'
function fail(msg) { print msg; bad++ }
FNR == 1 {
    file = FILENAME; nfiles++
    me = layer_of(file)
    skip = (file in iface)
    if (!skip && me == "")
        fail(file ":1: " file " is in no layer: give its folder a row in LAYERS (tools/check-layers.sh)")
    if (!skip && (file in pub) && !(pub[file] in rank))
        fail(file ":1: PUBLIC places it in " pub[file] ", which is not a folder of LAYERS")
}
skip || me == "" { next }
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
    line = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
    quoted = substr(line, 1, 1) == "\""
    inc = substr(line, 2)
    sub(quoted ? "\".*" : ">.*", "", inc)
    if (quoted) {
        target = norm(dirname(file) "/" inc)
        for (i = 1; !(target in exists) && i <= nsearch; i++)
            target = norm(search[i] "/" inc)
        if (!(target in exists)) {
            nexternal++ # a header of another project (see the top)
            next
        }
    } else {
        if (inc !~ /^baton\//) next
        target = "include/" inc
        if (target in iface) next
        if (!(target in pub)) {
            fail(file ":" FNR ": <" inc "> is in no layer: place it in PUBLIC (or INTERFACE) in tools/check-layers.sh")
            next
        }
    }
    nincs++
    if (target in iface) next
    tl = layer_of(target)
    if (tl == "") {
        fail(file ":" FNR ": \"" inc "\" is " target ", in no layer")
        next
    }
    if (tl == me || rank[tl] < rank[me]) next
    fail(file ":" FNR ": " (rank[tl] == rank[me] ? "sideways" : "upward") " include of " (quoted ? "\"" inc "\"" : "<" inc ">") \
         ": " where(tl) " from " where(me) "; a layer includes only its own folder and lower rows")
}
END {
    if (bad) { printf "check-layers: %d violation(s) in %d files\n", bad, nfiles; exit 1 }
    printf "check-layers: %d files, %d includes, every one downward (%d rows; %d of other projects)\n", nfiles, nincs, nrows, nexternal
}' "$tables" "${files[@]}" || status=1

for dir in "${objects[@]}"; do
    [[ -d $dir ]] || { echo "check-layers.sh: --objects $dir: no such directory" >&2; exit 2; }
    list=$(find "$dir" -name '*.o' | sort)
    [[ -n $list ]] || { echo "check-layers: no object files under $dir (build first)"; status=1; continue; }
    # nm -A: "obj.o:addr T sym", "obj.o:  U sym"; the source is the path from src/ or bench/ on.
    # shellcheck disable=SC2086 # one word per object
    nm -A $list | awk "$common"'
function source_of(obj,    p) {
    if (!match(obj, /\/(src|bench)\//)) return ""
    p = substr(obj, RSTART + 1)
    sub(/\.o$/, "", p)
    return p
}
{
    c = index($0, ":"); obj = substr($0, 1, c - 1); rest = substr($0, c + 1)
    src = source_of(obj)
    if (src == "" || !(src in exists)) next
    n = split(rest, f, " ")
    type = f[n - 1]; sym = f[n]
    if (type == "U") { nu++; uses_src[nu] = src; uses_sym[nu] = sym }
    else if (type ~ /^[A-TV-Zu]$/) { defined[sym] = src; seen[src] = 1 }
}
END {
    for (i = 1; i <= nu; i++) {
        s = uses_src[i]; sym = uses_sym[i]
        if (!(sym in defined)) continue
        me = layer_of(s); tl = layer_of(defined[sym])
        if (me == "" || tl == "" || tl == me || rank[tl] < rank[me]) continue
        if ((me " " sym) in allow) { allowed++; continue }
        printf "%s: %s reference to %s, defined in %s: %s from %s\n", s,
               (rank[tl] == rank[me] ? "sideways" : "upward"), sym, defined[sym], where(tl), where(me)
        bad++
    }
    for (s in seen) nobj++
    if (bad) { printf "check-layers: %d upward or sideways reference(s) between objects\n", bad; exit 1 }
    printf "check-layers: %d objects, every reference downward (%d allowed in ALLOW_SYMBOLS)\n", nobj, allowed
}' "$tables" - || status=1
done
exit $status
