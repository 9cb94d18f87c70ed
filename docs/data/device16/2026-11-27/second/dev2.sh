# second device call (after tools/device-matrix.sh): qd against the authors' QD on 16 cores,
# and the default against the peers oversubscribed and beside CPU hogs
B=build-device/bin/baton-qdlib
$B info > $OUT/info2.txt 2>&1
$B bench pq --locks qd,peer:qdlib_qd,ccsynch,peer:qdlib_ccsynch,fc --threads 2,8,16 --local-work 0,128 --duration 0.2 --repeat 5 --json $OUT/pq_qdlib.json > $OUT/pq_qdlib.txt 2>&1
L=default,pthread,peer:absl,peer:ck_mcs,peer:tbb_spin,peer:ck_fas,mcs:spinpark
$B bench micro --locks $L --threads 32,64 --duration 0.2 --repeat 3 --json $OUT/micro_over.json > $OUT/micro_over.txt 2>&1
$B bench micro --locks $L --threads 16 --hog 16 --duration 0.2 --repeat 3 --json $OUT/micro_hog.json > $OUT/micro_hog.txt 2>&1
tail -40 $OUT/pq_qdlib.txt; tail -30 $OUT/micro_over.txt
