#!/bin/bash
# knob.sh OUT ROUNDS VAR "VALUES" "LOCALS" THREADS [extra]
out=$1; R=$2; var=$3; vals=$4; Ls=$5; T=$6; shift 6
mkdir -p $out; S=/tmp/s28/scr/build/src/cli/baton
for r in $(seq 1 $R); do for L in $Ls; do
  vs=$vals; (( r % 2 )) || vs=$(echo $vals | tr ' ' '\n' | tac | tr '\n' ' ')
  for v in $vs; do env $var=$v $S bench micro --locks default,peer:tbb_spin --threads $T --shared-lines ${SL:-1} --local-work $L --duration 0.3 --repeat 1 --json $out/${v}_${L}_$r.json "$@" >/dev/null 2>&1; done
done; done
