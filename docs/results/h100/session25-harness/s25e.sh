#!/usr/bin/env bash
# Session 25 run E: old (650d94c, lag R+1 any order) / k1 (levels in order, lag R, one plane a
# step) / new (in order, lag R, two planes a step) on fixed one-thread tilings, interleaved
# rounds; the probe and star7 plans of this boot.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
O=.device/stencil35d-v4old
K=.device/stencil35d-v4k1
export STENCIL35D_CACHE_DIR=/tmp/s35e
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 60 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
$N probe 2>&1 | grep -E "^(bandwidth|cache use|spill|stencil|lattice)|^ +[0-9.]+ [MG]iB"
$N plan --kernel star7 --size 512 2>&1 | grep -E "^(choice|predict)|^\*? +(naive|blocked)"
for round in 1 2 3; do
  echo "== round $round"
  for x in O K N; do eval B=\$$x; echo "-- $x"
    b $B bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 4 --tile 518x24 --tile-threads 1
    b $B bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 6 --tile 522x44 --tile-threads 1
  done; T
done
b $N bench --kernel star7 --size 512 --steps 24 --repeat 3 --engine naive,blocked; T
