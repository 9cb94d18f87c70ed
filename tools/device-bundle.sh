#!/usr/bin/env bash
# device-bundle.sh - a carried Release build of baton for a machine with no
# network, no compiler packages and no peer libraries (the 16-core device a
# session is sometimes lent; see CONTRIBUTING.md, "When the 16-core device is
# lent").  tools/device-matrix.sh runs from it.
#
#   tools/device-bundle.sh [--tree DIR] [BUNDLE]   build the Release tree DIR
#                        (default build-release) and pack BUNDLE (default
#                        build-device), then check it as below
#   tools/device-bundle.sh --check BUNDLE          check a bundle only
#   tools/device-bundle.sh --tree-only DIR         build the Release tree only
#   tools/device-bundle.sh --sources-hash          print the hash of the sources
#
# BUNDLE holds bin/baton, bin/omp_locks (where the compiler has OpenMP),
# lib/libbaton-preload.so, every shared library those need beyond glibc (the
# peers: Abseil, oneTBB, Concurrency Kit; libgomp, libstdc++, libgcc_s),
# stripped, and BUNDLE.txt (what was built, from which sources, on what, and
# the oldest glibc it runs on).  The executables carry DT_RPATH $ORIGIN/../lib
# (not DT_RUNPATH: an executable's RPATH also serves its libraries' own
# needs, such as absl_synchronization's absl_base), so nothing needs
# LD_LIBRARY_PATH.  Both paths are ignored by git (.gitignore: build-*/), as
# the device tool's `carry` wants.
#
# The check: under `env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH=`, ldd must
# resolve every library of every executable inside the bundle or to glibc;
# `baton version` and `baton kinds` must run; and, as root where unshare(1)
# works, the system's copies of the bundled libraries are hidden (a private
# mount namespace binds /dev/null over each) while baton runs every peer and
# omp_locks runs, as on a fresh machine.  The bundle must stay under 64 MiB
# with the working tree (the device's limit on what travels).
set -euo pipefail
export LC_ALL=C
PROG=device-bundle.sh
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "$PROG: error: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }

# The device tool's limit on everything that travels (working tree + carry).
CARRY_LIMIT=$((64 * 1024 * 1024))
# glibc and the kernel's vDSO: the libraries a bundle relies on the machine for.
GLIBC_RE='^(linux-vdso\.so|ld-linux[-a-z0-9_]*\.so|libc\.so|libm\.so|libmvec\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so)'

