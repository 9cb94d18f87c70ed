#!/usr/bin/env bash
# check.sh [--omit PATH]... BUILD - checks the Debian packages that `make deb`
# wrote into BUILD, a build tree configured for /usr (cmake/packaging.cmake):
#
#   1. the three packages and nothing else, named <package>_<version>_<arch>.deb,
#      with the version of project() (BUILD's generated baton/version.h);
#   2. their control data: libbaton0 depends on the C library (dpkg-shlibdeps)
#      and has a shlibs file and an ldconfig trigger; libbaton-dev and
#      baton-tools depend on libbaton0 of their own version; sections,
#      maintainer, two-part descriptions, a copyright file each;
#   3. every file `cmake --install BUILD` installs is in exactly one package;
#   4. unpacked (dpkg -x) into a scratch root: the packaged `baton` runs
#      (--version, kinds; plot finds its script); a plain pthread program
#      (preload_smoke.c, built with the packaged headers) runs under the
#      packaged interposer, by LD_PRELOAD and through the packaged `baton run`;
#   5. the examples build against the scratch root and run on its libraries:
#      examples/critical_section (C) and examples/cpp (C++17) with
#      pkg-config, examples/consumer (C, shared and static) and examples/cpp
#      with CMake's find_package(baton).
#
# The first failed check ends it: "check.sh: FAIL: ..." on stderr, exit 1.
# --omit PATH (a glob, relative to the scratch root) deletes what it names
# after unpacking, as if a package lacked it: tests/deb/test.sh runs such
# twins, which must fail.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)

omit=()
while [ $# -gt 0 ]; do
    case $1 in
        --omit) omit+=("$2"); shift 2 ;;
        -*) echo "usage: check.sh [--omit PATH]... BUILD" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "usage: check.sh [--omit PATH]... BUILD" >&2; exit 2; }
build=$(cd "$1" && pwd)

fail() { echo "check.sh: FAIL: $*" >&2; exit 1; }
step() { echo "check.sh: $*"; }

# Nothing from the caller's environment may pick another baton.
unset BATON_PRELOAD_LIB LD_PRELOAD BATON_LOCK PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR CMAKE_PREFIX_PATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- 1. the files ---------------------------------------------------------------------
version=$(sed -n 's/^#define BATON_VERSION_STRING "\(.*\)"$/\1/p' "$build/include/baton/version.h")
[ -n "$version" ] || fail "no BATON_VERSION_STRING in $build/include/baton/version.h"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
runtime=libbaton${version%%.*}
packages=("$runtime" libbaton-dev baton-tools)
step "baton $version, $arch: ${packages[*]}"
want=$(for p in "${packages[@]}"; do echo "${p}_${version}_${arch}.deb"; done | sort)
have=$(find "$build" -maxdepth 1 -name '*.deb' -printf '%f\n' | sort)
[ "$have" = "$want" ] || fail "packages in $build: '${have//$'\n'/ }', not '${want//$'\n'/ }'"
deb() { echo "$build/${1}_${version}_${arch}.deb"; }

# --- 2. control data ----------------------------------------------------------------
field() { dpkg-deb -f "$(deb "$1")" "$2"; }
declare -A section=([$runtime]=libs [libbaton-dev]=libdevel [baton-tools]=devel)
for p in "${packages[@]}"; do
    [ "$(field "$p" Package)" = "$p" ] || fail "$p: Package is '$(field "$p" Package)'"
    [ "$(field "$p" Version)" = "$version" ] || fail "$p: Version is '$(field "$p" Version)'"
    [ "$(field "$p" Architecture)" = "$arch" ] || fail "$p: Architecture is '$(field "$p" Architecture)'"
    [ "$(field "$p" Section)" = "${section[$p]}" ] || fail "$p: Section is '$(field "$p" Section)'"
    [[ $(field "$p" Maintainer) =~ ^[^\<]+\ \<[^@\>]+@[^\>]+\>$ ]] || fail "$p: Maintainer '$(field "$p" Maintainer)'"
    [ "$(field "$p" Description | wc -l)" -ge 3 ] || fail "$p: no long description"
    dpkg-deb -c "$(deb "$p")" >"$tmp/list"
    grep -q " \./usr/share/doc/$p/copyright$" "$tmp/list" || fail "$p: no copyright file"
