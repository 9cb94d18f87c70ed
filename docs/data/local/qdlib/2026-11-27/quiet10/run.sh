#!/bin/sh
# run.sh BATON: ten rounds of the pq comparison against the QD authors'
# library (a build configured with -DBATON_QDLIB_DIR), load logged per round.
B=${1:?baton binary built with -DBATON_QDLIB_DIR}
for r in 1 2 3 4 5 6 7 8 9 10; do
    uptime > load.$r.txt
    "$B" bench pq --locks qd,ccsynch,fc,peer:qdlib_qd,peer:qdlib_mrqd,peer:qdlib_ccsynch,peer:qdlib_mcs \
        --threads 2,8,16 --local-work 0,128 --duration 0.3 --repeat 1 --json pq.$r.json > pq.$r.txt 2>&1
    uptime >> load.$r.txt
done
