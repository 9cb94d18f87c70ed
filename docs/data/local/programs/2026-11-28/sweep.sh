#!/usr/bin/env bash
# sweep.sh BATON KINDS...: run each program stock and under `baton run --lock K`
# for each K; verify each result; print a table of wall seconds.
set -u
B=$1; shift
KINDS=("$@")
D=/tmp/sweep; cd $D
[ -f data.txt ] || { python3 - <<'PY'
import random
random.seed(7)
w=[''.join(random.choice('abcdefghijklmnop') for _ in range(random.randint(3,9))) for _ in range(5000)]
with open('/tmp/sweep/data.txt','w') as f:
    for i in range(1500000): f.write(random.choice(w)+' '+str(random.randint(0,10**6))+'\n')
PY
sort -S 200M data.txt > sorted.ref; }
[ -d repo.git ] || git clone -q --bare /work/main repo.git
progs=(${PROGS:-py java node perl xz zstd sort git convert sqlite})
run_prog() { # prog prefix...
    local p=$1; shift
    case $p in
        py) "$@" python3 py_threads.py | grep -q "py ok" ;;
        java) "$@" java -XX:+UseParallelGC Sync.java | grep -q "java ok" ;;
        node) "$@" node node_threads.js | grep -q "node ok" ;;
        perl) "$@" perl perl_threads.pl | grep -q "perl ok" ;;
        xz) "$@" xz -T2 -3 -c data.txt > o.xz && "$@" xz -T2 -d -c o.xz | cmp -s - data.txt ;;
        zstd) "$@" zstd -q -T2 -3 -c data.txt > o.zst && "$@" zstd -q -T2 -d -c o.zst | cmp -s - data.txt ;;
        sort) "$@" sort --parallel=2 -S 60M data.txt > o.sorted && cmp -s o.sorted sorted.ref ;;
        git) rm -rf r.git && cp -r repo.git r.git && "$@" git -C r.git -c pack.threads=2 repack -adfq && "$@" git -C r.git fsck --no-progress && [ "$("$@" git -C r.git grep --threads=2 -c baton_lock HEAD -- src | wc -l)" -gt 5 ] ;;
        convert) "$@" /usr/bin/convert -size 1500x1500 gradient:red-blue -blur 0x6 -resize 60% -sharpen 0x2 o.png && [ "$(identify -format %# o.png)" = "$(cat convert.ref 2>/dev/null || (/usr/bin/convert -size 1500x1500 gradient:red-blue -blur 0x6 -resize 60% -sharpen 0x2 ref.png && identify -format %# ref.png | tee convert.ref))" ] ;;
        sqlite) [ "$("$@" sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<2000000) SELECT sum(x) FROM c;')" = 2000001000000 ] ;;
    esac
}
printf "%-8s" prog; for k in stock "${KINDS[@]}"; do printf " %14s" "$k"; done; echo
for p in "${progs[@]}"; do
    printf "%-8s" "$p"
    for k in stock "${KINDS[@]}"; do
        if [ "$k" = stock ]; then pre=(env); else pre=("$B" run --lock "$k" --); fi
        t0=$(date +%s.%N)
        timeout 300 bash -c "$(declare -f run_prog); run_prog $p ${pre[*]@Q}" >/tmp/sweep/$p.$k.log 2>&1
        rc=$?
        t1=$(date +%s.%N)
        if [ $rc -eq 0 ]; then printf " %14.2f" "$(echo "$t1 - $t0" | bc)"; else printf " %14s" "FAIL($rc)"; fi
    done
    echo
done