done
depends() { field "$1" Depends | tr ',' '\n' | sed 's/^ *//'; }
grep -q '^libc6 (>= ' <<<"$(depends "$runtime")" || fail "$runtime: Depends '$(field "$runtime" Depends)' lacks libc6"
for p in libbaton-dev baton-tools; do
    grep -qxF "$runtime (= $version)" <<<"$(depends "$p")" || fail "$p: Depends '$(field "$p" Depends)' lacks '$runtime (= $version)'"
done
dpkg-deb -e "$(deb "$runtime")" "$tmp/control"
[ "$(cat "$tmp/control/shlibs")" = "libbaton ${version%%.*} $runtime (>= $version)" ] ||
    fail "$runtime: shlibs '$(cat "$tmp/control/shlibs")'"
grep -qx "activate-noawait ldconfig" "$tmp/control/triggers" || fail "$runtime: no ldconfig trigger"

# --- 3. every installed file in exactly one package ----------------------------------------
DESTDIR="$tmp/staged" cmake --install "$build" >/dev/null
(cd "$tmp/staged" && find . ! -type d | sort) >"$tmp/installed"
for p in "${packages[@]}"; do
    dpkg-deb -c "$(deb "$p")" | awk '$1 !~ /^d/ { print $6 }'
done | sort >"$tmp/packaged"
dups=$(uniq -d "$tmp/packaged")
[ -z "$dups" ] || fail "in more than one package: $dups"
if ! diff "$tmp/installed" "$tmp/packaged" >"$tmp/diff"; then
    sed -n 's/^< /installed, in no package (an install rule without COMPONENT runtime, dev or tools?): /p; s/^> /packaged, not installed: /p' "$tmp/diff" >&2
    fail "the packages do not hold what cmake --install installs"
fi
step "$(wc -l <"$tmp/packaged") files, each in one package"

