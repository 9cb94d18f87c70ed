#!/usr/bin/env bash
# deps.sh - install what building, testing and benchmarking baton needs, on
# Debian or Ubuntu, when it is missing.  Only the missing packages are
# installed; nothing happens when everything is present.
#
#   tools/deps.sh          build and test tools (cmake, ninja, gcc, clang,
#                          spin for the protocol models, clang-format-14 for
#                          the format check)
#   tools/deps.sh --bench  also the peer lock libraries the bench compares
#                          against (Concurrency Kit, Abseil, oneTBB, g++)
#   tools/deps.sh --deb    the peers too, and what makes Debian packages
#                          (dpkg-shlibdeps from dpkg-dev, file)
set -euo pipefail

want=(cmake ninja-build gcc g++ clang pkg-config make spin clang-format-14)
if [[ "${1:-}" == "--bench" || "${1:-}" == "--deb" || "${1:-}" == "--all" ]]; then
  want+=(libck-dev libabsl-dev libtbb-dev)
fi
if [[ "${1:-}" == "--deb" || "${1:-}" == "--all" ]]; then
  want+=(dpkg-dev file)
fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "deps.sh: missing ${missing[*]}, and no apt-get here: install them by hand" >&2
  exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "deps.sh: missing ${missing[*]}; run as root or install them by hand" >&2
    exit 1
  fi
fi
echo "deps.sh: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
