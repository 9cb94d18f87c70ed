#!/usr/bin/env bash
# meas.sh: the first contended wait and the calibration, base against new, at 0, 1 and 2 CPU hogs
hp=()
trap 'kill ${hp[@]} 2>/dev/null; wait 2>/dev/null' EXIT
for h in 0 1 2; do
  while [ ${#hp[@]} -lt $h ]; do (exec sh -c 'while :; do :; done') & hp+=($!); done
  sleep 0.5
  for k in mcs:spinpark ttas qd; do
    for v in base new; do echo -n "hogs=$h $k $v first-wait-us:"; for i in 1 2 3 4 5; do echo -n " $(./first_$v $k)"; done; echo; done
  done
  for v in base new; do echo -n "hogs=$h calibration $v ms:"; for i in 1 2 3; do echo -n " $(./cal_$v | awk '{print $2}')"; done; echo; done
done
