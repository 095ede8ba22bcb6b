#!/usr/bin/env bash
# Session 25 run F: ten fresh probes on one boot, with the star7 f32 / f64 and D3Q19 f32 CPU plans
# each gives (the best blocked candidates), to see how often and why the defaults flip.
cd "$(dirname "$0")/.."
N=.device/stencil35d-v4
for i in $(seq 1 10); do
  export STENCIL35D_CACHE_DIR=/tmp/f$i
  echo "-- probe $i"; $N probe 2>&1 | grep -E "^(bandwidth|cache use|spill|stencil|lattice)"
  for k in "star7 --dtype f32 --size 512" "star7 --dtype f64 --size 512" "d3q19 --dtype f32 --size 256"; do
    echo "   plan $k: $($N plan --kernel $k --engine blocked 2>&1 | grep -E '^\s+dim_T' | head -1)"
  done
done
