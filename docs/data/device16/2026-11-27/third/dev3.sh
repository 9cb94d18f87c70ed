# third device call: scratch runner variants (env knobs in baton-k: runner-knobs.patch over
# 5ea6f95), spinpark's spin limit (BATON_SPIN_FIXED), rw factors.  B = the bundle's baton.
K=build-device/bin/baton-k
B=build-device/bin/baton
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >&2; }
# A: the default's many-lock cells, variants alternating
A=$OUT/a_runner.txt; : > $A
for r in 1 2 3 4; do
  for v in "V0" "V1 BXL=0" "V2 BXL=4" "V3 BXS=0 BXC=16" "V4 BXY=0" "V5 BXL=0 BXS=0 BXC=16 BXY=0" "REF"; do
    set -- $v; name=$1; shift
    for cell in 16/0/64/0 16/100/64/0 16/0/64/1 2/100/64/0 2/0/64/0; do
      IFS=/ read -r t lw n h <<< "$cell"
      if [ $name = REF ]; then L=peer:tbb_mutex,peer:absl,ttas:backoff,peer:ck_mcs,peer:tbb_spin; else L=runner:spinpark; fi
      env "$@" timeout 20 $K bench micro --locks $L --threads $t --shared-lines 10 --local-work $lw --lock-count $n --hog $h --duration 0.25 --repeat 1 2>&1 |
        awk -v r=$r -v v=$name -v c=$cell '$1 ~ /^[0-9]+$/ && NF > 8 { print r, v, c, $2, $3, $5, $6, $8 }' >> $A
    done
  done
  el "A round $r"
done
# B: spinpark's spin limit, random draw (0) or fixed (1): barriers, mcs, qd, server
Bf=$OUT/b_spinfixed.txt; : > $Bf
for r in 1 2 3; do
  for f in 0 1; do
    echo "### r=$r fixed=$f barrier" >> $Bf
    BATON_SPIN_FIXED=$f timeout 30 $B bench barrier --barriers central,twolevel,dissemination,peer:gomp_barrier,peer:ck_barrier_dissemination --threads 8,16 --work-ns 0 --episodes 20000 --time-box 0.1 >> $Bf 2>&1
    echo "### r=$r fixed=$f micro15" >> $Bf
    BATON_SPIN_FIXED=$f timeout 30 $B bench micro --locks mcs:spinpark,qd:spinpark,runner:spinpark --threads 15 --shared-lines 1 --duration 0.2 --repeat 1 >> $Bf 2>&1
    echo "### r=$r fixed=$f server" >> $Bf
    BATON_SPIN_FIXED=$f timeout 30 $B bench server --locks server:spinpark,server:spinpark,chain --threads 4,15 --interval-cycles 200 --workloads counter --duration 0.1 >> $Bf 2>&1
  done
  el "B round $r"
done
# C: rw at 2 and 8 threads: which factor (inner kind, prefer_readers)
timeout 90 $B bench rw --locks "rw(runner),rw(runner),prefer_readers,rw(relay),rw(relay),prefer_readers,rw(ttas),prefer_readers,peer:absl_mutex_rw,peer:pthread_rwlock" --threads 2,8 --reads 80,95 --local-work 0 --duration 0.1 --repeat 3 > $OUT/c_rw.txt 2>&1
el "C done"
