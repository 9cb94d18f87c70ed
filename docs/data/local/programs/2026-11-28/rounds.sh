#!/usr/bin/env bash
# rounds.sh R HOG KINDS... : R rounds, each runs every program under stock and each kind (order rotated)
R=$1; HOG=$2; shift 2; KINDS=(stock "$@")
source <(sed -n '/^run_prog()/,/^}/p' /tmp/sweep/sweep.sh)
cd /tmp/sweep
B=/work/main/build/src/cli/baton
hp=()
for ((h=0;h<HOG;h++)); do (while :; do :; done) & hp+=($!); done
trap 'kill ${hp[@]} 2>/dev/null' EXIT
for ((r=0;r<R;r++)); do
  for p in ${PROGS:-py java node perl sqlite sort convert git}; do
    n=${#KINDS[@]}
    for ((i=0;i<n;i++)); do
      k=${KINDS[$(( (i + r) % n ))]}
      if [ "$k" = stock ]; then pre=(env); else pre=("$B" run --lock "$k" --); fi
      t0=$(date +%s%N)
      timeout 300 bash -c "$(declare -f run_prog); run_prog $p ${pre[*]@Q}" >/tmp/sweep/r.$p.log 2>&1; rc=$?
      t1=$(date +%s%N)
      echo "$r $HOG $p $k $rc $(( (t1 - t0) / 1000000 ))"
    done
  done
done
