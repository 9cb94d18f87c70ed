#!/usr/bin/env bash
# micro.sh R: BXY 0/1/2 alternating, the default in hog and no-hog cells; one JSON per call
B=/tmp/s29/bxy/build/src/cli/baton
for ((r=0;r<$1;r++)); do for c in 0 1 2; do
  BXY=$c $B bench micro --locks default --threads 2,16 --shared-lines 10 --local-work 0 --hog 1 --duration 0.3 --repeat 1 --json m-$r-$c-hog.json >/dev/null 2>&1
  BXY=$c $B bench micro --locks default --threads 2,16 --shared-lines 10 --local-work 0,100 --lock-count 1,64 --duration 0.3 --repeat 1 --json m-$r-$c-quiet.json >/dev/null 2>&1
done; done
