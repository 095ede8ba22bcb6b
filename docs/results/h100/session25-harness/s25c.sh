#!/usr/bin/env bash
# Session 25 run C: the cache probe's curve, five fresh probes on one boot; star7 f64 naive.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
for i in 1 2 3 4 5; do
  export STENCIL35D_CACHE_DIR=/tmp/c$i
  echo "-- probe $i"; $N probe 2>&1 | grep -E "^(bandwidth|cache use|spill)|^ +[0-9.]+ [MG]iB"
done
export STENCIL35D_CACHE_DIR=/tmp/c1
for r in 1 2; do timeout 60 $N bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine naive,blocked 2>&1 | grep -E "^(naive|blocked)"; timeout 60 $N bench --kernel star7 --dtype f64 --size 512 --steps 24 --repeat 3 --engine blocked --dim-t 5 --tile 520x24 --tile-threads 1 2>&1 | grep -E "^blocked"; done
