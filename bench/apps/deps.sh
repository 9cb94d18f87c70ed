#!/usr/bin/env bash
# Installs the Debian packages the application benchmarks need, only when missing:
#   memcached (the server), libmemcached-tools (memcaslap, the load generator),
#   kyotocabinet-utils (kccachetest).
# "apt-get update" runs first only when something has to be installed.
# Usage: deps.sh [memcached|kccache|all]   (default: all)
set -euo pipefail

want=${1:-all}
pkgs=()
need() { # need PACKAGE COMMAND: queue PACKAGE when COMMAND is not on PATH
    if ! command -v "$2" >/dev/null 2>&1; then pkgs+=("$1"); fi
}
case $want in
    memcached) need memcached memcached; need libmemcached-tools memcaslap ;;
    kccache)   need kyotocabinet-utils kccachetest ;;
    omp)       ;;   # the OpenMP program is built with the project (GNU OpenMP comes with gcc)
    all)       need memcached memcached; need libmemcached-tools memcaslap
               need kyotocabinet-utils kccachetest ;;
    *) echo "deps.sh: unknown set '$want' (memcached|kccache|omp|all)" >&2; exit 2 ;;
esac

# memcached is also found in /usr/bin only (not always on a user's PATH via sbin rules).
[ ${#pkgs[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
        echo "deps.sh: missing packages (${pkgs[*]}) and not root; install them with apt-get" >&2
        exit 1
    fi
fi
echo "deps.sh: installing ${pkgs[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || { echo "deps.sh: $p did not install" >&2; exit 1; }
done
