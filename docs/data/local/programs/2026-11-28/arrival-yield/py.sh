#!/usr/bin/env bash
# py.sh R HOGS: python py_threads.py stock and under the scratch interposer with BXY=0,1,2, rotated
R=$1; H=$2
PY=/root/.pyenv/versions/3.11.7/bin/python3; P=/tmp/s29/bxy/build/src/preload/libbaton-preload.so
hp=(); trap 'kill ${hp[@]} 2>/dev/null; wait 2>/dev/null' EXIT
for ((i=0;i<H;i++)); do (exec sh -c 'while :; do :; done') & hp+=($!); done
cfg=(stock 0 1 2)
for ((r=0;r<R;r++)); do for ((i=0;i<4;i++)); do c=${cfg[$(( (i+r)%4 ))]}
  t0=$(date +%s%N)
  if [ $c = stock ]; then $PY /tmp/sweep/py_threads.py >/dev/null; else BXY=$c LD_PRELOAD=$P $PY /tmp/sweep/py_threads.py > /dev/null; fi; rc=$?
  echo "$r $H py $c $rc $(( ($(date +%s%N) - t0) / 1000000 ))"
done; done
