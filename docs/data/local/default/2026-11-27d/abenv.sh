#!/bin/bash
# abenv.sh ROUNDS: the same build (B), env A vs env V, alternating; CELLS="T/S/L/N[/H]"
N=$1; B=${B:-/tmp/wt-w/build}
for r in $(seq 1 $N); do
 for v in base var; do
  for cell in $CELLS; do
   IFS=/ read -r t sl lw n h <<< "$cell"; h=${h:-0}
   if [ $v = base ]; then E="$ENVA"; else E="$ENVV"; fi
   env $E $B/src/cli/baton bench micro --locks runner:spinpark --threads $t --shared-lines $sl --local-work $lw --lock-count $n --hog $h --pin ${PIN:-compact} --duration 0.3 --repeat 1 --json /tmp/rt/w/j.json >/dev/null 2>&1
   python3 -c "
import json;d=json.load(open('/tmp/rt/w/j.json'));r=d['results'][0]
print('$v','$cell',round(r['ops_per_s']/1e6,2),r['fairness'],round(r['cpu_s_per_mop'],4))"
  done
 done
done
