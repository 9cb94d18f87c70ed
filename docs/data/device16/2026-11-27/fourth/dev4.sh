# fourth device call: BATON_WAIT_FULL_SPIN for barriers and server clients, the new build
# (build-device, from the tree with the flag) against the old (baton-old: the first call's bundle
# binary), alternating
N=build-device/bin/baton; O=build-device/bin/baton-old
for r in 1 2 3; do
  for b in new old; do
    if [ $b = new ]; then X=$N; else X=$O; fi
    echo "### r=$r $b barrier"
    timeout 30 $X bench barrier --barriers central,twolevel,dissemination,peer:gomp_barrier,peer:ck_barrier_dissemination --threads 8,16,32 --work-ns 0,1000 --episodes 20000 --time-box 0.1 2>&1 | grep -E "^ +[0-9]+ |^barrier|threads"
    echo "### r=$r $b server"
    timeout 40 $X bench server --locks server:spinpark,server:spinpark,chain,default --threads 4,15 --interval-cycles 200 --workloads counter --duration 0.1 2>&1 | grep -E "^ +[0-9]+ |threads"
  done
done
