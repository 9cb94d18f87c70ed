#!/bin/bash
# ab.sh ROUNDS: old (main) vs new (wt-w) runner, alternating
N=$1; for r in $(seq 1 $N); do
 for b in old new; do
  if [ $b = old ]; then B=${OLD:-/tmp/wt-old/build}; else B=${NEW:-/work/main/build}; fi
  for cell in $CELLS; do
   IFS=/ read -r c1 c2 c3 c4 c5 <<< "$cell"; set -- $c1 $c2 $c3 $c4 ${c5:-0}; rm -f /tmp/rt/w/j.json
   $B/src/cli/baton bench micro --locks runner:spinpark --threads $1 --shared-lines $2 --local-work $3 --lock-count $4 --hog $5 --duration 0.3 --repeat 1 --json /tmp/rt/w/j.json >/dev/null 2>&1
   python3 -c "
import json;d=json.load(open('/tmp/rt/w/j.json'));r=[x for x in d['results'] ][0]
print('$b','$cell'.replace(' ','/'),round(r['ops_per_s']/1e6,2),r.get('fairness'))"
  done
 done
done