# sources_hash: one hash over every file the binaries are built from, taken
# with find (the device's copy of the tree has no .git), so a bundle can be
# matched against the tree it runs beside.
sources_hash() {
    (cd "$REPO" && find CMakeLists.txt cmake include src bench -type f -print0 |
        sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

# build_tree DIR: configure and build the Release tree DIR (no tests): the
# baton command, the interposer and omp_locks, linked with RPATH
# $ORIGIN/../lib for the bundle's layout.
build_tree() {
    local tree=$1 gen=()
    command -v cmake >/dev/null || die "cmake is missing: no Release tree can be built here"
    command -v ninja >/dev/null && gen=(-G Ninja)
    if [ -f "$tree/CMakeCache.txt" ] && ! grep -Eq '^CMAKE_BUILD_WITH_INSTALL_RPATH:[A-Z]+=ON$' "$tree/CMakeCache.txt"; then
        die "$tree is a build tree of another configuration; remove it or pass --tree DIR"
    fi
    mkdir -p "$tree"
    note "configuring $tree (Release, RPATH \$ORIGIN/../lib)"
    # shellcheck disable=SC2016  # $ORIGIN is for the dynamic linker
    cmake -S "$REPO" -B "$tree" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBATON_TESTS=OFF \
        '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
        -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >"$tree/configure.log" 2>&1 ||
        { tail -n 20 "$tree/configure.log" >&2; die "cmake configure failed (log: $tree/configure.log)"; }
    note "building $tree"
    cmake --build "$tree" -j "$(nproc)" >"$tree/build.log" 2>&1 ||
        { tail -n 20 "$tree/build.log" >&2; die "build failed (log: $tree/build.log)"; }
    [ -x "$tree/src/cli/baton" ] || die "no $tree/src/cli/baton after the build"
}

# system_libs FILE: "soname path" of each library FILE needs beyond glibc.
system_libs() {
    ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | grep -Ev "$GLIBC_RE" || true
}

pack() {
    local tree=$1 dir=$2
    local -a exes=("$tree/src/cli/baton")
    [ -x "$tree/bench/apps/omp_locks" ] && exes+=("$tree/bench/apps/omp_locks")
    [ -f "$tree/src/preload/libbaton-preload.so" ] || die "no interposer in $tree"
    rm -rf "$dir"
    mkdir -p "$dir/bin" "$dir/lib"
    cp "${exes[@]}" "$dir/bin/"
    cp "$tree/src/preload/libbaton-preload.so" "$dir/lib/"
    local so path
    for f in "${exes[@]}"; do
        while read -r so path; do
            [ -e "$dir/lib/$so" ] || cp -L "$path" "$dir/lib/$so"
        done < <(system_libs "$f")
    done
    strip --strip-unneeded "$dir"/bin/* "$dir"/lib/*
    chmod 0755 "$dir"/bin/*
    manifest "$tree" "$dir" >"$dir/BUNDLE.txt"
}

manifest() {
    local tree=$1 dir=$2 commit="(no git)" glibc_need cc
    if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
        commit=$(git -C "$REPO" rev-parse --short=12 HEAD)
        git -C "$REPO" diff --quiet HEAD -- CMakeLists.txt cmake include src bench ||
            commit="$commit (plus uncommitted changes to the sources)"
    fi
    cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$tree/CMakeCache.txt")
    glibc_need=$(for f in "$dir"/bin/* "$dir"/lib/*; do objdump -T "$f" 2>/dev/null; done |
        grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
    echo "baton device bundle"
    echo "built: $(date -u +%FT%TZ) on $(uname -srm), $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')"
    echo "glibc here: $(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
    echo "needs glibc: $glibc_need"
    echo "commit: $commit"
    echo "sources: $(sources_hash)"
    echo "compiler: $cc, $("$cc" --version | head -n 1)"
    echo "build: Release, -DBATON_TESTS=OFF, RPATH \$ORIGIN/../lib (DT_RPATH)"
    echo "peers: $("$dir/bin/baton" kinds | awk '/^  peer:/ { printf "%s%s", sep, $1; sep = " " }')"
    echo "files:"
    (cd "$dir" && find bin lib -type f -printf '  %p %s\n' | sort)
}

check() {
    local dir=$1 bad=0 f so path
    [ -x "$dir/bin/baton" ] || die "$dir/bin/baton missing: not a bundle (build one with $PROG $dir)"
    dir=$(cd "$dir" && pwd)
    local clean=(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH=)
    # 1. every library an executable loads resolves inside the bundle or to glibc
    for f in "$dir"/bin/*; do
        while read -r so path; do
            [[ $path == /* ]] && path=$(readlink -f "$path")
            if [ "$path" = "not" ]; then
                note "FAIL: $f: $so not found"; bad=1
            elif [[ $path == /* && $path != "$dir/lib/"* ]] && ! [[ $so =~ $GLIBC_RE ]]; then
                note "FAIL: $f: $so resolves outside the bundle, to $path"; bad=1
            fi
        done < <("${clean[@]}" ldd "$f" | awk '$2 == "=>" { print $1, $3 }')
    done
    [ $bad -eq 0 ] || die "$dir does not hold every library its programs need"
    note "ldd: every library of $(cd "$dir/bin" && echo *) resolves in $dir/lib or to glibc"
    # 2. it runs with an empty environment
    "${clean[@]}" "$dir/bin/baton" version >/dev/null || die "$dir/bin/baton does not run"
    local npeers
    npeers=$("${clean[@]}" "$dir/bin/baton" kinds | grep -c '^  peer:' || true)
    note "baton runs under env -i: $npeers peers in this build"
    # 3. with the system's copies hidden, as on a machine that never had them
    if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
        local hide=()
        for f in "$dir"/lib/*; do
            so=$(basename "$f")
            for path in /lib/x86_64-linux-gnu/"$so" /usr/lib/x86_64-linux-gnu/"$so" /usr/lib64/"$so" /lib64/"$so"; do
                [ -e "$path" ] && hide+=("$(readlink -f "$path")")
            done
        done
        mapfile -t hide < <(printf '%s\n' "${hide[@]}" | sort -u)
        local omp=true
        [ -x "$dir/bin/omp_locks" ] && omp="OMP_NUM_THREADS=2 $dir/bin/omp_locks lock 20000 10 >/dev/null"
        local rc=0
        # shellcheck disable=SC2016  # expanded by the inner shell
        HIDE="${hide[*]}" BATON="$dir/bin/baton" OMP="$omp" unshare -m sh -c '
            for f in $HIDE; do mount --bind /dev/null "$f" 2>/dev/null || exit 3; done
            env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH= "$BATON" bench micro --locks pthread,peers,rwpeers \
                --threads 2 --duration 0.02 --repeat 1 >/dev/null || exit 4
            env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH= sh -c "$OMP" || exit 5' || rc=$?
        case $rc in
            0) note "with ${#hide[@]} system libraries hidden: baton ran all $npeers peers$([ "$omp" = true ] || echo ', and omp_locks ran')" ;;
            3) note "skipped the hidden-libraries run (mount --bind is not permitted here)" ;;
            4) die "with the system's copies of its libraries hidden, baton's peers fail to run" ;;
            *) die "with the system's copies of its libraries hidden, omp_locks fails (exit $rc)" ;;
        esac
    else
        note "skipped the hidden-libraries run (it needs root and unshare -m)"
    fi
    # 4. size
    local size tree=0
    size=$(du -sb "$dir" | cut -f1)
    if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
        tree=$(cd "$REPO" && git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
    fi
    note "size: bundle $((size / 1024)) KiB, working tree $((tree / 1024)) KiB; together $(((size + tree) / 1024)) KiB of the $((CARRY_LIMIT / 1024)) KiB that may travel"
    [ $((size + tree)) -le $CARRY_LIMIT ] || die "bundle and tree exceed the 64 MiB that may travel"
}

tree=build-release
mode=pack
bundle=build-device
while [ $# -gt 0 ]; do
    case $1 in
        --tree) tree=$2; shift 2 ;;
        --check) mode=check; bundle=${2:?--check wants a bundle folder}; shift 2 ;;
        --tree-only) mode=tree; tree=${2:?--tree-only wants a folder}; shift 2 ;;
        --sources-hash) sources_hash; exit 0 ;;
        -h|--help) usage; exit 0 ;;
        -*) usage >&2; die "unknown option '$1'" ;;
        *) bundle=$1; shift ;;
    esac
done
case $mode in
    tree) build_tree "$tree" ;;
    check) check "$bundle" ;;
    pack)
        build_tree "$tree"
        pack "$tree" "$bundle"
        note "packed $bundle ($(du -sh "$bundle" | cut -f1)): $(sed -n 's/^peers: //p' "$bundle/BUNDLE.txt" | wc -w) peers, needs glibc >= $(sed -n 's/^needs glibc: //p' "$bundle/BUNDLE.txt")"
        check "$bundle"
        ;;
esac
