#!/bin/bash
# issue 16 before/after and the constant-offset check; run on a quiet machine
set -u
OUT=/tmp/rt/fb; mkdir -p $OUT
PRE=/tmp/wt-pre16/build/src/cli/baton
NOW=/work/main/build/src/cli/baton
DELTA=/tmp/wt-l1/build/src/cli/baton
uptime > $OUT/load.txt
for r in 1 2 3; do
  for v in pre now; do
    B=$PRE; [ $v = now ] && B=$NOW
    $B bench micro --locks default,mcs,qd --threads 1,2,8 --duration 0.5 --repeat 3 --json $OUT/make-$v.$r.json > $OUT/make-$v.$r.txt 2>&1
  done
done
uptime >> $OUT/load.txt
for r in 1 2 3; do
  for v in delta now; do
    B=$DELTA; [ $v = now ] && B=$NOW
    $B bench uncontended --repeat 3 > $OUT/unc-$v.$r.txt 2>&1
  done
done
uptime >> $OUT/load.txt
