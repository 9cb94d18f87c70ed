#!/usr/bin/env bash
# ab3.sh R OUT ARGS...: one bench micro cell set, base and new alternating, R rounds
R=$1; OUT=$2; shift 2; mkdir -p $OUT
for ((r=0;r<R;r++)); do
  if ((r%2)); then order="new base"; else order="base new"; fi
  for c in $order; do /tmp/s30/$c/build/src/cli/baton bench micro --locks default --shared-lines 10 "$@" --repeat 1 --json $OUT/m-$r-$c-x.json >/dev/null 2>&1; done
done
