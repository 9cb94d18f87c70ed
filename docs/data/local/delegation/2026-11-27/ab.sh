#!/bin/bash
# usage: ab.sh OUTDIR ROUNDS "LOCKS" "THREADS" [extra bench args]
out=$1; rounds=$2; locks=$3; threads=$4; shift 4
mkdir -p $out
A=${ABIN:-/tmp/s28/base/build/src/cli/baton}; N=${NBIN:-/work/main/build/src/cli/baton}
for r in $(seq 1 $rounds); do
  for l in ${locks//,/ }; do
    for t in ${threads//,/ }; do
      if (( r % 2 )); then order="base new"; else order="new base"; fi
      for v in $order; do B=$A; [ $v = new ] && B=$N
        $B bench pq --locks $l --threads $t --duration 0.3 --repeat 1 --json $out/${v}_${l}_${t}_$r.json "$@" >/dev/null 2>&1
      done
    done
  done
done
