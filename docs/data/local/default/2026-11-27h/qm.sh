S=/tmp/s28/scr/build/src/cli/baton
i=0
for f in 0 1 1 0; do i=$((i+1)); BXF1=$f $S bench matrix --quick --json /tmp/s28/qm_${i}_f$f.json > /tmp/s28/qm_${i}_f$f.txt 2>&1; done
echo done > /tmp/s28/qm.done
