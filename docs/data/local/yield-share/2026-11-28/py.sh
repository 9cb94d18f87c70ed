#!/usr/bin/env bash
# py.sh R HOGS PROG: a program stock and under base's and new's preload, rotated
R=$1; H=$2; PROG=${3:-py}
PY=/root/.pyenv/versions/3.11.7/bin/python3
D=/work/main/docs/data/local/programs/2026-11-28
case $PROG in py) CMD="$PY $D/py_threads.py";; node) CMD="node $D/node_threads.js";; esac
hp=(); trap 'kill ${hp[@]} 2>/dev/null; wait 2>/dev/null' EXIT
for ((i=0;i<H;i++)); do (exec sh -c 'while :; do :; done') & hp+=($!); done
cfg=(stock base new)
for ((r=0;r<R;r++)); do for ((i=0;i<3;i++)); do c=${cfg[$(( (i+r)%3 ))]}
  t0=$(date +%s%N)
  if [ $c = stock ]; then $CMD >/dev/null; else LD_PRELOAD=/tmp/s30/$c/build/src/preload/libbaton-preload.so $CMD > /dev/null; fi; rc=$?
  echo "$r $H $PROG $c $rc $(( ($(date +%s%N) - t0) / 1000000 ))"
done; done
