#!/usr/bin/env bash
# ab.sh R: the default of two builds (base, new) alternating, in the cells where yields matter; one JSON per call
set -u
R=$1; OUT=${2:-/tmp/s30/ab}; mkdir -p $OUT
for ((r=0;r<R;r++)); do
  if ((r%2)); then order="new base"; else order="base new"; fi
  for c in $order; do B=/tmp/s30/$c/build/src/cli/baton
    $B bench micro --locks default --threads 2,16 --shared-lines 10 --local-work 0,100 --lock-count 1,64 --hog 1 --duration 0.3 --repeat 1 --json $OUT/m-$r-$c-hog.json >/dev/null 2>&1
    $B bench micro --locks default --threads 2,16 --shared-lines 10 --local-work 0,100 --lock-count 1,64 --duration 0.3 --repeat 1 --json $OUT/m-$r-$c-quiet.json >/dev/null 2>&1
  done
done
