#!/usr/bin/env bash
hp=()
trap 'kill ${hp[@]} 2>/dev/null; wait 2>/dev/null' EXIT
for i in 1 2 3; do (exec sh -c 'while :; do :; done') & hp+=($!); done
sleep 0.5
for v in base new; do echo -n "hogs=3 mcs:spinpark $v first-wait-us:"; for i in 1 2 3; do echo -n " $(./first_$v mcs:spinpark)"; done; echo; done
for v in base new; do echo -n "hogs=3 calibration $v ms:"; for i in 1 2; do echo -n " $(./cal_$v | awk '{print $2}')"; done; echo; done