# --- 4. unpacked: the command and the interposer ----------------------------------------
root=$tmp/root
for p in "${packages[@]}"; do dpkg -x "$(deb "$p")" "$root"; done
shopt -s nullglob
for pat in "${omit[@]}"; do
    # shellcheck disable=SC2206  # the glob is meant
    hit=($root/$pat)
    [ ${#hit[@]} -gt 0 ] || fail "--omit $pat: nothing there to omit"
    rm -rf -- "${hit[@]}"
    step "omitted ${hit[*]#"$root"/}"
done
shopt -u nullglob
libdir=$root/usr/lib/$multiarch
baton=$root/usr/bin/baton

out=$("$baton" --version) || fail "packaged baton --version failed"
[ "$out" = "baton $version" ] || fail "packaged baton --version: '$out'"
"$baton" kinds >"$tmp/kinds" || fail "packaged baton kinds failed"
grep -q "^runner " "$tmp/kinds" || fail "packaged baton kinds lists no runner"

# baton plot runs the packaged script: with a matplotlib that cannot be
# imported (whatever this machine has) it exits 3 and names the packaged
# plot-deps.sh; without its script it would exit 2.
if command -v python3 >/dev/null; then
    mkdir -p "$tmp/fake/matplotlib" "$tmp/home"
    echo 'raise ImportError("hidden by check.sh")' >"$tmp/fake/matplotlib/__init__.py"
    rc=0
    HOME=$tmp/home XDG_DATA_HOME='' PYTHONPATH=$tmp/fake BATON_PYTHON=python3 \
        "$baton" plot "$src/docs/data/local/wake/bench_wake_1.json" -o "$tmp/plot" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 3 ] || fail "packaged baton plot: exit $rc, not 3: $(cat "$tmp/err")"
    grep -q "Install it with: $root/usr/share/baton/plot/plot-deps.sh " "$tmp/err" ||
        fail "packaged baton plot does not name the packaged plot-deps.sh: $(cat "$tmp/err")"
    step "baton plot: the packaged script runs (matplotlib hidden: exit 3)"
fi

cc -std=c11 -Wall -Wextra -Werror -I"$root/usr/include" "$here/preload_smoke.c" -pthread -o "$tmp/smoke" ||
    fail "preload_smoke.c does not build with the packaged headers"
# The probe must tell a stock run from an interposed one...
[ "$("$tmp/smoke")" = stock ] || fail "preload_smoke: a stock run is not 'stock'"
"$tmp/smoke" mcs >/dev/null && fail "preload_smoke: a stock run passed as interposed"
# ...and the interposer must be in place: by LD_PRELOAD, and by `baton run`,
# which finds it beside itself in the unpacked tree.
LD_PRELOAD=$libdir/libbaton-preload.so BATON_LOCK=mcs:spinpark "$tmp/smoke" mcs >"$tmp/out" ||
    fail "LD_PRELOAD=libbaton-preload.so BATON_LOCK=mcs:spinpark: $(cat "$tmp/out")"
step "LD_PRELOAD: $(cat "$tmp/out")"
"$baton" run --lock ttas -- "$tmp/smoke" ttas >"$tmp/out" || fail "baton run --lock ttas: $(cat "$tmp/out")"
# shellcheck disable=SC2016  # expanded by the inner shell
preload=$("$baton" run -- sh -c 'echo "$LD_PRELOAD"')
[ "$preload" = "$(realpath "$libdir/libbaton-preload.so")" ] || fail "baton run preloads '$preload'"
step "baton run: $(cat "$tmp/out")"

# --- 5. the examples, against the unpacked packages --------------------------------------
runs() { # runs NAME EXE ARGS...: EXE runs on the scratch root's libbaton and says "ok"
    local name=$1 exe=$2; shift 2
    LD_LIBRARY_PATH=$libdir ldd "$exe" >"$tmp/ldd" || fail "$name: ldd failed"
    grep -qF "libbaton.so.${version%%.*} => $libdir/" "$tmp/ldd" ||
        fail "$name: libbaton.so not taken from the packages: $(grep libbaton "$tmp/ldd")"
    LD_LIBRARY_PATH=$libdir "$exe" "$@" >"$tmp/out" 2>&1 || fail "$name failed: $(cat "$tmp/out")"
    grep -q "ok" "$tmp/out" || fail "$name did not say ok: $(cat "$tmp/out")"
    step "$name: $(tail -n 1 "$tmp/out")"
}

export PKG_CONFIG_LIBDIR=$libdir/pkgconfig # this one only, not the system's
[ "$(pkg-config --modversion baton)" = "$version" ] || fail "pkg-config --modversion baton: '$(pkg-config --modversion baton 2>&1)'"
flags=$(pkg-config --cflags --libs baton) || fail "pkg-config --cflags --libs baton failed"
[[ $flags == *"-I$root/"* && $flags == *"-L$root/"* ]] || fail "pkg-config flags point outside the packages: $flags"
# shellcheck disable=SC2086  # the flags are words
cc -std=c11 -O2 "$src/examples/critical_section/main.c" $flags -o "$tmp/critical_section" ||
    fail "examples/critical_section does not build with pkg-config"
runs "critical_section (pkg-config)" "$tmp/critical_section" mcs:spinpark qd rcl
# shellcheck disable=SC2086
c++ -std=c++17 -O2 "$src/examples/cpp/main.cpp" $flags -o "$tmp/cpp_pc" ||
    fail "examples/cpp does not build with pkg-config"
runs "cpp (pkg-config)" "$tmp/cpp_pc"

gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
for ex in consumer cpp; do
    cmake -S "$src/examples/$ex" -B "$tmp/$ex" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$tmp/log" 2>&1 ||
        fail "examples/$ex: find_package(baton) against the packages failed: $(tail -n 20 "$tmp/log")"
    dir=$(sed -n 's/^baton_DIR:PATH=//p' "$tmp/$ex/CMakeCache.txt")
    [ "$dir" = "$libdir/cmake/baton" ] || fail "examples/$ex found baton in '$dir'"
    cmake --build "$tmp/$ex" >"$tmp/log" 2>&1 || fail "examples/$ex does not build: $(tail -n 20 "$tmp/log")"
done
runs "consumer_shared (find_package)" "$tmp/consumer/consumer_shared"
if ! LD_LIBRARY_PATH=$libdir "$tmp/consumer/consumer_static" >"$tmp/out" 2>&1 || ! grep -q "consumer ok" "$tmp/out"; then
    fail "consumer_static failed: $(cat "$tmp/out")"
fi
step "consumer_static (find_package, libbaton.a): ok"
runs "cpp (find_package)" "$tmp/cpp/example_cpp"
step "all checks passed"
