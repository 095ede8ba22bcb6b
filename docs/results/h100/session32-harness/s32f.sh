#!/usr/bin/env bash
# Session 32 run F: interleaved rounds at the planner's defaults: regrouped collision (s-new)
# against the old one (s-old), the same code built for AVX2 (s-v3), ring rows without
# prefetch (S35D_NOPF).
cd "$(dirname "$0")/.."
D=.device/t32
export STENCIL35D_CACHE_DIR=/tmp/s35d
t0=$(date +%s)
T() { echo "[t=$(( $(date +%s)-t0 ))s]"; }
b() { timeout 120 "$@" 2>&1 | grep -E "^(naive|blocked)"; }
B="bench --kernel d3q19 --dtype f32 --size 256 --steps 12 --repeat 3 --engine naive,blocked"
for v in new old v3; do $D/s-$v plan --kernel d3q19 --dtype f32 --size 256 --engine blocked 2>&1 | grep -E "^ *dim_T"; done
T
for r in 1 2 3 4; do
  for v in old new v3; do echo "-- $v"; b $D/s-$v $B; done
  echo "-- new NOPF"; ( export S35D_NOPF=1; b $D/s-new $B )
  T
done
for v in old new; do echo "-- f64 $v"; b $D/s-$v bench --kernel d3q19 --dtype f64 --size 256 --steps 12 --repeat 3 --engine naive,blocked; done
T
